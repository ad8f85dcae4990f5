"""Starting or joining Ray, quietly and safely, and checking that it can hold the workers asked for.

Without an address, a local Ray (``local.start``) is sized to the workers (``num_cpus`` = what they reserve:
``translate.cpus_per_worker`` each), listens on loopback only, keeps its files in a temporary directory removed
on leaving, and starts no dashboard; it starts only once ``capacity.check_local`` has found that this machine
can hold the workers. With an address, the cluster is joined within ``timeout`` seconds (``join.join``) and
its resources are checked before any worker starts. Workers' own stdout and stderr stay in Ray's log
directory (``log_to_driver=False``): the driver reports what matters (errors come back with the calls), and Ray
itself logs errors only. Every refusal is an ``OptionError`` of one line, and leaves no Ray process running.
Signals stay the driver's: Ray's C++ failure-signal handler is off in this process (``DRIVER_SETTINGS``), and
the SIGTERM handler ``ray.init`` installs is replaced by the one there was before (``own_sigterm``), so a
SIGTERM unwinds the driver as any failure does (this context's exit shuts Ray down).
"""
from __future__ import annotations

import contextlib
import signal
import sys
import threading

from onmt_optimal.distributed import capacity, join, local
from onmt_optimal.distributed.options import RAY_INSTALL
from onmt_optimal.errors import OptionError


class WorkerError(RuntimeError):
    """A worker failed for good (its error, or its death beyond Ray's retries); the message is one line."""


def first_line(text: str, err: BaseException) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else type(err).__name__


def worker_error(err: BaseException) -> WorkerError:
    """A Ray error as one line: the worker's own exception where there is one, else Ray's first line."""
    cause = getattr(err, "cause", None)
    text = f"{type(cause).__name__}: {cause}" if isinstance(cause, BaseException) else str(err)
    return WorkerError(f"a Ray worker failed: {first_line(text, err)}")


#: Ray's settings for this (driver) process, read when Ray is imported: Ray's C++ failure-signal handler would
#: turn a SIGTERM into a stack dump and an abort instead of the driver's own one-line exit
DRIVER_SETTINGS = {"RAY_DISABLE_FAILURE_SIGNAL_HANDLER": "1"}


@contextlib.contextmanager
def own_sigterm():
    """The process's SIGTERM handler as it was before the block: ``ray.init`` installs one of its own (an exit
    with status 15), which would replace the driver's (``failures.run``: one line, outputs left as they were)."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def import_ray():
    try:
        import ray
    except ImportError as err:
        raise OptionError(f"-ray_workers needs Ray, which is not installed: {RAY_INSTALL}") from err
    return ray


class Cluster:
    """``with Cluster(address, workers, gpus_per_worker, cpus_per_worker) as ray:`` a connected Ray; a Ray this
    started (or a connection this opened) is shut down on leaving, its temporary directory removed; one already
    initialised in the process (a test, a notebook) is used as it is and left running.

    ``model_bytes``: the size of the model's files, for the local memory check; ``timeout``: seconds to wait
    for the cluster at ``address`` (``join.DEFAULT_TIMEOUT`` if None)."""

    def __init__(self, address: str | None, workers: int, gpus_per_worker: float = 0.0, cpus_per_worker: int = 1,
                 model_bytes: int = 0, timeout: float | None = None):
        self.address, self.workers, self.gpus, self.cpus = address, workers, gpus_per_worker, cpus_per_worker
        self.model_bytes = model_bytes
        self.timeout = join.DEFAULT_TIMEOUT if timeout is None else timeout
        self._owned = False
        self._temp_dir = None

    def __enter__(self):
        ready = "ray" in sys.modules and sys.modules["ray"].is_initialized()
        if not self.address and not ready:  # before Ray is even imported
            capacity.check_local(self.workers, self.gpus, self.model_bytes)
        if "ray" not in sys.modules:  # Ray reads these on import: set for this process, not Ray's children
            settings = dict(DRIVER_SETTINGS, **(join.limits(self.timeout) if self.address else {}))
            with join.environment(settings):
                ray = import_ray()
        else:
            ray = import_ray()
        if not ray.is_initialized():
            with own_sigterm():
                self._init(ray)
            self._owned = True
        try:
            self._check_resources(ray)
        except BaseException:
            self._release(ray)
            raise
        return ray

    def _init(self, ray) -> None:
        if self.address:
            join.join(ray, self.address, self.timeout, include_dashboard=False, **local.quiet_logging())
        else:
            try:
                self._temp_dir = local.start(ray, self.workers * self.cpus, **local.quiet_logging())
            except OptionError:
                raise
            except Exception as err:  # Ray's own failure to start (its processes are gone: local.start)
                raise WorkerError(f"could not start a local Ray: {first_line(str(err), err)}") from err

    def _check_resources(self, ray) -> None:
        total = ray.cluster_resources()
        cpus, gpus = total.get("CPU", 0), total.get("GPU", 0)
        if cpus < self.workers * self.cpus:
            raise OptionError(f"-ray_workers {self.workers} needs {self.workers * self.cpus} CPUs ({self.cpus} a "
                              f"worker: its torch threads); the Ray cluster has {cpus:g}")
        if self.gpus > 0 and gpus < self.gpus * self.workers - 1e-9:
            raise OptionError(f"-ray_workers {self.workers} with -ray_gpus_per_worker {self.gpus:g} needs "
                              f"{self.gpus * self.workers:g} GPUs; the Ray cluster has {gpus:g}")

    def _release(self, ray) -> None:
        if self._owned:
            self._owned = False
            local.stop(ray, self._temp_dir)
            self._temp_dir = None

    def __exit__(self, kind, err, tb):
        if self._owned:
            import ray

            self._release(ray)
        cause = getattr(err, "__cause__", None)
        if isinstance(err, SystemError) and isinstance(cause, BaseException) and not isinstance(cause, Exception):
            # a signal handler's exception (SIGTERM's, say) raised while Ray's Cython waited comes out of Ray
            # as a SystemError caused by it: the driver gets the handler's own exception back
            raise cause.with_traceback(cause.__traceback__)
        return False
