"""Which source lines of a translation are empty, as both toolkits' readers mark them and their translators answer
them (``opennmt/empty_lines.py``, ``eole/empty_lines.py``).

A translator runs each translation inside ``keeping()``, whose ``EmptyLines`` is that translation's own: while it
runs, the toolkit's reader (handed no translator) finds it with ``reading()`` and marks each empty line it keeps
in place; the translator takes each mark back, once, to answer that line with an empty line. A translation that
ended early leaves no mark for the next one in a long-lived process (a session, the sweep, a Ray worker).
"""
from __future__ import annotations

import contextlib
from contextvars import ContextVar


class EmptyLines:
    """The empty source lines of one translation, each marked as the reader reads it and taken (once) as the
    translator answers it."""

    def __init__(self) -> None:
        self._pending: set = set()

    def mark(self, key) -> None:
        self._pending.add(key)

    def take(self, key) -> bool:
        """True (once) if the example at ``key = (corpus id, line)`` stands for an empty source line."""
        if key in self._pending:
            self._pending.discard(key)
            return True
        return False


#: the translation whose source a toolkit's reader is reading here, or None
_reading: ContextVar[EmptyLines | None] = ContextVar("onmt_optimal_empty_lines", default=None)


@contextlib.contextmanager
def keeping(keep: bool = True):
    """A fresh ``EmptyLines`` for one translation; while the block runs (and ``keep``), ``reading()`` answers it.
    With ``keep`` false the reader is the toolkit's own and no line is marked."""
    run = EmptyLines()
    token = _reading.set(run if keep else None)
    try:
        yield run
    finally:
        _reading.reset(token)


def reading() -> EmptyLines | None:
    """The translation being read here (inside ``keeping()``), or None."""
    return _reading.get()
