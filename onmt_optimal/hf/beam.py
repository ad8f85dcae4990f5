"""transformers' beam, one step at a time, with the search core's bookkeeping: explicit state in, state out.

The beam is transformers' own (``GenerationMixin._beam_search`` of 5.17 to 5.23), operation for operation,
so that every running item is the one transformers would hold. At step ``t`` (tokens generated so far, this
step's included), for each input of ``N`` still running, ``b = num_beams``:

1. **Candidates**: every running item's sum plus each processed log-probability; the top ``2b`` (more with
   several end tokens: ``(1 + n_eos) * b``) by ``torch.topk``, as transformers takes them.
2. **Ends**: a candidate *hits* when its token is an end token, and every candidate hits at ``t = T``
   (``max_length``, as transformers' ``MaxLengthCriteria`` and ``EosTokenCriteria`` decide).
3. **Running beam**: the best ``b`` candidates after ``-1e9`` is added to each hit (transformers' float32
   operations, so the running sums are its numbers).
4. **Completed**: a hit among the first ``b`` candidates (transformers offers only those to its finished store)
   that descends from a *real* item: one that descends from the input's first item only (transformers starts
   the other ``b - 1`` items at ``-1e9`` instead; they hold no real prefix). Each rule scores them
   (``ScoringRule.final``) and keeps its ``keep`` best (``search.kept.Kept``: sorted, earlier first among
   equals). transformers' store differs in what it keeps (``num_beams`` under its own score), never in what is
   offered: so the rules' answers are answers of transformers' beam.
5. **Stop**: per rule and input, from the kept scores and the best bound of a live running item
   (``ScoringRule.bound``): the certificate holds when the ``n_best``-th kept score is at least that bound
   (then no running item can grow into a hypothesis that enters the list, so the list is what the same beam
   would return at ``T``; ties keep the earlier hypothesis). An input is done once every rule is done with it.

A shrinking beam (the paper's baseline) narrows each input's beam by one per completed hypothesis: only the
first ``width`` candidates are offered, and running items past the new width hold no real prefix (their sums
become ``-inf``, so their continuations rank last).

Device traffic: tensor code throughout, no per-item Python loop. ``advance`` returns the ``(N, 1)`` column of
the inputs that are done, which the loop reads (``generate``: the step's one read). On the CPU, where a read
waits for nothing, a step that completed nothing also asks so (``completed.any()``) and skips the merge.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from onmt_optimal.hf.options import Search
from onmt_optimal.hf.stopping import HFStopView, TransformersRule
from onmt_optimal.search.constants import NEG_INF
from onmt_optimal.search.kept import Kept
from onmt_optimal.search.scoring import StepView
from onmt_optimal.search.stopping import StopReason
from onmt_optimal.search.stops import CODES, OWN

#: why a rule stopped with an input (``stop_code``): the search core's codes (``search.stops``)
MAX_LENGTH, ALL_FINISHED = CODES[StopReason.MAX_LENGTH], CODES[StopReason.ALL_FINISHED]
PREDICTED, RULE = CODES[StopReason.PREDICTED_BOUND], OWN
#: transformers' penalty for a hit and start score of the ``b - 1`` items that hold no prefix yet
FILLER = -1.0e9


@dataclass
class BeamState:
    """The search's state between two steps, for ``N`` inputs still running (rows ``n * b .. n * b + b - 1`` of the
    flat tensors belong to input ``n``)."""

    sequences: torch.Tensor  # (N * b, L) long: the running items, decoder prompt then tokens (transformers' layout)
    scores: torch.Tensor  # (N, b) float32: running sums, as transformers' ``running_beam_scores``
    live: torch.Tensor  # (N, b) bool: the item holds a real live prefix
    examples: torch.Tensor  # (N,) long: the input each row is
    src_len: torch.Tensor  # (N,) float: |x|, the source (or prompt) length in tokens
    kept: Kept  # (N, R * keep, ...) each rule's best completed hypotheses
    completions: torch.Tensor  # (N, 1) float: completed hypotheses so far
    width: torch.Tensor | None  # (N, 1) long: the beam's width now (a shrinking beam only)
    stop_step: torch.Tensor  # (N, R) float: the step each rule stopped at (0 while it runs)
    stop_code: torch.Tensor  # (N, R) float: why (``MAX_LENGTH``, ...)
    stop_completed: torch.Tensor  # (N, R) float: completed hypotheses when it stopped
    memo: dict  # the rules' per-batch constants (``StepView.once``); emptied when inputs leave

    def select(self, keep: torch.Tensor) -> "BeamState":
        """Only the inputs at rows ``keep`` (a long tensor) go on, in that order."""
        N, b = self.scores.shape
        return BeamState(
            sequences=self.sequences.view(N, b, -1)[keep].view(keep.shape[0] * b, -1),
            scores=self.scores[keep], live=self.live[keep], examples=self.examples[keep],
            src_len=self.src_len[keep], kept=self.kept.select(keep), completions=self.completions[keep],
            width=None if self.width is None else self.width[keep], stop_step=self.stop_step[keep],
            stop_code=self.stop_code[keep], stop_completed=self.stop_completed[keep], memo={})


def start(search: Search, input_ids: torch.Tensor, src_len: torch.Tensor, T: int, fill: int) -> BeamState:
    """The state before the first step: ``input_ids`` (N * b, prompt) as transformers expanded them."""
    b, R = search.num_beams, len(search.rules)
    N = input_ids.shape[0] // b
    device = input_ids.device
    scores = torch.zeros((N, b), dtype=torch.float, device=device)
    scores[:, 1:] = FILLER
    live = torch.zeros((N, b), dtype=torch.bool, device=device)
    live[:, 0] = True
    zeros = torch.zeros((N, R), dtype=torch.float, device=device)
    return BeamState(
        sequences=input_ids, scores=scores, live=live, examples=torch.arange(N, device=device),
        src_len=src_len.to(device=device, dtype=torch.float),
        kept=Kept.empty(N, R, search.keep, T, fill, torch.float, device),
        completions=torch.zeros((N, 1), dtype=torch.float, device=device),
        width=torch.full((N, 1), b, dtype=torch.long, device=device) if search.shrinks else None,
        stop_step=zeros, stop_code=zeros.clone(), stop_completed=zeros.clone(), memo={})


@dataclass(frozen=True)
class Constants:
    """What every step of one decode shares."""

    search: Search
    eos: torch.Tensor  # (n_eos,) long: the end tokens
    prompt_len: int  # the decoder prompt's length (tokens before step 1)
    T: int  # the last step: max_length - prompt_len
    free_reads: bool  # the state lives on the CPU: a read waits for nothing (quiet steps)

    @property
    def candidates(self) -> int:
        """transformers' ``beams_to_keep``: enough candidates that ``b`` of them do not end."""
        return max(2, 1 + self.eos.numel()) * self.search.num_beams


