"""Starting or joining Ray, quietly, and checking that the cluster can hold the workers asked for.

A local Ray (no ``address``) is pinned to what the workers need, so it starts fast and light on a small
machine: ``num_cpus`` = what the workers reserve (``translate.cpus_per_worker`` each), a 256 MiB object store (the driver puts one bucket of
source text, at most 16,384 lines, at a time), no dashboard. Workers' own stdout and stderr stay in Ray's
log directory (``log_to_driver=False``): the driver reports what matters (errors come back with the calls),
and Ray itself logs errors only.
"""
from __future__ import annotations

import logging
import os

from onmt_optimal.options import RAY_INSTALL, OptionError

OBJECT_STORE_BYTES = 256 * 1024 * 1024


class WorkerError(RuntimeError):
    """A worker failed for good (its error, or its death beyond Ray's retries); the message is one line."""


def worker_error(err: BaseException) -> WorkerError:
    """A Ray error as one line: the worker's own exception where there is one, else Ray's first line."""
    cause = getattr(err, "cause", None)
    text = f"{type(cause).__name__}: {cause}" if isinstance(cause, BaseException) else str(err)
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return WorkerError(f"a Ray worker failed: {lines[0] if lines else type(err).__name__}")


def import_ray():
    try:
        import ray
    except ImportError as err:
        raise OptionError(f"-ray_workers needs Ray, which is not installed: {RAY_INSTALL}") from err
    return ray


class Cluster:
    """``with Cluster(address, workers, gpus_per_worker) as ray:`` a connected Ray; a Ray this started (or a
    connection this opened) is shut down on leaving; one already initialised in the process (a test, a
    notebook) is used as it is and left running."""

    def __init__(self, address: str | None, workers: int, gpus_per_worker: float = 0.0, cpus_per_worker: int = 1):
        self.address, self.workers, self.gpus, self.cpus = address, workers, gpus_per_worker, cpus_per_worker
        self._owned = False

    def __enter__(self):
        ray = import_ray()
        if not ray.is_initialized():
            kwargs = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR,
                          configure_logging=True)
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            if self.address:
                ray.init(address=self.address, **kwargs)
            else:
                ray.init(address="local", num_cpus=self.workers * self.cpus, object_store_memory=OBJECT_STORE_BYTES,
                         **kwargs)
            self._owned = True
        self._check_resources(ray)
        return ray

    def _check_resources(self, ray) -> None:
        total = ray.cluster_resources()
        cpus, gpus = total.get("CPU", 0), total.get("GPU", 0)
        if cpus < self.workers * self.cpus:
            self._fail(ray, f"-ray_workers {self.workers} needs {self.workers * self.cpus} CPUs ({self.cpus} a "
                            f"worker: its torch threads); the Ray cluster has {cpus:g}")
        if self.gpus > 0 and gpus < self.gpus * self.workers - 1e-9:
            self._fail(ray, f"-ray_workers {self.workers} with -ray_gpus_per_worker {self.gpus:g} needs "
                            f"{self.gpus * self.workers:g} GPUs; the Ray cluster has {gpus:g}")

    def _fail(self, ray, message: str) -> None:
        if self._owned:
            ray.shutdown()
            self._owned = False
        raise OptionError(message)

    def __exit__(self, *exc):
        if self._owned:
            import ray

            ray.shutdown()
        return False
