"""The outputs (``atomic.Outputs``) of the ``InferenceEngine.infer_file`` call now running, for what writes them.

eole builds its predictor itself, in the engine's constructor, and ``infer_file`` takes no argument, so nothing
of eole's can carry one run's outputs to its writers. ``patch``'s ``infer_file`` opens them for the call's duration
(``running``); eole's ``_write_predictions_to_file`` (``patch``) and the predictor's statistics file
(``translator``) find them here (``current``). Imports nothing of eole.
"""
from __future__ import annotations

import contextvars
from contextlib import contextmanager

_RUNNING: contextvars.ContextVar = contextvars.ContextVar("onmt_optimal_eole_outputs", default=None)


def current():
    """The outputs of the ``infer_file`` call running now, or None outside one."""
    return _RUNNING.get()


@contextmanager
def running(outputs):
    """``outputs`` are the running call's within the ``with`` block."""
    token = _RUNNING.set(outputs)
    try:
        yield outputs
    finally:
        _RUNNING.reset(token)
