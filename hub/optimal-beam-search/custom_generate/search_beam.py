# Copied from onmt_optimal/search/beam.py by `make hub` (scripts/make_hub.py): edit the package, not this file.
"""One sentence through the search of OpenNMT's lineage (OpenNMT-py, eole): the beam's pick and the items' lineage,
batched, over the step every toolkit calls (``step``), for every scoring and stopping rule.

Follow example ``b`` of a batch. Its beam holds ``beam`` items, rows ``b * beam .. b * beam + beam - 1`` of
every ``(B * beam, ...)`` tensor. At step ``t`` (tokens generated so far, this step's included):

1. **Pick** (``Beam.pick``): the toolkit hands over every expansion's score, ``(B * beam, V)``, with its own
   options applied (length penalty, blocked n-grams, minimum length, forced prefix). The ``beam`` best
   expansions of ``b`` are its new items (the paper's Section 2: ``B_t = top_b{ y . w }``); each remembers
   its parent row and its token. ``top_k`` is exact (a stable sort's first ``beam``).
2. **Complete** (``Beam.step``): an item is *real* while it descends from real items only (at ``t = 1`` the
   one starting item of ``b``). A real item whose token is EOS, or any real item at ``t = T = max_length``,
   is a completed hypothesis: it leaves the beam for good (the toolkit masks its score so that its children
   never outrank a real item; they only refill slots when fewer than ``beam`` real items are left, and stay
   unreal). Each rule scores the completed ones (``scoring``: Eq. 1 for log p, Eq. 4 for the bounded reward)
   and keeps its ``n_best`` best (``step.collect``, ``kept.Kept``).
3. **Stop** (``step.decide``, ``stopping``): each rule decides from its ``n_best``-th kept score and the best
   *bound* any real live item still has (the most any continuation could score, ``ScoringRule.bound``). The
   certificate holds when the kept score is at least that bound (Eq. 2; Eq. 5 with the reward): no live item
   can ever enter the ``n_best`` list, so the answer is exactly what the same beam would return if it ran on to
   ``T``. Where each rule stopped, and why, is recorded in the batch's ``state.State``.
4. **Leave** (``Beam.answers``): once every rule is done with ``b`` (at ``T`` at the latest), its answers and
   statistics cross to the host in one transfer, together with those of every example leaving at the same
   step (``answers``), and ``Beam.keep`` drops its rows from the search's tensors.

Several rules can share one beam (the sweep): the beam's contents never depend on where a rule stops or what
it returns, so one decode answers for all of them, exactly as separate decodes would. A shrinking beam (the
paper's baseline) is the exception: each completed hypothesis takes one slot out of its example's beam, so it
can share a decode only with other shrinking rules.

Device traffic. Everything above is tensor code without a per-item Python loop, and ``step`` reads nothing of an
accelerator on the host: it returns a ``(B, 1)`` column of the examples that are done, the one read per step the
toolkit needs to know whether to stop. ``answers`` makes one more per batch of leaving examples. That is the
contract the tests count (``tests/unit/test_device_reads.py``). Where the bookkeeping lives, next to the decode or
on a host fed one packed transfer a step (the default next to a CUDA model), is ``transfer``'s business.
"""
from __future__ import annotations

import torch

from . import search_answers as answers, search_constants as constants, search_step as step, search_transfer as transfer
from .search_answers import __name__ as _
from .search_constants import __name__ as _
from .search_step import __name__ as _
from .search_transfer import __name__ as _
from .search_kept import Kept
from .search_scoring import ScoringRule, StepView, wide
from .search_state import Rules, State
from .search_stopping import StoppingRule
from .search_top_k import TopK, top_k
from .search_transfer import AUTO

__all__ = ["AUTO", "Beam"]


