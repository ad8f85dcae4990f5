"""The step: what every toolkit calls once it has chosen its beam, a pure function of the batch's state.

The toolkit (OpenNMT-py and eole through ``adapter.beam_search``, transformers through ``hf.beam``) runs its own
step up to the choice of the beam and says which of the chosen items are completed hypotheses. Then, in this
order (``step`` runs 1 to 4; transformers' beam, whose running items are chosen between 2 and 3, calls them one
by one):

1. ``finals``: each rule's final score of every item (``ScoringRule.final``: Eq. 1, Eq. 4, ...);
2. ``collect``: the completed items into each collecting rule's kept hypotheses (``Kept.merge``), the
   completion counts, the shrinking width;
3. ``best_bound``: per rule that needs it, the best bound of a live item (``ScoringRule.bound``);
4. ``decide``: which examples each rule is done with (``StoppingRule.done``: the certificate of Eq. 2 and
   Eq. 5, the toolkit's rule, the shrinking beam, the exhaustive run), the stop record, and the ``(B, 1)``
   column of the examples every rule is done with;
5. the leaving examples' answers: ``answers.pack`` (one row each, on the device) and ``answers.records``
   (per rule ``Record``s, from one host read).

Shapes: ``B`` examples, ``beam`` items each (the first dimensions of every per-item tensor), ``R`` rules,
``K`` kept places per rule (``state.Rules``). The functions hold no state of their own: what they read and
write is the batch's ``state.State``, which ``collect`` and ``decide`` update in place (its tensors are the
batch's own; ``Kept.merge`` writes some with ``out=``, which saves an allocation a step). They read nothing
of an accelerator on the host: the one read a step is the caller's, of ``decide``'s column.
"""
from __future__ import annotations

import torch

from onmt_optimal.search.constants import neg_inf
from onmt_optimal.search.scoring import ScoringRule, StepView
from onmt_optimal.search.state import CODES, Rules, State
from onmt_optimal.search.stopping import StopReason, StopView

__all__ = ["best_bound", "codes", "collect", "decide", "finals", "step"]


def step(rules: Rules, state: State, view: StepView, completed: torch.Tensor, quiet: bool, seq: torch.Tensor,
         attn: torch.Tensor | None = None) -> torch.Tensor:
    """Step ``view.t``: ``collect`` what completed (unless the step is ``quiet``: nothing completed), each
    rule's ``best_bound`` of the items ``state.live`` marks (none at ``T``), and ``decide``; returns ``decide``'s
    ``(B, 1)`` column. ``completed``, ``seq`` and ``attn`` as in ``collect``; ``state.live`` is the items still
    live after the step."""
    t, T = view.t, view.max_length
    at_max = t >= T
    if not quiet:
        collect(rules, state, completed, finals(rules.rules, view), view.log_prob, t, seq, attn)
    bounds = None if at_max else [best_bound(score, view, state.live) if stop.needs_bound else None
                                  for score, stop in rules.rules]
    return decide(rules, state, t, at_max, completed, bounds, max_length=T)


def finals(rules: list, view: StepView) -> list[torch.Tensor]:
    """Per rule ``(scoring, stopping)``, the ``(B, beam)`` final score of each item of ``view`` if it ends now;
    rules that share one scoring object share its tensor (computed once)."""
    if len(rules) == 1:
        return [rules[0][0].final(view)]
    made: dict = {}
    out = []
    for score, _ in rules:
        final = made.get(id(score))
        if final is None:
            final = made[id(score)] = score.final(view)
        out.append(final)
    return out


def collect(rules: Rules, state: State, completed: torch.Tensor, final: list[torch.Tensor],
            log_prob: torch.Tensor, t: int, seq: torch.Tensor, attn: torch.Tensor | None = None) -> None:
    """Step ``t``'s completed hypotheses into ``state``: each rule that still collects keeps its ``K`` best
    (``Kept.merge``), each completed item counts in its slot, and a shrinking beam loses one slot per item.

    ``completed`` (B, beam) bool: the items that are completed hypotheses; ``final``: per rule, their (B, beam)
    scores (``finals``); ``log_prob`` (B, beam): their log p; ``seq`` (B, beam, 1 + t): the start token and the
    tokens; ``attn`` (B, beam, t, S) or None. A rule that stopped collects nothing more (with the stop record and
    several rules); ``StoppingRule.top_only`` rules collect the beam's top item only."""
    if rules.several:
        collected = completed.unsqueeze(1) & (state.stop_step == 0).unsqueeze(2)
    else:
        collected = completed
    if rules.collectable is not None:
        collected = collected & rules.collectable
    stacked = torch.stack(final, dim=1) if rules.several else final[0]  # (``Rules.stack``)
    state.kept.merge(collected, stacked, log_prob, t, seq, attn,
                     all(x is log_prob for x in final))
    # (a 0-d one: a Python number or the bool mask itself would be converted first, three operations more)
    torch.where(completed, state.completions + rules.one, state.completions, out=state.completions)
    if state.width is not None:
        state.width.sub_(completed.sum(dim=1, keepdim=True))


