"""The serving layer ``onmt_server`` and ``eole serve`` share: request ids, the statistics file, the checks at
start-up and on each request, and the stop on a signal. Each toolkit's server module only enters its toolkit.

* Request: each HTTP request is a ``Request`` while it is answered (``answering``; ``current``): its id is the
  client's ``X-Request-Id`` (``HEADER``) when short and printable, else a fresh random one, sent back in that header
  where its records were written (``used``); ``answer_stats`` makes each input's statistics (``FIELD``) of them.
* Statistics: a served translator appends each request's records (``StatsLog``), each carrying the request's id
  and the model's, ``line`` numbering the request's decoded sentences from 1, the other fields
  ``onmt_translate``'s (``search.record.Record``):
  ``{"request": "7f3a...", "model": 7, "line": 1, "steps": 9, "stop_reason": "optimal", ...}``.
  A request's records go in one ``write`` (``O_APPEND``), under a lock per file (``flock`` too, for processes
  sharing it), then synced: concurrent requests never interleave. A failed write (a full disk) is cut back to
  the file's earlier end (whole records only; ``atomic.OutputError``); a record cut short by a killed process
  stays, and the next one starts on a line of its own.
* Files at start-up: a statistics file is opened once (``open_stats``: ``O_NOFOLLOW``; a symbolic link, a file
  with other hard links, a FIFO or a device refused in one line), shared by every model naming it, and appended
  through that handle for the server's life: a file swapped in later (a link, a FIFO) is never followed. Every
  written file is compared by identity (``file_checks.same_file``: links, ``/proc/self/root``) with every file the
  server reads and every other written file (``check_apart``), before any model loads.
* Requests: a value is named by its kind in one line (``kind``); a port the server cannot listen on ends the
  command in one line, status 2, before any model loads (``port_problem``, ``started``), and so does a refused
  option or file (``PROG: error: CONFIG: ...``), never a traceback.
* Signals: SIGTERM and SIGINT (``stop_on_signals``) let the appends in flight finish and take every lock
  (``quiesce``: no record, no log line cut short), then end the process at once, even while a request decodes.
"""
from __future__ import annotations

import contextlib
import contextvars
import errno
import fcntl
import json
import logging
import os
import secrets
import signal
import socket
import stat
import sys
import threading
import time

from onmt_optimal import atomic, failures, file_checks
from onmt_optimal.adapter import lines
from onmt_optimal.errors import Fault, OptionError

#: the HTTP header that carries a request's id, both ways; the longest client id kept
HEADER, MAX_ID = "X-Request-Id", 128
#: the field of each answer that carries its statistics (vLLM's server names its per-choice field alike)
FIELD = "onmt_optimal"
#: the signals that stop a server, and what ``onmt_server`` says
STOPPING = {signal.SIGTERM: "terminated (SIGTERM)", signal.SIGINT: "interrupted (Ctrl-C)"}


class Request:
    """The request being answered: its ``id``, whether its records were written (``used``), its answer's
    statistics where a decode handed them (``stats``), or what they are made of (``answer_stats``): segments per
    input (``segments``), whether each segment was empty (``empty``: answered without a decode, so without a
    record) and the decode's ``records``, in order."""

    def __init__(self, given: str | None = None):
        ok = isinstance(given, str) and 0 < len(given) <= MAX_ID and given.isascii() and given.isprintable()
        self.id = given if ok else secrets.token_hex(16)
        self.used, self.stats, self.segments, self.empty, self.records = False, None, [], [], []

    def answer_stats(self) -> list | None:
        """Per input, its record as the statistics file has it (``search.record.STATS``), None for an input
        answered without a decode, a list for an input split in segments; None when the counts disagree."""
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


#: the request being answered in this context (a server thread's, or an asyncio task's), None outside one
CURRENT: contextvars.ContextVar = contextvars.ContextVar("onmt_optimal_request", default=None)


