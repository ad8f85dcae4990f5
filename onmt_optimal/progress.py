"""Progress on stderr, the same for every tool: the lines of an input file, and a tqdm bar of sentences done.

``count_lines`` counts what a line reader yields (a last line without its newline counts); ``sentence_bar`` is
the one bar, in sentences, that ``-progress``, the sweep and the distributed translation show.
"""
from __future__ import annotations

import os
import stat
import sys


def count_lines(path) -> int | None:
    """The lines of the regular file at ``path``, or None where it cannot be counted without being consumed or
    cannot be read (a FIFO or a terminal, which can be read only once; no such file; no path)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except (OSError, TypeError, ValueError):
        return None


def sentence_bar(total: int | None, desc: str = "translating", **options):
    """A tqdm bar on stderr counting sentences out of ``total`` (None: no total); ``options`` go to tqdm
    (``leave``, ``disable``)."""
    from tqdm import tqdm

    return tqdm(total=total, unit="sent", desc=desc, file=sys.stderr, dynamic_ncols=True, **options)
