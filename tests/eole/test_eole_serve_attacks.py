"""``eole serve`` attacked through its files, its port and its requests, with two served models: real servers on
127.0.0.1, a real HTTP client, the SHA-256 of every file of the served folders before and after each attack.

Before: the statistics file was opened by name at each request, so a symbolic or a hard link put in its place
after start-up took the records into the file it led to (another model's ``config.json``, its weights); a
``stats_file`` that was another served model's file (by a hard link, or spelled ``/proc/self/root/...``) started
the server and was appended to at the first request; a request naming no served model was a 500 with a
``KeyError`` traceback; a port in use ended the server in an ``OSError`` traceback once every model had loaded;
``eole predict`` took a mistyped local ``-model_path`` (``~/models/x``, ``a/b/c``, ``models/x`` where ``models``
is a local directory) for a Hugging Face ID: a traceback, or a minute of network retries.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import http_server
from helpers.one_line import one_error_line
from test_eole_serve_safety import write_config

INPUTS = ["a b c", "p o", "k e i d"]
SHARED = {"beam_size": 3, "max_length": 30, "n_best": 1}
OURS = {"length_penalty": "none", "stopping": "optimal", "length_reward": 1.0, "length_ratio": 1.5}


def _eole() -> str:
    return str(Path(sys.executable).parent / "eole")


def sums(root: Path) -> dict:
    """Every regular file under ``root``, links not followed: its SHA-256 (links: where they point)."""
    import hashlib

    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            out[str(path)] = "-> " + os.readlink(path)
        elif path.is_file() and not path.is_fifo():
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def site(root: Path, model: Path, a_config: dict, b_config: dict | None = None, preload: bool = True) -> Path:
    """Two models, each a copy of ``model`` in ``root`` (``a`` and ``b``), and the server's YAML."""
    for name in ("a", "b"):
        shutil.copytree(model, root / name)
    return write_config(root, [
        {"id": "a", "path": str(root / "a"), "preload": preload, "config": {**SHARED, **OURS, **a_config}},
        {"id": "b", "path": str(root / "b"), "config": {**SHARED, **(b_config or {})}}])


def serve(conf: Path, cwd: Path) -> http_server.Server:
    port = http_server.free_port()
    return http_server.Server([_eole(), "serve", "-config", conf, "--host", http_server.HOST, "--port", port],
                              port, "/health", cwd.with_name(cwd.name + ".log"), env=http_server.env(), cwd=cwd)


def refused(conf: Path, cwd: Path, port: int | None = None) -> tuple[str, float, str]:
    """``eole serve`` on ``conf`` that must end in one line, exit status 2: the line, the seconds it took, its
    stderr."""
    port = http_server.free_port() if port is None else port
    started = time.monotonic()
    proc = subprocess.run([_eole(), "serve", "-config", str(conf), "--host", http_server.HOST, "--port", str(port)],
                          env=http_server.env(), capture_output=True, text=True, timeout=300, cwd=cwd)
    took = time.monotonic() - started
    return one_error_line(proc.returncode, proc.stderr, 2, prog="eole serve"), took, proc.stderr


def infer(server, model, inputs=INPUTS):
    return server.post("/infer", {"model": model, "inputs": inputs, **SHARED})


# ------------------------------------------------------------------- a running server: swaps, unknown ids
@pytest.fixture(scope="module")
def running(tmp_path_factory, encoder_decoder):
    root = tmp_path_factory.mktemp("attacked")
    conf = site(root, encoder_decoder, {"stats_file": "stats.jsonl"})
    server = serve(conf, root)
    yield root, server
    server.stop()


@pytest.mark.parametrize("link", ["symbolic", "hard"])
def test_a_stats_file_swapped_for_a_link_after_start_up_is_not_followed(running, link):
    """The file is renamed away and a link to model ``b``'s file put in its place: the next request's records go
    on into the file the server opened (now ``kept-*.jsonl``); the link's target is untouched."""
    root, server = running
    assert infer(server, "a").status == 200
    stats, kept = root / "stats.jsonl", root / f"kept-{link}.jsonl"
    target = root / "b" / ("config.json" if link == "symbolic" else "vocab.json")
    os.rename(stats, kept)
    (os.symlink if link == "symbolic" else os.link)(target, stats)
    before, lines = sums(root), len(kept.read_text().splitlines())
    try:
        answer = infer(server, "a")
        assert answer.status == 200, answer.body
        after = sums(root)
        grown = {path for path in set(before) | set(after) if before.get(path) != after.get(path)}
        assert grown == {str(kept)}, grown  # the original inode, and nothing else
        assert len(kept.read_text().splitlines()) == lines + len(INPUTS)
    finally:
        os.unlink(stats)
        os.rename(kept, stats)
    assert "Traceback" not in server.output()


