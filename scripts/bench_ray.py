#!/usr/bin/env python3
"""``onmt_translate -ray_workers N`` against one process: wall time and byte identity (benchmarks/RAY.md).

Decodes the first ``--lines`` sentences of the TVsub test set (cleaned as ``scripts/main_job.py`` cleans it)
with the shipped model through the ``onmt_translate`` console script, once per variant, each a fresh process
(so every time includes start-up: Python, torch, model load, and for Ray the local cluster and its workers):

* one process, and ``-ray_workers N`` (a local Ray started by the command), with torch's default thread
  count (here: the cores), and again with ``OMP_NUM_THREADS=1`` (one thread per process or worker);
* outputs (``-with_score``) and ``-stats_file`` compared byte for byte between one process and Ray at the
  same thread count, and the translations (text without scores) across all variants.

    python scripts/bench_ray.py [--lines 1000] [--workers 2] [--config configs/tvsub-zh-en/translate.yaml]
                                [--gpu] [-- more onmt_translate flags]
``--gpu`` adds ``-gpu 0`` (one GPU per worker) and writes benchmarks/RAY-gpu.md instead.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from onmt_optimal.tools.text import normalize

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SHARED = Path(os.environ.get("ONMT_OPTIMAL_DATA", ROOT.parent / "shared" / "data"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--config", default="configs/tvsub-zh-en/translate.yaml")
    parser.add_argument("--src", default=str(SHARED / "tvsub-zh-en" / "test.zh"))
    parser.add_argument("--gpu", action="store_true")
    parser.add_argument("--out", default=None, help="markdown file (default benchmarks/RAY.md, RAY-gpu.md)")
    parser.add_argument("extra", nargs="*")
    args = parser.parse_args()
    work = ROOT / "work" / "bench_ray"
    work.mkdir(parents=True, exist_ok=True)
    src = work / "src"
    lines = Path(args.src).read_text(encoding="utf-8").splitlines()[: args.lines]
    src.write_text("".join(normalize(line, unescape=True) + "\n" for line in lines), encoding="utf-8")
    flags = ["-config", args.config, "-src", str(src), "-stopping", "optimal", "-with_score", *args.extra]
    if args.gpu:
        flags += ["-gpu", "0"]
    variants = [("one process", "default", []), (f"-ray_workers {args.workers}", "default", ["-ray_workers", str(args.workers)])]
    if not args.gpu:
        variants += [("one process", "1", []), (f"-ray_workers {args.workers}", "1", ["-ray_workers", str(args.workers)])]
    runs = []
    for name, threads, more in variants:
        tag = f"{'ray' if more else 'one'}-{threads}"
        out, stats = work / f"{tag}.out", work / f"{tag}.stats"
        cmd = [str(BIN / "onmt_translate"), *flags, "-output", str(out), "-stats_file", str(stats), *more]
        env = dict(os.environ, PYTHONWARNINGS="ignore")
        if threads != "default":
            env["OMP_NUM_THREADS"] = threads
        else:
            env.pop("OMP_NUM_THREADS", None)
        start = time.time()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        seconds = time.time() - start
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
        runs.append({"variant": name, "threads": threads, "seconds": round(seconds, 1), "out": out, "stats": stats,
                     "command": ("" if threads == "default" else f"OMP_NUM_THREADS={threads} ") + " ".join(
                         str(Path(c).relative_to(ROOT)) if c.startswith(str(ROOT)) else c for c in cmd)})
        print(f"{name:>16}  threads {threads:>7}  {seconds:7.1f} s", flush=True)
    texts = {r["variant"] + r["threads"]: [x.split("\t")[0] for x in r["out"].read_text().splitlines()] for r in runs}
    same_text = len({json.dumps(t) for t in texts.values()}) == 1
    rows = []
    for threads in sorted({r["threads"] for r in runs}):
        one, many = [r for r in runs if r["threads"] == threads]
        rows.append({"threads": threads, "one_s": one["seconds"], "ray_s": many["seconds"],
                     "speedup": round(one["seconds"] / many["seconds"], 2),
                     "output_identical": one["out"].read_bytes() == many["out"].read_bytes(),
                     "stats_identical": one["stats"].read_bytes() == many["stats"].read_bytes()})
    device = "GPU" if args.gpu else f"CPU ({os.cpu_count()} cores)"
    result = {"lines": len(lines), "workers": args.workers, "device": device, "machine": platform.platform(),
              "rows": rows, "translations_identical_across_all": same_text,
              "commands": [r["command"] for r in runs]}
    out_md = Path(args.out) if args.out else ROOT / "benchmarks" / ("RAY-gpu.md" if args.gpu else "RAY.md")
    out_md.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
