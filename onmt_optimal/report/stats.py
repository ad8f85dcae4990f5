"""The per-sentence test outputs and references the paired statistics read, and how a comparison reads.

``load_stats`` gathers ``test_sentences.json``, the outputs ``hyps/test.*.txt`` that ``test_eval.json`` names and
the test references (read from where the JSON says, cleaned as the reproduction cleaned them), or says in one line
what is missing; ``Stats.compare`` is sacrebleu's paired bootstrap between two outputs (``significance``).
"""
from __future__ import annotations

import json
from pathlib import Path

from onmt_optimal.report.results import row_key
from onmt_optimal.report.significance import N_SAMPLES, SEED, corpus_bleu, paired_bootstrap, subset
from onmt_optimal.text import normalize

ALPHA = 0.05  # a difference is "resolved" when sacrebleu's paired-bootstrap p-value is below this
N_SAMPLES_TEXT = f"{N_SAMPLES} resamples, seed {SEED}"
#: the repository root: paths in the JSON meta that do not exist from the working directory are read from here
ROOT = Path(__file__).resolve().parents[2]


class Stats:
    """Per-sentence test outputs, references and sacrebleu's paired bootstrap between any two outputs.

    ``compare(system, baseline)`` is memoized; every comparison is its own ``PairedTest`` with the fixed seed, so
    its p-value does not depend on which other comparisons were asked for."""

    def __init__(self, results: Path, test: dict, sentences: dict, refs: list[list[str]]):
        self.refs = refs
        self.src_tokens = sentences["src_tokens"]
        self.outputs = sentences["outputs"]
        self.hyps = {}
        for row in test["rows"]:
            key = row_key(row)
            if key and key not in self.hyps:
                self.hyps[key] = (results / row["hyp"]).read_text(encoding="utf-8").split("\n")[:len(self.src_tokens)]
        self.signature = ""
        self._memo = {}

    def has(self, *keys) -> bool:
        return all(k in self.hyps for k in keys)

    def compare(self, system: str, baseline: str, idx: list[int] | None = None):
        memo = (system, baseline, None if idx is None else tuple(idx))
        if memo not in self._memo:
            pick = (lambda x: x) if idx is None else (lambda x: subset(x, idx))
            result, sig = paired_bootstrap((baseline, pick(self.hyps[baseline])), [(system, pick(self.hyps[system]))],
                                           [pick(r) for r in self.refs])
            self.signature = self.signature or sig
            self._memo[memo] = result[system]
        return self._memo[memo]

    def bleu(self, key: str, idx: list[int]) -> tuple[float, float]:
        return corpus_bleu(subset(self.hyps[key], idx), [subset(r, idx) for r in self.refs])


def resolve(path: str) -> Path:
    """A path from the JSON meta: as written if it exists from here, else relative to the repository root."""
    p = Path(path)
    return p if p.is_absolute() or p.exists() else ROOT / p


def load_stats(results: Path, test: dict | None) -> tuple["Stats | None", str]:
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
    return Stats(results, test, sentences, refs), ""


def fmt_p(p: float) -> str:
    return f"{p:.3f}"


def fmt_cmp(c) -> str:
    """``+1.09 [+0.49, +1.73]``: the difference and its 95% bootstrap interval."""
    return f"{c.diff:+.2f} [{c.ci_low:+.2f}, {c.ci_high:+.2f}]"


def resolved(c) -> str:
    """How a comparison reads: better / worse when p < ALPHA, else a tie these sentences cannot resolve."""
    if c.identical:
        return "identical outputs"
    if c.p < ALPHA:
        return "better" if c.diff > 0 else "worse"
    return "not resolved"
