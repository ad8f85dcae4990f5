"""A served model's statistics file (``serving``): records appended per request under its id, whole or not
at all, never interleaved, never written over earlier ones."""
from __future__ import annotations

import json
import os
import resource
import signal
import threading

import pytest

from onmt_optimal import atomic, file_checks
from onmt_optimal import serving as served
from onmt_optimal.options import OptionError
from onmt_optimal.search.record import Record
from onmt_optimal.search.stopping import StopReason


def record(steps: int) -> Record:
    return Record(steps=steps, stop_reason=StopReason.CERTIFICATE, score=1.5, log_prob=-0.5, length=steps - 1,
                  target_length=3.0, src_length=2, completed=2)


def test_a_request_keeps_the_clients_id_or_gets_a_fresh_one():
    assert served.Request("client-7").id == "client-7"
    for bad in (None, "", "x" * (served.MAX_ID + 1), "a\nb", "é"):
        fresh = served.Request(bad).id
        assert len(fresh) == 32 and int(fresh, 16) >= 0
    assert served.Request().id != served.Request().id


def test_a_requests_records_are_appended_in_input_order_under_its_id(tmp_path):
    path = tmp_path / "stats.jsonl"
    path.write_text('{"earlier": true}\n')
    log = served.StatsLog(served.StatsFile.open(str(path)), model=7)
    log.append({("text", 1): record(5), ("text", 0): record(4)}, request="r1")
    request = served.Request("r2")
    token = served.CURRENT.set(request)
    try:
        log.append({("text", 0): record(6)})
    finally:
        served.CURRENT.reset(token)
    assert request.used
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0] == {"earlier": True}
    assert [(r["request"], r["model"], r["line"], r["steps"]) for r in lines[1:]] == [
        ("r1", 7, 1, 4), ("r1", 7, 2, 5), ("r2", 7, 1, 6)]
    assert lines[1]["stop_reason"] == "certificate" and lines[1]["target_length"] == 3.0


def test_concurrent_appends_never_interleave(tmp_path):
    path = tmp_path / "stats.jsonl"
    block = 20

    def writer(n):  # each writer a handle of its own, as two processes sharing the file would have
        handle = served.StatsFile.open(str(path))
        for i in range(25):
            handle.append("".join(json.dumps({"writer": n, "i": i, "j": j}) + "\n" for j in range(block)))
        handle.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(records) == 6 * 25 * block
    for start in range(0, len(records), block):
        chunk = records[start:start + block]
        assert {(r["writer"], r["i"]) for r in chunk} == {(chunk[0]["writer"], chunk[0]["i"])}
        assert [r["j"] for r in chunk] == list(range(block))


def test_a_record_cut_short_by_a_killed_writer_is_left_and_the_next_starts_a_line(tmp_path):
    path = tmp_path / "stats.jsonl"
    path.write_text('{"whole": 1}\n{"cut sh')
    handle = served.StatsFile.open(str(path))
    handle.append('{"next": 2}\n')
    handle.close()
    assert path.read_text() == '{"whole": 1}\n{"cut sh\n{"next": 2}\n'


def test_a_write_that_fails_midway_leaves_the_file_as_it_was(tmp_path):
    """A file-size limit (RLIMIT_FSIZE) a few bytes past the end: the first ``write`` is cut short there and the
    next fails (EFBIG); what was written is cut off again."""
    path = tmp_path / "stats.jsonl"
    path.write_text('{"earlier": 1}\n')
    before = path.read_bytes()
    handle = served.StatsFile.open(str(path))
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) + 10, hard))
    try:
        with pytest.raises(atomic.OutputError) as failed:
            handle.append('{"this request": "' + "x" * 100 + '"}\n')
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
        handle.close()
    assert path.read_bytes() == before
    assert str(failed.value).startswith(f"-stats_file {path}: cannot append to it (")
    assert "earlier records were kept" in str(failed.value)


def test_an_unappendable_stats_file_is_refused(tmp_path):
    with pytest.raises(OptionError, match="is a directory"):
        file_checks.check_appended("-stats_file", str(tmp_path))
    with pytest.raises(OptionError, match="does not exist"):
        file_checks.check_appended("-stats_file", str(tmp_path / "missing" / "stats.jsonl"))
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked.jsonl"
        locked.write_text("")
        locked.chmod(0o444)
        with pytest.raises(OptionError, match="is not writable"):
            file_checks.check_appended("-stats_file", str(locked))
    file_checks.check_appended("-stats_file", str(tmp_path / "new.jsonl"))  # a new file in a writable directory


# ------------------------------------------------------------------ a server's statistics file, opened once
@pytest.mark.parametrize("make, says", [
    (lambda d: (os.symlink(d / "elsewhere.jsonl", d / "stats.jsonl"), d / "stats.jsonl")[1], "is a symbolic link"),
    (lambda d: ((d / "x").write_text(""), os.symlink(d / "x", d / "stats.jsonl"), d / "stats.jsonl")[2],
     "is a symbolic link"),
    (lambda d: ((d / "x").write_text(""), os.link(d / "x", d / "stats.jsonl"), d / "stats.jsonl")[2],
     "has 1 other hard link"),
    (lambda d: (os.mkfifo(d / "stats.jsonl"), d / "stats.jsonl")[1], "is not a regular file"),
    (lambda d: d, "(Is a directory)"),
], ids=["dangling-symlink", "symlink", "hard-link", "fifo", "directory"])
def test_a_stats_file_that_is_a_link_or_no_regular_file_is_refused_at_start_up(tmp_path, make, says):
    path = make(tmp_path)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(OptionError) as refused:
        served.StatsFile.open(str(path))
    assert says in str(refused.value) and len(str(refused.value).splitlines()) == 1
    assert sorted(os.listdir(tmp_path)) == before  # nothing created (not the dangling link's target)


@pytest.mark.parametrize("swap", ["symlink", "hard link", "fifo", "moved"])
def test_a_file_swapped_in_after_start_up_is_not_followed(tmp_path, swap):
    path, victim = tmp_path / "stats.jsonl", tmp_path / "victim.txt"
    path.write_text('{"earlier": 1}\n')
    victim.write_text("a user's file\n")
    log = served.StatsLog(served.StatsFile.open(str(path)), 7)
    os.rename(path, tmp_path / "moved.jsonl")
    if swap == "symlink":
        path.symlink_to(victim)
    elif swap == "hard link":
        os.link(victim, path)
    elif swap == "fifo":
        os.mkfifo(path)
    log.append({("text", 0): record(4)}, request="r1")
    assert victim.read_text() == "a user's file\n"
    lines = (tmp_path / "moved.jsonl").read_text().splitlines()
    assert lines[0] == '{"earlier": 1}' and json.loads(lines[1])["request"] == "r1"
    log.handle.close()


def test_appends_through_the_handle_stay_whole_and_start_a_line_after_a_cut_record(tmp_path):
    path = tmp_path / "stats.jsonl"
    path.write_text('{"whole": 1}\n{"cut sh')
    handle = served.StatsFile.open(str(path))
    handle.append('{"next": 2}\n')
    handle.append('{"next": 3}\n')
    handle.close()
    assert path.read_text() == '{"whole": 1}\n{"cut sh\n{"next": 2}\n{"next": 3}\n'
    devnull = served.StatsFile.open(os.devnull)
    devnull.append('{"x": 1}\n')
    devnull.close()
