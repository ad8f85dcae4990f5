"""The serving layer ``onmt_server`` and ``eole serve`` share: request ids, the statistics file, the checks at
start-up and on each request, the stop on a signal. Why each check, and what it refuses: docs/serving.md."""
from __future__ import annotations

import contextlib
import contextvars
import errno
import fcntl
import itertools
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

from onmt_optimal import atomic, failures
from onmt_optimal.adapter import lines
from onmt_optimal.errors import Fault, OptionError

#: the HTTP header that carries a request's id, both ways; the longest client id kept
HEADER, MAX_ID = "X-Request-Id", 128
#: the field of each answer that carries its statistics (vLLM's server names its per-choice field alike)
FIELD = "onmt_optimal"
#: the signals that stop a server, and what ``onmt_server`` says
STOPPING = {signal.SIGTERM: "terminated (SIGTERM)", signal.SIGINT: "interrupted (Ctrl-C)"}


class Request:
    """The request being answered: its ``id``, ``used``, ``stats`` and their parts (docs/serving.md, "Requests
    and their ids"); ``release``: what sends its answer's start where the server holds it (eole's streams)."""

    def __init__(self, given: str | None = None):
        ok = isinstance(given, str) and 0 < len(given) <= MAX_ID and given.isascii() and given.isprintable()
        self.id = given if ok else secrets.token_hex(16)
        self.used, self.stats, self.segments, self.empty, self.records = False, None, [], [], []
        self.release = None

    def answer_stats(self) -> list | None:
        """Per input, its record as the statistics file has it (None: no decode; a list: segments), or None."""
        if len(self.records) != self.empty.count(False) or sum(self.segments) != len(self.empty):
            return None
        decoded = iter(json.loads(record.json(n)) for n, record in enumerate(self.records, start=1))
        flat = [None if empty else next(decoded) for empty in self.empty]
        return [flat[end - count] if count == 1 else flat[end - count:end]
                for count, end in zip(self.segments, itertools.accumulate(self.segments))]


#: the request being answered in this context (a server thread's, or an asyncio task's), None outside one
CURRENT: contextvars.ContextVar = contextvars.ContextVar("onmt_optimal_request", default=None)


@contextlib.contextmanager
def answering(given: str | None):
    """A ``Request`` of the client's id ``given`` (None: a fresh one), ``CURRENT`` while the block runs."""
    token = CURRENT.set(Request(given))
    try:
        yield CURRENT.get()
    finally:
        CURRENT.reset(token)


def kind(value) -> str:
    """A JSON value's kind, in words, for a one-line refusal."""
    if value == []:
        return "an empty list"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


#: the sizes a client may lower but not raise (``size_problem``; docs/serving.md, "Sizes a client may ask for")
SIZES = ("beam_size", "n_best", "max_length", "max_length_ratio", "batch_size")


def size_problem(asked: dict, model, where: str, defaults: dict) -> str | None:
    """Why the sizes ``asked`` are refused, in one line, or None: each at most ``model``'s or the ``defaults``' (a
    ``max_length_ratio`` of 0 or less caps nothing), a batch within either (``_batch_within``)."""
    said = f": a client may lower a size, not raise it; the operator sets the limit in {where}"
    model = {name: getattr(model, name, None) for name in (*SIZES, "batch_type")}
    for name in SIZES[:-1]:
        value, limit, default = asked.get(name), model[name], defaults.get(name)
        if value is None or limit is None:
            continue
        default = limit if default is None else default
        work = [float("inf") if name == "max_length_ratio" and not v > 0 else v for v in (value, limit, default)]
        if work[0] > max(work[1:]):
            uncapped = " (no ratio cap)" if work[0] == float("inf") else ""
            also = f" and the default {default}" if work[2] > work[1] else ""
            return f"{name} {value}{uncapped} is more than the model's {limit}{also}{said}"
    if asked.get("batch_size") is not None and not (_batch_within(asked, model) or _batch_within(asked, defaults)):
        batch = [f"{s.get('batch_size')} {s.get('batch_type') or 'sents'}" for s in (asked, model, defaults)]
        return f"batch_size {batch[0]} is more than the model's {batch[1]} and the default {batch[2]}{said}"
    return None


def _batch_within(asked: dict, limit: dict) -> bool:
    """Is the batch ``asked`` within ``limit``'s (none: yes): N tokens hold at most N sentences, not the reverse."""
    if limit.get("batch_size") is None:
        return True
    kinds = (asked.get("batch_type") or "sents", limit.get("batch_type") or "sents")
    return kinds != ("sents", "tokens") and asked["batch_size"] <= limit["batch_size"]


class StatsLog:
    """Where a served model appends each request's records: its statistics file (``handle``) and id (``model``)."""

    def __init__(self, handle: "StatsFile", model):
        self.handle, self.model = handle, model

    def append(self, stats: dict, request: str | None = None) -> None:
        """The records of one request (``stats``: by ``lines.key``), in input order, under ``request`` (None: the
        current request's id, which is then ``used``)."""
        if not stats:
            return
        if request is None:
            found = CURRENT.get() or Request()
            found.used, request = True, found.id
        self.handle.append("".join(
            json.dumps({"request": request, "model": self.model, **json.loads(stats[k].json(n))}, allow_nan=False)
            + "\n" for n, k in enumerate(sorted(stats, key=lines.order), start=1)))


