#!/usr/bin/env python3
"""Benchmark: optimal_beam_search beside vLLM's own beam search (onmt_optimal_lab/bench/vllm.py says what and how).

    python scripts/bench_vllm.py [--prompts 16] [--beams 4,8] [--length-penalties 0,1] [--rounds 2] [--max-tokens 32]

Writes benchmarks/RESULTS-vllm.md and benchmarks/RESULTS-vllm.json (or --out PATH.md and its .json).
"""
import argparse
import sys

from onmt_optimal_lab import cli
from onmt_optimal_lab.bench import vllm as bench


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--max-tokens", type=int, default=32)
    cli.bench_options(p, beams="4,8", rounds=2, train_steps=300, out="RESULTS-vllm.md")
    args = p.parse_args(argv)
    beams, penalties = cli.bench_lists(p, args)
    results = bench.run(args.prompts, beams, penalties, args.rounds, args.max_tokens, args.train_steps, log=cli.log)
    cli.publish(results, args.out, bench.render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
