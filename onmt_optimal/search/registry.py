"""The one registry of rules: what each name means, for the command line, the sweep, the benchmark and the tests.

* ``STOPPING_RULES``: ``-stopping`` values -> stopping rules;
* ``scoring_rule(...)``: the scoring rule a set of option values asks for (``onmt_translate``'s flags);
* ``Decoder``: a named (scoring, stopping) pair of the paper's comparison (Section 5), and
  ``paper_decoders(rewards)`` the comparison itself, as the sweep and the reproduction run it.
"""
from __future__ import annotations

from dataclasses import dataclass

from onmt_optimal.search.scoring import BoundedWordReward, BPNorm, ScoringRule, StockScore, WordReward
from onmt_optimal.search.stopping import STOPPING_RULES, StoppingRule

__all__ = ["STOPPING_RULES", "SCORES", "Decoder", "paper_decoders", "scoring_rule"]

#: the scores a ``Decoder`` names
SCORES = ("logprob", "avg", "wu", "bounded_reward", "word_reward", "bp_norm")


def scoring_rule(length_penalty: str = "none", alpha: float = 1.0, coverage: bool = False, reward: float = 0.0,
                 ratio: float | None = None, bp_norm: bool = False, bound: str = "exact",
                 own: bool = True) -> ScoringRule:
    """The scoring rule of ``onmt_translate``'s options (already validated): ``-bp_norm`` (BP-norm),
    ``-length_reward R`` with ``-length_ratio`` (the bounded reward, Sec. 4) or without (the unbounded word
    reward), else OpenNMT-py's own score under ``-length_penalty``/``-alpha`` (raw log p under ``none``, Sec. 3;
    with a ``-length_ratio``, reported with its target length ``l``)."""
    if bp_norm:
        return BPNorm(ratio, bound)
    if reward > 0:
        return BoundedWordReward(reward, ratio) if ratio is not None else WordReward(reward)
    if ratio is not None and length_penalty == "none" and not coverage:
        return BoundedWordReward(0.0, ratio)  # raw log p; l is reported in the statistics
    return StockScore(length_penalty, alpha, coverage, bound, ratio, own)


@dataclass(frozen=True)
class Decoder:
    """A decoder of the paper's comparison. ``family`` names it in tables; ``reward`` is r where it has one."""

    family: str
    stopping: str
    score: str  # one of SCORES
    reward: float | None = None

    @property
    def shrinks(self) -> bool:
        return STOPPING_RULES[self.stopping].shrinks

    def rule(self, ratio: float | None, alpha: float = 1.0) -> tuple[ScoringRule, StoppingRule]:
        """Its (scoring, stopping) pair at length ratio ``ratio``, evaluated on a shared beam (``own=False``:
        its score is computed from the items' log-probabilities, not read from the beam's own ranking)."""
        if self.score in ("logprob", "avg", "wu"):
            scoring = StockScore("none" if self.score == "logprob" else self.score, alpha, own=False)
        elif self.score == "bounded_reward":
            scoring = BoundedWordReward(self.reward, ratio)
        elif self.score == "word_reward":
            scoring = WordReward(self.reward)
        elif self.score == "bp_norm":
            scoring = BPNorm(ratio)
        else:
            raise ValueError(f"unknown score {self.score!r}; known: {', '.join(SCORES)}")
        return scoring, STOPPING_RULES[self.stopping]()

    def label(self) -> str:
        return self.family if self.reward is None else f"{self.family} r={self.reward:g}"


def paper_decoders(rewards: list[float]) -> list[Decoder]:
    """The paper's Section 5 comparison, with r over ``rewards`` where a decoder has a reward: OpenNMT-py's
    rule on log p and with length normalization; optimal stopping on log p and with the bounded reward; the
    shrinking beam with normalization (baseline 2a) and with the per-word reward (2b)."""
    positive = [r for r in rewards if r > 0]
    return (
        [Decoder("default", "default", "logprob"), Decoder("default_avg", "default", "avg"),
         Decoder("optimal", "optimal", "logprob")]
        + [Decoder("optimal_reward", "optimal", "bounded_reward", r) for r in positive]
        + [Decoder("shrinking_norm", "shrinking", "avg")]
        + [Decoder("shrinking_reward", "shrinking", "word_reward", r) for r in positive]
    )
