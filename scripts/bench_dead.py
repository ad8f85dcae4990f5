#!/usr/bin/env python3
"""Whole-process benchmark of skipping the dead rows (``search.dead``): stock OpenNMT-py against ``-stopping
optimal`` with a statistics file, without and with ``-prune_dead``, and without a statistics file (``optimal-quiet``,
where ``onmt_translate`` skips the dead rows unasked), on a shipped model (the TVsub LSTM by default, ``--model``),
each variant its own ``onmt_translate`` process, one torch thread, the variants in turn for ``--rounds`` rounds (the order rotating).

Reports per variant the median wall time and CPU time of the process (model loading included) and the median of
its ratio to stock in the same round, and compares the outputs (optimal on log-probability returns stock's
translations, the paper's Theorem 2; the pruned decode returns the unpruned one's, byte for byte) and the
statistics files (every field but ``completed``; the pruned run's ``rows_skipped``, summed). Writes a Markdown report (``--out``).

    python scripts/bench_dead.py --lines 300 --beam 10 --batch 32 --rounds 5 --out benchmarks/RESULTS-dead.md
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from onmt_optimal_lab import cli

ROOT = cli.ROOT
LAUNCH = ("import argparse,torch; torch.set_num_threads(1); torch.serialization.add_safe_globals([argparse.Namespace]);"
          " from onmt.bin.translate import main; main()")


def run(variant: str, src: Path, out: Path, args) -> tuple[float, float]:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    argv = [sys.executable, "-c", LAUNCH, "-config", str(cli.translate_config(args.model)),
            "-src", str(src), "-output", str(out / f"{variant}.hyp"), "-beam_size", str(args.beam),
            "-batch_size", str(args.batch), "-log_file", os.devnull]
    if variant == "stock":
        env["ONMT_OPTIMAL_DISABLE"] = "1"
    elif variant == "optimal-quiet":  # no statistics file: the dead rows are skipped unasked
        argv += ["-stopping", "optimal"]
    else:
        argv += ["-stopping", "optimal", "-stats_file", str(out / f"{variant}.stats")]
        if variant == "optimal+prune":
            argv.append("-prune_dead")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        raise SystemExit(f"{variant} failed:\n{done.stderr[-3000:]}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.tvsub_options(parser)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    variants = ["stock", "optimal", "optimal+prune", "optimal-quiet"]
    times = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src = cli.first_lines(args.data, args.lines, tmp, args.model)
        for r in range(args.rounds):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for v in order:
                times[v].append(run(v, src, tmp, args))
            print(f"round {r + 1}: " + ", ".join(f"{v} {times[v][-1][0]:.2f}s" for v in variants), flush=True)
        same_stock = (tmp / "stock.hyp").read_bytes() == (tmp / "optimal.hyp").read_bytes()
        same_pruned = (tmp / "optimal.hyp").read_bytes() == (tmp / "optimal+prune.hyp").read_bytes()
        same_quiet = (tmp / "optimal.hyp").read_bytes() == (tmp / "optimal-quiet.hyp").read_bytes()
        a = [json.loads(x) for x in (tmp / "optimal.stats").read_text().splitlines()]
        b = [json.loads(x) for x in (tmp / "optimal+prune.stats").read_text().splitlines()]
        differ = {k: sum(x[k] != y[k] for x, y in zip(a, b)) for k in a[0]}
        completed = (sum(x["completed"] for x in a), sum(y["completed"] for y in b))
        skipped = sum(y["rows_skipped"] for y in b)
        steps = statistics.mean(x["steps"] for x in a)
    rows = []
    for v in variants:
        wall = statistics.median(t[0] for t in times[v])
        cpu = statistics.median(t[1] for t in times[v])
        ratio_wall = [s[0] / t[0] for s, t in zip(times["stock"], times[v])]
        ratio_cpu = [s[1] / t[1] for s, t in zip(times["stock"], times[v])]
        rows.append(f"| {v} | {wall:.2f} | {cpu:.2f} | {statistics.median(ratio_wall):.3f} "
                    f"({min(ratio_wall):.3f}-{max(ratio_wall):.3f}) | {statistics.median(ratio_cpu):.3f} "
                    f"({min(ratio_cpu):.3f}-{max(ratio_cpu):.3f}) |")
    command = "python scripts/bench_dead.py " + " ".join(sys.argv[1:])
    report = "\n".join([
        "# Skipping the dead rows: whole-process timing",
        "",
        f"models/{args.model}, the first {args.lines} lines of its test set (`{cli.MODELS[args.model]}`), "
        f"b = {args.beam}, batch "
        f"{args.batch}, `-length_penalty none`, one torch thread, each decode its own `onmt_translate` process "
        f"(model loading included), {args.rounds} rounds, the variants in a rotating order. Speed-up = stock's "
        "time over the variant's in the same round (median, lowest-highest). The machine has 2 CPU cores shared "
        "with other jobs: compare the ratios, not the seconds.",
        "",
        "| variant | wall s (median) | CPU s (median) | speed-up, wall | speed-up, CPU |",
        "|---|---:|---:|---:|---:|",
        *rows,
        "",
        f"- `optimal` writes stock's translations: {'yes' if same_stock else 'NO'}; "
        f"`optimal+prune` writes `optimal`'s: {'yes' if same_pruned else 'NO'}; `optimal-quiet` (`-stopping optimal` "
        f"with no `-stats_file`, where the dead rows are skipped unasked) writes `optimal`'s: "
        f"{'yes' if same_quiet else 'NO'} (byte for byte).",
        f"- Statistics of `optimal+prune` against `optimal`, lines that differ per field (of {len(a)}): "
        + ", ".join(f"{k} {n}" for k, n in differ.items()) + f". `completed` summed: {completed[0]} against "
        f"{completed[1]}. Mean steps: {steps:.2f}. Rows skipped (`rows_skipped`, summed): {skipped}.",
        "",
        f"Command: `{command}`",
        "",
    ])
    print(report)
    if args.out:
        Path(args.out).write_text(report)


if __name__ == "__main__":
    main()
