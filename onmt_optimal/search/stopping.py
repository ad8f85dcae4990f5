"""Stopping rules: when an example may leave the beam search.

A stopping rule sees, per example, a summary of the search so far (``StopView``) and says which examples
are done. It never looks at sequences and never changes the beam: the beam's contents are the same under
every rule, only where the search stops (and so which completed hypotheses it has seen) differs. Reaching
``max_length`` ends every example whatever the rule says; that is the search loop's business, not the rule's.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cached_property

import torch

from onmt_optimal.search.scoring import StepView


class StopReason(str, Enum):
    """Why the search stopped with an example, as the statistics name it. A ``str``: it equals, prints and
    serializes (JSON) as its value."""

    CERTIFICATE = "certificate"  # the certificate held on admissible bounds (Eq. 2; Eq. 5 with the reward)
    PREDICTED_BOUND = "predicted_bound"  # the certificate's test held on a heuristic bound: no proof
    TOP_FINISHED = "top_finished"  # OpenNMT-py's rule: the top item of the beam completed
    ALL_FINISHED = "all_finished"  # no live item was left
    MAX_LENGTH = "max_length"  # the last step, ``T``, ended every live item
    EMPTY_SOURCE = "empty_source"  # an empty line, answered by the adapters without a search
    EARLY_STOPPING = "early_stopping"  # transformers' own rule (``early_stopping``) held

    __str__ = str.__str__
    __format__ = str.__format__


@dataclass
class StopView:
    """Per-example facts after the completed hypotheses of this step have been collected, as ``(B, 1)`` columns
    (they meet the ``(B, beam)`` tensors without a view); a rule returns a ``(B, 1)`` bool column.

    ``step`` is the step's own view (its items, ``t`` and ``T``); ``top_finished``, ``n_completed`` and
    ``kth_score`` are made on first use (a rule reads one or two)."""

    step: StepView  # the step: its index ``t``, the last one ``T``, its items
    completed: torch.Tensor  # (B, beam) bool: items of this step's beam that are completed hypotheses
    completions: torch.Tensor  # (B, beam) float: completed hypotheses collected so far, per beam slot
    #: (B, K) float: the rule's best completed scores so far, sorted (-inf: none yet); ``K >= n_best`` places (more
    #: where the rule compares with a larger store: transformers' ``TransformersRule``)
    kept_score: torch.Tensor
    best_bound: torch.Tensor | None  # float: max bound over live items (-inf if none); None unless needs_bound
    width: torch.Tensor | None  # long: the example's beam size now (a shrinking beam only)
    n_best: int
    best_running: torch.Tensor | None  # float: the toolkit's best running sum (transformers' rule), else None

    @property
    def t(self) -> int:
        """The decoding step's index: tokens generated so far (``StepView.t``)."""
        return self.step.t

    @property
    def max_length(self) -> int:
        """``T``: the most tokens an example may generate (``StepView.max_length``)."""
        return self.step.max_length

    @property
    def top_finished(self) -> torch.Tensor:
        """bool: the top item of this step's beam is a completed hypothesis."""
        return self.completed[:, :1]

    @cached_property
    def n_completed(self) -> torch.Tensor:
        """float: completed hypotheses collected so far (``State.n_completed``)."""
        return self.completions.sum(dim=1, keepdim=True)

    @property
    def kth_score(self) -> torch.Tensor:
        """float: the n_best-th best completed score so far (-inf if fewer than n_best)."""
        kept = self.kept_score
        return kept if kept.shape[1] == 1 else kept[:, self.n_best - 1:self.n_best]


class StoppingRule:
    """Base class: ``done(view)`` says, per example (a ``(B, 1)`` column), whether the rule is done with it
    after this step."""

    name = "abstract"
    #: reason reported in the statistics when this rule ends an example while items are still live (with none
    #: left, the search reports ``ALL_FINISHED``; with a heuristic bound, ``PREDICTED_BOUND``)
    reason: StopReason
    #: does the answer carry a proof of optimality (modulo beam size)?
    certified = False
    #: does each completed hypothesis take its slot out of the beam for good?
    shrinks = False
    #: does ``done`` read ``best_bound`` (else the search need not compute bounds)?
    needs_bound = True
    #: does the rule keep only the beam's top item of a step as a hypothesis (else every completed item)?
    top_only = False

    def done(self, view: StopView) -> torch.Tensor:
        raise NotImplementedError


