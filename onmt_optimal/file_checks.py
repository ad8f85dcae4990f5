"""The checks of the files a run reads and writes, for every toolkit, its servers and the tools, before anything
is loaded or written: one line (``errors.OptionError``) saying what is wrong.

A file written at the end goes beside its target and is renamed onto it (``atomic``), so its directory must take
a new file (tried, not inferred from permission bits: ``check_writable``); a file a server appends to must be a
regular file (``check_appended``). Files are compared by identity, never by name (``same_file``: device and
inode, links followed, ``/proc/self/root/...`` and ``a/../b`` included), so that no run writes over a file it
reads or over another it writes (``check_distinct``, ``check_apart``).
"""
from __future__ import annotations

import os

from onmt_optimal.errors import OptionError, OptionTypeError


def check_path_type(flag: str, value) -> None:
    """A path-typed option given in JSON or YAML is a string: ``5`` or ``["a", "b"]`` named a file ``5`` or
    ``['a', 'b']`` once turned into a command line."""
    if value is not None and not isinstance(value, str):
        raise OptionTypeError(f"{flag} must be a file name (a string), got {value!r}")


def check_readable(flag: str, path: str | None) -> None:
    """A file the run reads: it exists, is no directory and can be read (``-`` is a file named so, as both
    toolkits open it)."""
    if path == "-" and not os.path.exists(path):  # both toolkits open "-" as a file name
        raise OptionError(f"{flag} -: no file named '-' here; for standard input write {flag} /dev/stdin")
    if not path or path == os.devnull:
        return
    if not os.path.exists(path):
        raise OptionError(f"{flag} {path}: no such file")
    if os.path.isdir(path):
        raise OptionError(f"{flag} {path} is a directory, not a file")
    if not os.access(path, os.R_OK):
        raise OptionError(f"{flag} {path} is not readable")


def check_writable(flag: str, path: str | None) -> None:
    """A file we will write at the end must have a directory to go to: say so before the model loads. A file is
    written beside its target and renamed onto it (``atomic``), so the directory of the file (the file a symbolic
    link points to) must take a new file; a stream (/dev/stdout, a FIFO) is written in place."""
    from onmt_optimal.atomic import streamed

    if path == "":
        raise OptionError(f"{flag} is empty: name a file")
    if not path or path in (os.devnull, "-"):
        return
    if os.path.isdir(path):
        raise OptionError(f"{flag} {path} is a directory, not a file")
    if path.endswith(os.sep):
        # a file's name never ends so: the path names a directory, and the rename onto it (``atomic``) would have
        # replaced the file before the slash (``keep.txt/``) or made one of a new directory's name (``new/``)
        raise OptionError(f"{flag} {path} ends with '{os.sep}': it names a directory, not a file")
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise OptionError(f"{flag} {path} is not writable")
        if streamed(path):
            return
        parent = os.path.dirname(os.path.realpath(path))
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OptionError(f"{flag} {path}: directory {parent} is not writable (the file is written beside "
                              f"its target, then renamed onto it)")
        _probe_directory(flag, path, parent)
        return
    parent = os.path.dirname(os.path.realpath(path))  # a dangling symbolic link: where its target would be made
    if not os.path.isdir(parent):
        raise OptionError(f"{flag} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise OptionError(f"{flag} {path}: directory {parent} is not writable")
    _probe_directory(flag, path, parent)


def _probe_directory(flag: str, path: str, parent: str) -> None:
    """``parent`` takes a new file, tried: an empty file made there and removed at once. ``os.access`` answers
    for the permission bits alone, and root passes those everywhere, while a file system such as /sys or /proc
    refuses new files to root too (the write then failed after the whole decode)."""
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(prefix=".onmt-optimal-probe-", dir=parent)
    except OSError as err:
        raise OptionError(f"{flag} {path}: directory {parent} takes no new file ({err.strerror or err})") from None
    os.close(fd)
    os.unlink(probe)


def check_appended(flag: str, path) -> None:
    """A file a server appends to request by request (its ``stats_file``, its ``log_file``): a name (a string,
    not ending with ``/``), and a regular file that takes appended lines, or a new one its directory takes. A
    FIFO (every request would wait on a reader, holding its model's lock), a device or a directory is refused;
    ``/dev/null`` is taken. Nothing is written: an existing file is opened for appending and closed."""
    import stat

    check_path_type(flag, path)
    if not path:
        raise OptionError(f"{flag} is empty: name a file")
    if path == os.devnull:
        return
    if path.endswith(os.sep):
        raise OptionError(f"{flag} {path} ends with '{os.sep}': it names a directory, not a file")
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise OptionError(f"{flag} {path} is a directory, not a file")
    if mode is not None and not stat.S_ISREG(mode):
        raise OptionError(f"{flag} {path} is not a regular file (a FIFO, a socket or a device): a server appends "
                          f"to a regular file; name one")
    if mode is not None:
        if not os.access(path, os.W_OK):
            raise OptionError(f"{flag} {path} is not writable")
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC))
        except OSError as err:
            raise OptionError(f"{flag} {path} cannot be appended to ({err.strerror or err})") from None
        return
    parent = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(parent):
        raise OptionError(f"{flag} {path}: directory {parent} does not exist")
    _probe_directory(flag, path, parent)


