"""The rules that share a beam: which of them still collect, and where, why and with how many completed
hypotheses each stopped with each example.

An example leaves the search once every rule is done with it. ``Several`` rules (the sweep) each run until
they are done: per example and rule it records the step, the reason and the count of completed hypotheses,
and a rule that stopped collects nothing more. ``One`` rule stops with its example, so it records nothing:
all three are read off the example's last step. Its per-rule tensors are ``(B, ...)``, where several rules
stack theirs into ``(B, R, ...)`` (``Kept`` takes both).

``One`` is a special case kept because it pays: every decode but the sweep has one rule, and each step it
skips the per-rule record (the concatenation of the rules' done columns, the test of who still runs, three
``where``s, the step's codes, the count and the reduction to the example's column) and, on a step that merges,
the mask of who still collects. What that saves against ``Several`` at ``R = 1``
is counted by ``scripts/op_breakdown.py`` and recorded in ``benchmarks/NOTES.md``.

A stop's reason crosses the device boundary as a float32 code in the rows ``Beam.answers`` packs: ``CODES``,
``OWN`` and ``reason`` are that encoding (0: the rule still runs).
"""
from __future__ import annotations

from typing import Callable

import torch

from onmt_optimal.search import constants
from onmt_optimal.search.stopping import StoppingRule, StopReason

#: the codes of the reasons the search itself gives (``OWN``: the stopping rule's own ``reason``)
CODES = {StopReason.MAX_LENGTH: 1.0, StopReason.ALL_FINISHED: 2.0, StopReason.PREDICTED_BOUND: 3.0}
OWN = 4.0


def reason(code: float, stop: StoppingRule) -> str:
    """The reason of ``code`` for rule ``stop``."""
    return stop.reason if code == OWN else next(why for why, c in CODES.items() if c == code)


def of_rules(rules: list, B: int, first: torch.Tensor, device) -> "One | Several":
    """The record of ``rules`` (``[(scoring, stopping), ...]``) for a batch of ``B`` examples; ``first``: the
    (1, beam) mask of each beam's first item."""
    return One(rules, first, device) if len(rules) == 1 else Several(rules, B, first, device)


class _Stops:
    """What ``One`` and ``Several`` share: which items each rule collects, and the codes of a step's stops."""

    def __init__(self, rules: list, first: torch.Tensor, device):
        self.rules = [stop for _, stop in rules]
        #: which items each rule collects when they complete, all or the top one (``StoppingRule.top_only``), laid
        #: out as ``stack`` lays the rules out; None: every rule collects all
        self.collectable = None
        if any(stop.top_only for stop in self.rules):
            self.collectable = self.stack([first if stop.top_only else first.new_ones(first.shape)
                                           for stop in self.rules])
        #: (1, R) each rule's code when it stops with items still live: its own reason, or a heuristic bound's
        self.rule_codes = constants.row(tuple(
            CODES[StopReason.PREDICTED_BOUND] if stop.certified and not score.bound_is_proof else OWN
            for score, stop in rules), device)
        self.all_finished = constants.once(("stop code", StopReason.ALL_FINISHED, device), lambda: torch.tensor(
            CODES[StopReason.ALL_FINISHED], device=device))

    def codes(self, at_max: bool, live: torch.Tensor) -> torch.Tensor:
        """(B, R) or (B, 1) the code of each rule that stops at this step, if it does."""
        if at_max:
            return torch.full((live.shape[0], 1), CODES[StopReason.MAX_LENGTH], device=live.device)
        return torch.where(live.any(dim=1, keepdim=True), self.rule_codes, self.all_finished)


