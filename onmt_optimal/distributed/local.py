"""A local Ray that opens nothing to the network and leaves nothing behind.

``start`` runs ``ray.init(address="local")`` with the node's address on the loopback interface: Ray (2.60) binds
its servers (GCS, raylet, object manager, every worker's gRPC port, the runtime-env agent) to the node's
address, and that address is the loopback one only where Ray runs as a single-machine cluster (its
``ray_constants.ENABLE_RAY_CLUSTER`` off, as on macOS and Windows; on Linux ``_node_ip_address="127.0.0.1"``
alone is turned back into the machine's external address). That switch is read at each use, so it is turned
off for the start only and put back after; once started, the node's address is fixed. ``start`` then checks
that the GCS answers on a loopback address and otherwise stops Ray and refuses, so a Ray that would not bind
to loopback never runs a decode. No dashboard (``include_dashboard=False``: its minimal API process opens no
port).

Ray's session folder (logs, sockets, spilled objects) lives in a fresh directory (``_temp_dir``) under the
system's temporary directory, or ``/tmp`` where that path is too long for the Unix sockets inside it (Ray
refuses socket paths over 107 bytes); ``stop`` shuts Ray down and removes the directory, so a run leaves no
``session_*`` folder (Ray's default ``/tmp/ray`` is not used).
"""
from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import shutil
import tempfile

from onmt_optimal.errors import OptionError

#: the object store: the driver puts one bucket of source text (at most 16,384 lines) at a time
OBJECT_STORE_BYTES = 256 * 1024 * 1024
#: the longest temporary root whose session sockets stay within Ray's limit: ``ROOT/onmt-ray-XXXXXXXX/`` (18)
#: + ``session_YYYY-MM-DD_hh-mm-ss_uuuuuu_PID/sockets/plasma_store`` (about 62 with a 7-digit pid) <= 107
MAX_TEMP_ROOT = 26
TEMP_PREFIX = "onmt-ray-"
LOOPBACK = "127.0.0.1"


def temp_root() -> str:
    root = tempfile.gettempdir()
    return root if len(root) <= MAX_TEMP_ROOT else "/tmp"


@contextlib.contextmanager
def loopback_node():
    """While this holds, Ray takes the loopback address as this machine's (starting or joining a node)."""
    from ray._private import ray_constants

    saved = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def start(ray, num_cpus: int, **kwargs) -> str:
    """Start a local Ray of ``num_cpus`` CPUs on loopback in a fresh temporary directory; returns the
    directory (for ``stop``). ``kwargs`` go to ``ray.init``. Ray is not left running if this raises."""
    temp_dir = tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=temp_root())
    try:
        with loopback_node():
            ray.init(address="local", num_cpus=num_cpus, object_store_memory=OBJECT_STORE_BYTES,
                     include_dashboard=False, _node_ip_address=LOOPBACK, _temp_dir=temp_dir, **kwargs)
        host = ray.get_runtime_context().gcs_address.rpartition(":")[0]
        if not is_loopback(host):
            raise OptionError(f"the local Ray would listen on {host}, not on loopback only: not started "
                              f"(join a cluster with -ray_address instead)")
    except BaseException:
        stop(ray, temp_dir)
        raise
    return temp_dir


def stop(ray, temp_dir: str | None) -> None:
    """Shut Ray down (its processes end) and remove its temporary directory."""
    try:
        ray.shutdown()
    finally:
        if temp_dir:
            shutil.rmtree(temp_dir, ignore_errors=True)


def quiet_logging() -> dict:
    """``ray.init``'s arguments that keep the driver's terminal to what the driver reports itself."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    return dict(log_to_driver=False, logging_level=logging.ERROR, configure_logging=True)