def advance(c: Constants, state: BeamState, log_probs: torch.Tensor, t: int):
    """Step ``t``: ``log_probs`` (N * b, V) are the processed log-probabilities of each running item's next token.

    Returns ``(state, done, parents)``: the state after the step, the ``(N, 1)`` column of inputs every rule is
    done with (all of them at ``t = T``), and ``(N, b)`` each new running item's parent row of the flat tensors
    (the cache follows it)."""
    N, b = state.scores.shape
    V = log_probs.shape[-1]
    # 1. candidates, exactly as transformers: sum, flatten, top-k; parent = index // V, token = index % V
    sums = (log_probs.view(N, b, V) + state.scores[:, :, None]).reshape(N, b * V)
    top, index = torch.topk(sums, k=c.candidates)
    parent, token = index // V, index % V
    # 2. ends
    at_max = t >= c.T
    eos = torch.isin(token, c.eos)
    hits = torch.ones_like(eos) if at_max else eos
    real = state.live.gather(1, parent)
    # 3. the running beam: transformers' ``_get_running_beams_for_next_iteration``
    running = top + hits.to(torch.float32) * FILLER
    chosen = torch.topk(running, k=b)[1]
    scores = running.gather(1, chosen)
    live = real.gather(1, chosen) & ~hits.gather(1, chosen)
    slot = parent.gather(1, chosen)
    width = state.width
    # 4. completed: hits among the first b (the first ``width`` of a shrinking beam) that are real
    completed = hits[:, :b] & real[:, :b]
    if width is not None:
        slots = torch.arange(b, device=width.device)
        completed &= slots < width
        width = width - completed.sum(dim=1, keepdim=True)
        live &= slots < width
        scores = torch.where(slots < width, scores, NEG_INF)
    kept, completions = state.kept, state.completions
    quiet = c.free_reads and not at_max and not bool(completed.any())
    if not quiet:
        kept, completions = _merge(c, state, completed, top[:, :b], eos[:, :b], parent[:, :b], token[:, :b], t)
    # the new running items' sequences: transformers' ``running_sequences`` up to this step
    rows = slot + torch.arange(N, device=slot.device).unsqueeze(1) * b  # (N, b) flat parent rows
    sequences = torch.cat([state.sequences[rows.view(-1)], token.gather(1, chosen).view(-1, 1)], dim=1)
    new = replace(state, sequences=sequences, scores=scores, live=live, kept=kept, completions=completions,
                  width=width)
    done = _stop(c, new, completed, t, at_max)
    return new, done, rows


