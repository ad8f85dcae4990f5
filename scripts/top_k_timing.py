"""Time ``torch.topk`` against the two-pass ``top_k`` on one CPU thread, to place ``TopK.small``.

    python scripts/top_k_timing.py [--vocab 8000] [--calls 2000]

For each (batch, beam): the microseconds per call of each, on log-softmax rows of the given vocabulary size
(the beam's candidate scores are ``batch x beam x |V|``). The two-pass path is forced with ``small=0``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def per_call(f, calls: int) -> float:
    for _ in range(50):
        f()
    start = time.perf_counter()
    for _ in range(calls):
        f()
    return 1e6 * (time.perf_counter() - start) / calls


def main(argv=None) -> None:
    import torch

    from onmt_optimal.search.top_k import TopK, top_k

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    two_pass = TopK(small=0)
    print(f"one thread, |V| = {args.vocab}; default TopK.small = {top_k.small}")
    print(f"{'batch':>5} {'beam':>4} {'scores':>8} {'torch.topk us':>14} {'two-pass us':>12}")
    for batch, beam in ((1, 1), (1, 2), (2, 1), (1, 3), (1, 5), (1, 10), (1, 20), (4, 5), (32, 1), (32, 10)):
        scores = torch.log_softmax(3 * torch.randn(batch, beam * args.vocab), dim=1)
        full = per_call(lambda: torch.topk(scores, beam, dim=1), args.calls)
        two = per_call(lambda: two_pass(scores, beam), args.calls)
        print(f"{batch:>5} {beam:>4} {scores.numel():>8} {full:>14.1f} {two:>12.1f}")


if __name__ == "__main__":
    main()
