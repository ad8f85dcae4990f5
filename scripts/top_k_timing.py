"""Time ``torch.topk`` against the two-pass ``top_k`` on one CPU thread, to place ``TopK.small``.

    python scripts/top_k_timing.py [--vocab 8000] [--calls 2000]
    python scripts/top_k_timing.py --decode configs/tvsub-zh-en/translate.yaml --src dev50.zh --beams 2,3,5

For each (batch, beam): the microseconds per call of each, on log-softmax rows of the given vocabulary size
(the beam's candidate scores are ``batch x beam x |V|``). The two-pass path is forced with ``small=0``.

Alone, each path's cost is its call's. Inside a decode it is not: ``--decode`` times whole decodes with either
path against stock's (``onmt_optimal_lab.bench.top_k.in_decode`` says why), which is what ``TopK.small`` is checked
against.
"""
from __future__ import annotations

import argparse

import torch

from onmt_optimal_lab.bench.top_k import alone, in_decode
from onmt_optimal.search.top_k import top_k


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--decode", metavar="CONFIG", help="time both inside a decode with this translate config")
    parser.add_argument("--src", help="--decode: source lines")
    parser.add_argument("--batch", type=int, default=1, help="--decode: batch size")
    parser.add_argument("--beams", default="3,5", help="--decode: beam sizes")
    parser.add_argument("--rounds", type=int, default=6, help="--decode: rounds")
    args = parser.parse_args(argv)
    if args.decode and not args.src:
        parser.error("--decode needs --src")
    torch.set_num_threads(1)
    if args.decode:
        print(f"whole decodes of {args.src} ({args.decode}), batch {args.batch}, one thread, {args.rounds} rounds; "
              f"default TopK.small = {top_k.small}")
        print(f"{'beam':>4} {'scores':>8} {'torch.topk x stock':>19} {'two passes x stock':>19}")
        beams = [int(b) for b in args.beams.split(",")]
        for beam, sizes, torch_ratio, two_ratio in in_decode(args.decode, args.src, args.batch, beams, args.rounds):
            print(f"{beam:>4} {'/'.join(str(n) for n in sizes):>8} {torch_ratio:>19.3f} {two_ratio:>19.3f}")
        return
    print(f"one thread, |V| = {args.vocab}; default TopK.small = {top_k.small}")
    print(f"{'batch':>5} {'beam':>4} {'scores':>8} {'torch.topk us':>14} {'two-pass us':>12}")
    for batch, beam, n, full, two in alone(args.vocab, args.calls):
        print(f"{batch:>5} {beam:>4} {n:>8} {full:>14.1f} {two:>12.1f}")


if __name__ == "__main__":
    main()
