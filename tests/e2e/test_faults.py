"""Faults in the middle of a run (a signal, a full disk, a closed pipe, a directory removed, a FIFO): one line on
stderr, a non-zero exit status, and every earlier file as it was (``onmt_optimal.atomic``, ``failures``).

Each case runs the real ``onmt_translate`` on the toy model: in its own process where the process is what is
tested (a signal, a file-size limit, its standard output), else in the shared ``our_worker``. A full disk is a
file-size limit (``RLIMIT_FSIZE``, with SIGXFSZ ignored, so that writes past it fail with EFBIG as on a full
disk), which needs no privilege; the same runs were checked by hand on a 64 KB tmpfs.
"""
from __future__ import annotations

import errno
import fcntl
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers import toy
from helpers.one_line import one_error_line, partials
from helpers.signals import as_from_a_terminal

ONMT_TRANSLATE = str(Path(sys.executable).parent / "onmt_translate")
ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
ENV.pop("ONMT_OPTIMAL_DISABLE", None)
OURS = ["-length_penalty", "none", "-stopping", "optimal"]
EARLIER, EARLIER_STATS = "earlier translations\n", '{"earlier": "statistics"}\n'


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict:
    """Toy sources of 6, 400 and 5000 lines (the last decodes for seconds on one thread)."""
    d = tmp_path_factory.mktemp("faults")
    out = {}
    for name, n in (("small", 6), ("medium", 400), ("large", 5000)):
        toy.write_corpus(d / name, n, seed=11, max_len=8)
        out[name] = d / f"{name}.src"
    return out


def earlier_files(directory: Path) -> tuple[Path, Path]:
    out, stats = directory / "out.txt", directory / "stats.jsonl"
    out.write_text(EARLIER)
    stats.write_text(EARLIER_STATS)
    return out, stats


class Stderr:
    """A process's stderr read as it comes, in a thread (tqdm's bar rewrites its line with carriage returns)."""

    def __init__(self, proc: subprocess.Popen):
        self.text = ""
        self._thread = threading.Thread(target=self._read, args=(proc.stderr,), daemon=True)
        self._thread.start()

    def _read(self, stream):
        for chunk in iter(lambda: stream.read1(4096), b""):
            self.text += chunk.decode(errors="replace")

    def wait_for(self, pattern: str, proc: subprocess.Popen, timeout: float = 120) -> None:
        deadline = time.time() + timeout
        while not re.search(pattern, self.text):
            assert proc.poll() is None, f"exited before {pattern!r}: {self.text[-3000:]}"
            assert time.time() < deadline, f"no {pattern!r} in time: {self.text[-3000:]}"
            time.sleep(0.02)

    def join(self) -> str:
        self._thread.join(timeout=30)
        return self.text


