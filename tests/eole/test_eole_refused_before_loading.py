"""Bad files and values that ``eole predict`` and the tools took silently, destructively or with a traceback: each
is one line and a non-zero exit status, before the model loads where it can be, every earlier file byte for byte
as it was. ``eole predict`` runs in the shared ``ours`` process, the tools in a process of their own.

Before: ``sweep --out MODEL_DIR/config.json`` (or ``vocab.json``, or through a symbolic link to the model
directory) replaced the model's file with the sweep's JSON; a trailing slash (``-output keep.txt/``) replaced
``keep.txt``; a damaged ``vocab.json`` or ``config.json``, a truncated safetensors file and a config that is not
UTF-8 ended in tracebacks; a ``-tgt`` of fewer lines cut the output short with exit status 0.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.one_line import earlier_file, naming

OURS = ["-length_penalty", "none", "-stopping", "optimal"]
ENV = {"PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1", "PATH": str(Path(sys.executable).parent),
       **{k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "ATEN_CPU_CAPABILITY")}}


@pytest.fixture
def model_copy(encoder_decoder, tmp_path) -> Path:
    return Path(shutil.copytree(encoder_decoder, tmp_path / "model"))


def snapshot(directory: Path) -> dict:
    return {p.relative_to(directory): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def refused(done, status, *mentions) -> str:
    assert done.returncode == status, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if "error:" in line]
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr[-3000:]
    return naming(lines[0], *mentions)


@pytest.fixture
def earlier(tmp_path) -> Path:
    return earlier_file(tmp_path / "keep.txt", "earlier predictions\n")


@pytest.mark.parametrize("member", ["config.json", "vocab.json", "model.00.safetensors"])
@pytest.mark.parametrize("how", ["path", "symlink to the directory"])
def test_sweep_out_in_the_model_directory_is_refused(model_copy, src, tmp_path, member, how):
    before = snapshot(model_copy)
    directory = model_copy
    if how != "path":
        directory = tmp_path / "link"
        directory.symlink_to(model_copy)
    ref = src.with_suffix(".tgt")
    done = subprocess.run([sys.executable, "-m", "onmt_optimal", "sweep", "--src", str(src), "--refs", str(ref),
                           "--beams", "1", "--rewards", "0", "--out", str(directory / member), "--",
                           "-model_path", str(model_copy)], capture_output=True, text=True, env=ENV)
    line = refused(done, 2, f"--out {directory / member}", f"the file {member} of the -model_path model")
    assert line.startswith("onmt-optimal sweep: error: ")
    assert snapshot(model_copy) == before


@pytest.mark.parametrize("flag,extra", [("-output", []), ("-stats_file", OURS), ("-log_file", [])])
def test_a_trailing_slash_is_refused(ours, encoder_decoder, src, earlier, flag, extra):
    args = [] if flag == "-output" else ["-output", earlier.with_name("out.txt")]
    done = ours.predict("-model_path", encoder_decoder, "-src", src, *args, flag, f"{earlier}/", *extra)
    refused(done, 2, flag, "ends with '/'")
    assert earlier.read_text() == "earlier predictions\n" and not earlier.with_name("out.txt").exists()


def test_an_empty_output_is_refused(ours, encoder_decoder, src):
    refused(ours.predict("-model_path", encoder_decoder, "-src", src, "-output", ""), 2, "-output is empty")


@pytest.mark.parametrize("member,damage,says", [
    ("vocab.json", b'{"src": [', "vocab.json is not valid JSON"),
    ("config.json", b'{"a":', "config.json is not valid JSON"),
    ("model.00.safetensors", None, "model.00.safetensors is truncated or damaged"),
])
def test_a_damaged_model_is_one_line(ours, model_copy, src, earlier, member, damage, says):
    path = model_copy / member
    path.write_bytes(damage if damage is not None else path.read_bytes()[:3000])
    done = ours.predict("-model_path", model_copy, "-src", src, "-output", earlier)
    refused(done, 2, f"-model_path {model_copy}", says)
    assert earlier.read_text() == "earlier predictions\n"


@pytest.mark.parametrize("head", [b"\xff\xfe", b"PK\x03\x04\x80"])
def test_a_config_that_is_not_utf8_text_is_one_line(ours, encoder_decoder, src, tmp_path, head):
    config = tmp_path / "c.yaml"
    config.write_bytes(head + b"src: a.txt\n")
    done = ours.predict("-model_path", encoder_decoder, "-src", src, "-config", config)
    refused(done, 2, f"-config {config}", "not UTF-8")


@pytest.mark.parametrize("args,mentions", [
    (["-tgt", "SHORT", *OURS], "one target line a source line"),
    (["-batch_size", "0", *OURS], "-batch_size must be at least 1"),
    (["-min_length", "20", "-max_length", "5", *OURS], "-min_length 20 exceeds -max_length 5"),
    (["-length_reward", "1", "-length_ratio", "1e-300", "-length_penalty", "none"], "is too small"),
    (["-top_k", "5", "-stats_file", "STATS"], "not random sampling"),
    # eole's own options in eole's words (they spoke of OpenNMT-py's -ratio and of Ray's -ray_workers)
    (["-ratio", "0.5", *OURS], "eole's -ratio stopping rule cannot be combined with onmt-optimal's options"),
    (["-world_size", "2", "-gpu_ranks", "0", "1", *OURS], "-world_size 2: onmt-optimal's options decode in one "
                                                          "process, not with eole's multi-process inference"),
])
def test_values_taken_silently_are_one_line_under_our_options(ours, encoder_decoder, src, earlier, args,
                                                              mentions):
    short = earlier.with_name("short.tgt")
    short.write_text("".join(src.with_suffix(".tgt").read_text().splitlines(keepends=True)[:3]))
    stats = earlier.with_name("stats.jsonl")
    args = [{"SHORT": short, "STATS": stats}.get(a, a) for a in args]
    done = ours.predict("-model_path", encoder_decoder, "-src", src, "-output", earlier, *args)
    refused(done, 2, mentions)
    assert earlier.read_text() == "earlier predictions\n" and not stats.exists()


def test_a_log_file_that_cannot_be_written_is_one_line(ours, encoder_decoder, src, earlier):
    done = ours.predict("-model_path", encoder_decoder, "-src", src, "-output", earlier, "-log_file", "/dev/full")
    refused(done, 1, "the log file /dev/full cannot be written")
    assert earlier.read_text() == "earlier predictions\n"
