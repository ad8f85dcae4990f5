"""The per-sentence test outputs and references the paired statistics read, and how a comparison is written.

``load_stats`` gathers ``test_sentences.json``, the outputs ``hyps/test.*.txt`` that ``test_eval.json`` names and
the test references (read from where the JSON says, cleaned as the reproduction cleaned them), or says in one line
what is missing. ``Stats.compare`` is the paired bootstrap between two outputs (``significance``), memoized, with
one ``Resampler`` per set of sentences so that an output is resampled once per seed. ``Stats.score`` is the one
source of every whole-test-set BLEU and length ratio the report prints (``test_score`` falls back to the JSON's
numbers only where there are no outputs to score).
"""
from __future__ import annotations

import json
from pathlib import Path

from onmt_optimal_lab.paper.report.cells import f2
from onmt_optimal_lab.paper.report.results import row_key
from onmt_optimal_lab.paper.report.significance import (N_SAMPLES, SEEDS, Comparison, Resampler, corpus_bleu, signature,
                                              subset)
from onmt_optimal.tools.text import normalize

#: the repository root: paths in the JSON meta that do not exist from the working directory are read from here
ROOT = Path(__file__).resolve().parents[3]


class Stats:
    """Per-sentence test outputs, references and the paired bootstrap between any two outputs.

    ``compare(system, baseline, idx)`` is memoized and every comparison made is kept (``comparisons``), so the
    report can say which labels, if any, the seeds disagree on."""

    def __init__(self, results: Path, test: dict, sentences: dict, refs: list[list[str]],
                 n_samples: int = N_SAMPLES, seeds: tuple[int, ...] = SEEDS):
        self.refs = refs
        self.src_tokens = sentences["src_tokens"]
        self.outputs = sentences["outputs"]
        self.n_samples, self.seeds = n_samples, tuple(seeds)
        self.hyps = {}
        for row in test["rows"]:
            key = row_key(row)
            if key and key not in self.hyps:
                self.hyps[key] = (results / row["hyp"]).read_text(encoding="utf-8").split("\n")[:len(self.src_tokens)]
        self.signature = signature(refs, n_samples, self.seeds[0])
        self._resamplers: dict = {}
        self._memo: dict = {}
        self._scores: dict = {}

    def has(self, *keys) -> bool:
        return all(k in self.hyps for k in keys)

    def _resampler(self, idx: tuple | None) -> Resampler:
        if idx not in self._resamplers:
            refs = self.refs if idx is None else [subset(r, list(idx)) for r in self.refs]
            self._resamplers[idx] = Resampler(refs, self.n_samples, self.seeds)
        return self._resamplers[idx]

    def compare(self, system: str, baseline: str, idx: list[int] | None = None) -> Comparison:
        key = None if idx is None else tuple(idx)
        memo = (system, baseline, key)
        if memo not in self._memo:
            r = self._resampler(key)
            for name in (system, baseline):
                r.add(name, self.hyps[name] if key is None else subset(self.hyps[name], list(key)))
            self._memo[memo] = r.compare(system, baseline)
        return self._memo[memo]

    @property
    def comparisons(self) -> list[Comparison]:
        """Every comparison made so far, in the order first asked for."""
        return list(self._memo.values())

    def with_sizes(self, wanted: list[Comparison]) -> list[tuple[Comparison, int | None]]:
        """(comparison, its number of sentences, None for the whole test set) of each of ``wanted``."""
        sizes = {id(c): None if key is None else len(key) for (_, _, key), c in self._memo.items()}
        return [(c, sizes[id(c)]) for c in wanted]

    def score(self, key: str) -> tuple[float, float]:
        """(BLEU, length ratio) of one output on the whole test set."""
        if key not in self._scores:
            self._scores[key] = corpus_bleu(self.hyps[key], self.refs)
        return self._scores[key]

    def bleu(self, key: str, idx: list[int]) -> tuple[float, float]:
        return corpus_bleu(subset(self.hyps[key], idx), [subset(r, idx) for r in self.refs])


def test_score(row: dict, stats: Stats | None) -> tuple[float | None, float | None]:
    """(test BLEU, test length ratio) of a test row: scored from its output where the statistics have it, else
    the JSON's (rounded) numbers."""
    key = row_key(row)
    if stats is not None and key in stats.hyps:
        return stats.score(key)
    return row.get("test_bleu"), row.get("test_length_ratio")


def resolve(path: str) -> Path:
    """A path from the JSON meta: as written if it exists from here, else relative to the repository root."""
    p = Path(path)
    return p if p.is_absolute() or p.exists() else ROOT / p


def load_stats(results: Path, test: dict | None, n_samples: int = N_SAMPLES,
               seeds: tuple[int, ...] = SEEDS) -> tuple["Stats | None", str]:
    """The statistics' inputs, or (None, the one line saying what is missing)."""
    if not test or not any(r.get("hyp") for r in test.get("rows", [])):
        return None, "test_eval.json names no test outputs (made before the statistics existed)"
    sentences_path = results / "test_sentences.json"
    if not sentences_path.exists():
        return None, f"{sentences_path} is missing"
    missing = [r["hyp"] for r in test["rows"] if r.get("hyp") and not (results / r["hyp"]).exists()]
    if missing:
        return None, f"test outputs missing under {results}: {', '.join(missing)}"
    meta = test["meta"]
    ref_paths = [resolve(r) for r in meta["test_refs"]]
    absent = [str(r) for r in ref_paths if not r.exists()]
    if absent:
        return None, f"test references not found: {', '.join(absent)}"
    un = bool(meta.get("unescape_moses", False))
    refs = [[normalize(line, un) for line in r.read_text(encoding="utf-8").splitlines()] for r in ref_paths]
    sentences = json.loads(sentences_path.read_text())
    n = len(sentences["src_tokens"])
    bad = [str(p) for p, r in zip(ref_paths, refs) if len(r) != n]
    if bad:
        return None, f"references with a line count other than the test set's {n}: {', '.join(bad)}"
    return Stats(results, test, sentences, refs, n_samples, seeds), ""


def fmt_p(p: float) -> str:
    """A p-value to 3 decimals ("< 0.001" below that: with 10,000 resamples the smallest is 1/10001)."""
    return "< 0.001" if p < 0.0005 else f"{p:.3f}"


def fmt_cmp(c: Comparison) -> str:
    """``+1.09 [+0.49, +1.73]``: the difference and its 95% bootstrap interval (first seed)."""
    return f"{f2(c.diff, signed=True)} [{f2(c.ci_low, signed=True)}, {f2(c.ci_high, signed=True)}]"


def p_text(p: float) -> str:
    """``p = 0.048`` or ``p < 0.001``."""
    text = fmt_p(p)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def fmt_test(c: Comparison) -> str:
    """``+1.09 [+0.49, +1.73], p = 0.001``."""
    return f"{fmt_cmp(c)}, {p_text(c.p)}"
