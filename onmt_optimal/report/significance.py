"""Paired significance of BLEU differences with sacrebleu's own paired bootstrap, and length buckets.

``paired_bootstrap`` runs ``sacrebleu.significance.PairedTest`` (``test_type="bs"``: Koehn's paired bootstrap as
in Moses' ``bootstrap-hypothesis-difference-significance.pl``) with a fixed seed and 1000 resamples. sacrebleu
reports, per system, its BLEU, the p-value of its difference to the baseline and a CI of the system's own
score; it does not report a CI of the *difference*. That CI is read off the very resamples sacrebleu's test
draws: ``_paired_bs_test`` seeds ``numpy.random.default_rng(seed)`` for every system and draws one
``(n_samples, n)`` index matrix, so the same call here gives the same indices, and the per-resample BLEU of
baseline and system come from the metric's own sufficient statistics (``_extract_corpus_statistics``,
``_compute_score_from_stats``). Invariant (tested): the resampled system scores reproduce sacrebleu's reported
bootstrap mean and CI exactly, so the difference's CI and sacrebleu's p-value rest on the same resamples. The
95% interval uses sacrebleu's own cut (``estimate_ci``: the n//40-th smallest and largest resample).

One guard: for two identical outputs sacrebleu's test returns its smallest p-value, 1/1001 (every resampled
difference is 0 and the count of differences above the observed 0 is 0); such a pair is reported as
difference 0, interval [0, 0], p = 1 without running the test.

Everything is deterministic for fixed inputs: no clock, seed fixed (``SEED``), one worker.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

SEED = 12345
N_SAMPLES = 1000


def bleu_metric():
    """The metric of every reported number: sacrebleu BLEU, case-insensitive, on the tokenized outputs
    (``onmt_optimal.evaluate.corpus_score``; ``force`` only silences sacrebleu's tokenized-input warning)."""
    from sacrebleu.metrics import BLEU

    return BLEU(lowercase=True, force=True)  # tokenized text on purpose, as the results score it


@dataclass
class Comparison:
    """System minus baseline on one set of sentences; ``p`` is sacrebleu's paired-bootstrap p-value."""

    system: str
    baseline: str
    bleu: float
    baseline_bleu: float
    p: float
    ci_low: float  # 95% interval of the BLEU difference over the bootstrap resamples
    ci_high: float
    mean: float  # sacrebleu's bootstrap mean of the system's BLEU (kept to check the resamples match)
    ci: float  # sacrebleu's half-width of the system's 95% CI
    identical: bool = False  # the two outputs are the same lines (no test run; p = 1)

    @property
    def diff(self) -> float:
        return self.bleu - self.baseline_bleu


def _interval(values: np.ndarray) -> tuple[float, float]:
    """sacrebleu's 95% cut (``significance.estimate_ci``), as a (low, high) interval instead of a half-width."""
    values = np.sort(values)
    n = len(values)
    lo = n // 40
    return float(values[lo]), float(values[n - lo - 1])


def resampled_scores(metric, hyps: list[str], refs: list[list[str]], idxs: np.ndarray) -> np.ndarray:
    stats = np.array(metric._extract_corpus_statistics(hyps, refs), dtype="float32")
    return np.array([metric._compute_score_from_stats(s.sum(0)).score for s in stats[idxs]])


def paired_bootstrap(baseline: tuple[str, list[str]], systems: list[tuple[str, list[str]]],
                     refs: list[list[str]], n_samples: int = N_SAMPLES, seed: int = SEED
                     ) -> tuple[dict[str, Comparison], str]:
    """Each of ``systems`` against ``baseline`` on ``refs`` (a list of reference streams).

    Returns ``({system name: Comparison}, sacrebleu's signature of the test)``."""
    from sacrebleu.significance import PairedTest

    n = len(baseline[1])
    for name, hyps in systems:
        if len(hyps) != n:
            raise ValueError(f"{name}: {len(hyps)} lines but the baseline {baseline[0]} has {n}")
    out = {}
    same = [(name, hyps) for name, hyps in systems if list(hyps) == list(baseline[1])]
    if same:
        score = bleu_metric().corpus_score(list(baseline[1]), refs).score
        for name, _ in same:
            out[name] = Comparison(name, baseline[0], score, score, 1.0, 0.0, 0.0, score, 0.0, True)
    systems = [s for s in systems if s[0] not in out]
    signature = _signature(baseline[1], refs, n_samples, seed)
    if not systems:
        return out, signature
    old = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        test = PairedTest([baseline] + list(systems), {"BLEU": bleu_metric()}, references=refs, test_type="bs",
                          n_samples=n_samples, n_jobs=1)
        signatures, scores = test()
    finally:
        if old is None:
            os.environ.pop("SACREBLEU_SEED", None)
        else:
            os.environ["SACREBLEU_SEED"] = old
    results = scores["BLEU"]
    base = results[0]
    # the same index matrix sacrebleu's _paired_bs_test drew for every system
    idxs = np.random.default_rng(seed).choice(n, size=(n_samples, n), replace=True)
    metric = bleu_metric()
    base_scores = resampled_scores(metric, baseline[1], refs, idxs)
    for (name, hyps), res in zip(systems, results[1:]):
        sys_scores = resampled_scores(metric, hyps, refs, idxs)
        lo, hi = _interval(sys_scores - base_scores)
        out[name] = Comparison(name, baseline[0], float(res.score), float(base.score), float(res.p_value), lo, hi,
                               float(res.mean), float(res.ci))
    assert signatures["BLEU"].format() == signature, (signatures["BLEU"].format(), signature)
    return out, signature


def _signature(hyps: list[str], refs: list[list[str]], n_samples: int, seed: int) -> str:
    """sacrebleu's signature of the paired bootstrap, as ``PairedTest`` builds it (asserted equal there)."""
    metric = bleu_metric()
    metric.corpus_score(list(hyps[:1]), [r[:1] for r in refs])
    sig = metric.get_signature()
    sig.update("seed", str(seed).lower())
    sig.update("bs", n_samples)
    return sig.format()


def length_buckets(lengths: list[int], k: int = 5) -> list[tuple[int, int]]:
    """At most ``k`` contiguous inclusive ranges of ``lengths``, cut at its quantiles (so each holds about
    ``len / k`` values; equal lengths never straddle two ranges). Covers min..max with no gaps."""
    if not lengths:
        return []
    values = sorted(lengths)
    n = len(values)
    cuts = sorted({values[min(n - 1, (n * i) // k)] for i in range(1, k)})
    edges, lo = [], values[0]
    for c in cuts:
        if c > lo:
            edges.append((lo, c - 1))
            lo = c
    edges.append((lo, values[-1]))
    return edges


def in_bucket(lengths: list[int], bucket: tuple[int, int]) -> list[int]:
    """Indices of the sentences whose length falls in the inclusive range ``bucket``."""
    return [i for i, x in enumerate(lengths) if bucket[0] <= x <= bucket[1]]


def subset(lines: list[str], idx: list[int]) -> list[str]:
    return [lines[i] for i in idx]


def corpus_bleu(hyps: list[str], refs: list[list[str]]) -> tuple[float, float]:
    """(BLEU, length ratio sys_len / ref_len), as ``onmt_optimal.evaluate.corpus_score`` computes them."""
    result = bleu_metric().corpus_score(hyps, refs)
    return result.score, result.sys_len / max(result.ref_len, 1)
