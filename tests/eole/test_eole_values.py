"""eole predict: values that pass "is a number" but break float32 scores, pathological YAML configs, SIGHUP
mid-run and Ctrl-C while the command's modules import: one line, the right exit status, every earlier file
kept (real eole 0.6.4, the tier's toy model)."""
from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import one_line, toy_eole
from helpers.bad_yaml import alias_bomb
from helpers.one_line import partials, wait_for_torch
from helpers.signals import as_from_a_session, as_from_a_terminal, signalled_once_ready

EOLE = str(Path(sys.executable).parent / "eole")
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
ENV.pop("ONMT_OPTIMAL_DISABLE", None)
OURS = ["-length_penalty", "none", "-stopping", "optimal"]
one_error_line = functools.partial(one_line.one_error_line, prog="eole predict")


BAD = [
    (["-length_penalty", "none", "-length_reward", "1e39"], "-length_reward 1e+39 is too large"),
    (["-length_penalty", "wu", "-alpha", "nan", "-stopping", "optimal"], "-alpha must be a finite number"),
    (["-length_penalty", "avg", "-alpha", "-1000", "-stopping", "exhaustive"], "-alpha must be between"),
    (["-coverage_penalty", "wu", "-beta", "inf", "-stopping", "exhaustive"], "-beta must be a finite number"),
    (["-length_penalty", "none", "-length_reward", "1", "-length_ratio", "1e38"], "-length_ratio 1e+38"),
    (["-dump_beam", "beam.json", *OURS], "-dump_beam is not supported"),
]


@pytest.mark.parametrize("args,mentions", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_values_that_broke_float32_scores_are_one_line(ours, encoder_decoder, src, tmp_path, args, mentions):
    out = tmp_path / "out"
    out.write_text("earlier output\n")
    done = ours.predict("-model_path", encoder_decoder, "-src", src, "-output", out, *args)
    line = one_error_line(done.returncode, done.stderr, 2)
    assert mentions in line, line
    assert out.read_text() == "earlier output\n"


#: 9**6 values (a few MB once expanded: enough to be refused, small enough for the code it guards against)
BOMB = alias_bomb(6)


def test_an_alias_bomb_config_is_one_line(ours, encoder_decoder, src, tmp_path):
    """Before: a multi-megabyte error "line" (a larger bomb: a MemoryError traceback). (A mapping as a path,
    ``stats_file: {a: 1}``, eole's pydantic fields refuse already.)"""
    config = tmp_path / "c.yaml"
    config.write_text(f"model_path: {encoder_decoder}\nsrc: {src}\noutput: {tmp_path / 'out'}\n" + BOMB)
    done = ours.predict("-config", config)
    line = one_error_line(done.returncode, done.stderr, 2)
    assert "aliases expand" in line and len(line) < 400, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]


@pytest.fixture(scope="module")
def large_src(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("large")
    toy_eole.write_pairs(d / "large", 5000, seed=4, kind="encoder_decoder", max_len=12)
    return d / "large.src"


def test_sighup_during_a_decode_is_one_line_and_loses_nothing(encoder_decoder, large_src, tmp_path):
    out, stats_file = tmp_path / "out.txt", tmp_path / "stats.jsonl"
    out.write_text("earlier\n")
    stats_file.write_text("{}\n")
    argv = [EOLE, "predict", "-model_path", encoder_decoder, "-src", large_src, "-output", out, "-stats_file",
            stats_file, *OURS]
    # "Inference extensions": eole logs this line just before it decodes
    returncode, stderr = signalled_once_ready(argv, ENV, signal.SIGHUP, as_from_a_session, "Inference extensions")
    line = one_error_line(returncode, stderr, 129)
    assert "SIGHUP" in line
    assert out.read_text() == "earlier\n" and stats_file.read_text() == "{}\n" and partials(tmp_path) == []


def test_ctrl_c_while_eole_predict_starts_is_one_line(encoder_decoder, src, tmp_path):
    """Ctrl-C while torch and eole import, before ``failures.run``: one line, and the process ends as killed
    by SIGINT (a shell reports 130 either way)."""
    out = tmp_path / "out.txt"
    out.write_text("earlier\n")
    proc = subprocess.Popen([EOLE, "predict", "-model_path", encoder_decoder, "-src", src, "-output", out],
                            env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=as_from_a_terminal)
    wait_for_torch(proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode in (130, -signal.SIGINT), stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if "eole predict: error:" in line]
    assert len(errors) == 1 and "interrupted" in errors[0], stderr[-3000:]
    assert out.read_text() == "earlier\n" and partials(tmp_path) == []
