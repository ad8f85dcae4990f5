"""Exact top-k of the beam's candidate scores, in two cheap passes instead of a partial sort over all of them.

Each step a beam picks, per example, the ``k`` best of ``beam x |V|`` candidate scores. ``torch.topk`` on CPU
partially sorts every candidate; ``top_k`` reads each candidate once and sorts only a few, returning the
same ``k`` from

1. one elementwise-max pass: the ``N`` candidates of a row fall into ``n = N // G`` strided groups (group ``j``
   holds candidates ``j, j + n, j + 2n, ...``; the last ``N - nG`` candidates stay loose), and ``m_j`` is the
   maximum of group ``j``;
2. the ``k`` groups with the largest maxima. Let ``M_k`` be the ``k``-th largest ``m_j``. Those ``k`` groups
   each hold a candidate ``>= M_k``, so the ``k``-th best candidate is ``>= M_k``, and every candidate that
   can enter the top ``k`` (ties included) lies in a group whose maximum is ``>= M_k``. When exactly ``k``
   groups reach ``M_k`` (the ``k+1``-th maximum is smaller) they are the chosen groups, and the ``k G``
   candidates in them (plus the loose ones) hold the answer, each of its ``k`` strictly above every candidate
   outside them (those are at most the ``k+1``-th maximum, below ``M_k``). The members of the ``k+1``-th
   group join them (a superset changes nothing above: its extra candidates are below ``M_k`` too);
3. the ``k + 1`` best of those few (``torch.topk``; all of them if there are only ``k``). When they are
   strictly decreasing, the ``k`` best are distinct and strictly above every other candidate, so there is no
   tie for any sort to break: they are the answer, in order.

Invariant: ``top_k(scores, k)`` equals ``scores.sort(dim=1, descending=True, stable=True)`` cut at ``k``:
always in values, and above ``SMALL`` scores in indices too: the ``k`` largest values, ties broken by the
lower index, which in a beam is the higher-ranked parent item, then the lower token id (the rule of a plain
stable sort, and of the reference beam in ``tests/helpers/synthetic.py``). A row where more than ``k`` groups tie at
``M_k``, or where the ``k + 1`` best candidates tie (equal float sums, ``-inf``, NaN), sends the whole batch to
that full stable sort, so the invariant holds for every input. Both checks are read on the host: this path runs
on CPU only, where a read is no synchronisation.

Small problems (at most ``small`` scores, 16k by default: batch 1 with a beam of one or two over an 8k
vocabulary) go to ``torch.topk`` itself, stock OpenNMT-py's op: there the two passes' extra tensor operations
cost more than the reads they save. ``torch.topk`` also costs the steps after it (it partially sorts a copy of
each row, which evicts what the model's next step would find in the caches), so the line is set by timing
whole decodes, not calls (``scripts/top_k_timing.py --decode``; the figures are in ``benchmarks/NOTES.md``).
Values are the same; among exactly equal values at the ``k``-th place the indices are ``torch.topk``'s, as in
stock (nothing certified depends on which of two equal scores a beam keeps: the certificate compares scores,
and a run with and without early stopping makes the same choice).

Half-precision scores (OpenNMT-py's ``-precision fp16`` sums in float16) go to ``torch.topk`` too: with 11 or 8
bits of mantissa, exact ties at the ``k``-th place are common, so the two passes would fall back to the full sort
often, and each such tie broken by the lower index would part from stock's beam, which the bookkeeping with
OpenNMT-py's rule must reproduce.

The two passes pay off on CPU, where the check above costs no device synchronisation. On an accelerator,
``torch.topk`` is already fast and is used as it is, as stock OpenNMT-py does; exact ties at the ``k``-th
place are then broken as ``torch.topk`` breaks them.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from onmt_optimal.search import constants


@dataclass(frozen=True)
class TopK:
    """``TopK(group, small)(scores, k)``: the ``k`` best entries of each row of ``scores`` (``(B, N)``), as
    ``(values, indices)``, each ``(B, k)``.

    ``group``: candidates per group (the first pass reads every candidate once, the sort reads ``k * group``);
    ``small``: at most this many scores in all (batch 1, b <= 2 over 8k words) go to ``torch.topk``, where
    fewer tensor operations beat fewer reads. Tests pass small values to reach each path on tiny vocabularies."""

    group: int = 16
    small: int = 16_000

    def __call__(self, scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        if scores.device.type != "cpu" or scores.dtype not in WIDE:
            return torch.topk(scores, k, dim=1)
        B, N = scores.shape
        if B * N <= self.small:
            return torch.topk(scores, k, dim=1)
        group = self.group
        n = N // group
        if n < 4 * k:  # few candidates: a full sort is cheap
            return _stable_top_k(scores, k)
        grouped = scores if N == n * group else scores[:, : n * group]
        group_max = grouped.view(B, group, n).amax(dim=1, keepdim=True)  # (B, 1, n)
        best, chosen = torch.topk(group_max, k + 1, dim=2)  # (B, 1, k + 1)
        if not _separated([row[0] for row in best.tolist()], k - 1):  # a group ties the k-th at M_k (or NaN)
            return _stable_top_k(scores, k)
        # the members of the k + 1 best groups (the (k + 1)-th holds no answer: a few extra candidates cost less
        # than slicing it off); group j holds j, j + n, j + 2n, ...
        spread, loose = _members(n, group, N, scores.device)
        members = (chosen + spread).view(B, group * (k + 1))
        if loose is not None:  # the last N - n * group candidates
            members = torch.cat([members, loose.expand(B, -1)], dim=1)
        values, order = torch.topk(scores.gather(1, members), min(k + 1, members.shape[1]), dim=1)
        if not _separated(values.tolist(), 0):  # a tie among the k + 1 best (or -inf, NaN): no shortcut
            return _stable_top_k(scores, k)
        indices = members.gather(1, order[:, :k])
        return scores.gather(1, indices), indices  # a gather costs fewer operations than a contiguous copy


def _members(n: int, group: int, N: int, device):
    """``(n * arange(group))`` as a ``(1, group, 1)`` column and the loose indices ``nG .. N - 1`` (or None),
    made once per shape."""
    def make():
        spread = (n * torch.arange(group, device=device)).view(1, group, 1)
        loose = torch.arange(n * group, N, device=device).unsqueeze(0) if N > n * group else None
        return spread, loose
    return constants.once(("top_k members", n, group, N, device), make)


#: the types the two passes take; half-precision scores go to ``torch.topk`` (the module docstring)
WIDE = (torch.float32, torch.float64)

#: the defaults: 16 candidates a group; torch.topk up to 16k scores
top_k = TopK()


def pick(scores: torch.Tensor, beam: int, top_k: TopK = top_k, memo: dict | None = None):
    """The ``beam`` best expansions of each example (a beam of OpenNMT's lineage, whose items are rows
    ``b * beam .. b * beam + beam - 1`` of ``scores``, ``(B * beam, V)``): ``(values, tokens, parents)``,
    ``(B, beam)`` each; ``parents`` are rows of the ``(B * beam, ...)`` tensors. ``memo``: the decode's own dict,
    where ``V`` as a 0-d tensor and each example's first row are kept between steps (each made once a batch)."""
    memo = {} if memo is None else memo
    V = scores.shape[1]
    B = scores.shape[0] // beam
    vocab = memo.get("V")
    if vocab is None or vocab[1] != V:
        vocab = memo["V"] = (torch.tensor(V, device=scores.device), V)
    offsets = memo.get("offsets")
    if offsets is None:
        offsets = memo["offsets"] = torch.arange(0, B * beam, beam, device=scores.device).unsqueeze(1)
    elif offsets.shape[0] != B:  # examples left: the first beam row of each example
        offsets = memo["offsets"] = offsets[:B]
    values, ids = top_k(scores.view(B, beam * V), beam)
    return values, ids.remainder(vocab[0]), ids.div(vocab[0], rounding_mode="floor") + offsets


def _separated(rows: list[list[float]], first: int) -> bool:
    """Is every row strictly decreasing from place ``first`` on (no tie, no NaN)?"""
    return all(a > b for row in rows for a, b in zip(row[first:], row[first + 1:]))


def _stable_top_k(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    values, indices = torch.sort(scores, dim=1, descending=True, stable=True)
    return values[:, :k].contiguous(), indices[:, :k].contiguous()
