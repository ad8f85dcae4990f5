"""What is wrong with a model file that is not an OpenNMT-py checkpoint, in one clause of ours."""
from __future__ import annotations

import argparse


class CheckpointError(RuntimeError):
    """The model file is missing or is not an OpenNMT-py checkpoint."""


def checkpoint_problem(path) -> str | None:
    """Why ``path`` is not an OpenNMT-py checkpoint (one clause, ours, never torch's advice to load it with
    ``weights_only=False``), or None when it has the shape of one: a dict whose ``model`` and ``vocab`` are
    dicts and whose ``opt`` is the training options (an ``argparse.Namespace``)."""
    import re

    import torch

    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except OSError as err:
        return f"it cannot be read ({err.strerror or type(err).__name__})"
    except Exception as err:
        found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", str(err))
        if found:
            return f"it stores a {found.group(1)} object, which no OpenNMT-py checkpoint holds"
        return "it is not a file written by torch.save"
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
    return None