# ---------------------------------------------------------------- signals
@pytest.mark.parametrize("signum,status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_a_decode_is_one_line_and_loses_nothing(toy_model, corpora, tmp_path, signum, status):
    """Stock: SIGINT printed a 70-line KeyboardInterrupt traceback; SIGTERM killed the process (status -15)."""
    out, stats = earlier_files(tmp_path)
    proc = subprocess.Popen([ONMT_TRANSLATE, "-model", toy_model, "-src", corpora["large"], "-output", out,
                             "-stats_file", stats, "-progress", *OURS], env=ENV, stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, preexec_fn=as_from_a_terminal)
    stderr = Stderr(proc)
    stderr.wait_for(r"\| *[1-9][0-9]*/5000 \[", proc)  # the bar counts translated sentences: the decode is on
    proc.send_signal(signum)
    proc.wait(timeout=120)
    line = one_error_line(proc.returncode, stderr.join(), status)
    assert ("interrupted" if signum == signal.SIGINT else "terminated") in line
    assert out.read_text() == EARLIER and stats.read_text() == EARLIER_STATS
    assert partials(tmp_path) == []


# ---------------------------------------------------------------- a full disk
def _file_size_limit(limit: int):
    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limited


@pytest.mark.parametrize("which,corpus,limit", [("-output", "medium", 2048), ("-stats_file", "small", 512)])
def test_a_full_disk_is_one_line_and_loses_nothing(toy_model, corpora, tmp_path, which, corpus, limit):
    """The output of 400 lines is past 2 KB, the statistics of 6 lines past 512 bytes (their output is not).
    Stock: a traceback, -output cut at the limit (its earlier content gone); with -stats_file the output was
    written whole and the statistics cut."""
    out, stats = earlier_files(tmp_path)
    proc = subprocess.run([ONMT_TRANSLATE, "-model", toy_model, "-src", corpora[corpus], "-output", out,
                           "-stats_file", stats, *OURS], env=ENV, capture_output=True, text=True,
                          preexec_fn=_file_size_limit(limit))
    line = one_error_line(proc.returncode, proc.stderr, 1)
    assert line.startswith(f"onmt_translate: error: {which} ") and "File too large" in line, line
    assert out.read_text() == EARLIER and stats.read_text() == EARLIER_STATS
    assert partials(tmp_path) == []


# ---------------------------------------------------------------- standard output and pipes
def _small_pipe() -> tuple[int, int]:
    """A pipe that holds one page, so that a writer meets a closed reader quickly."""
    r, w = os.pipe()
    fcntl.fcntl(w, getattr(fcntl, "F_SETPIPE_SZ", 1031), 4096)
    return r, w


def test_output_to_a_pipe_streams_every_line(toy_model, corpora, tmp_path):
    """Stock's codecs.open(path, "w+") cannot open a pipe: -output /dev/stdout | ... was a traceback."""
    proc = subprocess.run([ONMT_TRANSLATE, "-model", toy_model, "-src", corpora["medium"], "-output", "/dev/stdout"],
                          env=ENV, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 401 and lines[-1].startswith("Time w/o")  # no flag of ours: stock's closing print stays


@pytest.mark.parametrize("command,output,ours", [
    ("onmt_translate", "/dev/stdout", True), ("onmt_translate", "-", True),
    ("python -m onmt_optimal translate", "/dev/stdout", True), ("onmt_translate", "/dev/stdout", False)])
def test_standard_output_holds_one_line_per_input(toy_model, tmp_path, command, output, ours):
    """``onmt_translate ... -output /dev/stdout | tee out.txt`` (docs/usage.md, Streams) gave 4 lines for 3
    inputs: OpenNMT-py's closing ``Time w/o python interpreter load/terminate`` print came after them. With our
    flags it goes to stderr; without them it stays where stock prints it (docs/differences.md)."""
    toy.write_corpus(tmp_path / "three", 3, seed=3, max_len=6)
    exe = ONMT_TRANSLATE if command == "onmt_translate" else f"{sys.executable} -m onmt_optimal translate"
    flags = [*OURS, "-stats_file", str(tmp_path / "s.jsonl")] if ours else []
    line = " ".join([exe, "-model", str(toy_model), "-src", str(tmp_path / "three.src"), "-output", output, *flags])
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", f"{line} | tee {tmp_path / 'out.txt'}"], env=ENV,
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert (tmp_path / "out.txt").read_text().splitlines() == lines
    if ours:
        assert len(lines) == 3 and not any(x.startswith("Time w/o") for x in lines), lines
        assert sum(x.startswith("Time w/o") for x in proc.stderr.splitlines()) == 1, proc.stderr[-3000:]
        assert len((tmp_path / "s.jsonl").read_text().splitlines()) == 3
    else:
        assert len(lines) == 4 and lines[-1].startswith("Time w/o"), lines


def test_a_reader_that_closes_the_pipe_is_one_line(toy_model, corpora, tmp_path):
    """``onmt_translate ... -output /dev/stdout | head -1``; the -stats_file is not written either."""
    stats = tmp_path / "stats.jsonl"
    stats.write_text(EARLIER_STATS)
    r, w = _small_pipe()
    proc = subprocess.Popen([ONMT_TRANSLATE, "-model", toy_model, "-src", corpora["large"], "-output", "/dev/stdout",
                             "-stats_file", stats, *OURS], env=ENV, stdout=w, stderr=subprocess.PIPE)
    os.close(w)
    stderr = Stderr(proc)
    with os.fdopen(r, "rb") as reader:
        first = reader.readline()
    proc.wait(timeout=120)
    assert first.strip()
    line = one_error_line(proc.returncode, stderr.join(), 1)
    assert "-output /dev/stdout" in line and "closed the pipe" in line
    assert stats.read_text() == EARLIER_STATS and partials(tmp_path) == []


# ---------------------------------------------------------------- a FIFO as -src: the run waits on it
def _open_for_writing(fifo: Path, runner: threading.Thread, timeout: float = 120) -> int:
    """The FIFO's write end, once the run has opened its read end (after the model loaded)."""
    deadline = time.time() + timeout
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as err:
            assert err.errno == errno.ENXIO, err  # no reader yet
            assert runner.is_alive(), "the run ended before it read -src"
            assert time.time() < deadline, "the run never opened -src"
            time.sleep(0.05)
            continue
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return fd


def _run_in_thread(worker, *args):
    done = []
    runner = threading.Thread(target=lambda: done.append(worker.run(*args)), daemon=True)
    runner.start()
    return runner, done


def test_a_fifo_source_with_progress_is_read_once(toy_model, corpora, tmp_path):
    """Stock -progress counted the lines of -src too: a second read of a FIFO, which waits for a writer that never
    comes (the run hung)."""
    fifo = tmp_path / "src.fifo"
    os.mkfifo(fifo)
    out = tmp_path / "out.txt"
    proc = subprocess.Popen([ONMT_TRANSLATE, "-model", toy_model, "-src", fifo, "-output", out, "-progress"],
                            env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = Stderr(proc)
    with open(fifo, "wb") as f:  # waits for the run to open it
        f.write(corpora["small"].read_bytes())
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail("the run waited for a second writer of the FIFO")
    assert proc.returncode == 0, stderr.join()[-3000:]
    assert len(out.read_text().splitlines()) == 6


@pytest.mark.parametrize("removed", ["-stats_file", "-output"])
def test_a_directory_removed_during_the_run_is_one_line_and_the_other_file_is_kept(our_worker, toy_model, corpora,
                                                                                  tmp_path, removed):
    """The run waits on a FIFO -src while the directory of one of its files is removed (after validation and the
    model load). Stock wrote -output, then failed on -stats_file with a traceback: not both or neither."""
    fifo = tmp_path / "src.fifo"
    os.mkfifo(fifo)
    out_dir, stats_dir = tmp_path / "out_dir", tmp_path / "stats_dir"
    out_dir.mkdir()
    stats_dir.mkdir()
    out, _ = earlier_files(out_dir)
    _, stats = earlier_files(stats_dir)
    runner, done = _run_in_thread(our_worker, "-model", toy_model, "-src", fifo, "-output", out, "-stats_file", stats,
                                  *OURS)
    fd = _open_for_writing(fifo, runner)
    shutil.rmtree(stats_dir if removed == "-stats_file" else out_dir)
    os.write(fd, corpora["small"].read_bytes())
    os.close(fd)
    runner.join(timeout=120)
    line = one_error_line(done[0].returncode, done[0].stderr, 1)
    assert f"{removed} " in line, line
    kept = out if removed == "-stats_file" else stats
    assert kept.read_text() == (EARLIER if kept is out else EARLIER_STATS)
    assert partials(out_dir, stats_dir) == []