def best_bound(score: ScoringRule, view: StepView, live: torch.Tensor) -> torch.Tensor:
    """(B, 1) the best bound (``ScoringRule.bound``) of an item of ``view`` that ``live`` (B, beam) marks; ``-inf``
    where none is live (a max with keepdim: one operation)."""
    floor = view.memo.get("-inf")  # (kept with the batch's constants: one look-up, not a call)
    if floor is None:
        floor = view.memo["-inf"] = neg_inf(view.log_prob)
    return torch.where(live, score.bound(view), floor).max(dim=1, keepdim=True).values


def codes(rules: Rules, at_max: bool, live: torch.Tensor) -> torch.Tensor:
    """(B, R) or (B, 1): the code of each rule that stops after this step, if it does: ``MAX_LENGTH`` at ``T``,
    else ``ALL_FINISHED`` where no item of ``live`` (B, beam) is left, else the rule's own."""
    if at_max:
        return torch.full((live.shape[0], 1), CODES[StopReason.MAX_LENGTH], device=live.device)
    return torch.where(live.any(dim=1, keepdim=True), rules.rule_codes, rules.all_finished)


def decide(rules: Rules, state: State, t: int, at_max: bool, completed: torch.Tensor,
           bounds: list | None = None, best_running: torch.Tensor | None = None,
           max_length: int = 0) -> torch.Tensor:
    """After ``collect``: the ``(B, 1)`` bool column of the examples every rule is done with after step ``t``
    (all of them at ``T``, ``at_max``), where ``state`` lives; records each rule's stop in ``state``.

    ``completed`` (B, beam): this step's completed items; ``bounds``: per rule, its ``best_bound`` (B, 1), or
    None where the rule does not read one (``StoppingRule.needs_bound``; the whole list None at ``T``, where no
    rule is asked); ``best_running`` (B, 1): the toolkit's best running sum, for a rule that reads it;
    ``max_length``: ``T``. ``state.live`` is the items still live after the step."""
    state.t, state.at_max = t, at_max
    if state.stop_step is None:  # one rule, recorded by the example's last step
        if at_max:
            return torch.ones((completed.shape[0], 1), dtype=torch.bool, device=completed.device)
        return _done(rules, state, 0, completed, bounds, best_running, t, max_length)
    B, R = state.stop_step.shape
    n_completed = state.completions.sum(dim=1, keepdim=True)  # (``State.n_completed``)
    if at_max:
        newly = state.stop_step == 0
    else:
        newly = torch.cat([_done(rules, state, r, completed, bounds, best_running, t, max_length)
                           for r in range(R)], dim=1)
        newly &= state.stop_step == 0
    stop = codes(rules, at_max, state.live).expand(B, R)
    state.stop_step = torch.where(newly, t, state.stop_step)
    state.stop_code = torch.where(newly, stop, state.stop_code)
    state.stop_completed = torch.where(newly, n_completed, state.stop_completed)
    return (state.stop_step > 0).all(dim=1, keepdim=True)


def _done(rules: Rules, state: State, r: int, completed, bounds, best_running, t: int,
          max_length: int) -> torch.Tensor:
    """(B, 1): rule ``r`` is done with the example."""
    kept_score = state.kept.score
    if rules.several:  # rule r's places (``Rules.kept_score``)
        kept_score = kept_score[:, r * rules.K:(r + 1) * rules.K]
    return rules.rules[r][1].done(StopView(
        completed=completed, completions=state.completions, kept_score=kept_score,
        best_bound=None if bounds is None else bounds[r], width=state.width, n_best=rules.n_best,
        best_running=best_running, t=t, max_length=max_length))
