"""All of the report, written into the results folder it is made from."""
from __future__ import annotations

from pathlib import Path

from onmt_optimal.report.figures import fig1, fig2
from onmt_optimal.report.lengths import length_table, steps_by_length
from onmt_optimal.report.paper import PAPER_NAME
from onmt_optimal.report.readme import readme
from onmt_optimal.report.results import Sweep, load, tuned_settings
from onmt_optimal.report.stats import load_stats
from onmt_optimal.report.tables import table2, table3

OUTPUTS = ("table2.md", "table3.md", "table_length.md", "fig1_model_score.png", "fig2_bleu_length.png", "README.md")


def write_report(results: Path, paper_name: str = PAPER_NAME) -> tuple[list[Path], str]:
    """Read ``results/dev_sweep.json`` (and ``test_eval.json``, ``test_sentences.json``, ``hyps/`` where present)
    and write ``OUTPUTS`` into ``results``. Returns the files written and, where there is a test evaluation but
    the paired statistics could not be computed, the one line saying why ("" otherwise)."""
    dev, test = load(results)
    sweep = Sweep(dev)
    tuned = tuned_settings(sweep, test)
    stats, why = load_stats(results, test)
    t2, _ = table2(sweep, paper_name)
    t3 = table3(sweep, test, tuned, paper_name, stats, why)
    (results / "table2.md").write_text(t2)
    (results / "table3.md").write_text(t3)
    (results / "table_length.md").write_text(length_table(test, stats, why) + "\n" + steps_by_length(test, stats, why))
    fig1(sweep, results / "fig1_model_score.png")
    fig2(sweep, tuned, results / "fig2_bleu_length.png")
    (results / "README.md").write_text(readme(sweep, test, tuned, t2, t3, paper_name, stats, why, results))
    return [results / name for name in OUTPUTS], why if stats is None and test is not None else ""
