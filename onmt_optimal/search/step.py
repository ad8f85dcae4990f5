"""The step: what every toolkit calls once it has chosen its beam, a pure function of the batch's state.

The toolkit (OpenNMT-py and eole through ``adapter.beam_search``, transformers through ``hf.beam``, vLLM through
``vllm.prompts``) runs its own step up to the choice of the beam, ``B_t = top_b{...}`` (the paper's Section 2),
and says which of the chosen items are completed hypotheses. Then, in the paper's order (``step`` runs 1 to 3;
transformers' beam, whose running items are chosen between 1 and 2, calls them one by one):

1. ``collect``: the completed items, scored by each rule (``finals``: ``ScoringRule.final``, Eq. 1, Eq. 4, ...),
   into each collecting rule's kept hypotheses (``Kept.merge``: the best completed so far, ``y*_<=t``), the
   completion counts, the shrinking width;
2. ``bounds``: per rule that needs it, the best bound of a live item (``best_bound``: ``ScoringRule.bound``,
   the most a live item ``B_t,1`` can still grow to);
3. ``decide``: which examples each rule is done with (``StoppingRule.done``: the certificate ``B_t,1 <= y*_<=t``
   of Eq. 2 and Eq. 5, the toolkit's rule, the shrinking beam, the exhaustive run), the stop record, and the
   ``(B, 1)`` column of the examples every rule is done with;
4. the leaving examples' answers: ``answers.pack`` (one row each, on the device) and ``answers.records``
   (per rule ``Record``s, from one host read).

The step's index ``t`` and its last one ``T`` are the ``StepView``'s (``view.t``, ``view.max_length``): every
function here reads them there. Shapes: ``B`` examples, ``beam`` items each (the first dimensions of every
per-item tensor), ``R`` rules, ``K`` kept places per rule (``state.Rules``). The functions take keyword
arguments only and hold no state of their own: what they read and write is the batch's ``state.State``, which
``collect`` and ``decide`` update in place (its tensors are the batch's own; ``Kept.merge`` writes some with
``out=``, which saves an allocation a step). They read nothing of an accelerator on the host: the one read a
step is the caller's, of ``decide``'s column.
"""
from __future__ import annotations

import torch

from onmt_optimal.search.constants import neg_inf
from onmt_optimal.search.scoring import ScoringRule, StepView
from onmt_optimal.search.state import CODES, Rules, State
from onmt_optimal.search.stopping import StopReason, StopView

__all__ = ["best_bound", "bounds", "codes", "collect", "decide", "finals", "step"]


def step(*, rules: Rules, state: State, view: StepView, completed: torch.Tensor, quiet: bool, seq: torch.Tensor,
         attn: torch.Tensor | None = None) -> torch.Tensor:
    """Step ``view.t``: ``collect`` what completed (unless the step is ``quiet``: nothing completed), each
    rule's best bound of the items ``state.live`` marks (none at ``T``), and ``decide``; returns ``decide``'s
    ``(B, 1)`` column. ``completed``, ``seq`` and ``attn`` as in ``collect``; ``state.live`` is the items still
    live after the step."""
    at_max = view.t >= view.max_length
    if not quiet:
        collect(rules=rules, state=state, view=view, completed=completed, seq=seq, attn=attn)
    return decide(rules=rules, state=state, view=view, completed=completed,
                  bounds=None if at_max else bounds(rules=rules, view=view, live=state.live))


# ------------------------------------------------------------------ 1. collect: the best completed so far
def finals(*, rules: Rules, view: StepView) -> list[torch.Tensor]:
    """Per rule, the ``(B, beam)`` final score of each item of ``view`` if it ends now (``ScoringRule.final``);
    rules that share one scoring object share its tensor (computed once)."""
    if not rules.several:
        return [rules.rules[0].scoring.final(view)]
    made: dict = {}
    out = []
    for rule in rules.rules:
        final = made.get(id(rule.scoring))
        if final is None:
            final = made[id(rule.scoring)] = rule.scoring.final(view)
        out.append(final)
    return out