class One(_Stops):
    """One rule: it stops with its example, at the step it is done (at ``T`` at the latest)."""

    columns = 2  # per example in ``Beam.answers``'s rows: the completed hypotheses and the code

    def __init__(self, rules: list, first: torch.Tensor, device):
        super().__init__(rules, first, device)
        self.t, self.at_max = 0, False

    def stack(self, per_rule: list[torch.Tensor]) -> torch.Tensor:
        """The rule's ``(B, ...)`` tensor as it is."""
        return per_rule[0]

    def collect(self, completed: torch.Tensor) -> torch.Tensor:
        """(B, beam): the completed items the rule collects (it runs while its example does)."""
        return completed if self.collectable is None else completed & self.collectable

    def kept_score(self, score: torch.Tensor, r: int, K: int) -> torch.Tensor:
        """The rule's places of ``Kept.score``: all of them."""
        return score

    def step(self, t: int, at_max: bool, live: torch.Tensor, completions: torch.Tensor,
             done: Callable[[int], torch.Tensor]) -> torch.Tensor:
        """(B, 1): the examples the rule is done with after step ``t``. ``live`` (B, beam): the items still live;
        ``completions`` (B, beam): the completed hypotheses so far per slot; ``done(r)``: rule ``r``'s (B, 1)."""
        self.t, self.at_max = t, at_max
        if at_max:
            return torch.ones((live.shape[0], 1), dtype=torch.bool, device=live.device)
        return done(0)

    def packed(self, live: torch.Tensor, completions: torch.Tensor) -> list[torch.Tensor]:
        """Its (B, 1) columns of the leaving examples' rows, the completed hypotheses and the code: they stop at
        this step, so why depends on the live items."""
        return [completions.sum(dim=1, keepdim=True), self.codes(self.at_max, live)]

    def read(self, row: list[float], at: int) -> list[tuple[int, str, int]]:
        """``(steps, reason, completed)`` from the ``columns`` of a leaving example's row that start at ``at``."""
        completed, stop = row[at:at + 2]
        return [(self.t, reason(stop, self.rules[0]), int(completed))]

    def keep(self, rows: torch.Tensor) -> None:
        """Only the examples at ``rows`` go on: nothing of theirs is recorded here."""


class Several(_Stops):
    """Several rules: each is recorded when it is done with an example; the example leaves when all are."""

    def __init__(self, rules: list, B: int, first: torch.Tensor, device):
        super().__init__(rules, first, device)
        self.columns = 3 * len(rules)  # per rule: step, code, completed
        #: (B, R) per example and rule, the step it stopped at (0 while it runs), its code and the completed
        #: hypotheses then (counts and steps are float32, exact below 2^24: they cross with the scores)
        self.stop_step = torch.zeros((B, len(rules)), dtype=torch.float, device=device)
        self.stop_code = torch.zeros((B, len(rules)), dtype=torch.float, device=device)
        self.stop_completed = torch.zeros((B, len(rules)), dtype=torch.float, device=device)

    def stack(self, per_rule: list[torch.Tensor]) -> torch.Tensor:
        """The rules' ``(B, ...)`` tensors as one ``(B, R, ...)``."""
        return torch.stack(per_rule, dim=1)

    def collect(self, completed: torch.Tensor) -> torch.Tensor:
        """(B, R, beam): the completed items each rule collects, while it runs."""
        collect = completed.unsqueeze(1) & (self.stop_step == 0).unsqueeze(2)
        return collect if self.collectable is None else collect & self.collectable

    def kept_score(self, score: torch.Tensor, r: int, K: int) -> torch.Tensor:
        """Rule ``r``'s places of ``Kept.score``."""
        return score[:, r * K:(r + 1) * K]

    def step(self, t: int, at_max: bool, live: torch.Tensor, completions: torch.Tensor,
             done: Callable[[int], torch.Tensor]) -> torch.Tensor:
        """(B, 1): the examples every rule is done with after step ``t`` (arguments as ``One.step``'s)."""
        B, R = self.stop_step.shape
        n_completed = completions.sum(dim=1, keepdim=True)
        if at_max:
            newly = self.stop_step == 0
        else:
            newly = torch.cat([done(r) for r in range(R)], dim=1)
            newly &= self.stop_step == 0
        stop = self.codes(at_max, live).expand(B, R)
        self.stop_step = torch.where(newly, t, self.stop_step)
        self.stop_code = torch.where(newly, stop, self.stop_code)
        self.stop_completed = torch.where(newly, n_completed, self.stop_completed)
        return (self.stop_step > 0).all(dim=1, keepdim=True)

    def packed(self, live: torch.Tensor, completions: torch.Tensor) -> list[torch.Tensor]:
        """Its (B, 3 * R) columns of the leaving examples' rows: per rule, step, code and completed."""
        B = self.stop_step.shape[0]
        return [torch.stack([self.stop_step, self.stop_code, self.stop_completed], dim=2).view(B, -1)]

    def read(self, row: list[float], at: int) -> list[tuple[int, str, int]]:
        """Per rule ``(steps, reason, completed)`` from the ``columns`` of a leaving example's row from ``at``."""
        return [(int(row[i]), reason(row[i + 1], stop), int(row[i + 2]))
                for i, stop in zip(range(at, at + self.columns, 3), self.rules)]

    def keep(self, rows: torch.Tensor) -> None:
        """Only the examples at ``rows`` go on, in that order."""
        self.stop_step = self.stop_step[rows]
        self.stop_code = self.stop_code[rows]
        self.stop_completed = self.stop_completed[rows]
