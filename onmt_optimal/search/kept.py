"""The kept hypotheses: per example and per rule, the ``n_best`` best completed hypotheses seen so far.

A completed hypothesis leaves the beam at once (the paper's Section 2), so whatever a rule will answer must
be copied out of the beam at the step it completes. ``Kept`` holds those copies as tensors of shape
``(B, R * K, ...)`` (examples, rules times ``n_best``), sorted by score, best first; an empty place scores ``-inf``.

Invariant (``merge``): after each step, rule ``r``'s places of ``score[b]`` are the first ``K`` of a stable sort, by
descending score, of every hypothesis rule ``r`` has collected for example ``b``, in the order they completed
(earlier steps first; within a step, the beam's rank). So among equal scores the earlier hypothesis stays first, as
in OpenNMT-py, which appends completed hypotheses in that order and sorts them stably. ``K = 1`` merges with a
maximum instead of a sort: the first maximum of a step is its best-ranked item, and a strict ``>`` keeps an equal,
earlier one: the same first element as the stable sort.

A hypothesis whose score is ``-inf`` is never kept (it would tie the empty place). The search reports the top
item of the beam for an example that kept nothing (``answers.records``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from onmt_optimal.search.constants import NEG_INF, neg_inf


@dataclass
class Kept:
    """Rule ``r``'s ``K`` places are the columns ``r * K .. r * K + K - 1`` of every tensor: one rule (the usual
    case) reads them without a view, and a leaving example's row crosses to the host as it is.

    ``merge`` takes one rule's items as ``(B, beam)`` and several rules' as ``(B, R, beam)``. The first takes
    views only, no kernel, and is kept because callers with one rule hand their tensors over as they are (the
    count of what it saves: ``benchmarks/NOTES.md``)."""

    score: torch.Tensor  # (B, R * K) float: the rule's final score, -inf for an empty place
    #: (B, R * K) float: log p(y|x); None while every rule's score has been the log-probability itself (the
    #: paper's Section 3 setting), when ``score`` holds it: two operations a step fewer
    log_prob: torch.Tensor | None
    #: (B, R * K, 1 + T) long: the start token, then its tokens, padded. Its length needs no tensor of its own:
    #: the tokens run up to the first EOS, which ends a hypothesis, or fill all ``T`` (a hypothesis completed at
    #: ``max_length``)
    seq: torch.Tensor
    pad: int = 0  # the padding token of ``seq``
    attn: torch.Tensor | None = None  # (B, R * K, T, S) float: its attention, when the decode tracks attention
    #: ``-inf`` as a 0-d tensor per dtype of the scores merged (``constants.neg_inf``, looked up once)
    floors: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def empty(cls, B: int, R: int, K: int, T: int, pad: int, dtype, device) -> "Kept":
        return cls(
            score=torch.full((B, R * K), NEG_INF, dtype=dtype, device=device),
            log_prob=None,
            seq=torch.full((B, R * K, 1 + T), pad, dtype=torch.long, device=device),
            pad=pad,
        )

    def merge(self, completed, score, log_prob, seq, attn=None, score_is_log_prob: bool = False) -> None:
        """Merge the hypotheses completed at step ``t``.

        ``completed`` (B, R, beam) bool, or (B, beam) for one rule: which items each rule collects; ``score``
        (the same shape): their final scores under each rule; ``log_prob`` (B, beam); ``seq`` (B, beam, 1 + t)
        the start token and the ``t`` tokens; ``attn`` (B, beam, t, S); ``score_is_log_prob``: every rule's
        ``score`` is ``log_prob`` itself (not kept twice)."""
        t = seq.shape[2] - 1
        if attn is not None and (self.attn is None or self.attn.shape[-1] != attn.shape[-1]):
            B, RK, T1 = self.seq.shape
            self.attn = attn.new_zeros((B, RK, T1 - 1, attn.shape[-1]))
        if not score_is_log_prob and self.log_prob is None:
            self.log_prob = self.score.clone()  # what it has been so far
        if self.score.shape[1] == (1 if completed.dim() == 2 else completed.shape[1]):  # K = 1
            self._merge_best(completed, score, None if score_is_log_prob else log_prob, t, seq, attn)
        else:
            if completed.dim() == 2:
                completed, score = completed.unsqueeze(1), score.unsqueeze(1)
            self._merge_sorted(completed, score, None if score_is_log_prob else log_prob, t, seq, attn)

    def _merge_best(self, completed, score, log_prob, t, seq, attn) -> None:
        """The ``K = 1`` merge in few tensor operations (each costs a kernel launch on a GPU): the best
        completed item of the step replaces the kept one only if it scores strictly higher. One rule's
        ``completed`` and ``score`` come as (B, beam) and need no view."""
        B, R = seq.shape[0], self.score.shape[1]
        floor = self.floors.get(score.dtype)
        if floor is None:
            floor = self.floors[score.dtype] = neg_inf(score)
        best, arg = torch.where(completed, score, floor).max(dim=-1, keepdim=True)  # (B, R[, 1])
        if R > 1:
            best, arg = best.view(B, R), arg.view(B, R)
        update = best > self.score  # (B, R); a tie keeps the earlier hypothesis
        torch.where(update, best, self.score, out=self.score)
        if log_prob is not None:
            self.log_prob = torch.where(update, log_prob.gather(1, arg), self.log_prob)
        kept = self.seq if t + 1 == self.seq.shape[2] else self.seq[..., : t + 1]
        torch.where(update.view(B, R, 1), _best_of(seq, arg, R), kept, out=kept)
        if attn is not None:
            kept = self.attn.narrow(2, 0, t)
            kept.copy_(torch.where(update.view(B, R, 1, 1), _best_of(attn, arg, R), kept))

    def _merge_sorted(self, completed, score, log_prob, t, seq, attn) -> None:
        B, R, beam = completed.shape
        RK, T1 = self.seq.shape[1], self.seq.shape[2]
        K = RK // R
        all_score = torch.cat([self.score.view(B, R, K), score.masked_fill(~completed, NEG_INF)], dim=2)
        order = torch.sort(all_score, dim=2, descending=True, stable=True).indices[:, :, :K]  # (B, R, K)
        self.score = all_score.gather(2, order).view(B, RK)

        def merged(kept, new):  # kept: (B, R * K, ...); new: (B, beam, ...) per item, the same for every rule
            new = new.unsqueeze(1).expand(B, R, *new.shape[1:])
            joined = torch.cat([kept.view(B, R, K, *kept.shape[2:]), new], dim=2)
            index = order.view(B, R, K, *([1] * (joined.dim() - 3))).expand(B, R, K, *joined.shape[3:])
            return joined.gather(2, index).view(B, RK, *joined.shape[3:])

        if log_prob is not None:
            self.log_prob = merged(self.log_prob, log_prob)
        self.seq = merged(self.seq, torch.nn.functional.pad(seq, (0, T1 - 1 - t), value=self.pad))
        if attn is not None:
            self.attn = merged(self.attn, torch.nn.functional.pad(attn, (0, 0, 0, T1 - 1 - t)))

    def select(self, rows: torch.Tensor) -> "Kept":
        """The hypotheses of the examples at ``rows`` (a long tensor), in that order."""
        pick = lambda x: None if x is None else x[rows]  # noqa: E731
        return Kept(pick(self.score), pick(self.log_prob), pick(self.seq), self.pad, pick(self.attn), self.floors)


def _best_of(x: torch.Tensor, arg: torch.Tensor, R: int) -> torch.Tensor:
    """``x`` (B, beam, ...) per item, ``arg`` (B, R) an item per rule: ``x[b, arg[b, r]]`` as (B, R, ...)."""
    B, beam, *rest = x.shape
    if R == 1:
        return x.gather(1, arg.view(B, 1, *[1] * len(rest)).expand(B, 1, *rest))
    index = arg.view(B, R, 1, *[1] * len(rest)).expand(B, R, 1, *rest)
    return x.unsqueeze(1).expand(B, R, beam, *rest).gather(2, index).view(B, R, *rest)
