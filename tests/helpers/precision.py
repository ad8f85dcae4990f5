"""The precisions a decode runs in, as test parameters: what runs on this machine's CPU, and what needs CUDA.

``cases(cpu, cuda)`` gives one ``pytest.param`` per ``(device, precision)``, with the id ``device-precision``. The
CPU cases always run; the CUDA ones run where ``torch.cuda.is_available()``, and are skipped elsewhere with the
reason. ``ONMT_OPTIMAL_TEST_DEVICE=cuda`` (the variable ``synthetic`` reads) makes a missing CUDA device a
failure instead of a skip, so that a run meant for a GPU cannot pass by skipping everything.
"""
from __future__ import annotations

import os

import pytest
import torch

WANTS_CUDA = os.environ.get("ONMT_OPTIMAL_TEST_DEVICE", "cpu").startswith("cuda")


def _cuda_mark():
    if torch.cuda.is_available() or WANTS_CUDA:  # asked for CUDA without one: the case runs, and fails
        return ()
    return (pytest.mark.skip(reason="needs a CUDA device (ONMT_OPTIMAL_TEST_DEVICE=cuda on a GPU machine)"),)


def cases(cpu: list[str], cuda: list[str]) -> list:
    """``pytest.param(device, precision)`` for each precision on the CPU and each on CUDA."""
    return ([pytest.param("cpu", p, id=f"cpu-{p}") for p in cpu]
            + [pytest.param("cuda", p, id=f"cuda-{p}", marks=_cuda_mark()) for p in cuda])
