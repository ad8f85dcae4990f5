"""What the lab's command lines (``scripts/bench*.py``, ``scripts/dead_rows.py``) share: their common options,
their comma-separated lists read or refused in one line, the check that ``--out`` has a folder to go to, and the
log line to stderr.

``tvsub_options`` and ``first_lines`` are the options and the input of the scripts that decode a shipped
OpenNMT-py model (``--model``: the TVsub LSTM by default, or another of ``MODELS``) on the first lines of its test
set (``--data``, ``--lines``, ``--beam``, ``--batch``); ``translate_config`` is the model's translate config.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

#: the clone's root, where ``configs/``, ``models/`` and ``benchmarks/`` are
ROOT = Path(__file__).resolve().parent.parent


def comma_list(parser: argparse.ArgumentParser, option: str, text: str, kind=int) -> list:
    """``text`` ("4,8") as a list of ``kind``; anything else is ``parser``'s one-line error naming ``option``."""
    try:
        return [kind(x) for x in text.split(",")]
    except ValueError:
        parser.error(f"{option} takes comma-separated {'integers' if kind is int else 'numbers'}: {text!r}")


def check_out(parser: argparse.ArgumentParser, out: Path) -> None:
    """``--out``'s folder must exist: the run is refused before it starts, not after."""
    if not out.parent.is_dir():
        parser.error(f"--out {out}: directory {out.parent} does not exist")


def publish(results: dict, out: Path, markdown: str) -> None:
    """A bench's report: ``out`` (.md, ``markdown``) and its .json (``results``) beside it, each written whole
    (``bench.render.write_report``), and ``markdown`` on stdout."""
    from onmt_optimal_lab.bench.render import write_report

    write_report(results, out, markdown)
    print(markdown)


def log(line: str) -> None:
    """A progress line to stderr, at once (stdout holds the report)."""
    print(line, file=sys.stderr, flush=True)


def bench_options(parser: argparse.ArgumentParser, *, beams: str, rounds: int, train_steps: int, out: str) -> None:
    """The options of every bench of ``optimal_beam_search`` against a toolkit's own beam search: ``--beams``,
    ``--length-penalties`` (default 0,1), ``--rounds``, ``--train-steps`` (of the model trained in the run) and
    ``--out`` (``benchmarks/OUT`` by default); ``bench_lists`` reads them."""
    parser.add_argument("--beams", default=beams)
    parser.add_argument("--length-penalties", default="0,1")
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--train-steps", type=int, default=train_steps)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / out)


def bench_lists(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[list[int], list[float]]:
    """The beam sizes and the length penalties of ``bench_options``, after the check of ``--out``'s folder."""
    beams = comma_list(parser, "--beams", args.beams)
    penalties = comma_list(parser, "--length-penalties", args.length_penalties, float)
    check_out(parser, args.out)
    return beams, penalties


#: the shipped OpenNMT-py models a script may decode (``configs/MODEL/translate.yaml``), and their test sources
#: under the corpora folder
MODELS = {"tvsub-zh-en": "tvsub-zh-en/test.zh", "tvsub-zh-en-transformer": "tvsub-zh-en/test.zh",
          "multi30k-de-en": "multi30k-de-en/test_2016_flickr.de",
          "multi30k-de-en-transformer": "multi30k-de-en/test_2016_flickr.de"}


def tvsub_options(parser: argparse.ArgumentParser) -> None:
    """``--model`` (one of ``MODELS``, the TVsub LSTM by default), ``--data`` (the corpora folder, default
    ``../shared/data`` beside the clone), ``--lines``, ``--beam`` and ``--batch`` of a decode of a shipped model."""
    parser.add_argument("--model", choices=sorted(MODELS), default="tvsub-zh-en")
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--lines", type=int, default=300)
    parser.add_argument("--beam", type=int, default=10)
    parser.add_argument("--batch", type=int, default=32)


def translate_config(model: str = "tvsub-zh-en") -> Path:
    """The translate config of the shipped ``model`` (``configs/MODEL/translate.yaml``)."""
    return ROOT / "configs" / model / "translate.yaml"


def first_lines(data: str, lines: int, folder: Path, model: str = "tvsub-zh-en") -> Path:
    """The first ``lines`` lines of ``model``'s test source (``MODELS``; TVsub test by default), written to
    ``folder/src``."""
    src = Path(folder) / "src"
    text = (Path(data) / MODELS[model]).read_text(encoding="utf-8").splitlines()[:lines]
    src.write_text("\n".join(text) + "\n", encoding="utf-8")
    return src


def one_torch_thread() -> None:
    """One torch thread, and ``argparse.Namespace`` allowed in the checkpoints ``torch.load`` reads (OpenNMT-py's
    keep their options as one)."""
    import torch

    torch.set_num_threads(1)
    torch.serialization.add_safe_globals([argparse.Namespace])
