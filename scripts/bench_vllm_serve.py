#!/usr/bin/env python3
"""Benchmark: beam requests to vLLM's OpenAI-compatible server, stock and with the certificate
(onmt_optimal_lab/bench/vllm_serve.py says what and how).

    python scripts/bench_vllm_serve.py [--prompts 16] [--beams 4,8] [--length-penalties 0,1] [--clients 1,8]
                                       [--rounds 3] [--max-tokens 32]

Needs the plugin's entry point installed (make setup-vllm). Writes benchmarks/RESULTS-vllm-serve.md and
benchmarks/RESULTS-vllm-serve.json (or --out PATH.md and its .json).
"""
import argparse
import sys

from onmt_optimal_lab import cli
from onmt_optimal_lab.bench import vllm_serve as bench


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--clients", default="1,8")
    p.add_argument("--max-tokens", type=int, default=32)
    cli.bench_options(p, beams="4,8", rounds=3, train_steps=300, out="RESULTS-vllm-serve.md")
    args = p.parse_args(argv)
    clients = cli.comma_list(p, "--clients", args.clients)
    beams, penalties = cli.bench_lists(p, args)
    results = bench.run(args.prompts, beams, penalties, clients, args.rounds, args.max_tokens, args.train_steps,
                        log=cli.log)
    cli.publish(results, args.out, bench.render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