def current() -> Request:
    """The request being answered, or a new one (a decode outside any request: each call its own id)."""
    request = CURRENT.get()
    return request if request is not None else Request()


@contextlib.contextmanager
def answering(given: str | None):
    """A ``Request`` of the client's id ``given`` (None: a fresh one), ``CURRENT`` while the block runs."""
    request = Request(given)
    token = CURRENT.set(request)
    try:
        yield request
    finally:
        CURRENT.reset(token)


def kind(value) -> str:
    """A JSON value's kind, in words, for a one-line refusal."""
    if value == []:
        return "an empty list"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


class StatsLog:
    """Where a served model's translator appends each request's records: ``path``, the model's id ``model``,
    ``handle`` the file opened at start-up (``StatsFile``; None: the path is opened at each append)."""

    def __init__(self, path: str, model, handle: "StatsFile | None" = None):
        self.path, self.model, self.handle = path, model, handle

    def append(self, stats: dict, request: str | None = None) -> None:
        """The records of one request (``stats``: by ``lines.key``), in input order, under ``request`` (None: the
        current request's id)."""
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
    """A statistics file opened once, at start-up (``open``): ``O_APPEND``, ``O_NOFOLLOW``, read and write where
    the file allows reading (to see whether its last record was cut short)."""

    def __init__(self, fd: int, path: str, flag: str, readable: bool):
        self.fd, self.path, self.flag, self.readable = fd, path, flag, readable
        st = os.fstat(fd)
        self.regular = stat.S_ISREG(st.st_mode)
        self.key = ("inode", st.st_dev, st.st_ino)

    @classmethod
    def open(cls, path: str, flag: str = "-stats_file") -> "StatsFile":
        """``path`` opened for appending (created if need be), or ``options.OptionError`` in one line: a symbolic
        link, a file with other hard links, a FIFO, a device or a directory (``/dev/null`` is taken)."""
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
        """``text`` added at the end of the file, in one write, or nothing added at all."""
        with _lock(self.key):
            _append_fd(self.fd, self.path, text.encode("utf-8"), self.flag, self.regular, self.readable)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


#: the statistics files this process's server opened, by path (``open_stats``)
OPENED: dict = {}


def open_stats(path: str) -> StatsFile:
    """The statistics file at ``path`` as this server opened it: once, when a model first names it (at start-up),
    then shared by every model and clone naming it, by any spelling (one handle per file)."""
    handle = OPENED.get(path)
    if handle is None:
        handle = StatsFile.open(path)
        same = next((h for h in OPENED.values() if h.key == handle.key), None)
        if same is not None:
            handle.close()
            handle = same
        OPENED[path] = handle
    return handle


def stats_log(path: str, model) -> StatsLog:
    """A served model's ``StatsLog``, appending through the handle ``open_stats`` opened."""
    return StatsLog(path, model, open_stats(path))


#: one lock per file (its real path, or a ``StatsFile``'s key), for the threads of this process
_LOCKS: dict = {}
_LOCKS_GUARD = threading.Lock()


def _lock(path) -> threading.Lock:
    key = path if isinstance(path, tuple) else os.path.realpath(path)
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.Lock())


def quiesce(timeout: float = 10.0) -> None:
    """Every append in flight finished and none begun after (the locks taken and kept), and the logging
    handlers' locks too, within ``timeout`` seconds in all."""
    deadline = time.monotonic() + timeout
    if not _LOCKS_GUARD.acquire(timeout=timeout):
        return
    locks = list(_LOCKS.values()) + [getattr(h, "lock", None) for h in logging.getLogger().handlers
                                     + logging.getLogger("onmt").handlers]
    for lock in locks:
        if lock is not None:
            lock.acquire(timeout=max(0.0, deadline - time.monotonic()))


