"""``eole predict`` with the plugin installed never writes a file it reads, nor two of its files into one: each
such run is refused in one line, exit status 2, before the model loads, with or without the plugin's options,
and the file it would have written keeps its bytes. Stock eole 0.6.4 wrote (``output``, ``dump_beam``,
``stats_file``) or appended its log (``log_file``) onto the source, the ``-config`` YAML, the model's
``config.json`` or weights, whichever the path named, through symbolic and hard links alike.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

OURS = ["-length_penalty", "none", "-stopping", "optimal"]


@pytest.fixture
def model_copy(encoder_decoder, tmp_path) -> Path:
    """A copy of the model, so that a run that would destroy it (a failing test) harms no other test."""
    return Path(shutil.copytree(encoder_decoder, tmp_path / "model"))


def linked(target: Path, how: str, tmp_path: Path) -> Path:
    """``target`` itself, or a new symbolic or hard link to it."""
    if how == "path":
        return target
    link = tmp_path / f"link-{how}-{target.name}"
    if how == "symlink":
        link.symlink_to(target)
    else:
        os.link(target, link)
    return link


def refused(done, *mentions) -> str:
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("eole predict: error: "), done.stderr
    for mention in mentions:
        assert mention in done.stderr, done.stderr
    return done.stderr


def snapshot(directory: Path) -> dict:
    return {p.relative_to(directory): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


HOW = ["path", "symlink", "hard link"]
WRITTEN = [
    ("-output", []),
    ("-log_file", []),
    ("-dump_beam", []),
    ("-stats_file", OURS),
]


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("flag,extra", WRITTEN, ids=[w for w, _ in WRITTEN])
def test_a_written_file_that_is_the_source_is_refused(ours, encoder_decoder, src, tmp_path, flag, extra, how):
    source = tmp_path / "test.src"
    shutil.copy(src, source)
    before = source.read_bytes()
    target = linked(source, how, tmp_path)
    args = ["-model_path", encoder_decoder, "-src", source, "-output", tmp_path / "out", *extra]
    if flag == "-output":
        args[-1 - len(extra)] = target
    else:
        args += [flag, target]
    refused(ours.predict(*args), f"{flag} {target} is the -src file")
    assert source.read_bytes() == before


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("member", ["config.json", "weights"])
@pytest.mark.parametrize("flag,extra", WRITTEN, ids=[w for w, _ in WRITTEN])
def test_a_written_file_in_the_model_directory_is_refused(ours, model_copy, src, tmp_path, flag, extra, member, how):
    if member == "weights":
        member = next(p.name for p in model_copy.iterdir() if p.suffix in (".safetensors", ".pt", ".bin"))
    before = snapshot(model_copy)
    target = linked(model_copy / member, how, tmp_path)
    outputs = {"-output": tmp_path / "out", flag: target}
    args = ["-model_path", model_copy, "-src", src, *[x for kv in outputs.items() for x in kv], *extra]
    refused(ours.predict(*args), f"{flag} {target} is the file {member} of the -model_path model")
    assert snapshot(model_copy) == before


def test_output_naming_the_model_directory_is_refused(ours, model_copy, src, tmp_path):
    before = snapshot(model_copy)
    refused(ours.predict("-model_path", model_copy, "-src", src, "-output", model_copy), f"-output {model_copy} is the -model_path directory")
    assert snapshot(model_copy) == before


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("flag", ["-output", "-log_file"])
def test_a_written_file_that_is_the_config_is_refused(ours, encoder_decoder, src, tmp_path, flag, how):
    config = tmp_path / "predict.yaml"
    config.write_text(f"model_path: {encoder_decoder}\nsrc: {src}\noutput: {tmp_path / 'out'}\n")
    before = config.read_bytes()
    target = linked(config, how, tmp_path)
    refused(ours.predict("-config", config, flag, target), f"{flag} {target} is the -config file")
    assert config.read_bytes() == before


def test_output_that_is_the_config_named_in_the_config_is_refused(ours, encoder_decoder, src, tmp_path):
    config = tmp_path / "predict.yaml"
    config.write_text(f"model_path: {encoder_decoder}\nsrc: {src}\noutput: {config}\n")
    before = config.read_bytes()
    refused(ours.predict("-config", config), f"-output {config} is the -config file")
    assert config.read_bytes() == before


@pytest.mark.parametrize("how", HOW)
def test_output_that_is_the_target_is_refused(ours, encoder_decoder, src, tmp_path, how):
    tgt = tmp_path / "test.tgt"
    tgt.write_text("A B\n" * 40)
    before = tgt.read_bytes()
    target = linked(tgt, how, tmp_path)
    refused(ours.predict("-model_path", encoder_decoder, "-src", src, "-tgt", tgt, "-output", target),
            f"-output {target} is the -tgt file")
    assert tgt.read_bytes() == before


def test_a_file_named_by_a_transform_is_refused(ours, encoder_decoder, src, tmp_path):
    model = tmp_path / "subword.model"
    model.write_bytes(b"\x00a sentencepiece model\n")
    config = tmp_path / "predict.yaml"
    config.write_text(f"model_path: {encoder_decoder}\nsrc: {src}\noutput: {model}\n"
                      f"transforms_configs:\n  sentencepiece:\n    src_subword_model: {model}\n")
    refused(ours.predict("-config", config), f"-output {model} is the transforms_configs.sentencepiece."
                                            f"src_subword_model file")
    assert model.read_bytes() == b"\x00a sentencepiece model\n"


PAIRS = [("-output", "-log_file", []), ("-output", "-dump_beam", []), ("-log_file", "-stats_file", OURS),
         ("-dump_beam", "-stats_file", OURS), ("-output", "-stats_file", OURS)]


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("first,second,extra", PAIRS, ids=[f"{a} {b}" for a, b, _ in PAIRS])
def test_two_written_files_that_are_one_are_refused(ours, encoder_decoder, src, tmp_path, first, second, extra,
                                                    how):
    earlier = tmp_path / "earlier.txt"
    earlier.write_text("earlier output\n")
    other = linked(earlier, how, tmp_path)
    outputs = {"-output": tmp_path / "out", first: earlier, second: other}
    args = ["-model_path", encoder_decoder, "-src", src, *[x for kv in outputs.items() for x in kv], *extra]
    refused(ours.predict(*args), "are the same file")
    assert earlier.read_text() == "earlier output\n"


def test_streams_may_be_shared(ours, encoder_decoder, src, tmp_path):
    """/dev/null is written in place: output and log into it is a run like any other."""
    done = ours.predict("-model_path", encoder_decoder, "-src", src, "-output", os.devnull, "-log_file", os.devnull,
                        "-max_length", "3")
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_new_file_beside_the_model_is_written(ours, model_copy, src):
    """Only the model's own files are refused: a new file in its directory is an output like any other."""
    done = ours.predict("-model_path", model_copy, "-src", src, "-output", model_copy / "pred.txt", "-max_length", "3")
    assert done.returncode == 0, done.stderr[-3000:]
    assert len((model_copy / "pred.txt").read_text().splitlines()) == 40
