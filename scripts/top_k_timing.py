"""Time ``torch.topk`` against the two-pass ``top_k`` on one CPU thread, to place ``TopK.small``.

    python scripts/top_k_timing.py [--vocab 8000] [--calls 2000]
    python scripts/top_k_timing.py --decode configs/tvsub-zh-en/translate.yaml --src DEV --batch 1 --beams 5,10

For each (batch, beam): the microseconds per call of each, on log-softmax rows of the given vocabulary size
(the beam's candidate scores are ``batch x beam x |V|``). The two-pass path is forced with ``small=0``.

In isolation each tensor operation costs a few microseconds; inside a decode, between the model's steps, the
same operation costs several times more (caches and predictors hold the model's work), and the two passes are
seven operations where ``torch.topk`` is one. ``--decode`` therefore times both on the live scores of a real
decode (``-stopping optimal``), each call first on every other step so that neither finds the scores warmed by
the other, and prints the medians: what ``TopK.small`` is set from.
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
    parser.add_argument("--beams", default="5,10", help="--decode: beam sizes")
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
    import statistics

    import torch

    from onmt_optimal.options import SearchConfig
    from onmt_optimal.search import top_k as module
    from onmt_optimal.search.registry import STOPPING_RULES, scoring_rule
    from onmt_optimal.session import Session

    two_pass, inner = module.TopK(small=0), module.TopK.__call__
    print(f"inside a decode of {args.src} ({args.decode}), batch {args.batch}, one thread; "
          f"default TopK.small = {module.top_k.small}")
    print(f"{'beam':>4} {'scores':>8} {'torch.topk us':>14} {'two-pass us':>12} {'calls':>6}")
    for beam in (int(b) for b in args.beams.split(",")):
        session = Session(["-config", args.decode, "-batch_size", str(args.batch), "-beam_size", str(beam)])
        session.translator.search = SearchConfig(stock=False, rules=[(scoring_rule(), STOPPING_RULES["optimal"]())])
        times, sizes = {"torch": [], "two": []}, set()

        def timed(self, scores, k):
            sizes.add(scores.numel())
            runs = [("torch", lambda: torch.topk(scores, k, dim=1)), ("two", lambda: inner(two_pass, scores, k))]
            for name, run in (runs if len(times["two"]) % 2 else runs[::-1]):
                start = time.perf_counter()
                run()
                times[name].append(1e6 * (time.perf_counter() - start))
            return inner(self, scores, k)

        module.TopK.__call__ = timed
        try:
            session.infer(args.src)
        finally:
            module.TopK.__call__ = inner
        print(f"{beam:>4} {'/'.join(str(n) for n in sorted(sizes)):>8} {statistics.median(times['torch']):>14.1f} "
              f"{statistics.median(times['two']):>12.1f} {len(times['two']):>6}")


if __name__ == "__main__":
    main()
