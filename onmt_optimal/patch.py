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
* ``onmt.model_builder.load_test_model`` reports a file that is not an OpenNMT checkpoint in one line.

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


def _checked_loader(load_test_model):
    @functools.wraps(load_test_model)
    def load(opt, device_id=0, model_path=None):
        path = model_path if model_path is not None else opt.models[0]
        try:
            return load_test_model(opt, device_id, model_path)
        except FileNotFoundError as err:
            raise CheckpointError(f"model file not found: {path}") from err
        except Exception as err:  # pickle/zip/key errors: whatever torch.load and onmt say about a bad file
            if _looks_like_checkpoint(path):
                raise
            raise CheckpointError(
                f"{path} is not an OpenNMT-py checkpoint ({type(err).__name__}: {str(err).splitlines()[0][:200]})"
            ) from err

    return load


def _looks_like_checkpoint(path) -> bool:
    """True if ``path`` loads as a dict with OpenNMT-py's keys (so the error came from somewhere else)."""
    import torch

    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:
        return False
    return isinstance(ckpt, dict) and {"model", "vocab", "opt"} <= set(ckpt)


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
