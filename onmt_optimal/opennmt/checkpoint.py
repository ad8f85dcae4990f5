"""What is wrong with a model file that is not an OpenNMT-py checkpoint, in one clause of ours; and whether a
failed load is reported so (``one_line_loads``).

A failed model load becomes ``CheckpointError`` (one line) only where onmt-optimal's own entry points load:
``onmt_translate`` (``patch.apply_cli``), the tools' ``Session``, the Ray workers. OpenNMT-py's other callers
of the same loader (its translation server, which turns a RuntimeError into its own error; user code) get
OpenNMT-py's own exceptions, as stock.
"""
from __future__ import annotations

import argparse
import contextlib
import contextvars
import re
import warnings

from onmt_optimal.failures import Fault


class CheckpointError(Fault, RuntimeError):
    """The model file is missing or is not an OpenNMT-py checkpoint."""


_ONE_LINE = contextvars.ContextVar("onmt_optimal_one_line_loads", default=False)


def one_line() -> bool:
    """Whether a failed load here is to be reported as ``CheckpointError`` (see the module docstring)."""
    return _ONE_LINE.get()


@contextlib.contextmanager
def one_line_loads():
    """Within: a failed model load is reported as ``CheckpointError``."""
    token = _ONE_LINE.set(True)
    try:
        yield
    finally:
        _ONE_LINE.reset(token)


@contextlib.contextmanager
def quiet_load():
    """``torch.load`` without its two-line warning about a pickle protocol that torch.save does not write (a file
    that is no checkpoint: its one-line refusal says so)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*[Pp]ickle protocol", category=UserWarning)
        yield


#: what OpenNMT-py 3.5.1's ``dict_to_vocabs`` reads from a checkpoint's vocabularies
VOCAB_KEYS = ("data_task", "src", "tgt")


def checkpoint_problem(path) -> str | None:
    """Why ``path`` is not an OpenNMT-py checkpoint (one clause, ours, never torch's advice to load it with
    ``weights_only=False``), or None when it has the shape of one: a dict whose ``model`` (weights, not none) and
    ``vocab`` (with ``VOCAB_KEYS``) are dicts and whose ``opt`` is the training options (an
    ``argparse.Namespace``)."""
    import torch

    try:
        with quiet_load():
            ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except OSError as err:
        return f"it cannot be read ({err.strerror or type(err).__name__})"
    except Exception as err:
        return load_refusal(str(err))
    if not isinstance(ckpt, dict):
        return f"it holds a {type(ckpt).__name__}, not a dict with 'model', 'vocab' and 'opt'"
    missing = [key for key in ("model", "vocab", "opt") if key not in ckpt]
    if missing:
        return f"it lacks the {', '.join(repr(key) for key in missing)} entr{'y' if len(missing) == 1 else 'ies'}"
    if not isinstance(ckpt["opt"], argparse.Namespace):
        what = "None" if ckpt["opt"] is None else f"a {type(ckpt['opt']).__name__}"
        return f"its 'opt' entry is {what}, not the training options"
    if not isinstance(ckpt["model"], dict) or not isinstance(ckpt["vocab"], dict):
        return "its 'model' and 'vocab' entries are not dicts"
    lacking = [key for key in VOCAB_KEYS if key not in ckpt["vocab"]]
    if lacking:  # OpenNMT-py's dict_to_vocabs ended in a KeyError
        return f"its 'vocab' entry lacks {', '.join(repr(key) for key in lacking)}"
    if not ckpt["model"]:
        return "its 'model' entry holds no weights"
    return None


def load_refusal(message: str) -> str:
    """Our clause for what ``torch.load(..., weights_only=True)`` said in refusing a file (``message``)."""
    blocked = re.search(r"GLOBAL ([\w.]+) whose module ([\w.]+) is blocked", message)
    if blocked:  # os.system, subprocess, builtins.eval...: the file would run that on load
        return f"it asks to run code when loaded ({blocked.group(1)}); that was refused and nothing was run"
    found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", message) or re.search(r"GLOBAL ([\w.]+)", message)
    if found:
        return (f"it stores a {found.group(1)} object, which no OpenNMT-py checkpoint holds (loading it would run "
                f"that code; it was refused)")
    if "central directory" in message or "failed reading zip archive" in message:
        return "it is truncated or damaged (its zip archive is incomplete)"
    return "it is not a file written by torch.save"
