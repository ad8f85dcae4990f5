"""The two paths of the search's top-k (``search.top_k``), timed on one CPU thread, to place ``TopK.small``.

``alone``: each path's own call, ``torch.topk`` against the two passes (forced with ``small=0``), on log-softmax
rows of ``batch x beam x |V|`` scores. ``in_decode``: whole decodes with ``-stopping optimal``, its top-k on
either path for every problem size (``small`` above any problem: ``torch.topk``; 0: the two passes), rounds
alternating with stock's decode. Whole decodes, because a top-k's cost does not end with its call:
``torch.topk`` partially sorts a copy of each row, and that traffic evicts what the model's next step would have
found in the caches, so a path faster alone can be the slower inside a decode (``benchmarks/NOTES.md``).
"""
from __future__ import annotations

import statistics
import time

import torch

from onmt_optimal_lab.bench.variants import search
from onmt_optimal.search import top_k as module

#: the (batch, beam) problems ``alone`` times
SIZES = ((1, 1), (1, 2), (2, 1), (1, 3), (1, 5), (1, 10), (1, 20), (4, 5), (32, 1), (32, 10))


def per_call(f, calls: int) -> float:
    """Microseconds per call of ``f``, after 50 untimed calls."""
    for _ in range(50):
        f()
    start = time.perf_counter()
    for _ in range(calls):
        f()
    return 1e6 * (time.perf_counter() - start) / calls


def alone(vocab: int, calls: int) -> list[tuple[int, int, int, float, float]]:
    """(batch, beam, scores, torch.topk us, two-pass us) for each of ``SIZES`` (seeded scores)."""
    torch.manual_seed(0)
    two_pass = module.TopK(small=0)
    rows = []
    for batch, beam in SIZES:
        scores = torch.log_softmax(3 * torch.randn(batch, beam * vocab), dim=1)
        full = per_call(lambda: torch.topk(scores, beam, dim=1), calls)
        two = per_call(lambda: two_pass(scores, beam), calls)
        rows.append((batch, beam, scores.numel(), full, two))
    return rows


def in_decode(config: str, src: str, batch: int, beams: list[int], rounds: int):
    """For each beam size: (beam, the problem sizes met, the median per-round ratio of stock's decode time to
    ``torch.topk``'s, the same for the two passes). The first round warms up; the variants' order rotates."""
    from onmt_optimal.opennmt.session import Session

    small = module.top_k.small
    inner = module.TopK.__call__
    try:
        for beam in beams:
            session = Session(["-config", config, "-batch_size", str(batch), "-beam_size", str(beam)])
            optimal = search("optimal")
            variants = {"stock": (search("stock"), small), "torch": (optimal, 2 ** 62), "two": (optimal, 0)}
            times = {name: [] for name in variants}
            sizes = set()

            def noted(self, scores, k):
                sizes.add(scores.numel())
                return inner(self, scores, k)

            module.TopK.__call__ = noted
            for r in range(rounds + 1):
                names = list(variants)[r % 3:] + list(variants)[:r % 3]
                for name in names:
                    session.translator.search, limit = variants[name]
                    object.__setattr__(module.top_k, "small", limit)  # (the frozen default instance)
                    start = time.perf_counter()
                    session.infer(src)
                    if r:
                        times[name].append(time.perf_counter() - start)
            module.TopK.__call__ = inner
            ratio = {name: statistics.median(s / t for s, t in zip(times["stock"], times[name])) for name in times}
            yield beam, sorted(sizes), ratio["torch"], ratio["two"]
    finally:
        module.TopK.__call__ = inner
        object.__setattr__(module.top_k, "small", small)