class TopFinished(StoppingRule):
    """OpenNMT-py's rule: stop once the top item of the beam is completed and ``n_best`` were collected."""

    name = "default"
    reason = StopReason.TOP_FINISHED
    needs_bound = False

    def done(self, view: StopView) -> torch.Tensor:
        return view.top_finished & (view.n_completed >= view.n_best)


class OptimalityCertificate(StoppingRule):
    """The paper's certificate (Eq. 2 for log-probability, Eq. 5 for the bounded reward), for any scoring rule.

    Stop when the ``n_best``-th best completed score is at least the best bound of any live item: no item
    still in the beam can grow into a hypothesis that enters the ``n_best`` list (ties keep the earlier one).
    For raw log-probability and ``n_best = 1`` it holds no later than ``TopFinished`` (the paper's Theorem 2:
    when the top item is completed, every live item scores below it). With a length reward, a normalized
    score or ``n_best > 1`` it may stop later than ``TopFinished``, which then returns an answer the certificate
    does not cover. It holds at once when no live item is left.
    """

    name = "optimal"
    reason = StopReason.CERTIFICATE
    certified = True

    def done(self, view: StopView) -> torch.Tensor:
        return view.kth_score >= view.best_bound


class Exhaustive(StoppingRule):
    """Never stop early: run the beam until no live item is left or ``max_length`` is reached.

    Its answer is, by definition, the best hypothesis the beam can complete: the reference the certificate
    is checked against.
    """

    name = "exhaustive"
    reason = StopReason.ALL_FINISHED
    certified = True

    def done(self, view: StopView) -> torch.Tensor:
        return torch.isinf(view.best_bound) & (view.best_bound < 0)


class Shrinking(StoppingRule):
    """RNNsearch's shrinking beam (the paper's baseline 2): each completed hypothesis shrinks its example's beam
    by one; the example ends when its beam is empty (or at ``max_length``) and returns its best completed
    hypothesis under the active score. The beam itself differs from the other rules' after the first EOS.

    Its stop is always reported as ``ALL_FINISHED`` (or ``MAX_LENGTH``): no item is live when the width reaches 0.
    Proof: a step's real items lie in the slots below the width it starts with, ``w``, and its completed items
    are among them; the width falls by their number, so it reaches 0 only when all ``w`` slots completed, and
    then no real item is left live."""

    name = "shrinking"
    reason = StopReason.ALL_FINISHED
    shrinks = True
    needs_bound = False

    def done(self, view: StopView) -> torch.Tensor:
        return view.width <= 0


class OpenNMT2017(StoppingRule):
    """OpenNMT-py's search of early 2017, the paper's baseline (its Fig. 1): stop at the first step whose top item
    of the beam is completed, and answer that very item; nothing completed at an earlier step is kept.

    OpenNMT-py from its first commit to feadbadb (2017-08-20), e.g. 89c31773 (2017-04-20): ``onmt/Beam.py``
    sets ``done`` when the top item just selected ends in EOS (:79-81) and returns the final beam sorted by score
    (``sortBest``, :85-86); it stores no completed hypothesis. At ``max_length`` the answer is the top item of
    the last beam. The collected list of 3.5.1 (``TopFinished``) came with 3052e389 and 128ea527 (2017-08).

    An approximation, which shares the ordinary beam (so the sweep decodes it for free): that beam is 3.5.1's,
    where a completed item leaves and its slot refills, while in 2017 it stayed in the beam and was extended
    past its EOS (OpenNMT-py cut the text at the first EOS). The two differ only where such extensions took
    slots or rose to the top. With ``-n_best`` above 1 it repeats its one answer."""

    name = "opennmt2017"
    reason = StopReason.TOP_FINISHED
    needs_bound = False
    top_only = True

    def done(self, view: StopView) -> torch.Tensor:
        return view.top_finished


STOPPING_RULES = {rule.name: rule for rule in (TopFinished, OptimalityCertificate, Exhaustive, Shrinking, OpenNMT2017)}
