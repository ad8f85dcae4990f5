# Copied from onmt_optimal/search/constants.py by `make hub` (scripts/make_hub.py): edit the package, not this file.
"""The search's constant tensors, made once per key (what they are, their shape and device) and kept.

Every tensor made inside a step is an operation of its own (a kernel launch on an accelerator, an allocation
and a fill on CPU), and so is a Python number inside a tensor operation (converted on every call: four aten
events on CPU). At batch 1 a batch is a line, so even a constant made per batch is paid per line. The search
therefore takes its constants (``-inf``, the step's 0-d one, ``arange(beam)``, the top-k's group offsets, the
stop codes) from here, made the first time a key is asked for. They are never written in place.

A decode asks for a few dozen keys (one per beam size, live beam width, set of rules, dtype and device), all
small tensors. ``KEPT`` bounds what a long-lived process that decodes many shapes keeps: the table is emptied
when it is full, and each constant is made again, with the same values, when it is next asked for. ``clear``
empties it.
"""
from __future__ import annotations

from typing import Callable, TypeVar

import torch

NEG_INF = float("-inf")

#: the most constants kept (many times what one decode asks for)
KEPT = 1024

T = TypeVar("T")

_made: dict = {}
_MISSING = object()


def once(key: tuple, make: Callable[[], T]) -> T:
    """``make()``, made on the first call with ``key`` (which names the device it is made on) and kept: later
    calls with ``key`` answer the same object until ``KEPT`` keys have been made (then the table starts again)
    or ``clear`` is called."""
    made = _made.get(key, _MISSING)
    if made is _MISSING:
        if len(_made) >= KEPT:
            _made.clear()
        made = _made.setdefault(key, make())  # one object per key, should two threads make it at once
    return made


def clear() -> None:
    """Drop every constant kept (each is made again when next asked for)."""
    _made.clear()


def neg_inf(like: torch.Tensor) -> torch.Tensor:
    """``-inf`` as a 0-d tensor of ``like``'s dtype and device."""
    return once(("-inf", like.dtype, like.device),
                lambda: torch.tensor(NEG_INF, dtype=like.dtype, device=like.device))


def row(values: tuple, device) -> torch.Tensor:
    """``[values]`` as a (1, len(values)) float32 tensor on ``device``."""
    return once(("row", values, device), lambda: torch.tensor([values], dtype=torch.float, device=device))