def _merge(c: Constants, state: BeamState, completed, log_prob, eos, parent, token, t: int):
    """Each rule keeps its best of the hypotheses completed at step ``t`` (the first ``b`` candidates)."""
    N, b = completed.shape
    R = len(c.search.rules)
    view = StepView(log_prob=log_prob, eos=eos, src_len=state.src_len, step=t, max_length=c.T, memo=state.memo)
    final = c.search.rules[0][0].final(view)  # the rules of one decode share their score (``options.search``)
    # each candidate's tokens: the last prompt token (``Kept``'s start column), then its t tokens
    prev = state.sequences.view(N, b, -1)[:, :, c.prompt_len - 1:]
    seq = torch.cat([prev.gather(1, parent.unsqueeze(2).expand(N, b, prev.shape[2])), token.unsqueeze(2)], dim=2)
    if R == 1:
        collect, scores = completed, final
    else:  # a rule that stopped collects nothing more
        collect = completed.unsqueeze(1) & (state.stop_step == 0).unsqueeze(2)
        scores = final.unsqueeze(1).expand(N, R, b)
    kept = Kept(state.kept.score, state.kept.log_prob, state.kept.seq, state.kept.pad)
    kept.merge(collect, scores, log_prob, t, seq, None, score_is_log_prob=final is log_prob)
    return kept, state.completions + completed.sum(dim=1, keepdim=True)


def _stop(c: Constants, state: BeamState, completed, t: int, at_max: bool) -> torch.Tensor:
    """Record which rules stop at step ``t``; the ``(N, 1)`` column of inputs every rule is done with."""
    search = c.search
    N, b = state.scores.shape
    K, n = search.keep, search.n_best
    if at_max:
        newly = state.stop_step == 0
        code = torch.full_like(state.stop_code, MAX_LENGTH)
    else:
        score = search.rules[0][0]
        bound = None
        if any(stop.needs_bound for _, stop in search.rules):
            view = StepView(log_prob=state.scores, eos=torch.zeros_like(state.live), src_len=state.src_len,
                            step=t, max_length=c.T, memo=state.memo)
            bound = torch.where(state.live, score.bound(view), NEG_INF).max(dim=1, keepdim=True).values
        done = []
        for r, (_, stop) in enumerate(search.rules):
            width = K if isinstance(stop, TransformersRule) else n
            view = HFStopView(completed=completed, completions=state.completions,
                              kept_score=state.kept.score[:, r * K:r * K + width], best_bound=bound,
                              width=state.width, n_best=n, best_running=state.scores[:, :1], step=t,
                              max_length=c.T)
            done.append(stop.done(view))
        newly = torch.cat(done, dim=1) & (state.stop_step == 0)
        codes = [PREDICTED if stop.certified and not score.bound_is_proof else RULE for _, stop in search.rules]
        code = torch.where(state.live.any(dim=1, keepdim=True),
                           torch.tensor([codes], device=newly.device), ALL_FINISHED).expand(N, len(codes))
    state.stop_step = torch.where(newly, float(t), state.stop_step)
    state.stop_code = torch.where(newly, code, state.stop_code)
    state.stop_completed = torch.where(newly, state.completions, state.stop_completed)
    return (state.stop_step > 0).all(dim=1, keepdim=True)
