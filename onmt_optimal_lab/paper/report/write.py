"""All of the report, rendered from the results folder, then written into it or checked against it.

``render`` makes every output in memory (a failure leaves the folder as it was); ``write_report`` then replaces
each file through a temporary file beside it (a reader never sees half a file); ``check_report`` compares instead
of writing, so a committed report can be shown to be what its committed inputs give, byte for byte."""
from __future__ import annotations

import os
from pathlib import Path

from onmt_optimal_lab.paper.report.figures import fig1, fig2
from onmt_optimal_lab.paper.report.lengths import length_table, steps_by_length
from onmt_optimal_lab.paper.report.paper import PAPER_NAME
from onmt_optimal_lab.paper.report.readme import readme
from onmt_optimal_lab.paper.report.results import Sweep, load, tuned_settings
from onmt_optimal_lab.paper.report.stats import load_stats
from onmt_optimal_lab.paper.report.tables import table2, table3

OUTPUTS = ("table2.md", "table3.md", "table_length.md", "fig1_model_score.png", "fig2_bleu_length.png", "README.md")


def render(results: Path, paper_name: str = PAPER_NAME) -> tuple[dict[str, bytes], str]:
    """Read ``results/dev_sweep.json`` (and ``test_eval.json``, ``test_sentences.json``, ``hyps/`` where present)
    and render ``OUTPUTS``. Returns ({file name: content}, and where there is a test evaluation but the paired
    statistics could not be computed, the one line saying why, else "")."""
    dev, test = load(results)
    sweep = Sweep(dev)
    tuned = tuned_settings(sweep, test)
    stats, why = load_stats(results, test)
    t2, _ = table2(sweep, paper_name)
    t3 = table3(sweep, test, tuned, paper_name, stats, why)
    out = {
        "table2.md": t2,
        "table3.md": t3,
        "table_length.md": length_table(test, stats, why) + "\n" + steps_by_length(test, stats, why),
        "fig1_model_score.png": fig1(sweep),
        "fig2_bleu_length.png": fig2(sweep, tuned),
        "README.md": readme(sweep, test, tuned, t2, t3, paper_name, stats, why, results),
    }
    files = {name: v.encode("utf-8") if isinstance(v, str) else v for name, v in out.items()}
    return files, why if stats is None and test is not None else ""


def replace(path: Path, data: bytes) -> None:
    """``path`` holds ``data`` whole: written beside it, then renamed onto it."""
    tmp = path.with_name(f".{path.name}.partial")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_report(results: Path, paper_name: str = PAPER_NAME) -> tuple[list[Path], str]:
    """Render the report and write ``OUTPUTS`` into ``results``. Returns the files written and the line of
    ``render``."""
    files, why = render(results, paper_name)
    for name in OUTPUTS:
        replace(results / name, files[name])
    return [results / name for name in OUTPUTS], why


def check_report(results: Path, paper_name: str = PAPER_NAME) -> tuple[list[str], str]:
    """Render the report and compare it with the files in ``results``: (names that differ or are missing, the line
    of ``render``). Writes nothing."""
    files, why = render(results, paper_name)
    differ = [name for name in OUTPUTS
              if not (results / name).is_file() or (results / name).read_bytes() != files[name]]
    return differ, why