def check_distinct(reads, writes) -> None:
    """No file the run writes is one it reads, and no two files it writes are one: one written over the other
    loses data (stock OpenNMT-py wrote the statistics over the translations, eole the translations over the
    statistics, an -output equal to -src emptied the source before it was read, and an -output naming the model
    replaced the checkpoint with the translations). ``reads`` and ``writes`` are ``(flag, path)`` pairs (a
    path may be None or empty: not given)."""
    written = [(flag, path) for flag, path in writes if path and isinstance(path, str)]
    for i, (flag, path) in enumerate(written):
        check_apart(flag, path, writes=written[:i], run=True)
        check_apart(flag, path, [(f"the {f} file", read) for f, read in reads if read and isinstance(read, str)],
                    run=True)


def check_apart(flag: str, path: str, reads=(), writes=(), prefix: str = "", run: bool = False) -> None:
    """``path``, written under ``flag``, is none of ``reads`` (``(whose, path)``: files read) nor of ``writes``
    (``(flag, path)``: other files written), by identity (``same_file``); else ``OptionError``, one line, in a
    run's words (``run``: the file read named by its flag) or a server's (by its flag and path)."""
    for whose, read in reads:
        if same_file(path, read):
            said = (f"{whose}, which the run reads: writing it would destroy that input" if run else
                    f"{whose} {read}, which the server reads: writing it would destroy it")
            raise OptionError(f"{prefix}{flag} {path} is {said}; name another file")
    for whose, other in writes:
        if same_file(path, other):
            raise OptionError(f"{prefix}{flag} {path} and {whose} {other} are the same file: one would "
                              f"{'overwrite' if run else 'write into'} the other; name two different files")


def same_file(a: str, b: str) -> bool:
    """Whether paths ``a`` and ``b`` name one file that a run would write as a whole, compared by identity, not by
    name (``identity``: device and inode of an existing file, links followed; of its directory, with its name, for
    one to be created), so that ``/proc/self/root/...``, ``/dev/fd/N``, ``a/../b``, a symbolic or a hard link are
    the file they lead to. Streams are written in place and may well be shared: standard output (``-``), an
    existing file that is not a regular file (``/dev/null``, a FIFO), and two descriptors' names (``/dev/stdout``
    and ``/dev/stderr`` a shell sent to one file)."""
    import stat

    from onmt_optimal.atomic import STDOUT

    if STDOUT in (a, b) or (_descriptor_name(a) and _descriptor_name(b)):
        return False
    (one, mode), (other, _) = identity(a), identity(b)
    if one is None or other is None:
        return os.path.realpath(a) == os.path.realpath(b)
    return one == other and (mode is None or stat.S_ISREG(mode))


def identity(path: str) -> tuple[tuple | None, int | None]:
    """``(identity, mode)`` of the file ``path`` names: ``("file", st_dev, st_ino)`` and its mode for an existing
    file (links followed); ``("new", st_dev, st_ino, name)`` of its directory and None for one not there yet (a
    dangling link names the file it would create); ``(None, None)`` where its directory does not exist either."""
    try:
        st = os.stat(path)
        return ("file", st.st_dev, st.st_ino), st.st_mode
    except (OSError, ValueError):
        pass
    real = os.path.realpath(path)
    try:
        st = os.stat(os.path.dirname(real) or os.curdir)
    except (OSError, ValueError):
        return None, None
    return ("new", st.st_dev, st.st_ino, os.path.basename(real)), None


def _descriptor_name(path: str) -> bool:
    """Whether ``path`` names one of this process's descriptors (``/dev/stdout``, ``/dev/fd/1``, ...)."""
    full = os.path.abspath(path)
    return full in ("/dev/stdin", "/dev/stdout", "/dev/stderr") or full.startswith(("/dev/fd/", "/proc/self/fd/"))


def count_lines(path: str) -> int:
    """Lines of ``path`` as the toolkits read them (a last line without a newline counts)."""
    count, last = 0, b"\n"
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")
