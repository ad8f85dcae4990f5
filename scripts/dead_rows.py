#!/usr/bin/env python3
"""Count the *dead* rows a certified decode computes: live items whose admissible bound is already below the
``n_best``-th best completed hypothesis kept (``search.dead``), so that no descendant can enter the answer.

Runs ``onmt_translate`` in this process with the given flags (default: the shipped TVsub LSTM,
``configs/tvsub-zh-en/translate.yaml``, ``-stopping optimal``) and, after every step of the core, counts for the
examples that stay in the batch (the rows the decoder computes at the next step) how many rows are dead. Prints
the share of dead rows among the rows decoded, and of all rows a pruned decode skips (dead, completed, or holding
no real item: every row but the needed ones), from step 2 on and with step 1 (where only each example's first item
is needed), and writes one JSON summary (``--json``).

    python scripts/dead_rows.py --lines 300 --beam 10 --reward 0      # then --reward 1.2 --ratio 1.3059
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from onmt_optimal_lab import cli

ROOT = cli.ROOT


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.tvsub_options(parser)
    parser.add_argument("--reward", type=float, default=0.0)
    parser.add_argument("--ratio", type=float, default=1.3059)
    parser.add_argument("--n-best", type=int, default=1)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    cli.one_torch_thread()
    from onmt_optimal.search import step as step_module

    counts = {"rows_decoded": 0, "dead_rows": 0, "live_rows": 0, "needed_rows": 0, "steps": 0, "first_step_rows": 0,
              "first_step_needed": 0}
    original = step_module.step

    def counting(*, rules, state, view, completed, quiet, seq, attn=None):
        if view.t == 1:  # step 1 decodes every row; only each example's first item is needed
            B, beam = state.live.shape
            counts["first_step_rows"] += B * beam
            counts["first_step_needed"] += B
        done = original(rules=rules, state=state, view=view, completed=completed, quiet=quiet, seq=seq, attn=attn)
        if view.t < view.max_length:
            stay = ~done  # (B, 1): these examples' rows are decoded at the next step
            kth = state.kept.score[:, rules.n_best - 1:rules.n_best]
            bound = rules.rules[0].scoring.bound(view)
            dead = state.live & (bound < kth) & stay
            beam = state.live.shape[1]
            counts["rows_decoded"] += int(stay.sum()) * beam
            counts["dead_rows"] += int(dead.sum())
            counts["live_rows"] += int((state.live & stay).sum())
            counts["needed_rows"] += int((state.live & (bound >= kth) & stay).sum())
            counts["steps"] += 1
        return done

    step_module.step = counting
    with tempfile.TemporaryDirectory() as tmp:
        src = cli.first_lines(args.data, args.lines, tmp, args.model)
        argv = ["onmt_translate", "-config", str(cli.translate_config(args.model)), "-src", str(src),
                "-output", str(Path(tmp) / "hyp"), "-beam_size", str(args.beam), "-batch_size", str(args.batch),
                "-n_best", str(args.n_best), "-stopping", "optimal", "-log_file", os.devnull]
        if args.reward:
            argv += ["-length_reward", str(args.reward), "-length_ratio", str(args.ratio)]
        os.chdir(ROOT)
        sys.argv = argv
        from onmt.bin.translate import main as translate

        translate()
    share = counts["dead_rows"] / max(counts["rows_decoded"], 1)
    summary = {"lines": args.lines, "beam": args.beam, "batch": args.batch, "reward": args.reward,
               "ratio": args.ratio if args.reward else None, "n_best": args.n_best, **counts,
               "dead_share": round(share, 4),
               "skippable_share": round(1 - counts["needed_rows"] / max(counts["rows_decoded"], 1), 4),
               "skippable_share_with_step_1": round(1 - (counts["needed_rows"] + counts["first_step_needed"]) / max(
                   counts["rows_decoded"] + counts["first_step_rows"], 1), 4), "dead_share_of_live": round(counts["dead_rows"] /
                                                                          max(counts["live_rows"], 1), 4)}
    print(json.dumps(summary))
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
