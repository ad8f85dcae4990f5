#!/usr/bin/env python3
"""Decode time of skipping the dead rows (``search.dead``), in one process: stock OpenNMT-py against ``-stopping
optimal`` without and with ``-prune_dead`` on a shipped model (the TVsub LSTM by default, ``--model``), one torch thread. Each variant
runs ``onmt_translate``'s main in turn (the order rotating by round); the time is the decoding thread's CPU time
inside ``translate_batch`` (encoder, decoding loop, search, results), without loading the model. Prints per
variant the median over rounds of stock's time over the variant's, with the lowest and highest round.

    python scripts/bench_dead_decode.py --lines 300 --beam 10 --batch 32 --rounds 5
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from onmt_optimal_lab import cli

ROOT = cli.ROOT


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.tvsub_options(parser)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    cli.one_torch_thread()
    from onmt.bin.translate import main as translate

    from onmt_optimal.opennmt.translator import CertifiedTranslator

    spent = [0.0]
    original = CertifiedTranslator.translate_batch

    def timed(self, batch, attn_debug):
        start = time.thread_time()
        try:
            return original(self, batch, attn_debug)
        finally:
            spent[0] += time.thread_time() - start

    CertifiedTranslator.translate_batch = timed
    variants = ["stock", "optimal", "optimal+prune"]
    times = {v: [] for v in variants}
    os.chdir(ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        src = cli.first_lines(args.data, args.lines, tmp, args.model)
        outputs = {}
        for r in range(args.rounds):
            for v in variants[r % 3:] + variants[:r % 3]:
                out = Path(tmp) / f"{v}.hyp"
                sys.argv = ["onmt_translate", "-config", str(cli.translate_config(args.model)), "-src", str(src),
                            "-output", str(out), "-beam_size", str(args.beam), "-batch_size", str(args.batch),
                            "-log_file", os.devnull]
                if v != "stock":
                    sys.argv += ["-stopping", "optimal"]
                if v == "optimal+prune":
                    sys.argv.append("-prune_dead")
                spent[0] = 0.0
                translate()
                times[v].append(spent[0])
                outputs[v] = out.read_bytes()
            print(f"round {r + 1}: " + ", ".join(f"{v} {times[v][-1]:.2f}s" for v in variants), flush=True)
    print(f"decode CPU time, {args.lines} test lines of {args.model}, b = {args.beam}, batch {args.batch}, one thread, "
          f"{args.rounds} rounds; speed-up over stock (median, lowest-highest):")
    for v in variants:
        ratios = [s / t for s, t in zip(times["stock"], times[v])]
        print(f"  {v}: {statistics.median(times[v]):.2f} s, {statistics.median(ratios):.3f} "
              f"({min(ratios):.3f}-{max(ratios):.3f})")
    print(f"outputs: optimal == stock: {outputs['optimal'] == outputs['stock']}, optimal+prune == optimal: "
          f"{outputs['optimal+prune'] == outputs['optimal']}")


if __name__ == "__main__":
    main()
