"""Values that pass "is a number" but break float32 scores, the tools' arguments, pathological YAML configs, and
signals at any moment of ``onmt_translate``: one line, the right exit status, every earlier file kept, and
statistics that a strict JSON parser reads. Runs the real ``onmt_translate`` on the session's toy model, in the
shared ``our_worker`` process, or in a process of its own where the process is what is tested (a signal).
"""
from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from helpers import toy
from helpers.bad_yaml import alias_bomb
from onmt_optimal import __main__ as cli
from helpers.one_line import one_error_line, partials, wait_for_torch
from helpers.signals import as_from_a_session, as_from_a_terminal
from test_faults import ENV, ONMT_TRANSLATE, Stderr

OURS = ["-length_penalty", "none", "-stopping", "optimal"]


def strict_json(text: str):
    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("values")
    toy.write_corpus(d / "small", 6, seed=5, max_len=8)
    toy.write_corpus(d / "large", 5000, seed=11, max_len=8)
    return {"src": d / "small.src", "tgt": d / "small.tgt", "large": d / "large.src"}


def one_line(proc, status) -> str:
    return one_error_line(proc.returncode, proc.stderr, status)


BAD_VALUES = [
    (["-length_reward", "1e39", "-length_penalty", "none"], "-length_reward 1e+39 is too large"),
    (["-length_reward", "1", "-length_ratio", "1e38", "-length_penalty", "none"], "-length_ratio 1e+38 is too large"),
    (["-length_penalty", "wu", "-alpha", "nan", "-stopping", "optimal"], "-alpha must be a finite number"),
    (["-length_penalty", "avg", "-alpha", "inf", "-stopping", "exhaustive"], "-alpha must be a finite number"),
    (["-length_penalty", "wu", "-alpha", "1000", "-stopping", "optimal"], "-alpha must be between"),
    (["-coverage_penalty", "wu", "-beta", "nan", "-stopping", "exhaustive"], "-beta must be a finite number"),
    (["-dump_beam", "beam.json", *OURS], "-dump_beam is not supported"),
]


@pytest.mark.parametrize("args,mentions", BAD_VALUES, ids=[" ".join(a) for a, _ in BAD_VALUES])
def test_values_that_broke_float32_scores_are_one_line_before_the_model_loads(our_worker, toy_model, corpus,
                                                                             tmp_path, args, mentions):
    """Before: every score inf (a line of 2 tokens, ``Infinity`` in the statistics), 100 unknown tokens a line
    (NaN alpha), an OverflowError traceback (alpha 1000), a traceback (-dump_beam)."""
    out, stats = tmp_path / "out", tmp_path / "stats.jsonl"
    out.write_text("keep\n")
    proc = our_worker.run("-model", toy_model, "-src", corpus["src"], "-output", out, "-stats_file", stats, *args)
    line = one_line(proc, 2)
    assert mentions in line, line
    assert "Loading checkpoint" not in proc.stderr
    assert out.read_text() == "keep\n" and not stats.exists()


def test_statistics_are_strict_json_at_the_largest_reward(our_worker, toy_model, corpus, tmp_path):
    out, stats = tmp_path / "out", tmp_path / "stats.jsonl"
    proc = our_worker.run("-model", toy_model, "-src", corpus["src"], "-output", out, "-stats_file", stats,
                          "-length_reward", "1e33", "-max_length", "100", *OURS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [strict_json(line) for line in stats.read_text().splitlines()]
    assert len(records) == 6 and all(isinstance(r["score"], float) for r in records)


#: 9**6 values (a few MB once expanded: enough to be refused, small enough for the code it guards against)
BOMB = alias_bomb(6)


@pytest.mark.parametrize("case", ["alias bomb", "stats_file mapping", "output mapping"])
def test_a_pathological_yaml_config_is_one_line(our_worker, toy_model, corpus, tmp_path, case):
    """Before: a MemoryError traceback (the alias bomb), a file named ``{'a': 1}`` (a mapping as a path)."""
    config = tmp_path / "c.yaml"
    head = f"model: {toy_model}\nsrc: {corpus['src']}\n"
    config.write_text({"alias bomb": head + f"output: {tmp_path / 'out'}\n" + BOMB,
                       "stats_file mapping": head + f"output: {tmp_path / 'out'}\nstats_file: {{a: 1}}\n",
                       "output mapping": head + "output: {a: 1}\n"}[case])
    proc = our_worker.run("-config", config)
    line = one_line(proc, 2)
    assert ("aliases expand" if case == "alias bomb" else "is a mapping") in line and len(line) < 400, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]


