#!/usr/bin/env python3
"""Search errors of beam search: how often does the beam return the global optimum of its own score?

For every source sentence (optionally only those with at most ``--max_src_tokens`` tokens):

1. the beam: ``python -m onmt_optimal translate`` (i.e. ``onmt_translate`` with this package's flags) with
   ``-stopping optimal -with_score -stats_file``, ``-beam_size B``, the chosen scoring rule, and
   ``-max_length T -max_length_ratio 0`` (so T does not depend on batching);
2. the oracle: ``onmt_optimal.tools.exact_search.exact_search`` (depth-first branch and bound) on the same model
   and the same rule, seeded with the beam's answer, under a node and a time budget.

Reported (a JSON file and a table): how often the beam's answer is the proved global optimum; how often the
oracle found something strictly better (a *search error*); how often the proved optimum is the empty
translation (Stahlberg & Byrne 2019 found > 50% on WMT En-De under raw log-probability); how many searches
ran out of budget (their answer is only the best found, no proof); mean nodes expanded.

The source file is read as the tokens the model sees: no ``-transforms`` are passed to either search, so a
SentencePiece/BPE model needs its source already segmented (and a model trained with on-the-fly transforms
is run here without them). Scores are compared on the oracle's own arithmetic: the beam's answer is
rescored with batch size 1 (``seed_score``); ``max_rescore_diff`` reports how far the beam's own score was
from that (batching changes float32 results by a few ulps).

    python scripts/search_errors.py --model M.pt --src test.src --beam_size 5 \
        [--length_reward 1.0 --length_ratio 1.5] [--max_src_tokens 10] [--max_nodes 100000] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

from onmt_optimal.tools.search_errors import SearchErrorsError, oracle, print_table, row_text, rule_of, run_beam, summarize


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--model", required=True, help="OpenNMT-py checkpoint (.pt)")
    p.add_argument("--src", required=True, help="source file, one sentence per line, in model tokens")
    p.add_argument("--beam_size", "-b", type=int, default=5)
    p.add_argument("--length_penalty", choices=["none", "avg", "wu"], default="none",
                   help="OpenNMT-py length normalization (avg/wu: bound is loose, search is slow)")
    p.add_argument("--alpha", type=float, default=1.0, help="alpha of --length_penalty avg|wu")
    p.add_argument("--length_reward", type=float, default=0.0,
                   help="r: with --length_ratio the bounded reward log p + r*min(l,|y|), else log p + r*|y|")
    p.add_argument("--length_ratio", type=float, default=None, help="rho: l = rho * |x|")
    p.add_argument("--bp_norm", action="store_true", help="Yang et al.'s BP-norm (needs --length_ratio)")
    p.add_argument("--max_length", type=int, default=50, help="T, for the beam and the oracle (default 50)")
    p.add_argument("--max_src_tokens", type=int, default=None, help="only sentences with at most N tokens")
    p.add_argument("--limit", type=int, default=None, help="only the first N selected sentences")
    p.add_argument("--max_nodes", type=int, default=100000, help="oracle node budget per sentence")
    p.add_argument("--max_seconds", type=float, default=60.0, help="oracle time budget per sentence")
    p.add_argument("--gpu", type=int, default=-1)
    p.add_argument("--json", default=None, help="write the summary and per-sentence records here")
    p.add_argument("--verbose", "-v", action="store_true", help="print one row per sentence")
    args = p.parse_args(argv)
    if args.beam_size < 1 or args.max_length < 1 or args.max_nodes < 1:
        p.error("--beam_size, --max_length and --max_nodes must be >= 1")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    warnings.filterwarnings("ignore")
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    try:
        return measure(args)
    except SearchErrorsError as err:
        sys.exit(f"search_errors: {err}")


def measure(args) -> dict:
    """The beam and the oracle on the selected sentences: the report (also written to ``--json``), and its
    table printed."""
    from onmt_optimal.tools.exact_search import load_model

    rule = rule_of(args)
    if not Path(args.src).is_file():
        raise SearchErrorsError(f"no such source file: {args.src}")
    all_lines = Path(args.src).read_text(encoding="utf-8").splitlines()
    selected = [(i, line.split()) for i, line in enumerate(all_lines, 1)
                if line.split() and (args.max_src_tokens is None or len(line.split()) <= args.max_src_tokens)]
    if args.limit is not None:
        selected = selected[: args.limit]
    if not selected:
        raise SearchErrorsError("no sentence selected")

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        beams = run_beam(args, [" ".join(tokens) for _, tokens in selected], Path(tmp))
        beam_seconds = time.monotonic() - t0

    logging.getLogger("onmt").setLevel(logging.WARNING)
    vocabs, model, _ = load_model(args.model, args.gpu)
    records = oracle(args, rule, model, vocabs, selected, beams,
                     on_record=(lambda r: print(row_text(r), flush=True)) if args.verbose else None)
    summary = summarize(records)
    settings = {"model": str(args.model), "src": str(args.src), "beam_size": args.beam_size,
                "rule": rule.describe(), "max_length": args.max_length, "max_src_tokens": args.max_src_tokens,
                "max_nodes": args.max_nodes, "max_seconds": args.max_seconds,
                "beam_seconds": round(beam_seconds, 2)}
    report = {"settings": settings, "summary": summary, "sentences": records}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    print_table(settings, summary)
    return report


if __name__ == "__main__":
    main()
