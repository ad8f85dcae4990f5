"""Input lines that are not UTF-8: one line saying which file, which line and which byte, instead of the
``UnicodeDecodeError`` traceback of the toolkit's reader.

OpenNMT-py 3.5.1 and eole 0.6.4 read ``-src`` (and OpenNMT-py's gold ``-tgt``) the same way: their
``ParallelCorpus.load`` opens the files in binary, and decodes each line as UTF-8 as it yields it (strictly: one
bad byte ends the run). ``checked(load)`` is that generator with the error turned into a ``SourceError`` when it
happens, after whatever was decoded before it (the run stops there, and its outputs are not committed:
``atomic``). Where the error is the file's first line that is not UTF-8 is found by reading the file again (a
regular file; a FIFO can be read once only, so there the line is counted from what the reader yielded).
"""
from __future__ import annotations

import functools
import os
import stat

from onmt_optimal.errors import Fault


class SourceError(Fault):
    """An input file that is not UTF-8; the message says where."""


def checked(load):
    """``load`` (a toolkit's ``ParallelCorpus.load``) raising ``SourceError`` instead of ``UnicodeDecodeError``."""

    @functools.wraps(load)
    def load_checked(corpus, *args, **kwargs):
        examples = load(corpus, *args, **kwargs)
        read = 0
        while True:
            try:
                example = next(examples)
            except StopIteration:
                return
            except UnicodeDecodeError as err:
                raise SourceError(where(corpus, read, err)) from None
            read += 1
            yield example

    return load_checked


def where(corpus, read: int, err: UnicodeDecodeError) -> str:
    """The message for ``err``, raised by ``corpus`` after it yielded ``read`` examples."""
    files = [(flag, getattr(corpus, attr, None)) for flag, attr in (("-src", "src"), ("-tgt", "tgt"))]
    files = [(flag, path) for flag, path in files if isinstance(path, (str, os.PathLike))]
    for flag, path in files:
        found = first_bad_line(path)
        if found is not None:
            line, offset, bad = found
            return (f"{flag} {path}: line {line} is not UTF-8 (byte 0x{bad.object[bad.start]:02x} at byte offset "
                    f"{offset} of the file: {bad.reason}); convert the file to UTF-8")
    flag, path = files[0] if files else ("-src", "the input")
    byte = err.object[err.start] if err.start < len(err.object) else None
    what = f"byte 0x{byte:02x}: " if byte is not None else ""
    return f"{flag} {path}: line {read + 1} is not UTF-8 ({what}{err.reason}); convert the file to UTF-8"


def first_bad_line(path) -> tuple[int, int, UnicodeDecodeError] | None:
    """``(line number from 1, byte offset in the file, the error)`` of the first line of the regular file ``path``
    that is not UTF-8, or None (no such line, or not a regular file)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as f:
            offset = 0
            for number, line in enumerate(f, 1):
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError as err:
                    return number, offset + err.start, err
                offset += len(line)
    except OSError:
        return None
    return None
