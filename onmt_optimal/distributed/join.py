"""Joining a Ray cluster at ``-ray_address`` within a bounded time, or one line saying why not.

Left alone, ``ray.init(address=...)`` retries a GCS that does not answer for minutes, printing Ray's warnings
all the while. Here:

* an address ``HOST:PORT`` is first reached with a plain TCP connection: a refused connection or a host that
  does not resolve ends the run at once, a host that does not answer after ``timeout`` seconds, in one line;
* Ray's own limits are set for the connection (where the user has not set them): one connection attempt
  (``RAY_gcs_server_port_wait_time_s``), each of its waits (connecting to the GCS, its pub-sub channel, the
  cluster's id: ``RAY_gcs_rpc_server_connect_timeout_s``, ``RAY_py_gcs_connect_timeout_s``) a third of
  ``timeout``, and ``timeout`` to find this machine's node (``RAY_gcs_server_request_timeout_seconds``). Ray reads
  all but the first when it is imported, so they are set before ``import ray`` (``limits``); where Ray was
  imported earlier in the process, Ray's defaults bound the attempt instead (about 40 s, 60 s for the node);
* Ray's C++ warnings during the attempt go to a temporary file, not the terminal (they come back on success);
  a failure is one ``OptionError`` line (a cluster that refuses this process's token, under Ray's token
  authentication, is named as such).

A loopback address (``127.0.0.1``, ``::1``, ``localhost``) is joined as given (``local.loopback_node``): a local
cluster bound to loopback, as ``local.start`` makes, is reachable there only.
"""
from __future__ import annotations

import contextlib
import math
import os
import socket
import sys
import tempfile

from onmt_optimal.distributed.local import is_loopback, loopback_node
from onmt_optimal.errors import OptionError

#: seconds to wait for the cluster at -ray_address when -ray_timeout is not given
DEFAULT_TIMEOUT = 30.0


def host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of an address ``HOST:PORT`` (``[V6]:PORT`` too); None for ``auto``, ``ray://...`` and
    other forms Ray resolves itself."""
    if "://" in address:
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def limits(timeout: float) -> dict[str, str]:
    """Ray's settings (environment variables) that bound one attempt to join to about ``timeout`` seconds."""
    third = max(1, math.ceil(timeout / 3))
    return {"RAY_gcs_server_port_wait_time_s": "1", "RAY_gcs_rpc_server_connect_timeout_s": str(third),
            "RAY_py_gcs_connect_timeout_s": str(third),
            "RAY_gcs_server_request_timeout_seconds": str(max(1, math.ceil(timeout)))}


@contextlib.contextmanager
def environment(values: dict[str, str]):
    """``values`` in ``os.environ`` while this holds, except those the user set; the environment as it was after."""
    added = {k: v for k, v in values.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


def reach(address: str, timeout: float) -> None:
    """Raise ``OptionError`` unless a TCP connection to ``address`` (``HOST:PORT``) opens within ``timeout``."""
    parsed = host_port(address)
    if parsed is None:
        return
    host, port = parsed
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except socket.gaierror as err:
        raise OptionError(f"-ray_address {address}: cannot resolve {host} ({err.strerror or err})") from err
    except socket.timeout as err:
        raise OptionError(f"-ray_address {address}: no answer within {timeout:g} s (-ray_timeout)") from err
    except OSError as err:
        reason = err.strerror or str(err)
        raise OptionError(f"-ray_address {address}: no Ray cluster there ({reason.lower()})") from err


@contextlib.contextmanager
def stderr_to_file():
    """The process's file descriptor 2 goes to a temporary file while this holds; what was written there is
    copied back to stderr if the block ends normally, and dropped if it raises."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no usable fd 2: nothing to hide
        yield
        return
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        ok = False
        try:
            yield
            ok = True
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            if ok:
                held.seek(0)
                data = held.read()
                if data:
                    os.write(2, data)


def join(ray, address: str, timeout: float, **kwargs) -> None:
    """``ray.init(address=address, **kwargs)`` within about ``timeout`` seconds, else ``OptionError``."""
    reach(address, timeout)
    parsed = host_port(address)
    local = parsed is not None and is_loopback(parsed[0])
    try:
        with environment({"RAY_gcs_server_port_wait_time_s": "1"}), stderr_to_file(), \
                (loopback_node() if local else contextlib.nullcontext()):
            ray.init(address=address, **kwargs)
    except (ConnectionError, RuntimeError, TimeoutError, ValueError) as err:
        with contextlib.suppress(Exception):
            ray.shutdown()
        said = f"{err} {err.__cause__ or ''}"
        if "AuthenticationError" in said or "InvalidAuthToken" in said:
            raise OptionError(f"-ray_address {address}: the cluster refused this process's authentication token "
                              f"(Ray's token authentication: set RAY_AUTH_MODE=token and the cluster's token in "
                              f"RAY_AUTH_TOKEN or ~/.ray/auth_token)") from err
        lines = [line for line in str(err).splitlines() if line.strip()]
        why = "" if isinstance(err, ConnectionError) or not lines else f": {lines[0]}"
        raise OptionError(f"-ray_address {address}: no Ray cluster answered within {timeout:g} s "
                          f"(-ray_timeout){why}") from err
