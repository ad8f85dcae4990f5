"""How many workers this machine can hold, checked before a local Ray starts.

Each worker is a process of its own that imports torch and loads the model, so a local Ray is refused (one
line naming the most this machine can run) when

* the workers outnumber the cores this process may run on (``os.sched_getaffinity``, else ``os.cpu_count``):
  more processes than cores only queue, each holding its copy of the model. Torch's threads are not counted
  here: a worker runs the driver's thread count (the one-process results depend on it), so N workers of T
  threads share the cores as T-thread processes do (set ``OMP_NUM_THREADS`` to share them out);
* the workers' memory would exceed what the system reports available (``MemAvailable`` in
  ``/proc/meminfo``, else the free pages): ``WORKER_BYTES`` a worker (a Python process with torch, OpenNMT-py
  and Ray's core worker, measured at about 365 MiB proportional set size with a 26 MB model) plus twice the
  model's files (the checkpoint read, then the model built from it), and ``RAY_BYTES`` for Ray's own
  processes and object store;
* with GPUs, the workers' share of them exceeds the devices torch sees.

A Ray cluster joined with ``-ray_address`` is checked on its own resources instead (``cluster.Cluster``).
"""
from __future__ import annotations

import math
import os

from onmt_optimal.errors import OptionError

MIB = 1024 * 1024
GIB = 1024 * MIB
WORKER_BYTES = 384 * MIB
#: GCS, raylet, agents, monitors (about 350 MiB measured) and the 256 MiB object store
RAY_BYTES = 640 * MIB


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def available_memory() -> int | None:
    """Bytes of memory the system can give without swapping, or None where it cannot say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def worker_bytes(model_bytes: int = 0) -> int:
    """The memory one worker is expected to take with a model of ``model_bytes`` bytes of files."""
    return WORKER_BYTES + 2 * model_bytes


def file_bytes(paths) -> int:
    """The size of the files at ``paths`` (missing ones count 0)."""
    total = 0
    for path in paths or ():
        try:
            total += os.path.getsize(path)
        except OSError:
            pass
    return total


def check_local(workers: int, gpus_per_worker: float = 0.0, model_bytes: int = 0, *, n_cores: int | None = None,
                memory: int | None = -1, n_gpus: int | None = None) -> None:
    """Raise ``OptionError`` if this machine cannot hold ``workers`` workers (the module's rules); the
    keyword arguments stand for the machine's figures (the tests' machines)."""
    n_cores = cores() if n_cores is None else n_cores
    if workers > n_cores:
        raise OptionError(f"-ray_workers {workers} starts {workers} worker processes on this machine, which has "
                          f"{n_cores} cores: the most it can run is -ray_workers {n_cores} (for more, join a "
                          f"larger Ray cluster with -ray_address)")
    memory = available_memory() if memory == -1 else memory
    each = worker_bytes(model_bytes)
    if memory is not None and workers * each + RAY_BYTES > memory:
        most = max(0, (memory - RAY_BYTES) // each)
        what = f"the most it can run is -ray_workers {most}" if most else "it cannot run one worker beside Ray"
        raise OptionError(f"-ray_workers {workers} loads the model {workers} times (about {each / GIB:.2f} GiB a "
                          f"worker); this machine has {memory / GIB:.1f} GiB of memory available: {what}")
    if gpus_per_worker > 0:
        if n_gpus is None:
            import torch

            n_gpus = torch.cuda.device_count()
        if workers * gpus_per_worker > n_gpus + 1e-9:
            most = int(math.floor(n_gpus / gpus_per_worker + 1e-9))
            raise OptionError(f"-ray_workers {workers} with -ray_gpus_per_worker {gpus_per_worker:g} needs "
                              f"{workers * gpus_per_worker:g} GPUs; this machine has {n_gpus}: the most it can "
                              f"run is -ray_workers {most}")
