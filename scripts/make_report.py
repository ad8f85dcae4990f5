#!/usr/bin/env python3
"""Turn the beam-search sweep into the paper's Tables 2-3, Figures 1-2 and ``results/README.md``.

Reads ``DIR/dev_sweep.json`` (every decoder family x beam size x reward on dev) and, when present,
``DIR/test_eval.json`` (each family at its dev-tuned beam size and reward, on dev and test), and writes
into ``DIR``:

    table2.md             tuning the bounded length reward r (paper's Table 2), ours and the paper's
    table3.md             final dev/test BLEU of each decoder at its dev-tuned setting and of the two
                          baselines at fixed beams (paper's Table 3), with paired-bootstrap p-values, 95%
                          intervals of the differences and labels (sacrebleu, ``onmt_optimal_lab.paper.report.significance``)
    table_length.md       BLEU and length ratio by source-length bucket; steps saved by output-length bucket
    fig1_model_score.png  mean model score vs beam size, the baselines vs optimal stopping (paper's Figure 1)
    fig2_bleu_length.png  (a) BLEU and (b) length ratio vs beam size for every decoder (paper's Figure 2)
    README.md             how the numbers were made, how differences are tested, both tables, the figures,
                          steps saved by optimal stopping, and a verdict on each of the paper's claims

The statistics also read ``DIR/test_sentences.json`` and the test outputs ``DIR/hyps/test.*.txt`` that
``scripts/reproduce.py`` writes, and the test references named in ``test_eval.json`` (read from where they are,
cleaned as the reproduction cleaned them); without them the tables say so and the verdicts fall back to point
estimates. Everything is a function of those files (no clock, no network, fixed bootstrap seeds), so rerunning
on the same data gives byte-identical files; --check shows it without writing (exit 1 naming what differs).

    python scripts/make_report.py --results results [--check]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from onmt_optimal_lab.paper.report.paper import PAPER_NAME
from onmt_optimal_lab.paper.report.write import OUTPUTS, check_report, write_report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=f"Writes {', '.join(OUTPUTS[:-1])} and {OUTPUTS[-1]} into --results.")
    ap.add_argument("--results", type=Path, required=True,
                    help="folder with dev_sweep.json (and test_eval.json, test_sentences.json, hyps/); "
                         "the outputs go here too")
    ap.add_argument("--paper-name", default=PAPER_NAME,
                    help="how the tables and README name the paper (default: %(default)s)")
    ap.add_argument("--check", action="store_true",
                    help="write nothing: render the report and exit 1 naming each file in --results that differs")
    args = ap.parse_args(argv)
    if not (args.results / "dev_sweep.json").exists():
        ap.error(f"{args.results / 'dev_sweep.json'} not found")
    if args.check:
        differ, why = check_report(args.results, args.paper_name)
    else:
        written, why = write_report(args.results, args.paper_name)
    if why:
        print(f"make_report: no paired statistics: {why}", file=sys.stderr)
    if args.check:
        if differ:
            print(f"make_report: differs from what its inputs give: {', '.join(differ)}", file=sys.stderr)
            return 1
        print(f"make_report: {args.results}: every file is what its inputs give")
        return 0
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
