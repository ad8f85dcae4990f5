"""Bad input gets one clear line or a sane result, never a traceback, never lost output (issue 13, part 2), and
what a newcomer's first commands print (part 3). Each case runs OpenNMT-py's own ``onmt_translate`` main on the
session's toy model, in the shared ``our_worker`` process (exactly what the console script runs, one interpreter
for all cases); the help texts and the environment switch run in-process, plus one real process each where
the process itself is what is tested.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from helpers import toy
from helpers.one_line import partials
from onmt_optimal import __main__ as cli
from onmt_optimal.opennmt import hook, install
from onmt_optimal.tools.text import unescape_moses

BIN = Path(sys.executable).parent
ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
ENV.pop("ONMT_OPTIMAL_DISABLE", None)
OURS = ["-length_penalty", "none", "-stopping", "optimal"]


@pytest.fixture
def translate(our_worker):
    """``translate(*args)``: ``onmt_translate *args``; returns returncode, stdout, stderr."""
    return our_worker.run


def error_lines(proc) -> list[str]:
    return [line for line in proc.stderr.splitlines() if "onmt_translate: error:" in line]


def assert_one_error_line(proc, status):
    assert proc.returncode == status, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert len(error_lines(proc)) == 1, proc.stderr[-3000:]
    return error_lines(proc)[0]


@pytest.fixture(scope="module")
def src(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("bad_input")
    toy.write_corpus(d / "test", 6, seed=5, max_len=8)
    return d / "test.src"


# ------------------------------------------------------------------ part 2: bad input
def test_zero_byte_source_gives_empty_output_and_empty_stats(translate, toy_model, tmp_path):
    empty = tmp_path / "empty.src"
    empty.write_bytes(b"")
    out, stats = tmp_path / "out", tmp_path / "stats.jsonl"
    out.write_text("old output\n")
    proc = translate("-model", toy_model, "-src", empty, "-output", out, "-stats_file", stats, *OURS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert out.read_bytes() == b"" and stats.read_bytes() == b""


def test_stats_file_in_a_missing_directory_is_refused_before_the_model_loads(translate, toy_model, src, tmp_path):
    out = tmp_path / "out"
    out.write_text("keep me\n")
    proc = translate("-model", toy_model, "-src", src, "-output", out,
                     "-stats_file", tmp_path / "no_such_dir" / "stats.jsonl", *OURS)
    line = assert_one_error_line(proc, 2)
    assert "-stats_file" in line and "no_such_dir" in line and "does not exist" in line
    assert "Loading checkpoint" not in proc.stderr  # refused before the model loads
    assert out.read_text() == "keep me\n"


def test_a_missing_source_never_empties_the_output(translate, toy_model, tmp_path):
    out = tmp_path / "out"
    out.write_text("an earlier translation\n")
    proc = translate("-model", toy_model, "-src", tmp_path / "no_such.src", "-output", out)
    line = assert_one_error_line(proc, 2)
    assert "-src" in line and "no such file" in line
    assert out.read_text() == "an earlier translation\n"


@pytest.mark.parametrize("kind", ["random bytes", "opt None"])
def test_a_file_that_is_not_a_checkpoint_is_one_line_and_never_empties_the_output(translate, toy_model, src,
                                                                                  tmp_path, kind):
    bad = tmp_path / "bad.pt"
    if kind == "random bytes":
        bad.write_bytes(os.urandom(4096))
    else:
        ckpt = torch.load(toy_model, map_location="cpu", weights_only=True)
        assert isinstance(ckpt["opt"], argparse.Namespace)
        ckpt["opt"] = None
        torch.save(ckpt, bad)
    out = tmp_path / "out"
    out.write_text("an earlier translation\n")
    proc = translate("-model", bad, "-src", src, "-output", out)
    line = assert_one_error_line(proc, 1)
    assert str(bad) in line and "is not an OpenNMT-py checkpoint" in line
    assert "weights_only" not in proc.stderr
    assert line.rstrip().endswith(("torch.save", "training options")), line  # a whole clause, never cut
    assert out.read_text() == "an earlier translation\n"


def test_n_best_above_a_beam_of_one_warns_once_then_pads(translate, toy_model, src, tmp_path):
    """Also: target_length has one type on empty and non-empty lines, and the closing report is
    log-probability based (stock's PRED PPL of a reward-augmented score fell below 1)."""
    lines = src.read_text().splitlines()
    with_empty = tmp_path / "with_empty.src"
    with_empty.write_text("\n".join([lines[0], "", *lines[1:]]) + "\n")
    out, stats = tmp_path / "out", tmp_path / "stats.jsonl"
    proc = translate("-model", toy_model, "-src", with_empty, "-output", out, "-stats_file", stats,
                     "-beam_size", "1", "-n_best", "3", "-length_reward", "1.0", "-length_ratio", "1.5", *OURS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    warnings = [line for line in proc.stderr.splitlines() if "warning" in line.lower()]
    assert len(warnings) == 1 and "-n_best 3 exceeds" in warnings[0], proc.stderr[-3000:]
    hyps = out.read_text().split("\n")[:-1]
    assert len(hyps) == 3 * len(lines) + 3
    for k in range(0, len(hyps), 3):  # each n-best list repeats its one hypothesis
        assert hyps[k] == hyps[k + 1] == hyps[k + 2]
    records = [json.loads(line) for line in stats.read_text().splitlines()]
    assert records[1]["stop_reason"] == "empty_source"
    assert all(isinstance(r["target_length"], float) for r in records), records
    assert "PRED SCORE" not in proc.stderr and "PRED LOG-PROB PER TOKEN" in proc.stderr
    ppl = float(proc.stderr.split("PRED PPL: ")[1].split()[0])
    assert ppl >= 1.0
    assert "PRED MEAN SCORE" in proc.stderr


def test_target_length_is_null_on_every_line_without_a_length_ratio(translate, toy_model, src, tmp_path):
    lines = src.read_text().splitlines()
    with_empty = tmp_path / "with_empty.src"
    with_empty.write_text("\n".join(["", *lines[:2]]) + "\n")
    stats = tmp_path / "stats.jsonl"
    proc = translate("-model", toy_model, "-src", with_empty, "-output", tmp_path / "out", "-stats_file", stats,
                     *OURS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in stats.read_text().splitlines()]
    assert [r["target_length"] for r in records] == [None, None, None]


@pytest.mark.parametrize("value,off", [("", False), ("0", False), ("false", False), ("No", False), ("off", False),
                                       ("1", True), ("true", True), ("YES", True), ("on", True)])
def test_only_a_true_value_of_onmt_optimal_disable_turns_the_plugin_off(monkeypatch, value, off):
    monkeypatch.setenv("ONMT_OPTIMAL_DISABLE", value)
    assert hook.disabled() is off


@pytest.mark.slow
def test_disable_zero_keeps_the_flags_in_a_real_process():
    code = "import onmt.translate.translator as t; print(hasattr(t.build_translator, '__wrapped__'))"
    for value, name in (("0", "True"), ("1", "False")):
        proc = subprocess.run([sys.executable, "-c", code], env=dict(ENV, ONMT_OPTIMAL_DISABLE=value),
                              capture_output=True, text=True)
        assert proc.stdout.strip() == name, (value, proc.stderr[-2000:])


def test_help_texts_and_unknown_commands_in_process(capsys, tmp_path):
    cli.main(["--help"])
    assert "install-hook" in capsys.readouterr().out
    with pytest.raises(SystemExit) as done:
        cli.main(["install-hook", "--help", "--site-packages", str(tmp_path)])
    assert done.value.code == 0 and "--site-packages" in capsys.readouterr().out
    assert not (tmp_path / install.PTH_NAME).exists()  # help installs nothing
    with pytest.raises(SystemExit) as done:
        cli.main(["frobnicate"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown command 'frobnicate'" in err


@pytest.mark.slow
def test_help_texts_and_unknown_commands():
    """The two ways in a newcomer types: plain text on stdout, exit 0."""
    for cmd in ([sys.executable, "-m", "onmt_optimal", "--help"], [str(BIN / "onmt-optimal"), "--help"]):
        proc = subprocess.run(cmd, env=ENV, capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stdout.startswith("onmt-optimal") and not proc.stderr, proc


# ------------------------------------------------------------------ part 3: what a newcomer sees
def test_unescape_moses_undoes_the_escapes_of_the_tvsub_files():
    assert unescape_moses("it &apos;s a &quot;test&quot; &amp; more &lt;b&gt; &#124; x") == \
        "it 's a \"test\" & more <b> | x"
    assert unescape_moses("&amp;lt;") == "&lt;"  # one level, as the training data was cleaned


# ------------------------------------------------------------------ files that would be lost, inputs that crashed
@pytest.mark.parametrize("how", ["same path", "another spelling", "symbolic link", "hard link"])
def test_stats_file_equal_to_output_is_refused_and_both_are_kept(translate, toy_model, src, tmp_path, how):
    """Stock wrote the statistics over the translations (exit 0, no word)."""
    out = tmp_path / "out.txt"
    out.write_text("earlier translations\n")
    stats = {"same path": out, "another spelling": tmp_path / "." / "out.txt",
             "symbolic link": tmp_path / "link.txt", "hard link": tmp_path / "hard.txt"}[how]
    if how == "symbolic link":
        stats.symlink_to(out)
    elif how == "hard link":
        os.link(out, stats)
    proc = translate("-model", toy_model, "-src", src, "-output", out, "-stats_file", stats, *OURS)
    line = assert_one_error_line(proc, 2)
    assert "-stats_file" in line and "same file" in line
    assert "Loading checkpoint" not in proc.stderr
    assert out.read_text() == "earlier translations\n"


def test_output_equal_to_src_is_refused(translate, toy_model, src, tmp_path):
    """Stock emptied the source before reading it (and wrote an empty translation)."""
    copy = tmp_path / "src.txt"
    copy.write_bytes(src.read_bytes())
    proc = translate("-model", toy_model, "-src", copy, "-output", copy)
    line = assert_one_error_line(proc, 2)
    assert "-output" in line and "-src" in line
    assert copy.read_bytes() == src.read_bytes()


@pytest.mark.parametrize("content,line_number,offset", [(b"a b \xff c\n", 1, 4), (b"a b\nc d \xc3\n", 2, 8)])
def test_a_source_that_is_not_utf8_is_one_line_saying_where(translate, toy_model, tmp_path, content, line_number,
                                                            offset):
    bad = tmp_path / "bad.src"
    bad.write_bytes(content)
    out = tmp_path / "out"
    out.write_text("an earlier translation\n")
    proc = translate("-model", toy_model, "-src", bad, "-output", out)
    line = assert_one_error_line(proc, 1)
    assert f"line {line_number} is not UTF-8" in line and f"byte offset {offset}" in line, line
    assert out.read_text() == "an earlier translation\n" and partials(tmp_path) == []


@pytest.mark.parametrize("args,mentions", [
    (["-beam_size", "0"], "-beam_size must be at least 1"),
    (["-beam_size", "-1"], "-beam_size must be at least 1"),
    (["-n_best", "0"], "-n_best must be at least 1"),
    (["-n_best", "0", *OURS], "-n_best must be at least 1"),
    (["-max_length", "0"], "-max_length must be at least 1"),
    (["-model"], "-model"),  # an empty model list
], ids=lambda a: " ".join(a) if isinstance(a, list) else "")
def test_sizes_that_crashed_are_one_line(translate, toy_model, src, tmp_path, args, mentions):
    out = tmp_path / "out"
    out.write_text("keep\n")
    model = [] if args == ["-model"] else ["-model", toy_model]
    proc = translate(*model, "-src", src, "-output", out, *args)
    line = assert_one_error_line(proc, 2)
    assert mentions in line
    assert len(proc.stderr.splitlines()) == 1, proc.stderr  # refused before the model loads, with no usage text
    assert out.read_text() == "keep\n"


@pytest.mark.parametrize("yaml_line,mentions", [("frobnicate: 3", "frobnicate"), ("beam_size: three", "three")])
def test_a_bad_yaml_key_or_value_is_one_line_not_the_usage(translate, toy_model, src, tmp_path, yaml_line, mentions):
    config = tmp_path / "c.yaml"
    config.write_text(f"model: {toy_model}\nsrc: {src}\noutput: {tmp_path / 'out'}\n{yaml_line}\n")
    proc = translate("-config", config)
    line = assert_one_error_line(proc, 2)
    assert mentions in line
    assert len(proc.stderr.splitlines()) == 1, proc.stderr  # stock printed the 107-line usage first


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_gpu_without_cuda_is_one_line(translate, toy_model, src, tmp_path):
    proc = translate("-model", toy_model, "-src", src, "-output", tmp_path / "out", "-gpu", "0")
    line = assert_one_error_line(proc, 2)
    assert "-gpu 0" in line and "drop -gpu" in line


def test_a_length_ratio_beyond_max_length_warns_once(translate, toy_model, src, tmp_path):
    proc = translate("-model", toy_model, "-src", src, "-output", tmp_path / "out", "-length_reward", "1",
                     "-length_ratio", "1e9", "-max_length", "20", *OURS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    warnings = [line for line in proc.stderr.splitlines() if "warning" in line.lower()]
    assert len(warnings) == 1 and "-length_ratio 1e+09" in warnings[0] and "-max_length 20" in warnings[0]


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


@pytest.mark.parametrize("kind", ["truncated", "runs code"])
def test_a_damaged_or_hostile_checkpoint_is_named_as_such(translate, toy_model, src, tmp_path, kind):
    bad = tmp_path / "bad.pt"
    if kind == "truncated":
        bad.write_bytes(Path(toy_model).read_bytes()[:100_000])
    else:
        torch.save({"model": _Evil()}, bad)
    out = tmp_path / "out"
    out.write_text("an earlier translation\n")
    proc = translate("-model", bad, "-src", src, "-output", out)
    line = assert_one_error_line(proc, 1)
    expected = "truncated or damaged" if kind == "truncated" else "asks to run code when loaded (posix.system)"
    assert expected in line, line
    assert "pwned" not in proc.stdout and "UserWarning" not in proc.stderr
    assert out.read_text() == "an earlier translation\n"


def test_output_dash_is_standard_output_once_the_run_succeeded(translate, toy_model, src, tmp_path):
    proc = translate("-model", toy_model, "-src", src, "-output", "-", "-stats_file", tmp_path / "s", *OURS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 6 and not any(line.startswith("Time w/o") for line in lines)  # the translations alone
    assert "Time w/o" in proc.stderr  # stock's closing print, with our flags on stderr
    assert not Path("-").exists()
    assert len((tmp_path / "s").read_text().splitlines()) == 6


@pytest.mark.slow
def test_ratio_command_refuses_a_hostile_checkpoint_in_one_line(src, tmp_path):
    bad = tmp_path / "bad.pt"
    torch.save({"model": _Evil()}, bad)
    proc = subprocess.run([sys.executable, "-m", "onmt_optimal", "ratio", "--src", str(src), "--refs",
                           str(src.with_suffix(".tgt")), "--", "-model", str(bad)], env=ENV, capture_output=True,
                          text=True)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "pwned" not in proc.stdout
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith("onmt-optimal ratio: error: ") and "posix.system" in errors[0]


@pytest.mark.parametrize("where", ["missing directory", "the -output file"])
def test_a_log_file_that_cannot_be_one_is_refused(translate, toy_model, src, tmp_path, where):
    """Stock: a FileNotFoundError traceback; or the log lines mixed into the translations."""
    out = tmp_path / "out"
    out.write_text("keep\n")
    log = tmp_path / "no_such_dir" / "log" if where == "missing directory" else out
    proc = translate("-model", toy_model, "-src", src, "-output", out, "-log_file", log)
    line = assert_one_error_line(proc, 2)
    assert "-log_file" in line and out.read_text() == "keep\n"


def test_an_existing_output_in_a_directory_that_takes_no_new_file_is_refused(tmp_path, monkeypatch):
    """The output is written beside its target and renamed onto it: a writable file in a read-only directory
    would fail only after the decode. (os.access stands in for the directory's mode: these tests run as root.)"""
    from onmt_optimal.errors import OptionError
    from onmt_optimal.opennmt.options import read_parsed, validate

    out = tmp_path / "out.txt"
    out.write_text("keep\n")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == tmp_path else real_access(p, mode))
    opt = argparse.Namespace(src=None, output=str(out), stats_file=None)
    with pytest.raises(OptionError, match=r"-output .*out.txt: directory .* is not writable"):
        validate(*read_parsed(opt))


def test_src_dash_is_one_line_naming_dev_stdin(translate, toy_model, tmp_path):
    """Stock opened a file named '-': a FileNotFoundError traceback after the model loaded."""
    proc = translate("-model", toy_model, "-src", "-", "-output", tmp_path / "out")
    line = assert_one_error_line(proc, 2)
    assert "/dev/stdin" in line


@pytest.mark.parametrize("case", ["refs shorter", "src not UTF-8", "refs missing"])
def test_ratio_refuses_bad_files_in_one_line_before_loading_a_model(capsys, tmp_path, case):
    """Stock of this command: a traceback after the model loaded (here: the model does not even exist)."""
    src, refs = tmp_path / "src", tmp_path / "refs"
    src.write_bytes(b"a b\n\xff c\n" if case == "src not UTF-8" else b"a b\nc d\n")
    if case != "refs missing":
        refs.write_text("A B\n" if case == "refs shorter" else "A B\nC D\n")
    with pytest.raises(SystemExit) as done:
        cli.main(["ratio", "--src", str(src), "--refs", str(refs), "--", "-model", str(tmp_path / "no_model.pt")])
    err = capsys.readouterr().err
    assert done.value.code == 1 and err.count("\n") == 1 and err.startswith("onmt-optimal ratio: error: "), err
    assert {"refs shorter": "has 1 line,", "src not UTF-8": "line 2", "refs missing": "cannot read"}[case] in err
