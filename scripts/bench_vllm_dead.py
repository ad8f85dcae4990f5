#!/usr/bin/env python3
"""Benchmark: optimal_beam_search with and without prune_dead (onmt_optimal_lab/bench/vllm_dead.py says what and how).

    python scripts/bench_vllm_dead.py [--prompts 16] [--beams 4,8] [--rounds 3] [--max-tokens 32]

Writes benchmarks/RESULTS-vllm-dead.md and benchmarks/RESULTS-vllm-dead.json (or --out PATH.md and its .json).
"""
import argparse
import sys

from onmt_optimal_lab import cli
from onmt_optimal_lab.bench import vllm_dead as bench


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--max-tokens", type=int, default=32)
    cli.bench_options(p, beams="4,8", rounds=3, train_steps=300, out="RESULTS-vllm-dead.md")
    args = p.parse_args(argv)
    beams, _ = cli.bench_lists(p, args)
    results = bench.run(args.prompts, beams, args.rounds, args.max_tokens, args.train_steps, log=cli.log)
    cli.publish(results, args.out, bench.render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
