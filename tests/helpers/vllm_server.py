"""vLLM's OpenAI-compatible server for the tests: started as the docs say (``python -m
vllm.entrypoints.openai.api_server``) on 127.0.0.1 at a free port, on a toy model, with a small share of host
memory, by the tests' one server starter (``http_server.Server``, as a process group: vLLM's engine core is a
child process). One server at a time: a module starts one and reuses it.
"""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from helpers import http_server
from helpers.http_server import free_port

PLUGIN = "onmt_optimal.vllm.serve:register"

__all__ = ["PLUGIN", "command", "free_port", "plugin_installed", "serving"]


def command(model: Path, port: int, *more: str) -> list[str]:
    return [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model), "--host",
            "127.0.0.1", "--port", str(port), "--dtype", "float32", "--max-model-len", "64", "--enforce-eager",
            "--gpu-memory-utilization", "0.1", *more]


def plugin_installed() -> bool:
    from importlib.metadata import entry_points

    return any(ep.value == PLUGIN for ep in entry_points(group="vllm.general_plugins"))


def start(model: Path, folder: Path, *more: str, env: dict | None = None, start_s: float = 300) -> http_server.Server:
    """The server, answering (its output in ``folder/server.log``); ``stop()`` ends its process group."""
    port = free_port()
    return http_server.Server(command(model, port, *more), port, "/health", folder / "server.log",
                              env={**os.environ, **(env or {})}, timeout=start_s, group=True, stop_s=60)


@contextlib.contextmanager
def serving(model: Path, folder: Path, *more: str, env: dict | None = None, start_s: float = 300):
    """The server's base URL while it runs (``start``)."""
    with start(model, folder, *more, env=env, start_s=start_s) as server:
        yield server.base
