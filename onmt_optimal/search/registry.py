"""The one registry of rules: what each name means, and the one function that builds a decode's rules.

* ``STOPPING_RULES``: ``-stopping`` values -> stopping rules;
* ``SCORING_RULES`` (``scoring``'s registry): the scores options select in place of the toolkit's own, by name;
* ``rules(...)``: the rules (``state.Rule``: scoring, stopping) a set of validated option values asks for, for
  every toolkit (its own score and its own stopping rules, where it has them, given by the caller);
* ``Decoder``: a named rule of the paper's comparison (Section 5), and
  ``paper_decoders(rewards)`` the comparison itself, as the sweep and the reproduction run it.
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence
from dataclasses import dataclass

from onmt_optimal.search.scoring import SCORING_RULES, BoundedWordReward, ScoringRule, StockScore, build
from onmt_optimal.search.state import Rule
from onmt_optimal.search.stopping import STOPPING_RULES, StoppingRule

__all__ = ["STOPPING_RULES", "SCORING_RULES", "SCORES", "Decoder", "opennmt_score", "paper_decoders", "rules"]

#: the scores a ``Decoder`` names
SCORES = ("logprob", "avg", "wu", "bounded_reward", "word_reward", "bp_norm")


def rules(stopping: str | Sequence[str], own_score: Callable[[], ScoringRule], /,
          own_stopping: Mapping[str, Callable[[], StoppingRule]] | None = None, **values) -> tuple[Rule, ...]:
    """The rules validated option values ask for: one ``Rule`` (scoring, stopping) per name in ``stopping`` (a name
    or several, sharing one beam and one score). The score is the first rule of ``scoring.SCORING_RULES`` that the
    option ``values`` (by the options' names; one not given is absent or None) select (``scoring.build``), else
    the toolkit's own (``own_score()``). A stopping name is the toolkit's own rule where ``own_stopping`` has it,
    else ``STOPPING_RULES``'s."""
    score = build(values, own_score)
    own_stopping = own_stopping or {}
    names = (stopping,) if isinstance(stopping, str) else tuple(stopping)
    return tuple(Rule(score, own_stopping.get(name, STOPPING_RULES.get(name))()) for name in names)


def opennmt_score(length_penalty: str = "none", alpha: float = 1.0, coverage: bool = False,
                  ratio: float | None = None, bound: str = "exact", own: bool = True) -> ScoringRule:
    """OpenNMT-py's (and eole's) own score under ``-length_penalty``/``-alpha`` and a coverage penalty: raw
    log p under ``none`` (Sec. 3; with a ``-length_ratio``, reported with its target length ``l``), else
    ``StockScore`` (``own``: read from the beam's own ranking)."""
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

    def rule(self, ratio: float | None, alpha: float = 1.0) -> Rule:
        """Its rule (scoring, stopping) at length ratio ``ratio``, evaluated on a shared beam (``own=False``:
        its score is computed from the items' log-probabilities, not read from the beam's own ranking); a
        registered rule's score is asked for by the options of its ``setting``, as a user's options ask for it."""
        if self.score not in SCORES:
            raise ValueError(f"unknown score {self.score!r}; known: {', '.join(SCORES)}")
        values = SCORING_RULES[self.score].setting(self.reward, ratio) if self.score in SCORING_RULES else {}
        penalty = self.score if self.score in ("avg", "wu") else "none"
        return rules(self.stopping, lambda: StockScore(penalty, alpha, own=False), **values)[0]

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
