"""vLLM's OpenAI-compatible server for the tests: started as the docs say (``python -m
vllm.entrypoints.openai.api_server``) on 127.0.0.1 at a free port, on a toy model, with a small share of host
memory; stopped with its process group. One server at a time: a module starts one and reuses it.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from helpers.http_server import free_port

PLUGIN = "onmt_optimal.vllm.serve:register"


def command(model: Path, port: int, *more: str) -> list[str]:
    return [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model), "--host",
            "127.0.0.1", "--port", str(port), "--dtype", "float32", "--max-model-len", "64", "--enforce-eager",
            "--gpu-memory-utilization", "0.1", *more]


def plugin_installed() -> bool:
    from importlib.metadata import entry_points

    return any(ep.value == PLUGIN for ep in entry_points(group="vllm.general_plugins"))


@contextlib.contextmanager
def serving(model: Path, folder: Path, *more: str, env: dict | None = None, start_s: float = 300):
    """The server's base URL while it runs (its output in ``folder/server.log``)."""
    port = free_port()
    log_path = folder / "server.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command(model, port, *more), stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True, env={**os.environ, **(env or {})})
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + start_s
            while True:
                assert process.poll() is None, log_path.read_text()[-3000:]
                try:
                    if httpx.get(base + "/health", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, f"the server did not start in {start_s} s"
                time.sleep(1)
            yield base
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
