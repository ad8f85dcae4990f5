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
from pathlib import Path

from onmt_optimal_lab.bench import vllm_serve as bench


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--beams", default="4,8")
    p.add_argument("--length-penalties", default="0,1")
    p.add_argument("--clients", default="1,8")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--train-steps", type=int, default=300)
    p.add_argument("--out", type=Path,
                   default=Path(__file__).resolve().parent.parent / "benchmarks" / "RESULTS-vllm-serve.md")
    args = p.parse_args(argv)
    try:
        beams = [int(x) for x in args.beams.split(",")]
        clients = [int(x) for x in args.clients.split(",")]
        penalties = [float(x) for x in args.length_penalties.split(",")]
    except ValueError:
        p.error("--beams and --clients take comma-separated integers, --length-penalties comma-separated numbers")
    if not args.out.parent.is_dir():
        p.error(f"--out {args.out}: directory {args.out.parent} does not exist")
    results = bench.run(args.prompts, beams, penalties, clients, args.rounds, args.max_tokens, args.train_steps,
                        log=lambda line: print(line, file=sys.stderr, flush=True))
    bench.write(results, args.out)
    print(bench.render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
