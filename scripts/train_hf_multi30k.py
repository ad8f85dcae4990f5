#!/usr/bin/env python3
"""Train the transformers benchmark's Multi30k German-English models (onmt_optimal_lab/bench/hf_models.py says how).

    python scripts/train_hf_multi30k.py [--data ../shared/data/multi30k-de-en] [--out models/multi30k-de-en-hf]
        [--seconds 900] [--steps 20000] [--width 128] [--layers 2] [--vocab-size 4000] [--batch 64]

Writes OUT/marian and OUT/gpt2 (config, fp16 safetensors weights, tokenizer, training.json, train.log); the
tokenizer is trained the same way (deterministically) for each, so the two can be trained in two processes.
"""
import argparse
import sys
import time
from pathlib import Path

import torch

from onmt_optimal_lab.bench import hf_models as bench_models


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parent.parent
    p.add_argument("--data", type=Path, default=root.parent / "shared" / "data" / "multi30k-de-en")
    p.add_argument("--out", type=Path, default=root / "models" / "multi30k-de-en-hf")
    p.add_argument("--models", default="marian,gpt2")
    p.add_argument("--seconds", type=float, default=900, help="wall-clock budget per model")
    p.add_argument("--steps", type=int, default=20000, help="at most this many steps per model")
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--layers", type=int, default=2, help="Marian: per side; GPT-2: twice this")
    p.add_argument("--vocab-size", type=int, default=4000)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--max-tokens", type=int, default=40, help="drop pairs longer than this (words) on a side")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    kinds = args.models.split(",")
    if not set(kinds) <= set(bench_models.KINDS):
        p.error("--models takes marian and/or gpt2")
    try:
        src = bench_models.read_lines(args.data / "train.de.gz")
        tgt = bench_models.read_lines(args.data / "train.en.gz")
    except OSError as err:
        p.error(f"--data {args.data}: {err}")
    read = len(src)
    pairs = [(s, t) for s, t in zip(src, tgt) if s and t and max(len(s.split()), len(t.split())) <= args.max_tokens]
    src, tgt = [s for s, _ in pairs], [t for _, t in pairs]
    torch.set_num_threads(args.threads)
    tok = bench_models.train_tokenizer(src + tgt, args.vocab_size)
    for kind in kinds:
        (args.out / kind).mkdir(parents=True, exist_ok=True)
        with open(args.out / kind / "train.log", "w", encoding="utf-8") as log_file:
            def log(line):
                line = f"[{time.strftime('%H:%M:%S')}] {line}"
                print(line, flush=True)
                log_file.write(line + "\n")
                log_file.flush()

            log(f"{' '.join(sys.argv)}: {len(src)} of {read} pairs (at most {args.max_tokens} words a side)")
            model, fast, info = bench_models.train(kind, tok, src, tgt, steps=args.steps, seconds=args.seconds,
                                                   width=args.width, layers=args.layers, batch=args.batch,
                                                   max_positions=128, log=log)
            bench_models.save(model, fast, info, args.out / kind)
            log(f"{kind}: {info}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
