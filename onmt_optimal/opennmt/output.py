"""``-output`` opened on first use, so that a run that fails before translating never empties an earlier file."""
from __future__ import annotations


class DeferredOutput:
    """``-output`` as stock opens it (``codecs.open(path, "w+", "utf-8")``), opened on first use.

    Invariant: the file at ``path`` is untouched until the translator writes, flushes or closes, or until
    ``open()`` is called (``CertifiedTranslator._translate`` calls it once a translation has finished, so an
    empty input still leaves an empty file, as stock does). Once open, every attribute is the real file's."""

    def __init__(self, path: str):
        self.path = path
        self._file = None

    def open(self):
        if self._file is None:
            import codecs

            self._file = codecs.open(self.path, "w+", "utf-8")
        return self._file

    def __getattr__(self, name):
        return getattr(self.open(), name)
