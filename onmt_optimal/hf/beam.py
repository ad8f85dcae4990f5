"""transformers' beam, one step at a time, on the search core's step (``search.step``): explicit state in, state out.

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
   the other ``b - 1`` items at ``-1e9`` instead; they hold no real prefix). The core collects them
   (``step.collect``: each rule keeps its ``keep`` best, sorted, earlier first among equals). transformers'
   store differs in what it keeps (``num_beams`` under its own score), never in what is offered: so the rules'
   answers are answers of transformers' beam.
5. **Stop**: the core decides (``step.decide``) from the kept scores and the best bound of a live running item
   (``ScoringRule.bound`` of its running sum): the certificate holds when the ``n_best``-th kept score is at
   least that bound (then no running item can grow into a hypothesis that enters the list, so the list is what
   the same beam would return at ``T``; ties keep the earlier hypothesis). transformers' own rule reads the best
   running sum (``StopView.best_running``). An input is done once every rule is done with it; the core's stop
   record keeps it done (an input that is done may stay in the batch: ``generate``).

A shrinking beam (the paper's baseline) narrows each input's beam by one per completed hypothesis: only the
first ``width`` candidates are offered, and running items past the new width hold no real prefix (their sums
become ``-inf``, so their continuations rank last).

Device traffic: tensor code throughout, no per-item Python loop. ``advance`` returns the ``(N, 1)`` column of
the inputs that are done, which the loop reads (``generate``: the step's one read). On the CPU, where a read
waits for nothing, a step that completed nothing also asks so (``completed.any()``) and skips the collection.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from onmt_optimal.hf.options import Search
from onmt_optimal.search import answers, step
from onmt_optimal.search.constants import NEG_INF
from onmt_optimal.search.scoring import StepView
from onmt_optimal.search.state import Rules, State

#: transformers' penalty for a hit and start score of the ``b - 1`` items that hold no prefix yet
FILLER = -1.0e9


@dataclass
class Running:
    """transformers' running beam for ``N`` inputs still in the batch (rows ``n * b .. n * b + b - 1`` of the flat
    tensors belong to input ``n``), and the core's state of them (``search.state.State``)."""

    sequences: torch.Tensor  # (N * b, L) long: the running items, decoder prompt then tokens (transformers' layout)
    scores: torch.Tensor  # (N, b) float32: running sums, as transformers' ``running_beam_scores``
    examples: torch.Tensor  # (N,) long: the input each row is
    facts: torch.Tensor  # (N, 1 + R) float: |x| (the source or prompt length in tokens) and each rule's l
    core: State  # the kept hypotheses, counts, width, live items and stop record
    memo: dict  # the rules' per-batch constants (``StepView.once``); emptied when inputs leave

    @property
    def src_len(self) -> torch.Tensor:
        """(N,) float: |x|."""
        return self.facts[:, 0]

    def select(self, keep: torch.Tensor) -> "Running":
        """Only the inputs at rows ``keep`` (a long tensor) go on, in that order."""
        N, b = self.scores.shape
        return Running(sequences=self.sequences.view(N, b, -1)[keep].view(keep.shape[0] * b, -1),
                       scores=self.scores[keep], examples=self.examples[keep], facts=self.facts[keep],
                       core=self.core.select(keep), memo={})


@dataclass(frozen=True)
class Constants:
    """What every step of one decode shares."""

    search: Search
    rules: Rules  # the core's rules, with a stop record (an input that is done may stay in the batch)
    targeted: list  # per rule, it reports a target length
    eos: torch.Tensor  # (n_eos,) long: the end tokens
    prompt_len: int  # the decoder prompt's length (tokens before step 1)
    T: int  # the last step: max_length - prompt_len
    free_reads: bool  # the state lives on the CPU: a read waits for nothing (quiet steps)

    @property
    def candidates(self) -> int:
        """transformers' ``beams_to_keep``: enough candidates that ``b`` of them do not end."""
        return max(2, 1 + self.eos.numel()) * self.search.num_beams


