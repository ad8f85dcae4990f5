"""The statistics file of a served model: one JSON record per decoded sentence, appended request by request.

``onmt_translate`` and ``eole predict`` write ``stats_file`` whole, once per run (``lines.write_stats``). A server
decodes many requests with one translator; rewriting the file at each request would keep only the last one. So a
server's translator appends instead (``StatsLog``, which the servers' patches hand to the translator as its
``stats_log``): each request adds its records, in its input order, each carrying the request's id and the model's:

    {"request": "7f3a...", "model": 7, "line": 1, "steps": 9, "stop_reason": "optimal", ...}

``line`` numbers the sentences the model decoded for that request, from 1; the other fields are
``onmt_translate``'s (``search.record.Record``). The request id is the client's ``X-Request-Id`` header when it
sent a short printable one, else a fresh random one; the server answers it in the same header (``Request``,
``CURRENT``: set by the server's patch for the request being answered).

A request's records are appended in one ``write`` to a file opened with ``O_APPEND``, under a lock (a process-wide
one per file, and ``flock`` for processes sharing it), then synced: records of concurrent requests never
interleave. A write that fails midway (a full disk) is cut back to the file's earlier end, so the file holds
whole records only, every earlier one kept; the request then fails with one line (``atomic.OutputError``). A
record cut short by a killed process (SIGKILL, power loss) stays as it is, and the next request's records start
on a line of their own.
"""
from __future__ import annotations

import contextvars
import fcntl
import json
import os
import secrets
import stat
import threading

from onmt_optimal import atomic
from onmt_optimal.adapter import lines

#: the HTTP header that carries a request's id, both ways
HEADER = "X-Request-Id"
#: the longest client id kept (a longer one, or one with other than printable ASCII, is replaced by a fresh id)
MAX_ID = 128


#: the field of each sentence's answer that carries its statistics (as vLLM's server puts them in each choice)
FIELD = "onmt_optimal"


class Request:
    """The request a server is answering: its ``id``, whether its records were written (``used``: the server
    then answers the id in ``HEADER``), and what its answer's statistics (``FIELD``) are made of: the number of
    segments of each input (``segments``, as the server's preprocessing split it), whether each segment was
    empty (``empty``: answered without a decode, so without a record) and the decode's ``records``, in order."""

    def __init__(self, given: str | None = None):
        self.id = given if _acceptable(given) else secrets.token_hex(16)
        self.used = False
        self.segments: list = []
        self.empty: list = []
        self.records: list = []

    def answer_stats(self) -> list | None:
        """Per input, its ``FIELD``: the record of its one decoded segment as the statistics file has it (``line``
        numbering the request's decoded segments from 1; ``search.record.STATS``), None for an input answered
        without a decode, a list of them for an input the preprocessing split; None when the counts disagree (a
        decode that kept no records)."""
        if len(self.records) != self.empty.count(False) or sum(self.segments) != len(self.empty):
            return None
        decoded, per_segment = iter(enumerate(self.records, start=1)), []
        for empty in self.empty:
            line, record = (None, None) if empty else next(decoded)
            per_segment.append(None if empty else json.loads(record.json(line)))
        out, at = [], 0
        for count in self.segments:
            pieces = per_segment[at:at + count]
            out.append(pieces[0] if count == 1 else pieces)
            at += count
        return out


def _acceptable(given) -> bool:
    return isinstance(given, str) and 0 < len(given) <= MAX_ID and given.isascii() and given.isprintable()


#: the request being answered in this context (a server thread's, or an asyncio task's), None outside one
CURRENT: contextvars.ContextVar = contextvars.ContextVar("onmt_optimal_request", default=None)


def current() -> Request:
    """The request being answered, or a new one (a decode outside any request: each call its own id)."""
    request = CURRENT.get()
    return request if request is not None else Request()


class StatsLog:
    """Where a served model's translator appends each request's records (see the module docstring). ``path``:
    the statistics file (resolved by the server's patch); ``model``: the model's id in the server's config."""

    def __init__(self, path: str, model):
        self.path = path
        self.model = model

    def append(self, stats: dict, request: str | None = None) -> None:
        """The records of one request (``stats``: records keyed by ``lines.key``), in input order, under
        ``request`` (None: the current request's id, ``current``)."""
        if not stats:
            return
        if request is None:
            found = current()
            found.used = True
            request = found.id
        text = "".join(json.dumps({"request": request, "model": self.model, **json.loads(stats[k].json(n))},
                                  allow_nan=False) + "\n"
                       for n, k in enumerate(sorted(stats, key=lines.order), start=1))
        append(self.path, text)


#: one lock per file (its real path), for the threads of this process
_LOCKS: dict = {}
_LOCKS_GUARD = threading.Lock()


def _lock(path: str) -> threading.Lock:
    key = os.path.realpath(path)
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.Lock())


def quiesce(timeout: float = 10.0) -> None:
    """Before the process ends on a signal: every append in flight finished and none begun after (the locks
    are taken and kept), within ``timeout`` seconds in all; the logging handlers' locks too, so that no log
    line is cut short."""
    import logging
    import time

    deadline = time.monotonic() + timeout
    if not _LOCKS_GUARD.acquire(timeout=timeout):
        return
    locks = list(_LOCKS.values()) + [getattr(h, "lock", None) for h in logging.getLogger().handlers
                                     + logging.getLogger("onmt").handlers]
    for lock in locks:
        if lock is not None:
            lock.acquire(timeout=max(0.0, deadline - time.monotonic()))


def append(path: str, text: str, flag: str = "-stats_file") -> None:
    """``text`` added at the end of ``path`` (created if need be) in one write, or nothing added at all (see the
    module docstring); a failure raises ``atomic.OutputError``."""
    data = text.encode("utf-8")
    with _lock(path):
        try:  # (O_NONBLOCK: a FIFO put in the file's place since start-up fails at once instead of hanging)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK, 0o666)
        except OSError as err:
            raise atomic.OutputError(f"{flag} {path}: cannot append to it ({_reason(err)}); earlier records "
                                     f"were kept") from None
        try:
            regular = stat.S_ISREG(os.fstat(fd).st_mode)
            if not regular and path != os.devnull:
                raise atomic.OutputError(f"{flag} {path}: cannot append to it (not a regular file any more); "
                                         f"earlier records were kept")
            end = 0
            if regular:
                fcntl.flock(fd, fcntl.LOCK_EX)  # released when fd closes
                end = os.fstat(fd).st_size
                if end and _last_byte(path, end) not in (b"\n", None):
                    data = b"\n" + data  # after a record cut short by a killed writer: a line of its own
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                if regular:
                    os.fsync(fd)
            except OSError as err:
                if regular:
                    os.ftruncate(fd, end)  # the file as it was: whole records only
                raise atomic.OutputError(f"{flag} {path}: cannot append to it ({_reason(err)}); earlier records "
                                         f"were kept, this request's were not written") from None
        finally:
            os.close(fd)


def _last_byte(path: str, size: int) -> bytes | None:
    try:
        with open(path, "rb") as f:
            f.seek(size - 1)
            return f.read(1)
    except OSError:
        return None  # not readable: nothing to tell


def _reason(err: OSError) -> str:
    return err.strerror or type(err).__name__


def check(flag: str, path: str) -> None:
    """``path`` can take appended records (``options.check_appended``: a regular file, or a new one its directory
    takes): refused at start-up in one line (``options.OptionError``) otherwise, before any request comes."""
    from onmt_optimal.options import check_appended

    check_appended(flag, path)
