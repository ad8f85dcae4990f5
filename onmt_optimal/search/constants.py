"""The search's constant tensors, made once per process and device.

Every tensor made inside a step is an operation of its own (a kernel launch on an accelerator, an allocation
and a fill on CPU), and so is a Python number inside a tensor operation (converted on every call: four aten
events on CPU). At batch 1 a batch is a line, so even a constant made per batch is paid per line. The search
therefore takes its constants (``-inf``, the step's 0-d one, ``arange(beam)``, the top-k's group offsets, the
stop codes) from here, made the first time a key is asked for. They are never written in place.
"""
from __future__ import annotations

from typing import Callable, TypeVar

import torch

NEG_INF = float("-inf")

T = TypeVar("T")

_MADE: dict = {}


def once(key: tuple, make: Callable[[], T]) -> T:
    """``make()``, made on the first call with ``key`` (which names the device it is made on) and kept."""
    if key not in _MADE:
        _MADE[key] = make()
    return _MADE[key]


def neg_inf(like: torch.Tensor) -> torch.Tensor:
    """``-inf`` as a 0-d tensor of ``like``'s dtype and device."""
    return once(("-inf", like.dtype, like.device),
                lambda: torch.tensor(NEG_INF, dtype=like.dtype, device=like.device))


def row(values: tuple, device) -> torch.Tensor:
    """``[values]`` as a (1, len(values)) float32 tensor on ``device``."""
    return once(("row", values, device), lambda: torch.tensor([values], dtype=torch.float, device=device))
