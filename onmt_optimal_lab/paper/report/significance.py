"""Paired significance of BLEU differences: sacrebleu's paired bootstrap, its interval of the difference, the one
rule that labels a difference, and length buckets.

The test is sacrebleu's ``PairedTest`` with ``test_type="bs"`` (Koehn's paired bootstrap, as Moses'
``bootstrap-hypothesis-difference-significance.pl``), computed here on the very resamples it draws, so that every
comparison of one output set shares them and the interval of the *difference* (which sacrebleu does not report)
comes from the same draws as the p-value. For a seed, ``_paired_bs_test`` draws one ``(n_samples, n)`` index
matrix with ``numpy.random.default_rng(seed).choice(n, size=(n_samples, n))``, sums each resample's sufficient
statistics (``_extract_corpus_statistics``, as float32: integer counts, so every sum is exact) and scores them
with ``_compute_score_from_stats``; its p-value is ``_compute_p_value`` of the centred resampled |Δ| against
the observed |Δ|, and its CI of the system ``estimate_ci``. ``Resampler`` does the same per output and keeps the
resampled scores, so an output is resampled once per seed however many comparisons it enters. Invariant
(tested): p-value, bootstrap mean and CI equal those of sacrebleu's own ``PairedTest`` with the same seed and
number of resamples. The 95% interval of the difference uses sacrebleu's cut (the n//40-th smallest and largest
resampled difference).

One rule labels a difference (``label``): *better* (or *worse*) only when, under every seed of ``SEEDS``, the
p-value is below ``ALPHA`` and the 95% interval lies above (below) 0, both as printed (p to 3 decimals, the
interval to 2: a label never contradicts the figures beside it); *not resolved* when under no seed; and
*borderline* when under some seeds only. The figures shown are those of the first seed (sacrebleu's default
12345); the other seeds only check that no label depends on the seed.

One guard: for two identical outputs sacrebleu's test returns its smallest p-value, 1/(n_samples + 1) (every
resampled difference is 0, none above the observed 0); such a pair is reported as difference 0, interval [0, 0],
p = 1, without resampling.

Deterministic for fixed inputs: no clock, fixed seeds, one process.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from onmt_optimal_lab.paper.report.cells import printed

SEEDS = (12345, 1, 2, 3, 4)  # 12345 (sacrebleu's default) gives the figures; all of them decide the labels
N_SAMPLES = 10000
ALPHA = 0.05
CHUNK = 250  # resamples summed at once (bounds memory: CHUNK x sentences x statistics float32)


def bleu_metric():
    """The metric of every reported number: sacrebleu BLEU, case-insensitive, on the tokenized outputs
    (``onmt_optimal.tools.evaluate.corpus_score``; ``force`` only silences sacrebleu's tokenized-input warning)."""
    from sacrebleu.metrics import BLEU

    return BLEU(lowercase=True, force=True)  # tokenized text on purpose, as the results score it


@dataclass(frozen=True)
class Draw:
    """One seed's paired bootstrap of a system against a baseline."""

    seed: int
    p: float  # sacrebleu's p-value
    ci_low: float  # 95% interval of the BLEU difference (system minus baseline) over the resamples
    ci_high: float
    mean: float  # sacrebleu's bootstrap mean of the system's BLEU
    ci: float  # sacrebleu's half-width of the system's 95% CI

    @property
    def direction(self) -> int:
        """+1 (-1) when p < ALPHA and the interval lies above (below) 0, each as printed (p to 3 decimals, the
        interval to 2), so that a label can be checked against the figures beside it; 0 otherwise."""
        if printed(self.p, 3) >= ALPHA:
            return 0
        return 1 if printed(self.ci_low, 2) > 0 else -1 if printed(self.ci_high, 2) < 0 else 0


def _shown(field: str) -> property:
    """A ``Comparison``'s figure that is its shown draw's (the first seed's) ``field``."""
    return property(lambda self: getattr(self.shown, field), doc=f"the shown draw's ``{field}``")


@dataclass(frozen=True)
class Comparison:
    """System minus baseline on one set of sentences, under each seed of ``SEEDS`` (``draws``, the first shown)."""

    system: str
    baseline: str
    bleu: float
    baseline_bleu: float
    draws: tuple[Draw, ...]
    identical: bool = False  # the two outputs are the same lines (no resampling; p = 1)

    @property
    def diff(self) -> float:
        return self.bleu - self.baseline_bleu

    @property
    def shown(self) -> Draw:
        return self.draws[0]

    p = _shown("p")
    ci_low = _shown("ci_low")
    ci_high = _shown("ci_high")

    @property
    def resolved_under(self) -> int:
        """How many seeds resolve the difference in the direction of the first seed's interval (0 if none)."""
        signs = [d.direction for d in self.draws]
        return max(signs.count(1), signs.count(-1))

    @property
    def better(self) -> bool:
        return not self.identical and all(d.direction == 1 for d in self.draws)

    @property
    def worse(self) -> bool:
        return not self.identical and all(d.direction == -1 for d in self.draws)


def label(c: Comparison) -> str:
    """The rule, stated once: better / worse when every seed resolves it (p < ALPHA and the 95% interval on one side
    of 0), not resolved when none does, borderline otherwise."""
    if c.identical:
        return "identical outputs"
    if c.better:
        return "better"
    if c.worse:
        return "worse"
    k = c.resolved_under
    return "not resolved" if k == 0 else f"borderline ({k} of {len(c.draws)} seeds)"


def _interval(values: np.ndarray) -> tuple[float, float]:
    """sacrebleu's 95% cut (``significance.estimate_ci``), as a (low, high) interval instead of a half-width."""
    values = np.sort(values)
    lo = len(values) // 40
    return float(values[lo]), float(values[len(values) - lo - 1])


class Resampler:
    """sacrebleu's paired bootstrap on one set of references: per output its sufficient statistics, and per
    (output, seed) the BLEU of each of ``n_samples`` resamples, drawn as ``_paired_bs_test`` draws them."""

    def __init__(self, refs: list[list[str]], n_samples: int = N_SAMPLES, seeds: tuple[int, ...] = SEEDS):
        self.metric = bleu_metric()
        self.refs = refs
        self.n = len(refs[0])
        self.n_samples = n_samples
        self.seeds = tuple(seeds)
        self._stats: dict[str, np.ndarray] = {}
        self._scores: dict[tuple[str, int], np.ndarray] = {}
        self._hyps: dict[str, list[str]] = {}
        self._bleu: dict[str, float] = {}

    def add(self, name: str, hyps: list[str]) -> None:
        if len(hyps) != self.n:
            raise ValueError(f"{name}: {len(hyps)} lines but the references have {self.n}")
        if name not in self._hyps:
            self._hyps[name] = list(hyps)
            stats = self.metric._extract_corpus_statistics(list(hyps), self.refs)
            self._bleu[name] = self.metric._aggregate_and_compute(stats).score  # as sacrebleu scores the output
            self._stats[name] = np.array(stats, dtype="float32")  # as sacrebleu resamples it

    def bleu(self, name: str) -> float:
        return self._bleu[name]

    def scores(self, name: str, seed: int) -> np.ndarray:
        if (name, seed) not in self._scores:
            idxs = np.random.default_rng(seed).choice(self.n, size=(self.n_samples, self.n), replace=True)
            stats, out = self._stats[name], []
            for start in range(0, self.n_samples, CHUNK):
                sums = stats[idxs[start:start + CHUNK]].sum(1)
                out += [self.metric._compute_score_from_stats(s).score for s in sums]
            self._scores[(name, seed)] = np.array(out)
        return self._scores[(name, seed)]

    def compare(self, system: str, baseline: str) -> Comparison:
        from sacrebleu.significance import _compute_p_value, estimate_ci

        bleu, base = self.bleu(system), self.bleu(baseline)
        if self._hyps[system] == self._hyps[baseline]:
            return Comparison(system, baseline, bleu, base, tuple(Draw(s, 1.0, 0.0, 0.0, bleu, 0.0)
                                                                  for s in self.seeds), True)
        draws = []
        for seed in self.seeds:
            s_sys, s_base = self.scores(system, seed), self.scores(baseline, seed)
            sample = np.abs(s_sys - s_base)
            p = _compute_p_value(sample - sample.mean(), abs(base - bleu))
            lo, hi = _interval(s_sys - s_base)
            mean, ci = estimate_ci(s_sys)
            draws.append(Draw(seed, float(p), lo, hi, float(mean), float(ci)))
        return Comparison(system, baseline, bleu, base, tuple(draws))


def paired_bootstrap(baseline: tuple[str, list[str]], systems: list[tuple[str, list[str]]],
                     refs: list[list[str]], n_samples: int = N_SAMPLES, seeds: tuple[int, ...] = SEEDS
                     ) -> dict[str, Comparison]:
    """Each of ``systems`` against ``baseline`` on ``refs`` (a list of reference streams): {system name: result}."""
    r = Resampler(refs, n_samples, seeds)
    for name, hyps in [baseline] + list(systems):
        r.add(name, hyps)
    return {name: r.compare(name, baseline[0]) for name, _ in systems}


def signature(refs: list[list[str]], n_samples: int = N_SAMPLES, seed: int = SEEDS[0]) -> str:
    """sacrebleu's signature of the paired bootstrap, as ``PairedTest`` builds it (tested equal)."""
    metric = bleu_metric()
    metric.corpus_score([refs[0][0]], [r[:1] for r in refs])
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
    """(BLEU, length ratio sys_len / ref_len), as ``onmt_optimal.tools.evaluate.corpus_score`` computes them."""
    result = bleu_metric().corpus_score(hyps, refs)
    return result.score, result.sys_len / max(result.ref_len, 1)
