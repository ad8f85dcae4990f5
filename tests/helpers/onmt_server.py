"""OpenNMT-py's translation server, ``onmt_server``, as the OpenNMT-py tier's server tests run it: its config (a
``models_root`` and model entries), its command line, and one started on 127.0.0.1 at a free port
(``http_server.Server``, healthy once ``ROOT/health`` answers).

``serve_ours_and_stock`` is the tier's usual server: model 7 with our options, its statistics (``stats.jsonl``)
and its log (``server.log``) relative to ``models_root``, and model 8 with none of them.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from helpers import http_server

#: the server's URL root (``onmt_server --url_root``'s default)
ROOT = "/translator"
INPUTS = ["a b c", "p o", "k e i d", "m a n g o", "h", "b i b i b"]
SHARED = {"beam_size": 3, "n_best": 2, "max_length": 30}
OURS = {"length_penalty": "none", "stopping": "optimal", "length_reward": 1.0, "length_ratio": 1.5}


def command(conf, port: int) -> list[str]:
    """``onmt_server`` of this environment on 127.0.0.1 at ``port`` with the config ``conf``."""
    return [str(Path(sys.executable).parent / "onmt_server"), "--ip", http_server.HOST, "--port", str(port),
            "-m", str(conf)]


def entry(model_id: int, opt: dict, load: bool = True, name: str = "model.pt", **more) -> dict:
    """A model of the config: ``models_root/name`` with the options ``opt``, loaded at start-up unless ``load``
    is false, never unloaded on a timeout."""
    return {"id": model_id, "model": name, "timeout": -1, "on_timeout": "to_cpu", "load": load, "opt": opt,
            **more}


def write_config(root: Path, *models: dict, name: str = "conf.json") -> Path:
    """``root/name``: the config serving ``models`` from ``models_root`` ``root``."""
    path = root / name
    path.write_text(json.dumps({"models_root": str(root), "models": list(models)}))
    return path


def start(conf, log: Path, cwd: Path | None = None) -> http_server.Server:
    """``onmt_server -m conf`` started in ``cwd`` at a free port, its output to ``log``; back once healthy."""
    port = http_server.free_port()
    return http_server.Server(command(conf, port), port, f"{ROOT}/health", log, env=http_server.env(), cwd=cwd)


def serve_ours_and_stock(root: Path, cwd: Path, log: Path) -> http_server.Server:
    """The tier's usual server over ``models_root`` ``root`` (which holds ``model.pt``), started in ``cwd``:
    model 7 with ``SHARED``, ``OURS``, ``stats.jsonl`` and ``server.log`` (INFO), model 8 with ``SHARED``
    alone. Its ``cwd`` and ``conf`` are kept on it."""
    conf = write_config(root, entry(7, {**SHARED, **OURS, "stats_file": "stats.jsonl", "log_file": "server.log",
                                        "log_file_level": "INFO"}),
                        entry(8, dict(SHARED)))
    served = start(conf, log, cwd=cwd)
    served.cwd, served.conf = cwd, conf
    return served
