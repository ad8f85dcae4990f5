"""The search reads the model's device on the host once per step, plus once per batch of leaving examples.

On an accelerator every host read of a device tensor (``.item()``, ``.tolist()``, ``bool(t)``, ``nonzero``,
boolean-mask indexing, ``.cpu()``) waits for the device to finish its queue: a synchronization. Stock
OpenNMT-py reads every item's EOS flag each step and then runs a per-hypothesis Python loop whenever any item
completed; the core (``onmt_optimal.adapter.beam_search`` over ``search.step``) promises one ``(B, 1)`` column a step and one packed transfer per
batch of examples that leave. Counted here with a ``TorchFunctionMode`` around ``advance`` and
``update_finished``, on CPU (the same calls are syncs on a GPU), for every stopping rule and several scores.
"""
from __future__ import annotations

import pytest
import torch
from torch.overrides import TorchFunctionMode

from helpers.synthetic import DEVICE, SyntheticModel, run_strategy
from test_certificate import build

READS = {"tolist", "item", "__bool__", "__int__", "__float__", "__index__", "nonzero", "cpu", "numpy",
         "masked_select", "argwhere", "any", "all"}


class HostReads(TorchFunctionMode):
    """Counts calls that read a tensor's values on the host, except of the tensors in ``host`` (OpenNMT-py keeps
    ``_batch_offset`` on the host by design). On an accelerator (``ONMT_OPTIMAL_TEST_DEVICE``) only reads of its
    tensors count, copies of them to the CPU (``.to``) included: a read of a tensor already on the host is no
    synchronization. On CPU every read counts, the proxy for what would be one."""

    def __init__(self, host):
        super().__init__()
        self.host, self.count, self.sites = host, 0, []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        first = args[0] if args else None
        read = name in READS and name not in ("any", "all")  # any/all stay on the device unless read
        if name == "__getitem__" and len(args) > 1 and isinstance(args[1], torch.Tensor) \
                and args[1].dtype == torch.bool:
            read = True
        if name == "to" and isinstance(first, torch.Tensor) and first.device.type != "cpu" and _to_host(args, kwargs):
            read = True  # a copy of an accelerator's tensor to the host
        if read and DEVICE.type != "cpu" and not (isinstance(first, torch.Tensor) and first.device.type != "cpu"):
            read = False
        if read and not any(first is h for h in self.host()):
            self.count += 1
            self.sites.append(name)
        return func(*args, **(kwargs or {}))


def _to_host(args, kwargs) -> bool:
    """``Tensor.to(...)`` whose target is the CPU."""
    targets = list(args[1:]) + [(kwargs or {}).get("device")]
    return any(isinstance(x, (str, torch.device)) and torch.device(x).type == "cpu" for x in targets)


def counted(strategy, method):
    calls = {"calls": 0, "reads": 0, "sites": []}
    inner = getattr(strategy, method)

    def wrapper(*args, **kwargs):
        with HostReads(lambda: [strategy._batch_offset]) as mode:
            out = inner(*args, **kwargs)
        calls["calls"] += 1
        calls["reads"] += mode.count
        calls["sites"] += mode.sites
        return out

    setattr(strategy, method, wrapper)
    return calls


@pytest.mark.parametrize("rule,stop,n_best", [
    ("none", "optimal", 1), ("none", "default", 1), ("reward", "optimal", 1), ("avg", "optimal", 2),
    ("bp", "exhaustive", 1), ("wreward", "shrinking", 1), ("none", "optimal", 3),
])
@pytest.mark.parametrize("beam", [1, 4])
@pytest.mark.parametrize("host", [None, "cpu"])
def test_one_read_per_step_and_one_per_batch_of_leaving_examples(rule, stop, n_best, beam, host):
    """``host``: with the bookkeeping on the host, the step's one read is its packed transfer (on CPU, where
    this runs, the count is of the host-side reads the same code makes). On CPU the core is told to read as
    next to an accelerator (``Beam.free_reads = False``): where its bookkeeping lives on the CPU it also asks,
    for free, whether anything completed (``step``'s quiet steps), a question it never asks of an accelerator's
    tensors."""
    strategy = build(rule, stop, beam, 6, min(n_best, beam), 12, reward=0.8, ratio=1.2, host=host)
    strategy.free_reads = DEVICE.type != "cpu" and host == "cpu"  # read on the CPU as next to an accelerator
    steps = counted(strategy, "advance")
    leaving = counted(strategy, "update_finished")
    run_strategy(strategy, SyntheticModel(9, seed=7, eos_bias=0.5), list(range(6)), [3, 5, 2, 7, 4, 6])
    assert steps["calls"] > 1 and leaving["calls"] >= 1
    assert steps["reads"] == steps["calls"], steps["sites"]
    # with the bookkeeping on the host, leaving examples read nothing more on an accelerator
    assert leaving["reads"] == (0 if host and DEVICE.type != "cpu" else leaving["calls"]), leaving["sites"]
