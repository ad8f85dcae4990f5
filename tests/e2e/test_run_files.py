"""``onmt_translate`` never writes onto a file it reads, nor two of its outputs onto one file, with or without the
plugin's flags: each such run is refused in one line, exit status 2, before the model loads, and every file is
left byte for byte as it was.

Stock OpenNMT-py 3.5.1 did all of these with exit status 0: ``-output`` naming the model replaced the checkpoint
with the translations, ``-output`` naming the ``-config`` or ``-tgt`` file replaced it, ``-log_file`` naming
``-src`` appended the log to the source (whose lines were then translated), ``-save_config`` naming the model or
the config replaced it with the options. Links count: a symbolic or a hard link to a file is that file. Files are
compared by identity (device and inode), not by name: ``-output /proc/self/root/<the SentencePiece model>``
overwrote the model (exit status 0) while the checks compared names.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from helpers import toy

OURS = ["-length_penalty", "none", "-stopping", "optimal"]


@pytest.fixture
def translate(our_worker):
    return our_worker.run


@pytest.fixture
def files(toy_model, tmp_path) -> dict[str, Path]:
    """A run's files, each its own copy (a refusal that did not happen must not damage the session's model)."""
    toy.write_corpus(tmp_path / "test", 4, seed=9, max_len=6)
    paths = {"model": tmp_path / "model.pt", "model2": tmp_path / "model2.pt", "src": tmp_path / "test.src",
             "tgt": tmp_path / "test.tgt", "config": tmp_path / "run.yaml", "subword": tmp_path / "sp.model",
             "phrases": tmp_path / "phrases.txt", "output": tmp_path / "out.txt"}
    shutil.copyfile(toy_model, paths["model"])
    shutil.copyfile(toy_model, paths["model2"])
    paths["config"].write_text(f"model: {paths['model']}\nsrc: {paths['src']}\nbeam_size: 3\n")
    paths["subword"].write_bytes(b"a sentencepiece model\n")
    paths["phrases"].write_text("a|||A\n")
    paths["output"].write_text("earlier translations\n")
    return paths


def link(kind: str, target: Path) -> Path:
    """``target`` itself, or a new symbolic or hard link to it."""
    if kind == "path":
        return target
    other = target.with_name(f"{kind}-{target.name}")
    if kind == "symlink":
        other.symlink_to(target)
    else:
        os.link(target, other)
    return other


def snapshot(files: dict[str, Path]) -> dict[str, bytes]:
    return {name: path.read_bytes() for name, path in files.items()}


def assert_refused(proc, files, before, *mentions):
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("onmt_translate: error: "), proc.stderr[-3000:]
    for mention in mentions:
        assert mention in lines[0], lines[0]
    assert snapshot(files) == before  # every file byte for byte as it was
    return lines[0]


@pytest.mark.parametrize("kind", ["path", "symlink", "hard link"])
@pytest.mark.parametrize("written", ["-output", "-log_file", "-dump_beam"])
def test_a_written_file_that_is_the_model_is_refused(translate, files, written, kind):
    before = snapshot(files)
    args = ["-model", files["model"], "-src", files["src"]]
    if written != "-output":
        args += ["-output", files["output"]]
    proc = translate(*args, written, link(kind, files["model"]))
    assert_refused(proc, files, before, written, "-model")


@pytest.mark.parametrize("written,read", [
    ("-output", "tgt"), ("-output", "config"), ("-output", "model2"), ("-output", "subword"), ("-output", "phrases"),
    ("-log_file", "src"), ("-log_file", "config"), ("-stats_file", "model"), ("-stats_file", "src"),
    ("-dump_beam", "src"),
])
def test_a_written_file_that_the_run_reads_is_refused(translate, files, written, read):
    before = snapshot(files)
    args = ["-config", files["config"], "-tgt", files["tgt"], "-model", files["model"], files["model2"],
            "-src_subword_model", files["subword"], "-phrase_table", files["phrases"], *OURS]
    if written != "-output":
        args += ["-output", files["output"]]
    proc = translate(*args, written, link("symlink", files[read]))
    flag = {"model2": "-model", "subword": "-src_subword_model", "phrases": "-phrase_table"}.get(read, f"-{read}")
    assert_refused(proc, files, before, written, flag)


@pytest.mark.parametrize("first,second", [("-output", "-log_file"), ("-stats_file", "-log_file"),
                                          ("-output", "-dump_beam"), ("-stats_file", "-dump_beam")])
def test_two_written_files_that_are_one_are_refused(translate, files, first, second):
    before = snapshot(files)
    args = ["-model", files["model"], "-src", files["src"], *OURS]
    if "-output" not in (first, second):
        args += ["-output", files["output"].with_name("another.txt")]
    proc = translate(*args, first, files["output"], second, link("hard link", files["output"]))
    assert_refused(proc, files, before, first, second, "same file")


@pytest.mark.parametrize("spelling", ["/proc/self/root", "dotdot"])
@pytest.mark.parametrize("written,read", [("-output", "subword"), ("-output", "model"), ("-log_file", "src"),
                                          ("-stats_file", "config")])
def test_a_written_file_named_otherwise_is_still_the_file_read(translate, files, written, read, spelling):
    before = snapshot(files)
    target = files[read]
    named = f"{target.parent}/../{target.parent.name}/{target.name}" if spelling == "dotdot" else f"{spelling}{target}"
    args = ["-config", files["config"], "-model", files["model"], "-src_subword_model", files["subword"], *OURS]
    if written != "-output":
        args += ["-output", files["output"]]
    proc = translate(*args, written, named)
    flag = {"subword": "-src_subword_model"}.get(read, f"-{read}")
    assert_refused(proc, files, before, written, flag)


def test_an_output_named_in_the_config_that_is_the_model_is_refused(translate, files):
    files["config"].write_text(f"model: {files['model']}\nsrc: {files['src']}\noutput: {files['model']}\n")
    before = snapshot(files)
    proc = translate("-config", files["config"])
    assert_refused(proc, files, before, "-output", "-model")


@pytest.mark.parametrize("read", ["model", "config", "src"])
def test_save_config_onto_a_file_the_run_reads_is_refused(translate, files, read):
    before = snapshot(files)
    proc = translate("-config", files["config"], "-save_config", link("symlink", files[read]))
    assert_refused(proc, files, before, "-save_config", f"-{read}")


def test_save_config_elsewhere_is_stock(translate, files, tmp_path):
    """Written by configargparse, which then exits 0 without translating (stock)."""
    saved = tmp_path / "saved.yaml"
    proc = translate("-config", files["config"], "-save_config", saved)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert str(files["src"]) in saved.read_text() and "beam_size: '3'" in saved.read_text()


@pytest.mark.parametrize("line", ["stats_file: 5", "stats_file: true", "output: 7", "log_file: [a, b]",
                                  "stats_fil: 5"])
def test_a_yaml_path_that_is_not_a_string_is_refused(translate, files, line):
    """configargparse turned ``stats_file: 5`` into ``-stats_file 5`` (a file named ``5``, ``True`` for true)."""
    files["config"].write_text(f"model: {files['model']}\nsrc: {files['src']}\n{line}\n")
    before = snapshot(files)
    listed = sorted(os.listdir(files["config"].parent))
    proc = translate("-config", files["config"], "-output", files["output"], *OURS)
    assert_refused(proc, files, before, "must be a file name (a string), got")
    assert sorted(os.listdir(files["config"].parent)) == listed
