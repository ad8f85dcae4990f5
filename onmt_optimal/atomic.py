"""Output files that appear whole or not at all: a run's outputs are written beside their targets and renamed into
place together, once every one of them is complete.

``Outputs`` is one run's set of output files (``-output``, ``-stats_file``). A writer asks for where to write a
target's content, either as a path (``path``: the toolkit opens it itself, eole's ``codecs.open(path, "w+",
"utf-8")``) or as an open binary file (``open``: for writers that stream, OpenNMT-py's translator and the Ray
driver); ``commit()`` makes every target hold what was written; ``abort()`` (or leaving ``with Outputs() as
outputs:`` by an exception) removes what was written and leaves every target as it was.

Three kinds of target:

* a file (an existing regular file, or none yet): written to a temporary file in the target's directory (the
  directory of the file a symbolic link points to), named ``<name>.<random>.partial`` so that a user who sees one
  knows what it is (``tail -f`` follows a run's output there). ``commit`` flushes every temporary file to the
  disk (``fsync``), gives each the mode bits (and, where allowed, the owner and group) of the file it replaces,
  then renames each onto its target and syncs the directory. A failed or interrupted run removes them; a killed
  one (SIGKILL, power loss) leaves one behind and every target as it was. The rename gives the target a new
  inode: another hard link to the old file keeps the old content;
* standard output (``-``, ``/dev/stdout``, ``/dev/fd/1``): ``open`` gives a duplicate of file descriptor 1, so lines
  appear as they are written and at the right place when the shell sent standard output to a file (reopening
  ``/dev/stdout`` would truncate that file and write over it from its start, and fails on a pipe);
* any other stream (a FIFO, a socket, a device such as ``/dev/null``, ``/dev/fd/N``, ``/dev/stderr``, anything
  under ``/proc``): ``open`` opens it for writing only (no seek: a pipe cannot), in place.

For a stream or standard output, ``path`` hands a temporary file instead, whose content ``commit`` copies there
(eole writes its whole output at the end anyway; its ``"w+"`` cannot open a pipe).

Invariant: between ``path``/``open`` and ``commit``/``abort`` no target file is touched (streams get what is
written to them); after a failed ``commit``, the targets renamed before the failure hold the new content and the
others the old (renames come after every temporary file is complete and synced, so that only a rename failing,
e.g. the directory removed mid-run, can split a run's files). Every failure is an ``OutputError``: one line naming
the flag, the file and what was kept. Outputs not committed are also removed at interpreter exit (``atexit``) and
by ``abort_all`` (the command-line wrappers call it once a command ends by an exception).
"""
from __future__ import annotations

import atexit
import errno
import os
import secrets
import stat
import sys
import tempfile

#: the target that means standard output
STDOUT = "-"
#: other names of standard output
STDOUT_PATHS = ("/dev/stdout", "/dev/fd/1", "/proc/self/fd/1")
#: what a temporary file's name ends with
SUFFIX = ".partial"

#: every ``Outputs`` holding files not yet committed or removed
_pending: set = set()
#: how many ``Outputs`` this process committed (``failures.run`` tells a run stopped after its outputs were in
#: place from one stopped before: ``commits``)
_commits = 0


def commits() -> int:
    """How many sets of outputs this process has committed so far."""
    return _commits


class OutputError(RuntimeError):
    """An output could not be written; the message is one line: the flag, the file, the reason, what was kept."""


def is_stdout(target: str) -> bool:
    """Whether ``target`` names standard output (``-``, ``/dev/stdout``, ``/dev/fd/1``)."""
    return target == STDOUT or os.path.abspath(target) in STDOUT_PATHS


def streamed(target: str) -> bool:
    """Whether ``target`` is a stream, written as it comes rather than renamed into place (see the module
    docstring): standard output, another descriptor's name (``/dev/fd/N``, ``/dev/stderr``, ``/proc/...``: a
    stream even when the shell pointed it at a regular file), or an existing file that is not a regular file (a
    FIFO, a socket, a device such as ``/dev/null``). A regular file under ``/dev/shm`` is a file."""
    path = os.path.abspath(target)
    if is_stdout(target) or path.startswith(("/dev/fd/", "/proc/")) or path == "/dev/stderr":
        return True
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode)