def append(path: str, text: str, flag: str = "-stats_file") -> None:
    """``text`` added at the end of ``path`` (created if need be) in one write, or nothing at all
    (``atomic.OutputError``); the path opened anew at each call."""
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
    """``(fd, readable)``: read and write, or write alone where reading is not permitted."""
    try:
        return os.open(path, os.O_RDWR | flags, 0o666), True
    except PermissionError:
        return os.open(path, os.O_WRONLY | flags, 0o666), False


def _append_fd(fd: int, path: str, data: bytes, flag: str, regular: bool, readable: bool) -> None:
    """``data`` written at the end of ``fd`` under ``flock`` (a regular file), after a newline if its last record
    was cut short, then synced; a failed write cut back."""
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


def check(flag: str, path: str) -> None:
    """``path`` takes appended records (``file_checks.check_appended``), else one line at start-up."""
    file_checks.check_appended(flag, path)


def check_apart(flag: str, path: str, reads=(), writes=(), prefix: str = "") -> None:
    """``path``, written under ``flag``, is none of ``reads`` (``(whose, path)``: files the server reads) nor of
    ``writes`` (files it writes otherwise), by identity; else ``options.OptionError``, one line."""
    for whose, read in reads:
        if file_checks.same_file(path, read):
            raise OptionError(f"{prefix}{flag} {path} is {whose} {read}, which the server reads: writing it would "
                              f"destroy it; name another file")
    for whose, other in writes:
        if file_checks.same_file(path, other):
            raise OptionError(f"{prefix}{flag} {path} and {whose} {other} are the same file: one would write into "
                              f"the other; name two different files")


def port_problem(host, port) -> str | None:
    """Why a server could not listen on ``host``:``port``, in one line, or None: each address ``host`` resolves to
    is bound for a moment, as the server will (``SO_REUSEADDR``, as uvicorn and waitress set it)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        return f"port {port!r} is not a port number (0 to 65535)"
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as err:
        return f"host {host!r} cannot be resolved ({getattr(err, 'strerror', None) or err})"
    for family, kind_, proto, _, address in found:
        try:
            with socket.socket(family, kind_, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(address)
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                return f"port {port} on {host} is in use"
            if err.errno == errno.EAFNOSUPPORT:
                continue
            return f"cannot listen on port {port} of {host} ({_reason(err)})"
    return None


def started(prog: str, host, port, config, start):
    """``start()`` once ``host``:``port`` is free (else one line, status 2, before any model loads); a refused
    option or file, or a failed write, ends the command as ``PROG: error: CONFIG: ...``, never a traceback."""
    problem = port_problem(host, port)
    if problem is not None:
        failures.fail(prog, problem, 2)
    try:
        return start()
    except (Fault, atomic.OutputError) as err:
        failures.fail(prog, f"{config}: {err}", getattr(err, "status", 1))


def stop_on_signals(prog: str | None = None, interrupted: int | None = None, if_ignored: bool = False) -> dict:
    """SIGTERM and SIGINT end the process (from the main thread only) once ``quiesce``d: ``PROG: WHY: stopped
    serving`` said where ``prog`` is given, then by the signal, or with status ``interrupted`` on SIGINT where
    given; a signal ignored when the server started stays so unless ``if_ignored``. Returns the handlers replaced."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {signum: signal.signal(signum, lambda signum, frame: _stop(prog, interrupted, signum))
            for signum in STOPPING if if_ignored or signal.getsignal(signum) is not signal.SIG_IGN}


def _stop(prog: str | None, interrupted: int | None, signum: int) -> None:
    quiesce()
    for stream, line in ((sys.stderr, f"{prog}: {STOPPING[signum]}: stopped serving\n" if prog else ""),
                         (sys.stdout, "")):
        try:
            stream.write(line)
            stream.flush()
        except (OSError, ValueError):
            pass
    if signum == signal.SIGINT and interrupted is not None:
        os._exit(interrupted)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)  # ends as killed by the signal, at once: no exit handler waits on a decode
    os._exit(128 + signum)  # (reached only if the signal is blocked)