class Beam:
    """The search of a batch of beams of OpenNMT's lineage, for rules ``[(scoring, stopping), ...]`` that share
    it; the first rule is the one the toolkit outputs, the others answer in ``answers`` only. A thin wrapper over
    ``step``: it picks the beam, follows the items' lineage (which are real, which completed), and keeps the
    batch's ``state.State``. ``host`` (``AUTO``, None or a device) and ``free_reads`` (None, True or False):
    where the bookkeeping lives and whether the step may read it, resolved for each batch by ``start``
    (``transfer.place``)."""

    def __init__(self, rules: list[tuple[ScoringRule, StoppingRule]], beam_size: int, n_best: int,
                 eos: int, pad: int, top_k: TopK = top_k, host: torch.device | str | None = AUTO,
                 free_reads: bool | None = None):
        if len({stop.shrinks for _, stop in rules}) > 1:
            raise ValueError("a shrinking beam is a beam of its own: it can share a decode only with other "
                             "shrinking rules (their beams shrink alike, whatever they score)")
        self.rules = list(rules)
        self.beam_size, self.n_best, self.eos, self.pad = beam_size, n_best, eos, pad
        self.top_k, self.where, self.free_reads = top_k, host, free_reads
        self.shrinks = rules[0][1].shrinks
        self.place = None  # the current batch's (``transfer.place``)

    @property
    def host(self) -> torch.device | None:
        """Where the current batch's bookkeeping lives, if apart from the decode's device (``start`` decides;
        before it, an explicit host or None)."""
        if self.place is None:
            return None if self.where is None or self.where == AUTO else torch.device(self.where)
        return self.place.host

    def start(self, src_len: torch.Tensor, max_length: int, dtype=torch.float,
              items: torch.Tensor | None = None) -> None:
        """``src_len``: ``(B,)`` the source lengths ``|x|`` in model tokens; ``max_length``: ``T``; ``items``
        (B * beam, s): the items' start tokens (a host keeps its own copy of the items' tokens)."""
        B, beam = src_len.shape[0], self.beam_size
        self.place = transfer.place(self.where, self.free_reads, src_len.device, items, beam)
        device, self.max_length = self.place.device, max_length
        self.src_len = src_len.to(device=device, dtype=torch.float)
        #: (B, 1 + R) what is known of each example from the start: |x| and each rule's target length l
        self.facts, self._targeted = answers.facts(self.rules, self.src_len)
        #: constants made once per device (each tensor made here is an operation per batch: at batch 1, per line)
        self._slots, first = _constants(beam, device)
        self.plan = Rules.of(self.rules, self.n_best, first, device)
        #: the batch's state; each beam starts from its first item (``live``: a view). The kept scores are in
        #: float32 at least (``scoring.wide``): a half-precision score is exact there, and a kept score rounded to
        #: half precision could round up past a bound it is compared with
        self.state = State.start(self.plan, first.expand(B, beam), max_length, self.pad, wide(dtype), device,
                                 self.shrinks)
        #: (B, 1) the first beam row of each example, made where ``pick`` runs; (V as a 0-d tensor, V)
        self._offsets = self._vocab = None
        self._memo = {}  # the rules' per-batch constants (``StepView.once``)

    @property
    def live(self) -> torch.Tensor:
        """(B, beam) bool: the item holds a real live prefix."""
        return self.state.live

    @property
    def kept(self) -> Kept:
        """The kept hypotheses (``state.State.kept``)."""
        return self.state.kept

    @property
    def width(self) -> torch.Tensor | None:
        """(B, 1) the example's beam width now (a shrinking beam only)."""
        return self.state.width

    @property
    def n_completed(self) -> torch.Tensor:
        """(B, 1) completed hypotheses so far (the statistics)."""
        return self.state.n_completed

    def pick(self, scores: torch.Tensor):
        """The ``beam`` best expansions of each example: ``(values, tokens, parents)``, ``(B, beam)`` each;
        ``parents`` are rows of the ``(B * beam, ...)`` tensors. ``scores``: ``(B * beam, V)``."""
        V = scores.shape[1]
        B = scores.shape[0] // self.beam_size
        if self._vocab is None or self._vocab[1] != V:
            self._vocab = (torch.tensor(V, device=scores.device), V)
        if self._offsets is None:
            self._offsets = torch.arange(0, B * self.beam_size, self.beam_size, device=scores.device).unsqueeze(1)
        elif self._offsets.shape[0] != B:  # examples left: the first beam row of each example
            self._offsets = self._offsets[:B]
        values, ids = self.top_k(scores.view(B, self.beam_size * V), self.beam_size)
        return values, ids.remainder(self._vocab[0]), ids.div(self._vocab[0], rounding_mode="floor") + self._offsets

    def step(self, t: int, parents: torch.Tensor, tokens: torch.Tensor, eos: torch.Tensor, log_prob: torch.Tensor,
             stock_score: torch.Tensor | None, seq: torch.Tensor | None, attn: torch.Tensor | None = None):
        """Collect the hypotheses completed at step ``t`` and apply the stopping rules (``step.collect``,
        ``step.decide``); return the ``(B, 1)`` column of the examples every rule is done with (all at ``t = T``),
        where the bookkeeping lives.

        Per item, ``(B, beam)``: ``parents`` its parent row (``pick``), ``tokens`` its token, ``eos`` its token ends
        it, ``log_prob`` its exact cumulative log p, ``stock_score`` the toolkit's own score of it. ``seq`` (B,
        beam, 1 + t): the start token and the tokens (None with a ``host``, which keeps its own); ``attn`` (B,
        beam, t, S) or None (not with a ``host``). Per-example facts are ``(B, 1)`` columns throughout."""
        parents, tokens, eos, log_prob, stock_score, seq = self.place.receive(t, parents, tokens, eos, log_prob,
                                                                              stock_score, seq)
        state = self.state
        at_max = t >= self.max_length
        real = torch.take(state.live, parents)
        if self.shrinks:  # only the example's current width of top items is its beam
            real &= self._slots < state.width
        completed = real if at_max else torch.bitwise_and(real, eos)  # at T every real item ends, as in stock
        # A quiet step (nothing completed) has nothing to merge or count. Where a read is free (``place``) asking
        # costs one operation; elsewhere it would be a synchronization, so the step merges the empty set (a no-op)
        quiet = self.place.free_reads and attn is None and not at_max and not completed.any()
        state.live = live = real if quiet else real != completed
        view = StepView(log_prob=log_prob, eos=eos, src_len=self.src_len, step=t, max_length=self.max_length,
                        stock_score=stock_score, memo=self._memo, like_cuda=self.place.like_cuda)
        if not quiet:
            self._merge(t, completed, view, seq, attn)
        bounds = None if at_max else [step.best_bound(score, view, live) if stop.needs_bound else None
                                      for score, stop in self.rules]
        return step.decide(self.plan, state, t, at_max, completed, bounds, max_length=self.max_length)

    def _merge(self, t: int, completed, view: StepView, seq, attn) -> None:
        """Keep each rule's ``n_best`` best of what completed at step ``t`` and count the completions."""
        step.collect(self.plan, self.state, completed, step.finals(self.rules, view), view.log_prob, t, seq, attn)

    def answers(self, rows: list[int], items: torch.Tensor, index: torch.Tensor | None = None) -> list[list[dict]]:
        """The answers of the examples at batch rows ``rows`` (those ``step`` just said are done), per row and rule
        (``answers.answer``), from one transfer. ``index``: ``rows`` as a device tensor if the caller has one (else
        a copy to the device, which waits for it), None when every example leaves; ``items`` (B, beam, 1 + t):
        the beam's items (``answers.records``; a host keeps its own)."""
        state = self.state
        packed = answers.pack(self.plan, state, self.facts)
        if len(rows) < packed.shape[0]:
            packed = packed[torch.tensor(rows, device=packed.device) if index is None else index]
        return answers.records(self.plan, packed.tolist(), rows, self.place.items_of(items), state.t,
                               state.kept.seq.shape[2], self._targeted, state.kept.log_prob is not None, self.eos)

    def keep(self, rows: torch.Tensor) -> None:
        """Only the examples at batch rows ``rows`` (a long tensor) go on, in that order."""
        self.facts = self.facts[rows]
        self._memo = {}
        self.src_len = self.facts[:, 0]
        self.place.keep(rows)
        self.state = self.state.select(rows)


def _constants(beam: int, device) -> tuple:
    """``(slots, first)``: ``arange(beam)`` and the (1, beam) mask of each beam's first item, made once per beam
    size and device."""
    def make():
        slots = torch.arange(beam, device=device)
        return slots, (slots == 0).view(1, beam)
    return constants.once(("beam", beam, device), make)
