# Copied from onmt_optimal/search/transfer.py by `make hub` (scripts/make_hub.py): edit the package, not this file.
"""Where a batch's bookkeeping lives, and how each step's facts get there.

``place`` decides it once per batch (``LineageBeamSearch._start_search``), from the ``host`` option and the
decode's device:

* ``Local``: next to the decode. Nothing crosses; the step reads one ``(B, 1)`` column a step there and the
  leaving examples one packed row each. The search uses the step's facts and its items as they are, so it calls
  neither ``receive`` nor ``keep`` (each would hand back what it is given: one call a step saved).
* ``Host``: on a host apart from the decode's device (the CPU, when the model runs on a CUDA device: the
  default, ``AUTO``). A step's operations act on ``(B, beam)`` tensors far too small to keep an accelerator busy,
  so each costs its launch, which costs the host more than the same operation on a host tensor. The step's
  ``(B, beam)`` facts cross in one packed transfer (``receive``: one operation on the device, a ``cat`` of byte
  views, and the step's one read), the host keeps its own copy of the items' tokens (``items``, kept with the
  examples that stay: ``keep``), and leaving examples cross nothing more. The accelerator then runs the pick
  and the packing only.

Both say where the bookkeeping is (``device``; ``host``, None for ``Local``), whether a read of it is free
(``free_reads``) and how the host divides (``like_cuda``).
"""
from __future__ import annotations

import torch

#: ``host`` option: the CPU when the decode runs on a CUDA device, else next to the decode. Another
#: accelerator's division is not imitated (``StepView.divide``), so its bookkeeping stays next to it
AUTO = "auto"


def place(host, free_reads: bool | None, decode: torch.device, items: torch.Tensor | None, beam: int):
    """The bookkeeping's place for a batch decoded on ``decode``. ``host``: ``AUTO``, None (next to the decode) or
    a device; ``free_reads``: may the step read its own tensors (None: where they live on the CPU, where a read
    waits for nothing); ``items`` (B * beam, s): the items' start tokens, which a ``Host`` copies."""
    if host == AUTO:
        host = torch.device("cpu") if decode.type == "cuda" else None
    if host is None:
        return Local(torch.device(decode), free_reads)
    return Host(torch.device(host), decode, free_reads, items, beam)


class Local:
    """The bookkeeping next to the decode: the step's facts are used where they are."""

    host = None
    #: the host divides as a CUDA device (``StepView.divide``): only a ``Host`` computes apart from the decode
    like_cuda = False

    def __init__(self, device: torch.device, free_reads: bool | None):
        self.device = device
        self.free_reads = device.type == "cpu" if free_reads is None else free_reads


class Host:
    """The bookkeeping on ``host``, fed one packed transfer a step; it keeps its own copy of the items' tokens."""

    def __init__(self, host: torch.device, decode: torch.device, free_reads: bool | None, items: torch.Tensor,
                 beam: int):
        self.host = self.device = host
        self.free_reads = host.type == "cpu" if free_reads is None else free_reads
        #: the decode's scores come from a CUDA device: the host divides as it does (``StepView.divide``)
        self.like_cuda = decode.type == "cuda"
        B = items.shape[0] // beam
        #: (B, beam, 1 + t) the items' tokens: the start token, then each step's
        self.items = items.to(host).view(B, beam, -1)

    def receive(self, t: int, parents, tokens, eos, log_prob, stock_score, seq):
        """The step's ``(B, beam)`` facts on the host: one operation on the decode's device (their bytes side by
        side, ``pack``: no conversion) and one transfer; the host reads them back as views of what arrived. The
        toolkit's own score crosses only where it is not the log-probability itself (under a length penalty),
        and stays the same tensor where it is (the scores keep it once, ``Kept``). ``seq`` is not read: the
        items' tokens come from the host's own copy, extended by the step's tokens."""
        B, beam = eos.shape
        own = stock_score is not None and stock_score is not log_prob
        scores = [log_prob, stock_score] if own else [log_prob]
        larger_first = own and stock_score.element_size() > log_prob.element_size()
        if larger_first:
            scores.reverse()
        sent = [parents, tokens, *scores, eos]  # (larger elements first: ``pack``)
        parents, tokens, *scores, eos = unpack(pack(sent).to(self.host), sent)
        if larger_first:
            scores.reverse()
        stock_score = scores[1] if own else None if stock_score is None else scores[0]
        self.items = torch.cat([self.items.view(B * beam, t)[parents], tokens.view(B, beam, 1)], dim=2)
        return parents, tokens, eos, scores[0], stock_score, self.items

    def keep(self, rows: torch.Tensor) -> None:
        """Only the examples at ``rows`` (a host tensor) go on."""
        self.items = self.items[rows]


def pack(tensors: list[torch.Tensor]) -> torch.Tensor:
    """``tensors``, in that order, side by side as one 1-D tensor of bytes: a ``cat`` of views, one operation (a
    conversion to a common dtype would cost one more per tensor). Their elements must not grow in size along
    the list, so that every tensor starts at an offset its dtype can be viewed at (``unpack``)."""
    sizes = [x.element_size() for x in tensors]
    if sizes != sorted(sizes, reverse=True):
        raise ValueError("pack tensors with larger elements first")
    # (``view``, not ``reshape``, where it may: one dispatch a tensor instead of two)
    return torch.cat([(x.view(-1) if x.is_contiguous() else x.reshape(-1)).view(torch.int8) for x in tensors])


def unpack(packed: torch.Tensor, like: list[torch.Tensor]) -> list[torch.Tensor]:
    """The tensors ``pack(like)`` packed, as views of ``packed`` (wherever it now lives) with ``like``'s dtypes and
    shapes."""
    pieces = packed.split([x.numel() * x.element_size() for x in like])
    return [piece.view(x.dtype).view(x.shape) for piece, x in zip(pieces, like)]
