"""``-output`` as OpenNMT-py's translator writes it, through ``atomic``: whole or not at all.

Stock OpenNMT-py 3.5.1 opens ``-output`` in ``build_translator`` (``codecs.open(path, "w+", "utf-8")``), before the
model loads, and the translator writes and flushes it line by line: a failed load, a missing ``-src``, a full
disk or Ctrl-C left it emptied or cut. ``RunOutput`` stands in for that file.
"""
from __future__ import annotations

from onmt_optimal import atomic


class RunOutput:
    """``-output`` for one run of ``Translator._translate`` (then for the next one, if any).

    The file is opened on first use (``outputs.open("-output", path)``: a temporary file beside the target, or
    the stream itself, ``-``/``/dev/stdout``, a FIFO, where lines appear as they are decoded) and written through
    a UTF-8 ``codecs`` writer, as stock's ``codecs.open(path, "w+", "utf-8")`` writes: the same bytes (stock's
    ``"w+"`` could not open a pipe). ``commit`` renames it (and whatever else the run wrote through ``outputs``,
    ``-stats_file``) into place; ``abort`` removes it. Invariant: the target is untouched until ``commit``. A
    write that fails raises ``atomic.OutputError`` (one line) after removing the run's files. Any other
    attribute is the open file's."""

    def __init__(self, path: str):
        self.path = path
        self.outputs = atomic.Outputs()
        self._file = None

    def open(self):
        if self._file is None:
            import codecs

            self._file = codecs.getwriter("utf-8")(self.outputs.open("-output", self.path))
        return self._file

    def write(self, text: str) -> None:
        try:
            self.open().write(text)
        except OSError as err:
            raise self._failed(err) from None

    def flush(self) -> None:
        if self._file is not None:
            try:
                self._file.flush()
            except OSError as err:
                raise self._failed(err) from None

    def close(self) -> None:
        """Close the file (``commit`` or ``abort`` decide what becomes of it)."""
        file, self._file = self._file, None
        if file is not None:
            try:
                file.close()
            except OSError as err:
                raise self.outputs.error("-output", err) from None

    def commit(self) -> None:
        self.close()
        self.outputs.commit()

    def abort(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            try:
                file.close()
            except OSError:
                pass  # the data goes with the file
        self.outputs.abort()

    def _failed(self, err: OSError) -> atomic.OutputError:
        file, self._file = self._file, None
        if file is not None:
            try:
                file.close()
            except OSError:
                pass
        return self.outputs.error("-output", err)

    def __getattr__(self, name):
        return getattr(self.open(), name)
