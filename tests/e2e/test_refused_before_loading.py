"""Bad files and values that ``onmt_translate`` and the tools took silently, destructively or with a traceback:
each is one line and a non-zero exit status, before the model loads where it can be, every earlier file byte for
byte as it was. Runs the real ``onmt_translate`` in the shared ``our_worker`` process and the tools in-process,
on the session's toy model (or on a file that is no model, where the refusal must come before loading one).

Before: ``sweep --out`` naming the model that its ``-config`` names replaced the model with the sweep's JSON, a
trailing slash (``-output keep.txt/``) replaced ``keep.txt`` or made a file named ``new`` for ``new/``, and the
others below each ended in a traceback or a silent surprise.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import torch

from helpers import toy
from helpers.one_line import earlier_file, naming, one_error_line, partials
from onmt_optimal import __main__ as cli

OURS = ["-length_penalty", "none", "-stopping", "optimal"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("refused")
    toy.write_corpus(d / "small", 6, seed=5, max_len=8)
    (d / "short.tgt").write_text("".join((d / "small.tgt").read_text().splitlines(keepends=True)[:3]))
    return {"src": d / "small.src", "tgt": d / "small.tgt", "short": d / "short.tgt"}


def one_line(proc, status) -> str:
    return one_error_line(proc.returncode, proc.stderr, status)


def refused_early(proc, *mentions) -> str:
    line = naming(one_line(proc, 2), *mentions)
    assert "Loading checkpoint" not in proc.stderr, proc.stderr[-3000:]
    return line


@pytest.fixture
def earlier(tmp_path) -> Path:
    return earlier_file(tmp_path / "keep.txt", "earlier translations\n")


# ------------------------------------------------------------------ paths that name no file
@pytest.mark.parametrize("flag", ["-output", "-stats_file", "-log_file"])
def test_a_trailing_slash_on_an_existing_file_is_refused(our_worker, toy_model, corpus, earlier, flag):
    args = ["-output", earlier.with_name("out.txt")] if flag != "-output" else []
    proc = our_worker.run("-model", toy_model, "-src", corpus["src"], *args, flag, f"{earlier}/", *OURS)
    refused_early(proc, flag, "ends with '/'")
    assert earlier.read_text() == "earlier translations\n" and not earlier.with_name("out.txt").exists()


def test_a_trailing_slash_on_a_new_name_makes_no_file(our_worker, toy_model, corpus, tmp_path):
    proc = our_worker.run("-model", toy_model, "-src", corpus["src"], "-output", f"{tmp_path / 'new'}/")
    refused_early(proc, "-output", "ends with '/'")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_an_empty_output_is_refused_before_the_model_loads(our_worker, toy_model, corpus):
    refused_early(our_worker.run("-model", toy_model, "-src", corpus["src"], "-output", ""), "-output is empty")


def test_a_dump_beam_in_a_missing_directory_is_refused_before_the_model_loads(our_worker, toy_model, corpus, earlier):
    proc = our_worker.run("-model", toy_model, "-src", corpus["src"], "-output", earlier, "-dump_beam",
                          earlier.with_name("no_such_dir") / "beam.json")
    refused_early(proc, "-dump_beam", "does not exist")
    assert earlier.read_text() == "earlier translations\n"


def test_a_stats_file_where_no_file_can_be_made_is_refused_before_the_model_loads(our_worker, toy_model, corpus,
                                                                                   earlier):
    """/sys takes no new file, not even from root, whose ``os.access`` says yes: stock and the plugin refused it
    only after the whole decode."""
    proc = our_worker.run("-model", toy_model, "-src", corpus["src"], "-output", earlier, "-stats_file",
                          "/sys/onmt-optimal-stats.jsonl", *OURS)
    refused_early(proc, "-stats_file /sys/onmt-optimal-stats.jsonl")
    assert earlier.read_text() == "earlier translations\n"


# ------------------------------------------------------------------ the sweep's --out, wherever the model is named
@pytest.mark.parametrize("key", ["model", "src_subword_model"])
@pytest.mark.parametrize("spelled", ["path", "symlink", "trailing slash"])
def test_sweep_out_naming_a_file_the_config_names_is_refused(capsys, corpus, tmp_path, key, spelled):
    """The model file is no model: the refusal comes before one loads."""
    model, subword = tmp_path / "model.pt", tmp_path / "sp.model"
    model.write_bytes(b"a model\n")
    subword.write_bytes(b"a sentencepiece model\n")
    config = tmp_path / "run.yaml"
    config.write_text(f"model: {model}\nsrc_subword_model: {subword}\ntransforms: [sentencepiece]\n")
    target = {"model": model, "src_subword_model": subword}[key]
    out = str(target)
    if spelled == "symlink":
        out = str(tmp_path / "link")
        Path(out).symlink_to(target)
    elif spelled == "trailing slash":
        out += "/"
    with pytest.raises(SystemExit) as done:
        cli.main(["sweep", "--src", str(corpus["src"]), "--refs", str(corpus["tgt"]), "--beams", "1", "--rewards", "0",
                  "--out", out, "--", "-config", str(config)])
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1 and err.startswith("onmt-optimal sweep: error: "), err
    assert ("ends with '/'" if spelled == "trailing slash" else f"-{key}") in err, err
    assert model.read_bytes() == b"a model\n" and subword.read_bytes() == b"a sentencepiece model\n"


# ------------------------------------------------------------------ configs and checkpoints
@pytest.mark.parametrize("head", [b"\xff\xfe", b"PK\x03\x04\x80"])
def test_a_config_that_is_not_utf8_text_is_one_line(our_worker, corpus, tmp_path, head, capsys):
    config = tmp_path / "c.yaml"
    config.write_bytes(head + b"model: m.pt\n")
    refused_early(our_worker.run("-config", config, "-src", corpus["src"]), "-config", "not UTF-8")
    for command in (["sweep", "--out", str(tmp_path / "s.json")], ["ratio"]):
        with pytest.raises(SystemExit) as done:
            cli.main([*command, "--src", str(corpus["src"]), "--refs", str(corpus["tgt"]), "--", "-config",
                      str(config)])
        err = capsys.readouterr().err
        assert done.value.code == 2 and err.count("\n") == 1 and "not UTF-8" in err, err


def test_a_checkpoint_of_the_wrong_shape_is_one_line(our_worker, corpus, tmp_path, earlier):
    """Before: ``KeyError: 'data_task'``."""
    model = tmp_path / "shape.pt"
    torch.save({"model": {}, "vocab": {}, "opt": argparse.Namespace()}, model)
    line = one_line(our_worker.run("-model", model, "-src", corpus["src"], "-output", earlier), 1)
    assert "is not an OpenNMT-py checkpoint" in line and "'data_task'" in line, line
    assert earlier.read_text() == "earlier translations\n" and partials(tmp_path) == []


# ------------------------------------------------------------------ values
@pytest.mark.parametrize("args,mentions", [
    (["-batch_size", "0", *OURS], "-batch_size must be at least 1"),
    (["-batch_size", "-1", *OURS], "-batch_size must be at least 1"),
    (["-min_length", "20", "-max_length", "5", *OURS], "-min_length 20 exceeds -max_length 5"),
    (["-length_reward", "1", "-length_ratio", "1e-300", "-length_penalty", "none"], "-length_ratio 1e-300 is too small"),
    (["-random_sampling_topk", "5", "-stats_file", "STATS"], "not random sampling"),
    (["-int8"], "Flag '-int8' is deprecated"),
    (["-fp32"], "Flag '-fp32' is deprecated"),
    (["-replace_unk", "-model", "MODEL", "MODEL"], "-replace_unk needs one model's attention"),
    (["-attn_debug", "-model", "MODEL", "MODEL"], "-attn_debug needs one model's attention"),
    (["-tgt", "SHORT", *OURS], "one target line a source line"),
])
def test_values_taken_silently_or_with_a_traceback_are_one_line(our_worker, toy_model, corpus, earlier, args,
                                                               mentions):
    """Before: accepted (-batch_size 0 and -1, -min_length above -max_length, a ratio whose l is 0), a 0-byte
    statistics file (random sampling), a 27-line traceback (the deprecated flags), an IndexError traceback after
    the models loaded (an ensemble's -replace_unk, -attn_debug), an output cut short with exit status 0 (a
    -tgt of fewer lines)."""
    stats = earlier.with_name("stats.jsonl")
    args = [{"STATS": stats, "MODEL": toy_model, "SHORT": corpus["short"]}.get(a, a) for a in args]
    proc = our_worker.run("-model", toy_model, "-src", corpus["src"], "-output", earlier, *args)
    refused_early(proc, mentions)
    assert earlier.read_text() == "earlier translations\n" and not stats.exists()


def test_a_short_tgt_without_our_options_is_stock(our_worker, toy_model, corpus, tmp_path):
    """Stock scores the -tgt lines it has and translates no further (docs/differences.md)."""
    out = tmp_path / "out.txt"
    proc = our_worker.run("-model", toy_model, "-src", corpus["src"], "-tgt", corpus["short"], "-output", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(out.read_text().splitlines()) == 3


def test_a_log_file_that_cannot_be_written_is_one_line(our_worker, toy_model, corpus, earlier):
    """Before: four logging tracebacks, exit status 0."""
    proc = our_worker.run("-model", toy_model, "-src", corpus["src"], "-output", earlier, "-log_file", "/dev/full")
    line = one_line(proc, 1)
    assert "the log file /dev/full cannot be written" in line, line
    assert "Logging error" not in proc.stderr
    assert earlier.read_text() == "earlier translations\n" and partials(earlier.parent) == []


def test_save_config_with_a_trailing_slash_is_one_line(our_worker, toy_model, corpus, earlier):
    """Before: configargparse's ValueError traceback ("Couldn't open keep.txt/ for writing")."""
    proc = our_worker.run("-model", toy_model, "-src", corpus["src"], "-save_config", f"{earlier}/")
    refused_early(proc, "-save_config", "ends with '/'")
    assert earlier.read_text() == "earlier translations\n"


def test_an_output_that_is_a_dangling_link_is_refused_before_the_model_loads(our_worker, toy_model, corpus,
                                                                             tmp_path):
    """Before: refused only once the whole decode was done (the link's target directory does not exist)."""
    link = tmp_path / "out.txt"
    link.symlink_to(tmp_path / "no_such_dir" / "out.txt")
    refused_early(our_worker.run("-model", toy_model, "-src", corpus["src"], "-output", link), "-output",
                  "does not exist")
    assert link.is_symlink() and not link.exists()
