"""Scoring rules: what a completed hypothesis scores, and the most any continuation of a live prefix can score.

A scoring rule answers two questions for every item of the beam at decoding step ``t`` (``t`` counts the
tokens generated so far, this step's token included; ``T`` is the last step, at which every live item is
finished by force):

* ``final(view)``: the score of the hypothesis if it ends now (it emitted EOS, or ``t == T``);
* ``bound(view)``: an *admissible* upper bound on ``final`` of every hypothesis that extends the item and
  ends at some step in ``t+1 .. T``.

Invariant every rule must keep (the property tests check it on every expansion): no descendant of a live
item ever has a final score above that item's bound. Given it, the optimality certificate of Huang, Zhao
& Ma (2017), Eq. 2 and Eq. 5 — stop once the best completed score is >= the best bound in the beam — returns
exactly the best hypothesis the same beam would complete if it ran on to ``T``.

Lengths. ``|y|`` is the number of output tokens *excluding* EOS (the words a user sees): a hypothesis whose
EOS is the ``t``-th generated token has ``|y| = t - 1``; one cut at ``T`` without EOS has ``|y| = T``.
``|x|`` is the source length in the tokens the model reads (after transforms such as SentencePiece).
Scores are float32 tensors, as OpenNMT-py computes them; every bound is built with the same operations as
the score it bounds, so that rounding (which is monotone) cannot break admissibility.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class StepView:
    """What a scoring rule may look at for the ``(B, beam)`` items of one decoding step."""

    log_prob: torch.Tensor  # (B, beam) float: cumulative log p(y_<=t | x) of each item
    stock_score: torch.Tensor  # (B, beam) float: OpenNMT-py's own score of the item if it ends now
    out_len: torch.Tensor  # (B, beam) long: |y| of the item if it ends now (EOS excluded)
    src_len: torch.Tensor  # (B,) float: |x|
    step: int  # t
    max_length: int  # T


class ScoringRule:
    """Base class: a rule is a pair (final score, admissible upper bound)."""

    name = "abstract"
    #: True when ``bound`` is a proof, so the certificate may stop on it.
    admissible = True

    def final(self, view: StepView) -> torch.Tensor:
        raise NotImplementedError

    def bound(self, view: StepView) -> torch.Tensor:
        raise NotImplementedError

    def target_length(self, src_len: torch.Tensor) -> torch.Tensor | None:
        """The length ``l`` the rule rewards up to, if it has one (reported in the statistics)."""
        return None


class StockScore(ScoringRule):
    """OpenNMT-py's own score: ``log p(y|x) / lp(n)`` with its ``-length_penalty`` (``none``, ``avg``, ``wu``).

    ``lp(n)`` is OpenNMT-py's penalty of a hypothesis of ``n`` tokens counting BOS and EOS, i.e. ``n = t + 1``
    for one that ends at step ``t``; ``lp = 1`` for ``none`` (the paper's Section 3 score). The final score is
    exactly what stock beam search computes (``topk_scores``), so default search stays byte-identical.

    Bound (``none``): ``log p`` itself, since log-probabilities only fall as a prefix grows (paper, Theorem 1).
    Bound (``avg``/``wu``): a descendant ending at ``t' in t+1..T`` scores ``log p' / lp(t'+1)`` with
    ``log p' <= log p <= 0``; dividing a non-positive number by the largest penalty any such ``t'`` can have
    gives the largest value, so ``bound = log p / max(lp(t+2), lp(T+1))``. It is sound but loose (it looks as
    far as ``max_length``), so normalized scores stop late. A coverage penalty can raise a score as a
    hypothesis grows, so no bound exists for it: ``admissible`` is False then.
    """

    def __init__(self, global_scorer):
        self.scorer = global_scorer
        self.penalty = global_scorer.length_penalty
        self.alpha = global_scorer.alpha
        self.admissible = not global_scorer.has_cov_pen
        self.normalized = global_scorer.has_len_pen
        self.name = "logprob" if not self.normalized else "normalized"

    def final(self, view: StepView) -> torch.Tensor:
        return view.stock_score

    def bound(self, view: StepView) -> torch.Tensor:
        if not self.normalized:
            return view.log_prob
        largest = max(
            self.penalty(view.step + 2, alpha=self.alpha),
            self.penalty(view.max_length + 1, alpha=self.alpha),
        )
        return view.log_prob / largest


class BoundedWordReward(ScoringRule):
    """Section 4's bounded length reward: ``score~(y) = log p(y|x) + r * min(l, |y|)`` with ``l = ratio * |x|``.

    Bound: any descendant has ``log p' <= log p`` and ``|y'| <= T``, so it scores at most
    ``log p + r * min(l, T)``. Where ``l <= T`` this is the paper's simplified criterion (Eq. 5,
    ``score(B_i,1) + r*l``); where ``l > T`` it is tighter and still admissible. With ``r = 0`` the rule is the
    raw log-probability of Section 3. The beam itself is unchanged: all items of a step share one length, so
    the reward never reorders them.
    """

    name = "bounded_reward"

    def __init__(self, reward: float, ratio: float):
        if reward < 0:
            raise ValueError("the length reward must be >= 0")
        if ratio <= 0:
            raise ValueError("the length ratio must be > 0")
        self.reward = float(reward)
        self.ratio = float(ratio)

    def target_length(self, src_len: torch.Tensor) -> torch.Tensor:
        return src_len * self.ratio

    def final(self, view: StepView) -> torch.Tensor:
        target = self.target_length(view.src_len).unsqueeze(1)
        return view.log_prob + self.reward * torch.minimum(target, view.out_len.to(target.dtype))

    def bound(self, view: StepView) -> torch.Tensor:
        target = self.target_length(view.src_len).unsqueeze(1)
        return view.log_prob + self.reward * target.clamp(max=float(view.max_length))
