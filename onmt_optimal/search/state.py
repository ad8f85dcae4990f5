"""The search's state for one batch: the rules it runs (``Rules``, fixed for the batch) and what it has seen so far
(``State``, one record, written by the step's functions in ``step``).

Rows: ``B`` examples still in the batch, ``beam`` items each, ``R`` rules sharing the beam, each keeping ``K``
completed hypotheses (its ``n_best``, or more where a rule compares with a larger store: transformers' own).

The per-rule stop record (``State.stop_step``, ``stop_code``, ``stop_completed``) is data, present where it is
needed: with several rules (each runs until it is done, and a rule that stopped collects nothing more), or where
a caller keeps examples that are done in the batch and needs their stop to stay put (``Rules.records``). One rule
whose example leaves as soon as it is done records nothing: its step, reason and count are read off the
example's last step (``State.t``, ``State.at_max``, the live items). Its per-rule tensors are ``(B, ...)``
where several rules stack theirs into ``(B, R, ...)`` (``Kept`` takes both). What that saves a step against the
record at ``R = 1`` is counted by ``scripts/op_breakdown.py`` and recorded in ``benchmarks/NOTES.md``.

A stop's reason crosses the device boundary as a float32 code (``answers.pack``): ``CODES`` and ``OWN`` are that
encoding (0: the rule still runs; ``answers.reason`` reads it back).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from onmt_optimal.search import constants
from onmt_optimal.search.kept import Kept
from onmt_optimal.search.scoring import ScoringRule
from onmt_optimal.search.stopping import StoppingRule, StopReason

__all__ = ["CODES", "OWN", "Rule", "Rules", "State"]

#: the codes of the reasons the search itself gives (``OWN``: the stopping rule's own ``reason``)
CODES = {StopReason.MAX_LENGTH: 1.0, StopReason.ALL_FINISHED: 2.0, StopReason.PREDICTED_BOUND: 3.0}
OWN = 4.0


class Rule(NamedTuple):
    """One rule of a decode: what a completed hypothesis scores and when the search may stop with an example."""

    scoring: ScoringRule
    stopping: StoppingRule


@dataclass(frozen=True)
class Rules:
    """The rules sharing a batch's beam (the first answers to the toolkit) and their constants, made once per
    batch (``Rules.of``)."""

    rules: list[Rule]
    n_best: int  # answers per rule
    K: int  # kept places per rule (``n_best`` at least)
    records: bool  # the state keeps the per-rule stop record (module docstring)
    #: (1, beam) or, with several rules, (1, R, beam): which items each rule collects (``StoppingRule.top_only``:
    #: the top one); None: every rule collects all
    collectable: torch.Tensor | None
    rule_codes: torch.Tensor  # (1, R) each rule's code when it stops with items still live
    all_finished: torch.Tensor  # 0-d: the code of a stop with no live item left
    one: torch.Tensor  # 0-d float32 1, the count of a completion (``step.collect``)
    several: bool  # several rules: their per-rule tensors stack as ``(B, R, ...)``

    @classmethod
    def of(cls, rules: list, n_best: int, first: torch.Tensor, device, K: int | None = None,
           records: bool | None = None) -> "Rules":
        """``rules``: ``Rule``s or ``(scoring, stopping)`` pairs; ``first``: the (1, beam) mask of each beam's first
        item; ``K``: kept places per rule (default ``n_best``); ``records``: keep the stop record (default: with
        several rules)."""
        rules = [Rule(*rule) for rule in rules]
        several = len(rules) > 1
        collectable = None
        if any(rule.stopping.top_only for rule in rules):
            per_rule = [first if rule.stopping.top_only else first.new_ones(first.shape) for rule in rules]
            collectable = torch.stack(per_rule, dim=1) if several else per_rule[0]
        rule_codes = constants.row(tuple(
            CODES[StopReason.PREDICTED_BOUND] if stopping.certified and not scoring.bound_is_proof else OWN
            for scoring, stopping in rules), device)
        all_finished = constants.once(("stop code", StopReason.ALL_FINISHED, device), lambda: torch.tensor(
            CODES[StopReason.ALL_FINISHED], device=device))
        one = constants.once(("one", device), lambda: torch.ones((), device=device))
        return cls(rules, n_best, n_best if K is None else K, several if records is None else records,
                   collectable, rule_codes, all_finished, one, several)


@dataclass
class State:
    """What the search has seen of a batch, after the last step (``step.collect`` and ``step.decide`` write it).

    Every tensor has the batch's examples as its first dimension, so ``select`` keeps a subset of them."""

    live: torch.Tensor  # (B, beam) bool: the item holds a real live prefix
    kept: Kept  # (B, R * K, ...) each rule's best completed hypotheses
    #: (B, beam) float32: completed hypotheses so far per beam slot (a sum only when read: adding the step's mask
    #: costs fewer operations than summing it every step); exact below 2^24, to cross with the scores
    completions: torch.Tensor
    width: torch.Tensor | None  # (B, 1) long: the example's beam width now (a shrinking beam only)
    #: (B, R) float32 per example and rule: the step it stopped at (0 while it runs), its code (``CODES``, ``OWN``)
    #: and the completed hypotheses then; None without a record (``Rules.records``)
    stop_step: torch.Tensor | None
    stop_code: torch.Tensor | None
    stop_completed: torch.Tensor | None
    t: int = 0  # the last step decided
    at_max: bool = False  # it was the last step, ``T``

    @classmethod
    def start(cls, rules: Rules, live: torch.Tensor, T: int, pad: int, dtype, device,
              shrinks: bool = False) -> "State":
        """The state before step 1: ``live`` (B, beam) the items that hold a real prefix; ``T``: the last step;
        ``pad``: the kept tokens' padding; ``dtype``: the kept scores'."""
        B, beam = live.shape
        R = len(rules.rules)
        record = [torch.zeros((B, R), dtype=torch.float, device=device) for _ in range(3)] if rules.records \
            else [None] * 3
        return cls(live=live, kept=Kept.empty(B, R, rules.K, T, pad, dtype, device),
                   completions=torch.zeros((B, beam), dtype=torch.float, device=device),
                   width=torch.full((B, 1), beam, dtype=torch.long, device=device) if shrinks else None,
                   stop_step=record[0], stop_code=record[1], stop_completed=record[2])

    @property
    def n_completed(self) -> torch.Tensor:
        """(B, 1) completed hypotheses so far."""
        return self.completions.sum(dim=1, keepdim=True)

    def select(self, rows: torch.Tensor) -> "State":
        """Only the examples at batch rows ``rows`` (a long tensor) go on, in that order."""
        pick = lambda x: None if x is None else x[rows]  # noqa: E731
        return State(live=pick(self.live), kept=self.kept.select(rows), completions=pick(self.completions),
                     width=pick(self.width), stop_step=pick(self.stop_step), stop_code=pick(self.stop_code),
                     stop_completed=pick(self.stop_completed), t=self.t, at_max=self.at_max)