def collect(*, rules: Rules, state: State, view: StepView, completed: torch.Tensor, seq: torch.Tensor,
            attn: torch.Tensor | None = None) -> None:
    """The step's completed hypotheses into ``state``: each rule that still collects keeps its ``K`` best
    (``Kept.merge``) under its ``finals``, each completed item counts in its slot, and a shrinking beam loses one
    slot per item.

    ``completed`` (B, beam) bool: the items of ``view`` that are completed hypotheses; ``seq`` (B, beam, 1 + n):
    the start token and their ``n`` tokens (``view.t`` of them, or fewer where a caller keeps something else:
    vLLM keeps each hypothesis's place in its own list); ``attn`` (B, beam, n, S) or None. A rule that stopped
    collects nothing more (with the stop record and several rules); ``StoppingRule.top_only`` rules collect the
    beam's top item only."""
    if rules.several:
        collected = completed.unsqueeze(1) & (state.stop_step == 0).unsqueeze(2)
    else:
        collected = completed
    if rules.collectable is not None:
        collected = collected & rules.collectable
    final = finals(rules=rules, view=view)
    state.kept.merge(collected, torch.stack(final, dim=1) if rules.several else final[0], view.log_prob, seq, attn,
                     score_is_log_prob=all(x is view.log_prob for x in final))
    # (a 0-d one: a Python number or the bool mask itself would be converted first, three operations more)
    torch.where(completed, state.completions + rules.one, state.completions, out=state.completions)
    if state.width is not None:
        state.width.sub_(completed.sum(dim=1, keepdim=True))


# ------------------------------------------------------------------ 2. bounds: the most a live item can grow to
def best_bound(*, scoring: ScoringRule, view: StepView, live: torch.Tensor) -> torch.Tensor:
    """(B, 1) the best bound (``ScoringRule.bound``) of an item of ``view`` that ``live`` (B, beam) marks; ``-inf``
    where none is live (a max with keepdim: one operation)."""
    floor = view.memo.get("-inf")  # (kept with the batch's constants: one look-up, not a call)
    if floor is None:
        floor = view.memo["-inf"] = neg_inf(view.log_prob)
    return torch.where(live, scoring.bound(view), floor).max(dim=1, keepdim=True).values


def bounds(*, rules: Rules, view: StepView, live: torch.Tensor) -> list:
    """Per rule, its ``best_bound`` of the items of ``view`` that ``live`` marks, or None where its stopping rule
    reads none (``StoppingRule.needs_bound``)."""
    return [best_bound(scoring=rule.scoring, view=view, live=live) if rule.stopping.needs_bound else None
            for rule in rules.rules]


# ------------------------------------------------------------------ 3. decide: the certificate and the other rules
def codes(*, rules: Rules, at_max: bool, live: torch.Tensor) -> torch.Tensor:
    """(B, R) or (B, 1): the code of each rule that stops after this step, if it does: ``MAX_LENGTH`` at ``T``,
    else ``ALL_FINISHED`` where no item of ``live`` (B, beam) is left, else the rule's own."""
    if at_max:
        return torch.full((live.shape[0], 1), CODES[StopReason.MAX_LENGTH], device=live.device)
    return torch.where(live.any(dim=1, keepdim=True), rules.rule_codes, rules.all_finished)


def decide(*, rules: Rules, state: State, view: StepView, completed: torch.Tensor, bounds: list | None = None,
           best_running: torch.Tensor | None = None, at_max: bool | None = None) -> torch.Tensor:
    """After ``collect``: the ``(B, 1)`` bool column of the examples every rule is done with after step ``view.t``
    (all of them at the last step), where ``state`` lives; records each rule's stop in ``state``.

    ``completed`` (B, beam): this step's completed items; ``bounds``: per rule, its ``best_bound`` (B, 1), or
    None where the rule does not read one (``bounds``; the whole list None at the last step, where no rule is
    asked); ``best_running`` (B, 1): the toolkit's best running sum, for a rule that reads it; ``at_max``: this
    is the last step (default: ``view.t >= view.max_length``; a caller may end its search earlier, as vLLM does
    an aborted request). ``state.live`` is the items still live after the step."""
    if at_max is None:
        at_max = view.t >= view.max_length
    state.t, state.at_max = view.t, at_max

    def done(r: int) -> torch.Tensor:  # (B, 1): rule ``r`` is done with the example (its K places of the kept)
        kept_score = state.kept.score[:, r * rules.K:(r + 1) * rules.K] if rules.several else state.kept.score
        return rules.rules[r].stopping.done(StopView(
            step=view, completed=completed, completions=state.completions, kept_score=kept_score,
            best_bound=None if bounds is None else bounds[r], width=state.width, n_best=rules.n_best,
            best_running=best_running))

    if state.stop_step is None:  # one rule, recorded by the example's last step
        if at_max:
            return torch.ones((completed.shape[0], 1), dtype=torch.bool, device=completed.device)
        return done(0)
    B, R = state.stop_step.shape
    n_completed = state.n_completed
    if at_max:
        newly = state.stop_step == 0
    else:
        newly = torch.cat([done(r) for r in range(R)], dim=1)
        newly &= state.stop_step == 0
    stop = codes(rules=rules, at_max=at_max, live=state.live).expand(B, R)
    state.stop_step = torch.where(newly, view.t, state.stop_step)
    state.stop_code = torch.where(newly, stop, state.stop_code)
    state.stop_completed = torch.where(newly, n_completed, state.stop_completed)
    return (state.stop_step > 0).all(dim=1, keepdim=True)
