"""Work per decoder call: aten ops (any device), CUDA kernels, device-to-host copies and host synchronizations.

The benchmark's measure of work (``scripts/bench.py``; ``--count-only`` for it alone). A *decoder call* is one
call of a named method, by default the OpenNMT-py translator's ``_decode_and_generate`` (decoder step +
generator + log-softmax for every live path of the batch); OpenNMT-py's decoding loop calls it once per step, so
"per call" is "per step of the batch". ``count(run, owner)`` runs ``run()`` and divides what it launched by the
calls counted:

- ``aten_ops``: every ``aten::`` operator event ``torch.profiler`` records on the host, nested ones included
  (``aten::linear`` and the ``aten::addmm`` under it count two). Host-side dispatch: the same count on CPU
  and GPU, and on a GPU the kernels move with it, so it is the CPU proxy for launches.
- ``kernels``: device-side events (kernels, memcpy, memset) in the profiler's CUDA trace; None on CPU.
- ``dtoh``: the device-to-host copies among them (``Memcpy DtoH``); None on CPU.
- ``syncs``: host synchronizations, the warnings ``torch.cuda.set_sync_debug_mode("warn")`` raises (``.item()``,
  ``.tolist()``, ``bool(tensor)``, ``nonzero``, boolean-mask indexing, blocking copies), counted in a second,
  unprofiled run of ``run()``, with the source line of each (``sync_sites``); None on CPU.

Everything ``run()`` does is counted, the forward pass included (the same for every search that gives the same
output), so differences between searches are the searches'. Counts are exact for a given run, not timings:
they do not depend on the machine's load, only on the code path (and, on a GPU, on cuBLAS/cuDNN's kernel
choices). Torch only; imports nothing of OpenNMT-py or of the search.
"""
from __future__ import annotations

import collections
import os
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

__all__ = ["OpCounts", "count", "counting_calls", "kernel_like"]

#: aten operators that make a view, allocate, or only wrap the operator that does the work (which the profiler
#: records as their child): no kernel of their own on an accelerator
NO_KERNEL = frozenset("aten::" + name for name in (
    "view", "_unsafe_view", "view_as", "as_strided", "slice", "select", "narrow", "expand", "expand_as",
    "unsqueeze", "squeeze", "reshape", "_reshape_alias", "flatten", "unflatten", "t", "transpose", "permute",
    "movedim", "unbind", "split", "split_with_sizes", "chunk", "alias", "detach", "detach_", "lift_fresh",
    "empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided", "resize_", "to", "_to_copy",
    "contiguous", "clone", "result_type", "is_nonzero", "numpy_T", "diagonal", "set_", "resolve_conj",
    "resolve_neg"))


@dataclass
class OpCounts:
    """Totals over one ``run()``; ``per_call()`` divides them by ``calls``. Device figures are None on CPU."""

    calls: int
    aten_ops: int
    kernels: int | None = None
    dtoh: int | None = None
    syncs: int | None = None
    sync_calls: int | None = None  # decoder calls of the sync-counting run (the same code path: same as calls)
    sync_sites: collections.Counter = field(default_factory=collections.Counter)

    def per_call(self) -> dict[str, float | None]:
        def div(total, calls):
            return None if total is None or not calls else total / calls

        return {"decoder_calls": self.calls, "aten_ops": div(self.aten_ops, self.calls),
                "kernels": div(self.kernels, self.calls), "dtoh": div(self.dtoh, self.calls),
                "syncs": div(self.syncs, self.sync_calls)}

    def __iadd__(self, other: "OpCounts") -> "OpCounts":
        def add(a, b):
            return None if a is None and b is None else (a or 0) + (b or 0)

        self.calls += other.calls
        self.aten_ops += other.aten_ops
        self.kernels, self.dtoh = add(self.kernels, other.kernels), add(self.dtoh, other.dtoh)
        self.syncs, self.sync_calls = add(self.syncs, other.syncs), add(self.sync_calls, other.sync_calls)
        self.sync_sites.update(other.sync_sites)
        return self


@contextmanager
def counting_calls(owner: Any, method: str = "_decode_and_generate"):
    """Count calls of ``owner.method`` inside the block (an instance attribute wraps whatever is there and is
    put back after). Yields a one-item list holding the count."""
    calls = [0]
    had = method in vars(owner)
    inner = getattr(owner, method)

    def counted(*args, **kwargs):
        calls[0] += 1
        return inner(*args, **kwargs)

    setattr(owner, method, counted)
    try:
        yield calls
    finally:
        if had:
            setattr(owner, method, inner)
        else:
            delattr(owner, method)


def count(run: Callable[[], Any], owner: Any, method: str = "_decode_and_generate", cuda: bool = False,
          syncs: bool = True) -> OpCounts:
    """Profile one ``run()`` and count the calls of ``owner.method`` in it; with ``cuda``, also kernels and
    device-to-host copies, and (``syncs``) run it a second time under the sync debug mode to count host
    synchronizations. ``run()`` must take the same code path each time (warm it up first: a first call may
    initialise libraries)."""
    from torch.profiler import ProfilerActivity, profile

    result = OpCounts(calls=0, aten_ops=0)
    if cuda and syncs:
        torch.cuda.synchronize()
        sites: collections.Counter = collections.Counter()
        with counting_calls(owner, method) as calls, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            previous = torch.cuda.get_sync_debug_mode()
            torch.cuda.set_sync_debug_mode("warn")
            try:
                run()
            finally:
                torch.cuda.set_sync_debug_mode(previous)
        for w in caught:
            if "synchroniz" in str(w.message):
                sites[f"{os.path.basename(w.filename)}:{w.lineno}"] += 1
        result.syncs, result.sync_calls, result.sync_sites = sum(sites.values()), calls[0], sites
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with counting_calls(owner, method) as calls:
        with profile(activities=activities) as prof:
            run()
            if cuda:
                torch.cuda.synchronize()
    result.calls = calls[0]
    host, device = torch.autograd.DeviceType.CPU, torch.autograd.DeviceType.CUDA
    events = prof.key_averages()
    result.aten_ops = sum(e.count for e in events if e.key.startswith("aten::") and e.device_type == host)
    if cuda:
        result.kernels = sum(e.count for e in events if e.device_type == device)
        result.dtoh = sum(e.count for e in events if e.device_type == device and "DtoH" in e.key)
    return result


def kernel_like(event) -> bool:
    """Would this profiler event (a ``FunctionEvent`` of a CPU run) be a kernel on an accelerator? An ``aten::``
    operator not in ``NO_KERNEL`` none of whose descendants does work of its own: ``aten::linear`` and the
    ``aten::matmul`` under it are not kernels, the ``aten::mm`` under that is; ``aten::to`` is not, the
    ``aten::copy_`` under it is. The CPU proxy for the kernels of a piece of code: exact for the search's
    elementwise, indexing and reduction operators, one kernel each on CUDA (``torch.topk`` and ``torch.sort``
    may take a few there)."""
    return event.name.startswith("aten::") and event.name not in NO_KERNEL and not any(
        _works(child) for child in event.cpu_children)


def _works(event) -> bool:
    """Does the event, or an operator under it, do work of its own?"""
    return event.name.startswith("aten::") and (
        event.name not in NO_KERNEL or any(_works(child) for child in event.cpu_children))
