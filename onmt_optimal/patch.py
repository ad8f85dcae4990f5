"""The one place where OpenNMT-py 3.5.1 is changed. Every change is a substitution of a module attribute.

``apply()`` (idempotent), called when ``onmt`` is first imported (see ``_hook``) or explicitly:

* ``torch.load`` safety: allow ``argparse.Namespace``, the only non-tensor global in an OpenNMT checkpoint, so
  checkpoints load on torch >= 2.6 with ``weights_only`` left on;
* ``onmt.opts.translate_opts`` (and its from-imported copies in ``onmt.bin.translate`` and
  ``onmt.utils.scoring_utils``) also adds our flag group, so CLI and YAML accept the flags;
* ``ArgumentParser.validate_translate_opts`` also validates our flags (one-line errors, before model loading);
* ``onmt.translate.translator.Translator`` becomes ``CertifiedTranslator`` (``build_translator`` looks the
  name up at call time);
* ``onmt.inputters.dynamic_iterator.process`` keeps empty source lines at inference;
* ``onmt.model_builder.load_test_model`` reports a file that is not an OpenNMT checkpoint in one line;
* ``onmt.translate.translator.build_translator`` opens ``-output`` only when the translator first writes to it
  (or when a translation ends with nothing written), never before the model has loaded: stock opens (and so
  empties) it first, and a failed load or a missing ``-src`` lost the previous output.

When one of the modules ``apply`` installs (``translator``, ``beam_search``, ``empty_lines``) is what first
imports OpenNMT-py, it is only half built at that moment; ``apply`` then waits, and that module calls
``resume(__name__)`` as its last statement.

``apply_cli()`` wraps ``onmt.bin.translate.main`` so those errors end the command with a one-line message and a
non-zero exit status instead of a traceback.
"""
from __future__ import annotations

import argparse
import functools
import sys

_applied = False
_pending = False
#: the modules of ours that ``apply`` installs into OpenNMT-py
_INSTALLED = ("onmt_optimal.translator", "onmt_optimal.beam_search", "onmt_optimal.empty_lines")


class CheckpointError(RuntimeError):
    """The model file is missing or is not an OpenNMT-py checkpoint."""


def _half_built(name: str) -> bool:
    module = sys.modules.get(name)
    return module is not None and getattr(getattr(module, "__spec__", None), "_initializing", False)


def resume(name: str) -> None:
    """Called by each module of ``_INSTALLED`` once built: run an ``apply`` that had to wait for it."""
    if _pending and not any(_half_built(other) for other in _INSTALLED if other != name):
        apply(waiting_for=name)


def apply(waiting_for: str | None = None) -> None:
    global _applied, _pending
    if _applied:
        return
    if any(_half_built(name) for name in _INSTALLED if name != waiting_for):
        _pending = True  # imported from one of ours, half built: it will call resume()
        return
    _applied, _pending = True, False

    import torch

    if hasattr(torch.serialization, "add_safe_globals"):
        torch.serialization.add_safe_globals([argparse.Namespace])

    import onmt.opts
    from onmt.utils.parse import ArgumentParser

    from onmt_optimal import options

    stock_translate_opts = onmt.opts.translate_opts

    @functools.wraps(stock_translate_opts)
    def translate_opts(parser):
        stock_translate_opts(parser)
        options.add_options(parser)

    onmt.opts.translate_opts = translate_opts
    for name in ("onmt.bin.translate", "onmt.utils.scoring_utils"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "translate_opts", None) is stock_translate_opts:
            module.translate_opts = translate_opts

    stock_validate = ArgumentParser.validate_translate_opts.__func__

    def validate_translate_opts(cls, opt):
        stock_validate(cls, opt)
        options.validate(opt)

    ArgumentParser.validate_translate_opts = classmethod(validate_translate_opts)

    import onmt.translate.translator
    from onmt_optimal.translator import CertifiedTranslator

    onmt.translate.translator.Translator = CertifiedTranslator

    import onmt.inputters.dynamic_iterator
    from onmt_optimal import empty_lines

    onmt.inputters.dynamic_iterator.process = empty_lines.process_keeping_empty

    import onmt.model_builder

    onmt.model_builder.load_test_model = _checked_loader(onmt.model_builder.load_test_model)

    stock_build = onmt.translate.translator.build_translator
    build = _deferring_output(stock_build)
    onmt.translate.translator.build_translator = build
    for name in ("onmt.utils.distributed", "onmt.translate.translation_server"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "build_translator", None) is stock_build:
            module.build_translator = build


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


def _deferring_output(build_translator):
    @functools.wraps(build_translator)
    def build(opt, device_id=0, report_score=True, logger=None, out_file=None):
        if out_file is None:
            out_file = DeferredOutput(opt.output)
        return build_translator(opt, device_id=device_id, report_score=report_score, logger=logger,
                                out_file=out_file)

    return build


def _checked_loader(load_test_model):
    @functools.wraps(load_test_model)
    def load(opt, device_id=0, model_path=None):
        path = model_path if model_path is not None else opt.models[0]
        try:
            return load_test_model(opt, device_id, model_path)
        except FileNotFoundError as err:
            raise CheckpointError(f"model file not found: {path}") from err
        except IsADirectoryError as err:
            raise CheckpointError(f"{path} is a directory, not an OpenNMT-py checkpoint") from err
        except Exception as err:  # pickle/zip/key errors: whatever torch.load and onmt say about a bad file
            problem = checkpoint_problem(path)
            if problem is None:
                raise  # a well-formed checkpoint failed for another reason: keep OpenNMT-py's own error
            raise CheckpointError(f"{path} is not an OpenNMT-py checkpoint: {problem}") from err

    return load


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


def apply_cli() -> None:
    """Make ``onmt_translate`` end bad input with one line on stderr and a non-zero status."""
    import onmt.bin.translate as cli

    if getattr(cli.main, "_onmt_optimal", False):
        return
    stock_main = cli.main

    @functools.wraps(stock_main)
    def main():
        from onmt_optimal.options import OptionError

        try:
            return stock_main()
        except OptionError as err:
            sys.stderr.write(f"onmt_translate: error: {err}\n")
            raise SystemExit(2)
        except CheckpointError as err:
            sys.stderr.write(f"onmt_translate: error: {err}\n")
            raise SystemExit(1)

    main._onmt_optimal = True
    cli.main = main
