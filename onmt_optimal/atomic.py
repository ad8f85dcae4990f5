"""Output files that appear whole or not at all: a run's outputs are written beside their targets and renamed into
place together, once every one of them is complete.

``Outputs`` is one run's set of output files (``-output``, ``-stats_file``). ``path(flag, target)`` hands the
writer the path to write ``target``'s content to; ``commit()`` makes every target hold what was written;
``abort()`` (or leaving ``with Outputs() as outputs:`` by an exception) removes what was written and leaves every
target as it was. Both toolkits and the Ray driver write through it, each with its own writer (OpenNMT-py and eole
open the path with ``codecs.open(path, "w+", "utf-8")`` as they open ``-output``), so the bytes are theirs.

Three kinds of target:

* a file (existing regular file, or none yet): written to a temporary file in the target's directory (the
  directory of the file a symbolic link points to), named ``<name>.<random>.partial`` so that a user who sees one
  knows what it is (``tail -f`` follows a run's output there). ``commit`` flushes every temporary file to the
  disk (``fsync``), gives each the mode bits (and, where allowed, the owner and group) of the file it replaces,
  then renames each onto its target and syncs the directory. A failed or interrupted run removes them; a killed
  one (SIGKILL, power loss) leaves one behind and every target as it was. The rename gives the target a new
  inode: another hard link to the old file keeps the old content;
* a stream (``/dev/...``, ``/proc/...``, or an existing FIFO, socket or device): written in place as it comes, as
  the toolkits always did (``-output /dev/stdout`` shows lines as they are decoded);
* ``-`` (standard output): written to a temporary file, copied to standard output by ``commit``.

Invariant: between ``path`` and ``commit``/``abort`` no target file is touched; after a failed ``commit``, the
targets renamed before the failure hold the new content and the others the old (renames come after every
temporary file is complete and synced, so that only a rename failing, e.g. the directory removed mid-run, can
split a run's files). Every failure is an ``OutputError``: one line naming the flag, the file and what was kept.
Outputs not committed are also removed at interpreter exit (``atexit``) and by ``abort_all`` (the command-line
wrappers call it once a command ends).
"""
from __future__ import annotations

import atexit
import errno
import os
import secrets
import stat
import sys

#: the target that means standard output
STDOUT = "-"
#: what a temporary file's name ends with
SUFFIX = ".partial"

#: every ``Outputs`` holding files not yet committed or removed
_pending: set = set()


class OutputError(RuntimeError):
    """An output could not be written; the message is one line: the flag, the file, the reason, what was kept."""


def streamed(target: str) -> bool:
    """Whether ``target`` is written in place as a stream (see the module docstring): a path under ``/dev`` or
    ``/proc`` (``/dev/stdout`` stays a stream even when the shell pointed standard output at a regular file) or an
    existing file that is not a regular file (a FIFO, a socket, a device)."""
    if target == STDOUT:
        return False
    if os.path.abspath(target).startswith(("/dev/", "/proc/")):
        return True
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode)


def _reason(err: OSError) -> str:
    return err.strerror or type(err).__name__


class _File:
    """One target and the temporary file its content goes to (``temp``; None for a stream)."""

    def __init__(self, flag: str, target: str):
        self.flag, self.target = flag, target
        self.stream = streamed(target)
        self.real = None if self.stream or target == STDOUT else os.path.realpath(target)
        self.temp = None
        if self.real is not None:
            self.temp = self._create(os.path.dirname(self.real), os.path.basename(self.real))
        elif target == STDOUT:
            import tempfile

            self.temp = self._create(tempfile.gettempdir(), "stdout")

    def _create(self, directory: str, name: str) -> str:
        """An empty file ``<name>.<random>.partial`` in ``directory``, mode 0666 less the umask (as a new target
        would get)."""
        for _ in range(100):
            path = os.path.join(directory, f"{name}.{secrets.token_hex(4)}{SUFFIX}")
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
                return path
            except FileExistsError:
                continue
            except OSError as err:
                raise OutputError(f"{self.flag} {self.target}: cannot create a file in {directory} "
                                  f"({_reason(err)}); {self.kept()}") from None
        raise OutputError(f"{self.flag} {self.target}: no free temporary name in {directory}; {self.kept()}")

    def kept(self) -> str:
        """What the user still has: the earlier file, or nothing written."""
        if self.target == STDOUT or self.stream:
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
        if self.real is None:
            return
        try:
            st = os.stat(self.real)
        except FileNotFoundError:
            return
        os.chmod(self.temp, stat.S_IMODE(st.st_mode))
        try:
            os.chown(self.temp, st.st_uid, st.st_gid)
        except OSError:
            pass  # not ours to give away: the file gets our owner, as a new file would

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
    def path(self, flag: str, target: str) -> str:
        """Where to write ``target``'s content (under ``flag``'s name in messages): a temporary file, or the target
        itself for a stream. The same path for the same flag until ``commit`` or ``abort``."""
        if flag not in self._files:
            self._files[flag] = _File(flag, target)
            _pending.add(self)
        f = self._files[flag]
        return f.temp if f.temp is not None else f.target

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
        """Every file complete on the disk, then renamed onto its target; ``-`` copied to standard output."""
        files = list(self._files.values())
        for f in files:
            if f.temp is None:
                continue
            try:
                f.sync()
            except OSError as err:
                raise self.error(f.flag, err) from None
        renamed = []
        for f in files:
            if f.real is None:
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
            if f.target == STDOUT and f.temp is not None:
                try:
                    _copy_to_stdout(f.temp)
                except OSError as err:
                    raise self.error(f.flag, err) from None
                f.remove()
        self._files.clear()
        _pending.discard(self)

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


def _copy_to_stdout(path: str) -> None:
    sys.stdout.flush()
    out = sys.stdout.buffer
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            out.write(chunk)
    out.flush()


class TextFile:
    """A text file written through ``outputs`` under ``flag`` (UTF-8; ``newline`` as ``open`` takes it: "" writes
    "\\n" as it is), with ``write``/``flush``/``close``; a failure is an ``OutputError`` (and removes the run's
    files). ``close`` leaves the file to ``outputs.commit``."""

    def __init__(self, outputs: Outputs, flag: str, target: str, newline: str | None = ""):
        self.outputs, self.flag = outputs, flag
        try:
            self._file = open(outputs.path(flag, target), "w", encoding="utf-8", newline=newline)
        except OSError as err:
            raise outputs.error(flag, err) from None

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