@pytest.mark.parametrize("model, says", [
    ("nope", "unknown model: 'nope'; served: ['a', 'b']"),
    (5, "unknown model: 5; served: ['a', 'b']"),
], ids=["a name", "a number"])
def test_a_request_naming_no_served_model_is_400_in_one_line(running, model, says):
    root, server = running
    before = sums(root)
    answer = infer(server, model)
    assert answer.status == 400 and answer.body == {"detail": says}, answer.body
    assert server.post(f"/unload_model?model_id={model}", {}).status == 400
    assert infer(server, "a").status == 200  # serving on
    assert {p: s for p, s in sums(root).items() if not p.endswith(".jsonl")} == \
        {p: s for p, s in before.items() if not p.endswith(".jsonl")}
    assert "Traceback" not in server.output()


# --------------------------------------------------------------------------------- refused at start-up
def _make(case: str, root: Path) -> tuple[dict, dict, str]:
    """Model ``a``'s config beyond ours, model ``b``'s, and what the one line says, for ``case``."""
    b = root / "b"
    if case == "b's config.json":
        return {"stats_file": str(b / "config.json")}, {}, f"is model b's file config.json of the model directory {b}"
    if case == "a hard link to b's weights":
        os.link(next(b.glob("model.*.safetensors")), root / "weights.jsonl")
        name = next(b.glob("model.*.safetensors")).name
        return {"stats_file": "weights.jsonl"}, {}, f"is model b's file {name} of the model directory {b}"
    if case == "b's vocab.json through /proc/self/root":
        return ({"stats_file": f"/proc/self/root{b}/vocab.json"}, {},
                f"is model b's file vocab.json of the model directory {b}")
    if case == "b's tokenizer":
        (root / "tok.model").write_text("a sentencepiece model\n")
        return ({"stats_file": "tok.model"},
                {"transforms_configs": {"sentencepiece": {"src_subword_model": str(root / "tok.model")}}},
                "is model b's transforms_configs.sentencepiece.src_subword_model file")
    if case == "b's log_file":
        return {"stats_file": "b.log"}, {"log_file": "b.log"}, "and model b's -log_file b.log are the same file"
    if case == "true":
        return {"stats_file": True}, {}, "-stats_file: Input should be a valid string (got True)"
    if case == "5":
        return {"stats_file": 5}, {}, "-stats_file: Input should be a valid string (got 5)"
    name, value = case.split()
    return {name: int(value)}, {}, f"-{name} must be at least 1 (got {value})"


CASES = ["b's config.json", "a hard link to b's weights", "b's vocab.json through /proc/self/root", "b's tokenizer",
         "b's log_file", "true", "5", "beam_size 0", "n_best 0", "max_length 0", "beam_size -1"]


@pytest.mark.parametrize("case", CASES)
def test_a_model_whose_config_would_destroy_or_cannot_decode_is_refused_at_start_up(encoder_decoder, tmp_path, case):
    root = tmp_path / "site"
    root.mkdir()
    for name in ("a", "b"):
        shutil.copytree(encoder_decoder, root / name)
    a, b, says = _make(case, root)
    conf = write_config(root, [
        {"id": "a", "path": str(root / "a"), "config": {**SHARED, **OURS, **a}},
        {"id": "b", "path": str(root / "b"), "config": {**SHARED, **b}}])
    before = sums(root)
    line, _, _ = refused(conf, root)
    assert line.startswith(f"eole serve: error: {conf}: model a: ") and says in line, line
    assert sums(root) == before


def test_a_port_in_use_ends_the_server_in_one_line_before_any_model_loads(encoder_decoder, tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    conf = site(root, encoder_decoder, {"stats_file": "stats.jsonl"}, preload=True)
    before = sums(root)
    with socket.socket() as taken:
        taken.bind((http_server.HOST, 0))
        taken.listen()
        port = taken.getsockname()[1]
        line, took, stderr = refused(conf, root, port)
    assert line == f"eole serve: error: port {port} on {http_server.HOST} is in use"
    print(f"refused in {took:.1f} s")
    assert took < 15 and "Loaded model" not in stderr, (took, stderr[-2000:])
    assert sums(root) == before


# ------------------------------------------------------------------------------ eole predict, a mistyped path
@pytest.mark.parametrize("path", ["~/no/such/model", "no/such/model", "models/mistyped", "./mistyped"])
def test_a_mistyped_local_model_path_is_one_line_at_once(tmp_path, path):
    (tmp_path / "models").mkdir()
    (tmp_path / "src.txt").write_text("a b c\n")
    started = time.monotonic()
    proc = subprocess.run([_eole(), "predict", "-model_path", path, "-src", "src.txt", "-output", "out.txt"],
                          env=http_server.env(), capture_output=True, text=True, timeout=120, cwd=tmp_path)
    took = time.monotonic() - started
    line = one_error_line(proc.returncode, proc.stderr, 2, prog="eole predict")
    assert line == f"eole predict: error: -model_path {path}: no such directory"
    assert took < 30, took
    assert not (tmp_path / "out.txt").exists()