def _reason(err: OSError) -> str:
    return err.strerror or type(err).__name__


def _create(flag: str, target: str, directory: str, name: str, kept: str) -> str:
    """An empty file ``<name>.<random>.partial`` in ``directory``, mode 0666 less the umask (as a new target
    would get); ``name`` cut to 200 bytes, so that the whole stays within a file system's 255."""
    if len(name.encode()) > 200:
        name = name.encode()[:200].decode(errors="ignore")
    for _ in range(100):
        path = os.path.join(directory, f"{name}.{secrets.token_hex(4)}{SUFFIX}")
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return path
        except FileExistsError:
            continue
        except OSError as err:
            raise OutputError(f"{flag} {target}: cannot create a file in {directory} ({_reason(err)}); "
                              f"{kept}") from None
    raise OutputError(f"{flag} {target}: no free temporary name in {directory}; {kept}")


class _File:
    """One target: the temporary file its content goes to (``temp``), if any, and whether ``commit`` renames it
    (a file) or copies it (a stream written through ``path``)."""

    def __init__(self, flag: str, target: str):
        self.flag, self.target = flag, target
        self.stream = streamed(target)
        self.real = None if self.stream else os.path.realpath(target)
        self.temp = None
        if self.real is not None:
            self.temp = _create(flag, target, os.path.dirname(self.real), os.path.basename(self.real), self.kept())

    def temp_for_stream(self) -> str:
        if self.temp is None:
            name = "stdout" if is_stdout(self.target) else os.path.basename(self.target) or "stream"
            self.temp = _create(self.flag, self.target, tempfile.gettempdir(), name, self.kept())
        return self.temp

    def kept(self) -> str:
        """What the user still has: the earlier file, or nothing written."""
        if self.stream:
            return "nothing more was written"
        return (f"{self.target} was left as it was" if os.path.lexists(self.target)
                else f"{self.target} was not created")

    def sync(self) -> None:
        """The temporary file's content on the disk, with the target's mode bits (and owner, where allowed)."""
        fd = os.open(self.temp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            st = os.stat(self.real)
        except FileNotFoundError:
            return
        os.chmod(self.temp, stat.S_IMODE(st.st_mode))
        try:
            os.chown(self.temp, st.st_uid, st.st_gid)
        except OSError:
            pass  # not ours to give away: the file gets our owner, as a new file would

    def copy(self) -> None:
        """A stream's content (written through ``path``) to the stream."""
        if is_stdout(self.target):
            sys.stdout.flush()
            out, close = sys.stdout.buffer, False
        else:
            out, close = open(self.target, "wb"), True
        try:
            with open(self.temp, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    out.write(chunk)
            out.flush()
        finally:
            if close:
                out.close()

    def remove(self) -> None:
        if self.temp is not None:
            try:
                os.unlink(self.temp)
            except FileNotFoundError:
                pass
            self.temp = None


class Outputs:
    """One run's output files; see the module docstring. ``with Outputs() as outputs:`` removes them unless
    ``commit`` was called, whatever ends the block."""

    def __init__(self):
        self._files: dict[str, _File] = {}

    # ---------------------------------------------------------------- writing
    def _file(self, flag: str, target: str) -> _File:
        if flag not in self._files:
            self._files[flag] = _File(flag, target)
            _pending.add(self)
        return self._files[flag]

    def path(self, flag: str, target: str) -> str:
        """A path to write ``target``'s content to (``flag`` names it in messages): a temporary file, renamed onto
        the target by ``commit`` (or, for a stream, copied to it). The same path for the same flag until
        ``commit`` or ``abort``."""
        f = self._file(flag, target)
        return f.temp if not f.stream else f.temp_for_stream()

    def open(self, flag: str, target: str):
        """A binary file to write ``target``'s content to as it comes: the temporary file of a file target, the
        stream itself otherwise (standard output: a duplicate of its descriptor). Once per flag and run; the
        caller closes it before ``commit``. A failure to open it is an ``OutputError``."""
        f = self._file(flag, target)
        try:
            if not f.stream:
                return open(f.temp, "wb")
            if is_stdout(target):
                sys.stdout.flush()  # what was printed before comes first
                return os.fdopen(os.dup(sys.stdout.fileno()), "wb")
            return open(target, "wb")
        except OSError as err:
            raise self.error(flag, err) from None

    def error(self, flag: str, err: OSError) -> OutputError:
        """The ``OutputError`` for ``err``, raised while writing ``flag``'s file; every file of the run is removed
        (the caller raises it)."""
        f = self._files.get(flag)
        target = f.target if f is not None else "?"
        kept = self._kept()
        self.abort()
        if err.errno == errno.EPIPE:
            return OutputError(f"{flag} {target}: the reader closed the pipe; stopped")
        return OutputError(f"{flag} {target}: write failed ({_reason(err)}); {kept}")

    def _kept(self) -> str:
        files = [f for f in self._files.values() if f.temp is not None]
        if not files:
            return "nothing more was written"
        return "; ".join(f.kept() for f in files)

    # ---------------------------------------------------------------- ending
    def commit(self) -> None:
        """Every file complete on the disk, then renamed onto its target; streams written through ``path`` get
        their content last."""
        files = list(self._files.values())
        for f in files:
            if f.temp is None or f.stream:
                continue
            try:
                f.sync()
            except OSError as err:
                raise self.error(f.flag, err) from None
        renamed = []
        for f in files:
            if f.stream:
                continue
            try:
                os.replace(f.temp, f.real)
            except OSError as err:
                kept = self._kept()
                self.abort()
                done = "".join(f"; {g.flag} {g.target} was written" for g in renamed)
                raise OutputError(f"{f.flag} {f.target}: cannot rename the finished file into place "
                                  f"({_reason(err)}); {kept}{done}") from None
            f.temp = None
            renamed.append(f)
        for directory in {os.path.dirname(f.real) for f in renamed}:
            _sync_directory(directory)
        for f in files:
            if f.stream and f.temp is not None:
                try:
                    f.copy()
                except OSError as err:
                    raise self.error(f.flag, err) from None
                f.remove()
        self._files.clear()
        _pending.discard(self)
        global _commits
        _commits += 1

    def abort(self) -> None:
        """Remove every file not yet committed; every target stays as it was (streams keep what they got)."""
        for f in self._files.values():
            f.remove()
        self._files.clear()
        _pending.discard(self)

    def __enter__(self) -> "Outputs":
        return self

    def __exit__(self, *exc) -> None:
        self.abort()


def abort_all() -> None:
    """Remove the files of every ``Outputs`` not committed (a command that ended by an exception)."""
    for outputs in list(_pending):
        outputs.abort()


atexit.register(abort_all)


def _sync_directory(directory: str) -> None:
    """The renames on the disk too (best effort: some file systems cannot sync a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class TextFile:
    """A text file written as it comes through ``outputs.open`` under ``flag`` (UTF-8; ``newline`` as ``open``
    takes it: "" writes "\\n" as it is), with ``write``/``flush``/``close``; a failure is an ``OutputError`` (and
    removes the run's files). ``close`` leaves the file to ``outputs.commit``."""

    def __init__(self, outputs: Outputs, flag: str, target: str, newline: str | None = ""):
        import io

        self.outputs, self.flag = outputs, flag
        self._file = io.TextIOWrapper(outputs.open(flag, target), encoding="utf-8", newline=newline)

    def write(self, text: str) -> None:
        try:
            self._file.write(text)
        except OSError as err:
            raise self._failed(err) from None

    def flush(self) -> None:
        try:
            self._file.flush()
        except OSError as err:
            raise self._failed(err) from None

    def close(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()
            except OSError as err:
                raise self.outputs.error(self.flag, err) from None

    def _failed(self, err: OSError) -> OutputError:
        file, self._file = self._file, None
        try:
            file.close()
        except OSError:
            pass
        return self.outputs.error(self.flag, err)

    def __enter__(self) -> "TextFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
