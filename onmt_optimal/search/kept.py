"""The kept hypotheses: per example and per rule, the ``n_best`` best completed hypotheses seen so far.

A completed hypothesis leaves the beam at once (the paper's Section 2), so whatever a rule will answer must
be copied out of the beam at the step it completes. ``Kept`` holds those copies as tensors of shape
``(B, R, K, ...)`` (examples, rules, ``n_best``), sorted by score, best first; an empty place scores ``-inf``.

Invariant (``merge``): after each step, ``score[b, r]`` is the first ``K`` of a stable sort, by descending
score, of every hypothesis rule ``r`` has collected for example ``b``, in the order they completed (earlier
steps first; within a step, the beam's rank). So among equal scores the earlier hypothesis stays first, as in
OpenNMT-py, which appends completed hypotheses in that order and sorts them stably. ``K = 1`` merges with a
maximum instead of a sort: the first maximum of a step is its best-ranked item, and a strict ``>`` keeps an
equal, earlier one: the same first element as the stable sort.

A hypothesis whose score is ``-inf`` is never kept (it would tie the empty place). The search reports the top
item of the beam for an example that kept nothing (``Beam.answers``).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

NEG_INF = float("-inf")
_NEG_INF_TENSORS: dict = {}


def neg_inf(like: torch.Tensor) -> torch.Tensor:
    """``-inf`` as a 0-d tensor of ``like``'s dtype and device, made once: a Python scalar in a tensor
    operation costs a conversion on every call."""
    key = (like.dtype, like.device)
    if key not in _NEG_INF_TENSORS:
        _NEG_INF_TENSORS[key] = torch.tensor(NEG_INF, dtype=like.dtype, device=like.device)
    return _NEG_INF_TENSORS[key]


@dataclass
class Kept:
    score: torch.Tensor  # (B, R, K) float: the rule's final score, -inf for an empty place
    #: (B, R, K) float: log p(y|x); None while every rule's score has been the log-probability itself (the
    #: paper's Section 3 setting), when ``score`` holds it: two operations a step fewer
    log_prob: torch.Tensor | None
    #: (B, R, K, T) long: its tokens, padded. Its length needs no tensor of its own: the tokens run up to the
    #: first EOS, which ends a hypothesis, or fill all ``T`` (a hypothesis completed at ``max_length``)
    seq: torch.Tensor
    pad: int = 0  # the padding token of ``seq``
    attn: torch.Tensor | None = None  # (B, R, K, T, S) float: its attention, when the decode tracks attention

    @classmethod
    def empty(cls, B: int, R: int, K: int, T: int, pad: int, dtype, device) -> "Kept":
        return cls(
            score=torch.full((B, R, K), NEG_INF, dtype=dtype, device=device),
            log_prob=None,
            seq=torch.full((B, R, K, T), pad, dtype=torch.long, device=device),
            pad=pad,
        )

    def merge(self, completed, score, log_prob, t: int, seq, attn=None, score_is_log_prob: bool = False) -> None:
        """Merge the hypotheses completed at step ``t``.

        ``completed`` (B, R, beam) bool: which items each rule collects; ``score`` (B, R, beam): their final
        scores under each rule; ``log_prob`` (B, beam); ``seq`` (B, beam, t) tokens; ``attn`` (B, beam, t, S);
        ``score_is_log_prob``: every rule's ``score`` is ``log_prob`` itself (not kept twice)."""
        if attn is not None and (self.attn is None or self.attn.shape[-1] != attn.shape[-1]):
            B, R, K, T = self.seq.shape
            self.attn = attn.new_zeros((B, R, K, T, attn.shape[-1]))
        if not score_is_log_prob and self.log_prob is None:
            self.log_prob = self.score.clone()  # what it has been so far
        if self.score.shape[2] == 1:
            self._merge_best(completed, score, None if score_is_log_prob else log_prob, t, seq, attn)
        else:
            self._merge_sorted(completed, score, None if score_is_log_prob else log_prob, t, seq, attn)

    def _merge_best(self, completed, score, log_prob, t, seq, attn) -> None:
        """The ``K = 1`` merge in few tensor operations (each costs a kernel launch on a GPU): the best
        completed item of the step replaces the kept one only if it scores strictly higher."""
        B, R, beam = completed.shape
        best, arg = torch.where(completed, score, neg_inf(score)).max(dim=2, keepdim=True)  # (B, R, 1)
        update = best > self.score  # a tie keeps the earlier hypothesis
        self.score = torch.where(update, best, self.score)
        if log_prob is not None:
            self.log_prob = torch.where(update, _per_rule(log_prob, R).gather(2, arg), self.log_prob)
        chosen = _per_rule(seq, R).gather(2, arg.view(B, R, 1, 1).expand(B, R, 1, t))  # (B, R, 1, t)
        kept = self.seq[..., :t] if t < self.seq.shape[3] else self.seq
        torch.where(update.view(B, R, 1, 1), chosen, kept, out=kept)
        if attn is not None:
            S = attn.shape[3]
            chosen = _per_rule(attn, R).gather(2, arg.view(B, R, 1, 1, 1).expand(B, R, 1, t, S))
            kept = self.attn.narrow(3, 0, t)
            kept.copy_(torch.where(update.view(B, R, 1, 1, 1), chosen, kept))

    def _merge_sorted(self, completed, score, log_prob, t, seq, attn) -> None:
        B, R, beam = completed.shape
        K, T = self.seq.shape[2], self.seq.shape[3]
        all_score = torch.cat([self.score, score.masked_fill(~completed, NEG_INF)], dim=2)
        order = torch.sort(all_score, dim=2, descending=True, stable=True).indices[:, :, :K]  # (B, R, K)
        self.score = all_score.gather(2, order)

        def merged(kept, new):  # new: (B, beam, ...) per item, the same for every rule
            new = new.unsqueeze(1).expand(B, R, *new.shape[1:])
            joined = torch.cat([kept, new], dim=2)
            index = order.view(B, R, K, *([1] * (joined.dim() - 3))).expand(B, R, K, *joined.shape[3:])
            return joined.gather(2, index)

        if log_prob is not None:
            self.log_prob = merged(self.log_prob, log_prob)
        self.seq = merged(self.seq, torch.nn.functional.pad(seq, (0, T - t), value=self.pad))
        if attn is not None:
            self.attn = merged(self.attn, torch.nn.functional.pad(attn, (0, 0, 0, T - t)))

    def select(self, rows: torch.Tensor) -> "Kept":
        """The hypotheses of the examples at ``rows`` (a long tensor), in that order."""
        pick = lambda x: None if x is None else x[rows]  # noqa: E731
        return Kept(pick(self.score), pick(self.log_prob), pick(self.seq), self.pad, pick(self.attn))


def _per_rule(x: torch.Tensor, R: int) -> torch.Tensor:
    """``(B, beam, ...)`` -> ``(B, R, beam, ...)``: every rule sees the same items (a view, no copy)."""
    B, *rest = x.shape
    return x.view(B, 1, *rest) if R == 1 else x.unsqueeze(1).expand(B, R, *rest)