class StatsFile:
    """A statistics file opened once, appended whole records at a time (docs/serving.md, "The statistics file")."""

    def __init__(self, fd: int, readable: bool, path: str, flag: str):
        self.fd, self.readable, self.path, self.flag = fd, readable, path, flag
        st = os.fstat(fd)
        self.regular, self.key = stat.S_ISREG(st.st_mode), ("inode", st.st_dev, st.st_ino)

    @classmethod
    def open(cls, path: str, flag: str = "-stats_file") -> "StatsFile":
        """``path`` opened to append (created if need be), no link followed; else ``OptionError``, one line."""
        flags = os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            try:  # read and write (to see whether the last record was cut short), or write alone
                fd, readable = os.open(path, os.O_RDWR | flags, 0o666), True
            except PermissionError:
                fd, readable = os.open(path, os.O_WRONLY | flags, 0o666), False
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise OptionError(f"{flag} {path} is a symbolic link: a server appends to the file itself, "
                                  f"which it opens once; name the file") from None
            raise OptionError(f"{flag} {path} cannot be opened for appending ({_reason(err)})") from None
        st, problem = os.fstat(fd), None
        if not stat.S_ISREG(st.st_mode) and not (path == os.devnull and stat.S_ISCHR(st.st_mode)):
            problem = "is not a regular file (a FIFO, a socket, a device or a directory): name one"
        elif stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            problem = (f"has {st.st_nlink - 1} other hard link{'s' if st.st_nlink > 2 else ''}: another name of "
                       f"the file could be one the server reads; name a file of its own")
        if problem is not None:
            os.close(fd)
            raise OptionError(f"{flag} {path} {problem}")
        return cls(fd, readable, path, flag)

    def append(self, text: str) -> None:
        """``text`` added at the end of the file under ``flock``, on a line of its own, in one write, synced; or,
        the write failed, nothing added at all (``atomic.OutputError``). Nothing is written to ``/dev/null``."""
        if not self.regular:
            return
        data = text.encode("utf-8")
        with _LOCKS_GUARD:
            lock = _LOCKS.setdefault(self.key, threading.Lock())
        with lock:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            try:
                end = os.fstat(self.fd).st_size
                if end and self.readable:
                    with contextlib.suppress(OSError):
                        if os.pread(self.fd, 1, end - 1) != b"\n":
                            data = b"\n" + data  # after a record cut short by a killed writer
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(self.fd, view):]
                    os.fsync(self.fd)
                except OSError as err:
                    os.ftruncate(self.fd, end)  # the file as it was: whole records only
                    raise atomic.OutputError(f"{self.flag} {self.path}: cannot append to it ({_reason(err)}); "
                                             f"earlier records were kept, this request's were not written") from None
            finally:
                fcntl.flock(self.fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


#: the statistics files this process's server opened, by path (``open_stats``)
OPENED: dict = {}


def open_stats(path: str) -> StatsFile:
    """The statistics file at ``path``, opened once and shared by every model naming it (one handle per file)."""
    if path not in OPENED:
        handle = StatsFile.open(path)
        same = next((h for h in OPENED.values() if h.key == handle.key), None)
        if same is not None:
            handle.close()
        OPENED[path] = same or handle
    return OPENED[path]


#: one lock per file (a ``StatsFile``'s key), for the threads of this process
_LOCKS: dict = {}
_LOCKS_GUARD = threading.Lock()


def quiesce(timeout: float = 10.0) -> None:
    """Appends in flight and log lines finished, none begun after (the locks kept), within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    if not _LOCKS_GUARD.acquire(timeout=timeout):
        return
    for lock in list(_LOCKS.values()) + [getattr(h, "lock", None) for h in logging.getLogger().handlers
                                         + logging.getLogger("onmt").handlers]:
        if lock is not None:
            lock.acquire(timeout=max(0.0, deadline - time.monotonic()))


def _reason(err: OSError) -> str:
    return err.strerror or type(err).__name__


def port_problem(host, port) -> str | None:
    """Why a server could not listen on ``host``:``port``, in one line, or None (each address bound a moment)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        return f"port {port!r} is not a port number (0 to 65535)"
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as err:
        return f"host {host!r} cannot be resolved ({getattr(err, 'strerror', None) or err})"
    for family, kind_, proto, _, address in found:
        try:
            with socket.socket(family, kind_, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (as uvicorn and waitress)
                probe.bind(address)
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                return f"port {port} on {host} is in use"
            if err.errno != errno.EAFNOSUPPORT:
                return f"cannot listen on port {port} of {host} ({_reason(err)})"
    return None


def started(prog: str, host, port, config, start):
    """``start()`` once ``host``:``port`` is free; else, or on a refused option or file, one line and the end."""
    problem = port_problem(host, port)
    if problem is not None:
        failures.fail(prog, problem, 2)
    try:
        return start()
    except (Fault, atomic.OutputError) as err:
        failures.fail(prog, f"{config}: {err}", getattr(err, "status", 1))


def stop_on_signals(prog: str | None = None, interrupted: int | None = None, if_ignored: bool = False) -> dict:
    """SIGTERM and SIGINT end the process once ``quiesce``d (docs/serving.md); returns the handlers replaced."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {signum: signal.signal(signum, lambda signum, frame: _stop(prog, interrupted, signum))
            for signum in STOPPING if if_ignored or signal.getsignal(signum) is not signal.SIG_IGN}


def _stop(prog: str | None, interrupted: int | None, signum: int) -> None:
    quiesce()
    for stream, line in ((sys.stderr, f"{prog}: {STOPPING[signum]}: stopped serving\n" if prog else ""),
                         (sys.stdout, "")):
        with contextlib.suppress(OSError, ValueError):
            stream.write(line)
            stream.flush()
    if signum == signal.SIGINT and interrupted is not None:
        os._exit(interrupted)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)  # ends as killed by the signal, at once: no exit handler waits on a decode
    os._exit(128 + signum)  # (reached only if the signal is blocked)