@pytest.mark.parametrize("args,mentions", [
    (["--beams", "5-1"], "is empty"), (["--beams", "0"], "at least 1"), (["--beams", "abc"], "'abc'"),
    (["--rewards", "nan"], "--rewards must be a finite number"), (["--rewards=-1"], "--rewards must be"),
    (["--rewards", "abc"], "'abc' is not a number"), (["--ratio", "0"], "--ratio must be"),
    (["--ratio", "nan"], "--ratio must be"), (["--ray-workers", "-1"], "--ray-workers"),
    (["--out-is-src"], "is the --src file"), (["--out-is-refs"], "is the --refs file"),
    (["--out-is-model"], "a file the run reads"),
])
def test_sweep_arguments_are_one_line_before_a_model_loads(capsys, corpus, tmp_path, args, mentions):
    """Before: an earlier --out replaced by 0 rows (--beams 5-1), rows dropped silently (--rewards nan, -1),
    --ratio 0 ignored, NaN in the JSON (--ratio nan), tracebacks after the model loaded, --out written over
    --src. The model here does not exist: every refusal comes before loading one."""
    model = tmp_path / "model.pt"
    model.write_bytes(b"not a model")
    out = tmp_path / "out.json"
    out.write_text('{"earlier": 1}\n')
    src_before = corpus["src"].read_bytes()
    target = {"--out-is-src": corpus["src"], "--out-is-refs": corpus["tgt"], "--out-is-model": model}.get(args[0])
    extra = [] if target else args
    with pytest.raises(SystemExit) as done:
        cli.main(["sweep", "--src", str(corpus["src"]), "--refs", str(corpus["tgt"]), "--out", str(target or out),
                  *extra, "--", "-model", str(model)])
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1 and err.startswith("onmt-optimal sweep: error: "), err
    assert mentions in err
    assert out.read_text() == '{"earlier": 1}\n' and corpus["src"].read_bytes() == src_before
    assert model.read_bytes() == b"not a model"


def test_a_sweep_writes_strict_json(toy_model, corpus, tmp_path, capsys):
    out = tmp_path / "sweep.json"
    cli.main(["sweep", "--src", str(corpus["src"]), "--refs", str(corpus["tgt"]), "--out", str(out), "--beams", "1-2",
              "--rewards", "0,1", "--", "-model", str(toy_model)])
    result = strict_json(out.read_text())
    # per beam: 7 rows, the paper's opennmt2017 row among them
    assert len(result["rows"]) == 2 * 7 and result["meta"]["ratio"] > 0


# ---------------------------------------------------------------- signals
def test_sighup_during_a_decode_is_one_line_and_loses_nothing(toy_model, corpus, tmp_path):
    """Before: nothing printed, and a ``.partial`` with part of the output left behind."""
    out, stats = tmp_path / "out.txt", tmp_path / "stats.jsonl"
    out.write_text("earlier\n")
    stats.write_text("{}\n")
    proc = subprocess.Popen([ONMT_TRANSLATE, "-model", toy_model, "-src", corpus["large"], "-output", out,
                             "-stats_file", stats, "-progress", *OURS], env=ENV, stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, preexec_fn=as_from_a_session)
    stderr = Stderr(proc)
    stderr.wait_for(r"\| *[1-9][0-9]*/5000 \[", proc)
    proc.send_signal(signal.SIGHUP)
    proc.wait(timeout=120)
    line = one_error_line(proc.returncode, stderr.join(), 129)
    assert "SIGHUP" in line
    assert out.read_text() == "earlier\n" and stats.read_text() == "{}\n" and partials(tmp_path) == []


def test_ctrl_c_while_onmt_translate_starts_is_one_line(toy_model, corpus, tmp_path):
    """Before: a KeyboardInterrupt traceback from whatever module was importing. Ctrl-C once torch's library is
    loaded lands while torch and OpenNMT-py import (before ``failures.run``); the process then ends as killed by
    SIGINT (a shell reports 130 either way)."""
    out = tmp_path / "out.txt"
    out.write_text("earlier\n")
    proc = subprocess.Popen([ONMT_TRANSLATE, "-model", toy_model, "-src", corpus["src"], "-output", out],
                            env=ENV, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            preexec_fn=as_from_a_terminal)
    wait_for_torch(proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode in (130, -signal.SIGINT), stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if "onmt_translate: error:" in line]
    assert len(errors) == 1 and "interrupted" in errors[0], stderr[-3000:]
    assert out.read_text() == "earlier\n" and partials(Path(tmp_path)) == []
