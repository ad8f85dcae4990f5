"""A toolkit's HTTP server, started by a test on 127.0.0.1 at a free port and stopped by it, and a plain HTTP
client (the standard library's ``urllib``). The one server starter of the tests: the OpenNMT-py, eole and vLLM
tiers start their servers with ``Server`` (vLLM's, whose engine runs in child processes, as a process group:
``group``), as a context manager or with ``stop()``."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from helpers.signals import as_from_a_terminal

HOST = "127.0.0.1"
#: no proxy: the servers listen on the loopback interface
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port() -> int:
    """A port nothing listens on now (the system's choice for a socket bound to port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


@dataclass
class Answer:
    status: int
    headers: dict
    body: object


def request(url: str, data=None, headers: dict | None = None, timeout: float = 120) -> Answer:
    """GET ``url``, or POST ``data`` as JSON; the answer's status, headers (names in lower case) and JSON body."""
    body = None if data is None else json.dumps(data).encode()
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            status, got, raw = resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        status, got, raw = err.code, err.headers, err.read()
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = raw.decode(errors="replace")
    return Answer(status, {k.lower(): v for k, v in got.items()}, parsed)


class Server:
    """``argv`` run with ``port`` (from ``free_port``) until its ``health`` path answers 200; ``stop()`` ends it
    (SIGTERM, then SIGKILL after ``stop_s``, 30 s), and so does leaving a ``with`` block. Its output goes to
    ``log``. ``group``: the server runs in a session of its own and ``stop()`` signals its whole process group
    (a server whose work runs in child processes, as vLLM's engine core)."""

    def __init__(self, argv: list, port: int, health: str, log: Path, env: dict | None = None,
                 cwd: Path | None = None, timeout: float = 180, group: bool = False, stop_s: float = 30):
        self.port, self.log, self.group, self.stop_s = port, Path(log), group, stop_s
        self.base = f"http://{HOST}:{port}"
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen([str(a) for a in argv], stdout=out, stderr=subprocess.STDOUT,
                                         env=env, cwd=cwd, start_new_session=group, preexec_fn=as_from_a_terminal)
        deadline = time.time() + timeout
        while True:
            if self.proc.poll() is not None:
                self.stop()
                raise AssertionError(f"the server exited with {self.proc.returncode}:\n{self.output()[-3000:]}")
            try:
                if request(self.base + health, timeout=5).status == 200:
                    return
            except OSError:
                pass
            if time.time() > deadline:
                self.stop()
                raise AssertionError(f"the server did not answer in {timeout} s:\n{self.output()[-3000:]}")
            time.sleep(0.2)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def get(self, path: str, **kwargs) -> Answer:
        return request(self.base + path, **kwargs)

    def post(self, path: str, data, **kwargs) -> Answer:
        return request(self.base + path, data, **kwargs)

    def send_signal(self, sig: int) -> None:
        """Send ``sig`` to the server (its process group with ``group``) if it still runs."""
        if self.proc.poll() is None:
            if self.group:
                os.killpg(self.proc.pid, sig)
            else:
                self.proc.send_signal(sig)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=self.stop_s)
            except subprocess.TimeoutExpired:
                self.send_signal(signal.SIGKILL)
                self.proc.wait()
        if self.group:  # children that outlived the server
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def env(**extra) -> dict:
    """The tests' environment for a server: one thread, no warnings, the plugin on unless ``extra`` says."""
    out = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", HF_HUB_OFFLINE="1")
    out.pop("ONMT_OPTIMAL_DISABLE", None)
    out.update(extra)
    return out
