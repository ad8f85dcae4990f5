#!/usr/bin/env python3
"""Benchmark: optimal_beam_search beside transformers' own beam search (onmt_optimal_lab/bench/hf.py says what and how).

    python scripts/bench_hf.py [--lines 64] [--beams 1,5,10] [--batches 1,16] [--rounds 3] [--models marian,gpt2] [--length-penalties 0,1]
        [--device cpu|cuda] [--model-dir models/multi30k-de-en-hf --src DEV.de] [--max-seconds S]

Without --model-dir the models are trained on the synthetic task in the run; with it, the Multi30k models there
(scripts/train_hf_multi30k.py) decode the first --lines sentences of --src.

Writes benchmarks/RESULTS-hf.md and benchmarks/RESULTS-hf.json (or --out PATH.md and its .json).
"""
import argparse
import sys
from pathlib import Path

from onmt_optimal_lab import cli


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lines", type=int, default=64)
    p.add_argument("--batches", default="1,16")
    p.add_argument("--max-new-tokens", type=int, default=48)
    p.add_argument("--models", default="marian,gpt2")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--model-dir", type=Path, help="trained models (DIR/marian, DIR/gpt2) instead of the synthetic task")
    p.add_argument("--src", type=Path, help="with --model-dir: the source sentences, one a line")
    p.add_argument("--max-seconds", type=float, help="start no row after this many seconds (the rows done are written)")
    p.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32",
                   help="the models' weights after training (both searches decode the same converted model)")
    cli.bench_options(p, beams="1,5,10", rounds=3, train_steps=400, out="RESULTS-hf.md")
    args = p.parse_args(argv)
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            p.error("--device cuda: torch sees no CUDA device here")
    try:
        from onmt_optimal_lab.bench import hf as bench
    except ImportError as err:
        p.error(f"transformers and tokenizers are needed (requirements-hf.txt): {err}")
    batches = cli.comma_list(p, "--batches", args.batches)
    beams, penalties = cli.bench_lists(p, args)
    models = args.models.split(",")
    if not set(models) <= {"marian", "gpt2"}:
        p.error("--models takes marian and/or gpt2")
    src = None
    if args.model_dir is not None:
        missing = [m for m in models if not (args.model_dir / m / "config.json").is_file()]
        if missing:
            p.error(f"--model-dir {args.model_dir}: no {' or '.join(missing)} model there "
                    "(scripts/train_hf_multi30k.py)")
        if args.src is None:
            p.error("--model-dir needs --src")
        try:
            src = [line.strip() for line in args.src.read_text(encoding="utf-8").splitlines() if line.strip()]
        except (OSError, UnicodeDecodeError) as err:
            p.error(f"--src {args.src}: {err}")
    results = bench.run(args.lines, beams, batches, args.rounds, args.max_new_tokens, args.train_steps, models,
                        penalties, log=cli.log, model_dir=args.model_dir,
                        src=src, device=args.device, max_seconds=args.max_seconds, dtype=args.dtype)
    cli.publish(results, args.out, bench.render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
