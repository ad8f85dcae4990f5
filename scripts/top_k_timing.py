"""Time ``torch.topk`` against the two-pass ``top_k`` on one CPU thread, to place ``TopK.small``.

    python scripts/top_k_timing.py [--vocab 8000] [--calls 2000]
    python scripts/top_k_timing.py --decode configs/tvsub-zh-en/translate.yaml --src dev50.zh --beams 2,3,5

For each (batch, beam): the microseconds per call of each, on log-softmax rows of the given vocabulary size
(the beam's candidate scores are ``batch x beam x |V|``). The two-pass path is forced with ``small=0``.

Alone, each path's cost is its call's. Inside a decode it is not: ``--decode`` times whole decodes with either
path against stock's (``in_decode`` says why), which is what ``TopK.small`` is checked against.
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
    parser.add_argument("--decode", metavar="CONFIG", help="time both inside a decode with this translate config")
    parser.add_argument("--src", help="--decode: source lines")
    parser.add_argument("--batch", type=int, default=1, help="--decode: batch size")
    parser.add_argument("--beams", default="3,5", help="--decode: beam sizes")
    parser.add_argument("--rounds", type=int, default=6, help="--decode: rounds")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.decode:
        return in_decode(args)
    torch.manual_seed(0)
    two_pass = TopK(small=0)
    print(f"one thread, |V| = {args.vocab}; default TopK.small = {top_k.small}")
    print(f"{'batch':>5} {'beam':>4} {'scores':>8} {'torch.topk us':>14} {'two-pass us':>12}")
    for batch, beam in ((1, 1), (1, 2), (2, 1), (1, 3), (1, 5), (1, 10), (1, 20), (4, 5), (32, 1), (32, 10)):
        scores = torch.log_softmax(3 * torch.randn(batch, beam * args.vocab), dim=1)
        full = per_call(lambda: torch.topk(scores, beam, dim=1), args.calls)
        two = per_call(lambda: two_pass(scores, beam), args.calls)
        print(f"{batch:>5} {beam:>4} {scores.numel():>8} {full:>14.1f} {two:>12.1f}")


def in_decode(args) -> None:
    """Whole decodes of ``args.src`` with ``-stopping optimal``, its top-k on either path for every problem size
    (``small`` above any problem: ``torch.topk``; 0: the two passes), rounds alternating with stock's decode:
    the median per-round ratio of stock's decode time to each. Whole decodes, because a top-k's cost does not
    end with its call: ``torch.topk`` partially sorts a copy of each row, and that traffic evicts what the
    model's next step would have found in the caches (timed per call inside a decode, ``torch.topk`` is the
    faster at 40k scores, 82 against 125 us; timed as whole decodes, TVsub b = 5, it is 4% the slower)."""
    import statistics

    import torch

    from onmt_optimal.options import SearchConfig
    from onmt_optimal.search import top_k as module
    from onmt_optimal.search.registry import STOPPING_RULES, scoring_rule
    from onmt_optimal.session import Session

    print(f"whole decodes of {args.src} ({args.decode}), batch {args.batch}, one thread, {args.rounds} rounds; "
          f"default TopK.small = {module.top_k.small}")
    print(f"{'beam':>4} {'scores':>8} {'torch.topk x stock':>19} {'two passes x stock':>19}")
    small = module.top_k.small
    try:
        for beam in (int(b) for b in args.beams.split(",")):
            session = Session(["-config", args.decode, "-batch_size", str(args.batch), "-beam_size", str(beam)])
            optimal = SearchConfig(stock=False, rules=[(scoring_rule(), STOPPING_RULES["optimal"]())])
            variants = {"stock": (SearchConfig(stock=True, rules=[]), small), "torch": (optimal, 2 ** 62),
                        "two": (optimal, 0)}
            times = {name: [] for name in variants}
            sizes = set()
            inner = module.TopK.__call__

            def noted(self, scores, k):
                sizes.add(scores.numel())
                return inner(self, scores, k)

            module.TopK.__call__ = noted
            try:
                for r in range(args.rounds + 1):  # the first round warms up
                    names = list(variants)[r % 3:] + list(variants)[:r % 3]
                    for name in names:
                        session.translator.search, limit = variants[name]
                        object.__setattr__(module.top_k, "small", limit)  # (the frozen default instance)
                        start = time.perf_counter()
                        session.infer(args.src)
                        if r:
                            times[name].append(time.perf_counter() - start)
            finally:
                module.TopK.__call__ = inner
            ratio = {name: statistics.median(s / t for s, t in zip(times["stock"], times[name])) for name in times}
            print(f"{beam:>4} {'/'.join(str(n) for n in sorted(sizes)):>8} {ratio['torch']:>19.3f} "
                  f"{ratio['two']:>19.3f}")
    finally:
        object.__setattr__(module.top_k, "small", small)


if __name__ == "__main__":
    main()
