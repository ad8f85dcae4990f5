#!/usr/bin/env python3
"""Benchmark: optimal_beam_search beside vLLM's own beam search (onmt_optimal_lab/bench/vllm.py says what and how).

    python scripts/bench_vllm.py [--prompts 16] [--beams 4,8] [--length-penalties 0,1] [--rounds 2] [--max-tokens 32]

Writes benchmarks/RESULTS-vllm.md and benchmarks/RESULTS-vllm.json (or --out PATH.md and its .json).
"""
import argparse
import sys
from pathlib import Path

from onmt_optimal_lab.bench import vllm as bench


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--beams", default="4,8")
    p.add_argument("--length-penalties", default="0,1")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--train-steps", type=int, default=300)
    p.add_argument("--out", type=Path,
                   default=Path(__file__).resolve().parent.parent / "benchmarks" / "RESULTS-vllm.md")
    args = p.parse_args(argv)
    try:
        beams = [int(x) for x in args.beams.split(",")]
        penalties = [float(x) for x in args.length_penalties.split(",")]
    except ValueError:
        p.error("--beams takes comma-separated integers, --length-penalties comma-separated numbers")
    if not args.out.parent.is_dir():
        p.error(f"--out {args.out}: directory {args.out.parent} does not exist")
    results = bench.run(args.prompts, beams, penalties, args.rounds, args.max_tokens, args.train_steps,
                        log=lambda line: print(line, file=sys.stderr, flush=True))
    bench.write(results, args.out)
    print(bench.render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
