"""``onmt_optimal.atomic``: a run's output files appear whole or not at all (the module alone; the toolkits'
runs through it are in ``test_faults.py`` and ``tests/eole``)."""
from __future__ import annotations

import os
import stat
import threading

import pytest

from onmt_optimal import atomic


def partials(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(atomic.SUFFIX))


def test_nothing_is_touched_before_commit_and_both_files_appear_together(tmp_path):
    out, stats = tmp_path / "out.txt", tmp_path / "stats.jsonl"
    out.write_text("earlier output\n")
    with atomic.Outputs() as outputs:
        with open(outputs.path("-output", str(out)), "w") as f:
            f.write("new output\n")
        with open(outputs.path("-stats_file", str(stats)), "w") as f:
            f.write("{}\n")
        assert out.read_text() == "earlier output\n" and not stats.exists()
        assert len(partials(tmp_path)) == 2  # beside their targets, named as what they are
        assert all(name.startswith(("out.txt.", "stats.jsonl.")) for name in partials(tmp_path))
        outputs.commit()
    assert out.read_text() == "new output\n" and stats.read_text() == "{}\n"
    assert partials(tmp_path) == []


def test_a_failed_run_removes_its_files_and_keeps_the_earlier_ones(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("earlier output\n")
    with pytest.raises(RuntimeError):
        with atomic.Outputs() as outputs:
            with open(outputs.path("-output", str(out)), "w") as f:
                f.write("half a line")
            raise RuntimeError("the decode failed")
    assert out.read_text() == "earlier output\n" and partials(tmp_path) == []


def test_the_mode_of_an_existing_target_is_kept_and_a_new_one_gets_the_umask(tmp_path):
    old, new = tmp_path / "old.txt", tmp_path / "new.txt"
    old.write_text("x\n")
    old.chmod(0o640)
    mask = os.umask(0o027)
    try:
        with atomic.Outputs() as outputs:
            for flag, target in (("-output", old), ("-stats_file", new)):
                with open(outputs.path(flag, str(target)), "w") as f:
                    f.write("y\n")
            outputs.commit()
    finally:
        os.umask(mask)
    assert stat.S_IMODE(old.stat().st_mode) == 0o640
    assert stat.S_IMODE(new.stat().st_mode) == 0o640  # 0666 less the umask 027


def test_every_file_is_synced_before_any_is_renamed(tmp_path, monkeypatch):
    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (calls.append("replace"), real_replace(a, b))[1])
    with atomic.Outputs() as outputs:
        for flag in ("-output", "-stats_file"):
            with open(outputs.path(flag, str(tmp_path / flag.strip("-"))), "w") as f:
                f.write("z\n")
        outputs.commit()
    renames = [i for i, c in enumerate(calls) if c == "replace"]
    assert len(renames) == 2 and calls[:2] == ["fsync", "fsync"] and min(renames) == 2


def test_a_symbolic_link_stays_and_its_file_gets_the_content(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    with atomic.Outputs() as outputs:
        with open(outputs.path("-output", str(link)), "w") as f:
            f.write("new\n")
        outputs.commit()
    assert link.is_symlink() and real.read_text() == "new\n"


def test_what_is_a_stream(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target in (str(fifo), "/dev/stdout", "-", os.devnull):
        assert atomic.streamed(target), target
    assert not atomic.streamed(str(tmp_path / "file"))
    assert atomic.is_stdout("-") and atomic.is_stdout("/dev/stdout") and not atomic.is_stdout(os.devnull)


def test_a_fifo_is_written_as_it_comes(tmp_path):
    """Stock's codecs.open(path, "w+") cannot open a pipe (not seekable)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    with atomic.Outputs() as outputs:
        with outputs.open("-output", str(fifo)) as f:
            f.write(b"line one\n")
        outputs.commit()
    reader.join(timeout=10)
    assert got == [b"line one\n"] and partials(tmp_path) == []


def test_standard_output_is_written_as_it_comes_through_open(capfd):
    print("printed before", flush=True)
    with atomic.Outputs() as outputs:
        with outputs.open("-output", "/dev/stdout") as f:
            f.write(b"line one\n")
            f.flush()
            assert capfd.readouterr().out == "printed before\nline one\n"
        outputs.commit()


@pytest.mark.parametrize("target", ["-", "/dev/stdout"])
def test_standard_output_gets_a_path_s_content_once_the_run_succeeded(capfd, target):
    with atomic.Outputs() as outputs:
        with open(outputs.path("-output", target), "w") as f:
            f.write("line one\nline two\n")
        assert capfd.readouterr().out == ""
        outputs.commit()
    assert capfd.readouterr().out == "line one\nline two\n"


def test_a_failed_run_writes_nothing_to_standard_output_through_a_path(capfd):
    with pytest.raises(KeyboardInterrupt):
        with atomic.Outputs() as outputs:
            with open(outputs.path("-output", "-"), "w") as f:
                f.write("half")
            raise KeyboardInterrupt
    assert capfd.readouterr().out == ""


def test_a_directory_removed_before_the_rename_is_one_error_and_no_target_changes(tmp_path):
    keep, gone = tmp_path / "keep", tmp_path / "gone"
    keep.mkdir()
    gone.mkdir()
    out = keep / "out.txt"
    out.write_text("earlier output\n")
    outputs = atomic.Outputs()
    with open(outputs.path("-stats_file", str(gone / "stats.jsonl")), "w") as f:
        f.write("{}\n")
    for p in gone.iterdir():
        p.unlink()
    gone.rmdir()
    with open(outputs.path("-output", str(out)), "w") as f:
        f.write("new output\n")
    with pytest.raises(atomic.OutputError, match="-stats_file .*stats.jsonl") as err:
        outputs.commit()
    assert "\n" not in str(err.value)
    assert out.read_text() == "earlier output\n" and partials(keep) == []


def test_a_directory_that_cannot_take_a_file_is_one_error(tmp_path):
    with pytest.raises(atomic.OutputError, match="cannot create a file in") as err:
        atomic.Outputs().path("-output", str(tmp_path / "no_such_dir" / "out.txt"))
    assert "was not created" in str(err.value)


def test_abort_all_removes_what_no_run_committed(tmp_path):
    outputs = atomic.Outputs()
    with open(outputs.path("-output", str(tmp_path / "out.txt")), "w") as f:
        f.write("x")
    atomic.abort_all()
    assert list(tmp_path.iterdir()) == []


def test_a_write_error_names_the_flag_and_what_was_kept(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("earlier\n")
    outputs = atomic.Outputs()
    outputs.path("-output", str(out))
    err = outputs.error("-output", OSError(28, "No space left on device"))
    assert str(err) == f"-output {out}: write failed (No space left on device); {out} was left as it was"
    assert partials(tmp_path) == []


def test_a_target_with_a_name_near_the_limit_gets_a_temporary_file(tmp_path):
    out = tmp_path / ("x" * 250)
    with atomic.Outputs() as outputs:
        with open(outputs.path("-output", str(out)), "w") as f:
            f.write("ok\n")
        outputs.commit()
    assert out.read_text() == "ok\n"


def test_a_regular_file_under_dev_shm_is_a_file_and_stderr_a_stream(tmp_path):
    assert atomic.streamed("/dev/stderr") and atomic.streamed("/dev/fd/2")
    if os.path.isdir("/dev/shm"):
        path = f"/dev/shm/onmt-optimal-test-{os.getpid()}"
        try:
            with open(path, "w") as f:
                f.write("x")
            assert not atomic.streamed(path)
        finally:
            os.unlink(path)
