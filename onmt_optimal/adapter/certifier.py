"""The toolkit-free half of a certified step: what the search core needs from a step, and what it says back.

A ``BeamSearch`` of OpenNMT's lineage (``adapter.beam_search``) runs its own step up to the choice of the beam,
then hands the ``Certifier`` the chosen items as one explicit ``StepIn`` and gets one ``Verdict`` back; when some
example is done it asks for a ``Departure`` (who leaves, who stays, the leavers' answers) and applies it to its
own tensors. The certifier never reads a toolkit attribute: everything crosses in these three records, in the
manner of fairseq's ``Search.step`` contract and Hugging Face's beam step (state in, state out).

Shapes: ``B`` examples still in the batch, ``beam`` items each, step ``t`` (tokens generated, this step's
included), ``S`` source positions. Rows ``b * beam .. b * beam + beam - 1`` of a ``(B * beam, ...)`` tensor are
example ``b``'s items.

Invariant (the decode loop's protocol): ``Verdict.any_done`` is True exactly when some example is done, read
on the host once per step; ``depart`` then removes exactly those examples, keeping the others in batch order.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from onmt_optimal.search.beam import Beam
from onmt_optimal.search.top_k import TopK


@dataclass(frozen=True)
class StepIn:
    """The chosen items of step ``t``, each ``(B, beam)``: ``parents`` its parent row (``Certifier.pick``),
    ``tokens`` its token, ``ends`` its token ends a hypothesis, ``log_prob`` its exact cumulative log p, ``score``
    the toolkit's own score of it. ``items`` (B * beam, 1 + t): the start token and the tokens (read only when the
    bookkeeping lives next to the model); ``attn`` (B * beam, t, S) or None: the items' attention, kept with the
    hypotheses when the toolkit returns attention."""

    t: int
    parents: torch.Tensor
    tokens: torch.Tensor
    ends: torch.Tensor
    log_prob: torch.Tensor
    score: torch.Tensor
    items: torch.Tensor
    attn: torch.Tensor | None = None


@dataclass(frozen=True)
class Verdict:
    """What step ``t`` decided: ``done_mask`` (B, 1) the examples every rule is done with (where the bookkeeping
    lives), ``done`` the same as a host list (the step's one read), and ``finished`` (B, beam) the items that never
    grow again (completed ones; in a shrinking beam also those that fell outside it), on the model's device."""

    done_mask: torch.Tensor
    done: list
    finished: torch.Tensor

    @property
    def any_done(self) -> bool:
        return any(self.done)


@dataclass(frozen=True)
class Departure:
    """The examples leaving after a ``Verdict``: ``leaving`` and ``staying`` (batch rows, host lists, in batch
    order), ``rows`` the staying rows as a tensor on the model's device (None when every example leaves),
    ``answers[i][r]`` rule ``r``'s ``search.record.Record`` of ``leaving[i]`` (with its n-best ``hypotheses``),
    and ``core_rows`` the staying rows where the bookkeeping lives."""

    leaving: list
    staying: list
    rows: torch.Tensor | None
    answers: list
    core_rows: torch.Tensor | None


class Certifier:
    """The search core (``search.beam.Beam``) for one batch of a toolkit's beam search, with rules
    ``[(scoring, stopping), ...]`` (the first answers to the toolkit). ``host``: where the bookkeeping lives
    (``search.transfer``); the attention of kept hypotheses stays with the model, so a decode that returns
    attention (``keeps_attention``) keeps the bookkeeping there too."""

    def __init__(self, rules: list, beam_size: int, n_best: int, eos: int, pad: int, top_k: TopK,
                 host: torch.device | str | None, keeps_attention: bool):
        self.core = Beam(rules, beam_size, n_best, eos, pad, top_k, None if keeps_attention else host)
        self.beam_size = beam_size
        #: a certified rule needs each item's exact log p (a length penalty's score * penalty may be ulps off)
        self.exact_log_prob = any(stop.certified for _, stop in rules)

    def start(self, src_len: torch.Tensor, max_length: int, log_probs: torch.Tensor, items: torch.Tensor) -> None:
        """A new batch: ``src_len`` (B,) each example's |x|; ``log_probs`` (B, beam) the toolkit's initial sums
        (their device and dtype are the search's); ``items`` (B * beam, 1) the start tokens."""
        self.core.start(src_len.to(device=log_probs.device), max_length, log_probs.dtype, items)

    def pick(self, scores: torch.Tensor):
        """``(values, tokens, parents)``, ``(B, beam)`` each: the beam best of ``scores`` (B * beam, V) per example
        (``Beam.pick``: an exact top-k)."""
        return self.core.pick(scores)

    def judge(self, s: StepIn) -> Verdict:
        """Collect what completed at step ``s.t``, apply every rule, say who is done (``Beam.step``)."""
        B = s.parents.shape[0]
        core = self.core
        seq = None  # a host keeps its own copy of the tokens
        if core.host is None:
            seq = s.items.view(B, self.beam_size, s.t + 1)  # the start token, then the tokens
        attn = None
        if s.attn is not None:
            attn = s.attn.view(B, self.beam_size, s.t, s.attn.shape[-1])
        done = core.step(s.t, s.parents, s.tokens, s.ends, s.log_prob, s.score, seq, attn)
        # completed items never grow again (stock does this in update_finished); nor, in a shrinking beam, do
        # the items that fell outside it
        finished = (~core.live).to(s.ends.device, non_blocking=True) if core.shrinks else s.ends
        return Verdict(done_mask=done, done=[d for (d,) in done.tolist()], finished=finished)

    def depart(self, verdict: Verdict, predictions: torch.Tensor) -> Departure:
        """The examples ``verdict`` says are done leave with their answers, from one transfer.
        ``predictions`` (B, beam, 1 + t): the items' tokens on the model's device."""
        done = verdict.done
        leaving = [i for i, d in enumerate(done) if d]
        staying = [i for i, d in enumerate(done) if not d]
        host = self.core.host
        if host is None:
            # the rows that stay, then those that leave, each in batch order, as device indices made on the
            # device: a host-made index would be copied to the device, which waits for the device (a sync).
            # When every example leaves (always at batch 1) no index is needed
            rows = index = None
            if staying:
                order = torch.sort(verdict.done_mask.view(torch.int8).view(-1), stable=True).indices  # (a bitcast)
                rows, index = order[: len(staying)], order[len(staying):]
            answers = self.core.answers(leaving, predictions, index)
            core_rows = rows
        else:  # the bookkeeping is on the host: the answers need no transfer, the device one copy of the rows
            answers = self.core.answers(leaving, None, torch.tensor(leaving, device=host) if staying else None)
            core_rows = rows = None
            if staying:
                core_rows = torch.tensor(staying, device=host)
                rows = core_rows.to(predictions.device, non_blocking=True)
        return Departure(leaving, staying, rows, answers, core_rows)

    def keep(self, departure: Departure) -> None:
        """Only the examples that stay go on (after ``depart``, when some do)."""
        self.core.keep(departure.core_rows)

    @property
    def kept_attn(self) -> torch.Tensor | None:
        """(B, R * n_best, T, S) the kept hypotheses' attention, or None (``search.kept.Kept``)."""
        return self.core.kept.attn

    @property
    def free_reads(self):
        return self.core.free_reads

    @free_reads.setter
    def free_reads(self, value) -> None:
        """Whether the step may read the bookkeeping on the host (``search.transfer.place``; tests set it)."""
        self.core.free_reads = value
