"""The commands' closing prints, kept off the translations: ``onmt_translate`` (``onmt.bin.translate.main``) and
``eole predict`` (``eole.bin.run.predict.Predict.run``) print ``Time w/o python interpreter load/terminate: ...``
(or ``-profile``'s table) on stdout once the run is over. Where ``-output`` is standard output (``-``,
``/dev/stdout``) that line followed the translations: ``| tee out.txt`` got one line more than there are inputs.

``route`` sends them to stderr for a run with our options on and ``-output`` standard output, by giving the
command's module its own ``print`` (the function looks ``print`` up in its module first, at call time); any
other run, our options off included, prints as stock does (an earlier run's ``print`` in the same process is
taken back).
"""
from __future__ import annotations

import builtins
import sys

from onmt_optimal import atomic
from onmt_optimal.import_hook import mark, ours


def route(module, active: bool, output) -> None:
    """``module``'s closing prints to stderr when ``active`` (our options on) and ``output`` is standard output,
    else as stock prints them."""
    if module is None:
        return
    if active and isinstance(output, str) and atomic.is_stdout(output):
        module.print = _to_stderr
    elif ours(getattr(module, "print", None)):
        del module.print


@mark
def _to_stderr(*args, **kwargs) -> None:
    """``print``, to stderr where no ``file`` is given."""
    if kwargs.get("file") is None:
        kwargs["file"] = sys.stderr
    builtins.print(*args, **kwargs)