def start(search: Search, input_ids: torch.Tensor, src_len: torch.Tensor, T: int, fill: int):
    """``(constants, state)`` before the first step: ``input_ids`` (N * b, prompt) as transformers expanded them,
    ``src_len`` (N,) |x|; ``fill``: the kept tokens' padding."""
    b = search.num_beams
    N = input_ids.shape[0] // b
    device = input_ids.device
    scores = torch.zeros((N, b), dtype=torch.float, device=device)
    scores[:, 1:] = FILLER
    live = torch.zeros((N, b), dtype=torch.bool, device=device)
    live[:, 0] = True
    rules = Rules.of(search.rules, search.n_best, live[:1], device, K=search.keep, records=True)
    facts, targeted = answers.facts(search.rules, src_len.to(device=device, dtype=torch.float))
    constants = Constants(search=search, rules=rules, targeted=targeted, eos=torch.tensor(search.eos, device=device),
                          prompt_len=input_ids.shape[1], T=T, free_reads=device.type == "cpu")
    core = State.start(rules, live, T, fill, torch.float, device, search.shrinks)
    return constants, Running(sequences=input_ids, scores=scores, examples=torch.arange(N, device=device),
                              facts=facts, core=core, memo={})


def advance(c: Constants, state: Running, log_probs: torch.Tensor, t: int):
    """Step ``t``: ``log_probs`` (N * b, V) are the processed log-probabilities of each running item's next token.

    Returns ``(state, done, parents)``: the state after the step, the ``(N, 1)`` column of inputs every rule is
    done with (all of them at ``t = T``), and ``(N, b)`` each new running item's parent row of the flat tensors
    (the cache follows it)."""
    N, b = state.scores.shape
    V = log_probs.shape[-1]
    core = state.core
    # 1. candidates, exactly as transformers: sum, flatten, top-k; parent = index // V, token = index % V
    sums = (log_probs.view(N, b, V) + state.scores[:, :, None]).reshape(N, b * V)
    top, index = torch.topk(sums, k=c.candidates)
    parent, token = index // V, index % V
    # 2. ends
    at_max = t >= c.T
    eos = torch.isin(token, c.eos)
    hits = torch.ones_like(eos) if at_max else eos
    real = core.live.gather(1, parent)
    # 3. the running beam: transformers' ``_get_running_beams_for_next_iteration``
    running = top + hits.to(torch.float32) * FILLER
    chosen = torch.topk(running, k=b)[1]
    scores = running.gather(1, chosen)
    live = real.gather(1, chosen) & ~hits.gather(1, chosen)
    slot = parent.gather(1, chosen)
    # 4. completed: hits among the first b (the first ``width`` of a shrinking beam) that are real
    completed = hits[:, :b] & real[:, :b]
    if core.width is not None:
        slots = torch.arange(b, device=core.width.device)
        completed &= slots < core.width
    quiet = c.free_reads and not at_max and not bool(completed.any())
    view = StepView(log_prob=top[:, :b], eos=eos[:, :b], src_len=state.src_len, t=t, max_length=c.T,
                    memo=state.memo)
    if not quiet:
        # each candidate's tokens: the last prompt token (``Kept``'s start column), then its t tokens
        prev = state.sequences.view(N, b, -1)[:, :, c.prompt_len - 1:]
        seq = torch.cat([prev.gather(1, parent[:, :b].unsqueeze(2).expand(N, b, prev.shape[2])),
                         token[:, :b].unsqueeze(2)], dim=2)
        step.collect(rules=c.rules, state=core, view=view, completed=completed, seq=seq)
    if core.width is not None:  # (``collect`` narrowed it)
        live &= slots < core.width
        scores = torch.where(slots < core.width, scores, NEG_INF)
    core.live = live
    # the new running items' sequences: transformers' ``running_sequences`` up to this step
    rows = slot + torch.arange(N, device=slot.device).unsqueeze(1) * b  # (N, b) flat parent rows
    sequences = torch.cat([state.sequences[rows.view(-1)], token.gather(1, chosen).view(-1, 1)], dim=1)
    # 5. stop
    bounds = None
    rules = c.rules.rules
    if not at_max and any(rule.stopping.needs_bound for rule in rules):
        # the rules of one decode share their score (``options.search``): one bound, of the running sums
        running_view = StepView(log_prob=scores, eos=torch.zeros_like(live), src_len=state.src_len, t=t,
                                max_length=c.T, memo=state.memo)
        bounds = [step.best_bound(scoring=rules[0].scoring, view=running_view, live=live)] * len(rules)
    done = step.decide(rules=c.rules, state=core, view=view, completed=completed, bounds=bounds,
                       best_running=scores[:, :1])
    new = Running(sequences=sequences, scores=scores, examples=state.examples, facts=state.facts, core=core,
                  memo=state.memo)
    return new, done, rows
