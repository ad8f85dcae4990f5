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
interleave. A server opens its statistics file once, at start-up (``StatsFile.open``: ``O_NOFOLLOW``; a symbolic
link, a file with other hard links, a FIFO or a device refused in one line) and appends through that handle for
its whole life (``StatsLog(path, model, handle)``): a file put in its place later (a link to another file, a
FIFO) is never followed. Without a handle ``StatsLog`` opens the path at each append (``append``).

A write that fails midway (a full disk) is cut back to the file's earlier end, so the file holds whole records
only, every earlier one kept; the request then fails with one line (``atomic.OutputError``). A record cut short
by a killed process (SIGKILL, power loss) stays as it is, and the next request's records start on a line of
their own.
"""
from __future__ import annotations

import contextvars
import errno
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
    the statistics file (resolved by the server's patch); ``model``: the model's id in the server's config;
    ``handle``: the file as the server opened it at start-up (``StatsFile``), appended through; None: the path is
    opened at each append."""

    def __init__(self, path: str, model, handle: "StatsFile | None" = None):
        self.path = path
        self.model = model
        self.handle = handle

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
        if self.handle is not None:
            self.handle.append(text)
        else:
            append(self.path, text)


class StatsFile:
    """A statistics file a server opened once, at start-up (``open``), and appends to through that handle until it
    ends: ``O_APPEND`` (every write at the end), ``O_NOFOLLOW`` (a symbolic link is refused, not followed), read
    and write where the file allows reading (to see whether its last record was cut short). A file swapped in its
    place afterwards is not followed: the records go on into the file the server opened."""

    def __init__(self, fd: int, path: str, flag: str, readable: bool):
        self.fd, self.path, self.flag, self.readable = fd, path, flag, readable
        st = os.fstat(fd)
        self.regular = stat.S_ISREG(st.st_mode)
        self.key = ("inode", st.st_dev, st.st_ino)

    @classmethod
    def open(cls, path: str, flag: str = "-stats_file") -> "StatsFile":
        """``path`` opened for appending (created if need be), or ``options.OptionError`` in one line: a symbolic
        link, a file with other hard links (another name for it may be a file the server reads), a FIFO, a device
        or a directory (``/dev/null`` is taken), a file that cannot be opened."""
        from onmt_optimal.options import OptionError

        flags = os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            fd, readable = _open_appending(path, flags)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise OptionError(f"{flag} {path} is a symbolic link: a server appends to the file itself, "
                                  f"which it opens once; name the file") from None
            raise OptionError(f"{flag} {path} cannot be opened for appending ({_reason(err)})") from None
        st = os.fstat(fd)
        problem = None
        if not stat.S_ISREG(st.st_mode) and not (path == os.devnull and stat.S_ISCHR(st.st_mode)):
            problem = "is not a regular file (a FIFO, a socket, a device or a directory): name one"
        elif stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            problem = (f"has {st.st_nlink - 1} other hard link{'s' if st.st_nlink > 2 else ''}: another name of "
                       f"the file could be one the server reads; name a file of its own")
        if problem is not None:
            os.close(fd)
            raise OptionError(f"{flag} {path} {problem}")
        return cls(fd, path, flag, readable)

    def append(self, text: str) -> None:
        """``text`` added at the end of the file, in one write, or nothing added at all (the module docstring)."""
        with _lock(self.key):
            _append_fd(self.fd, self.path, text.encode("utf-8"), self.flag, self.regular, self.readable)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


#: one lock per file (its real path), for the threads of this process
_LOCKS: dict = {}
_LOCKS_GUARD = threading.Lock()


def _lock(path) -> threading.Lock:
    """The lock of a file: ``path`` (its real path) or a ``StatsFile``'s key (its device and inode)."""
    key = path if isinstance(path, tuple) else os.path.realpath(path)
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
    module docstring); a failure raises ``atomic.OutputError``. The path is opened anew at each call: a server
    appends through the handle it opened at start-up instead (``StatsFile``)."""
    data = text.encode("utf-8")
    flags = os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK  # (a FIFO fails at once instead of hanging)
    with _lock(path):
        try:
            fd, readable = _open_appending(path, flags)
        except OSError as err:
            raise atomic.OutputError(f"{flag} {path}: cannot append to it ({_reason(err)}); earlier records "
                                     f"were kept") from None
        try:
            regular = stat.S_ISREG(os.fstat(fd).st_mode)
            if not regular and path != os.devnull:
                raise atomic.OutputError(f"{flag} {path}: cannot append to it (not a regular file any more); "
                                         f"earlier records were kept")
            _append_fd(fd, path, data, flag, regular, readable)
        finally:
            os.close(fd)


def _open_appending(path: str, flags: int) -> tuple[int, bool]:
    """``(fd, readable)``: ``path`` opened with ``flags`` for reading and writing, or for writing alone where
    reading is not permitted (``readable`` False: the last byte cannot be checked)."""
    try:
        return os.open(path, os.O_RDWR | flags, 0o666), True
    except PermissionError:
        return os.open(path, os.O_WRONLY | flags, 0o666), False


def _append_fd(fd: int, path: str, data: bytes, flag: str, regular: bool, readable: bool) -> None:
    """``data`` written at the end of ``fd`` (the file ``path``) under ``flock`` where it is a regular file, after a
    newline if its last record was cut short (``readable``: whether ``fd`` can tell), then synced; a write that
    fails is cut back (module docstring)."""
    end = 0
    if regular:
        fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        if regular:
            end = os.fstat(fd).st_size
            last = None
            if end and readable:
                try:
                    last = os.pread(fd, 1, end - 1)
                except OSError:
                    last = None
            if end and last not in (b"\n", None):
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
        if regular:
            fcntl.flock(fd, fcntl.LOCK_UN)


def _reason(err: OSError) -> str:
    return err.strerror or type(err).__name__


def port_problem(host, port) -> str | None:
    """Why a server could not listen on ``host``:``port``, in one line (``port 5000 on 127.0.0.1 is in use``), or
    None: each address ``host`` resolves to is bound for a moment, as the server will bind it (``SO_REUSEADDR``,
    as uvicorn and waitress set it), and let go. Asked before any model loads: stock loaded every model first,
    then ended in an ``OSError`` traceback."""
    import socket

    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        return f"port {port!r} is not a port number (0 to 65535)"
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as err:
        return f"host {host!r} cannot be resolved ({getattr(err, 'strerror', None) or err})"
    for family, kind, proto, _, address in found:
        try:
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(address)
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                return f"port {port} on {host} is in use"
            if err.errno == errno.EAFNOSUPPORT:
                continue
            return f"cannot listen on port {port} of {host} ({_reason(err)})"
    return None


def check(flag: str, path: str) -> None:
    """``path`` can take appended records (``options.check_appended``: a regular file, or a new one its directory
    takes): refused at start-up in one line (``options.OptionError``) otherwise, before any request comes."""
    from onmt_optimal.options import check_appended

    check_appended(flag, path)
