"""The one place where OpenNMT-py 3.5.1 is changed. Every change is a substitution of a module attribute.

``apply()`` (idempotent), called when ``onmt`` is first imported (see ``hook``) or explicitly:

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

The translator and the empty-line reader are imported when first called, not by ``apply``: ``apply`` runs
when ``onmt`` finishes importing, which may be in the middle of importing one of them (whichever module of
ours imports OpenNMT-py first). So no module of the package imports this one back: no import cycle.

``apply_cli()`` wraps ``onmt.bin.translate.main`` so those errors end the command with a one-line message and a
non-zero exit status instead of a traceback, and ``onmt.bin.translate.translate`` so that ``-ray_workers N``
runs on Ray (``onmt_optimal.distributed``; the workers run ``apply`` first, handed to them as a function).
"""
from __future__ import annotations

import argparse
import functools
import sys

from onmt_optimal.opennmt.checkpoint import CheckpointError, checkpoint_problem
from onmt_optimal.opennmt.output import DeferredOutput

_applied = False


def apply() -> None:
    global _applied
    if _applied:
        return
    _applied = True

    import torch

    if hasattr(torch.serialization, "add_safe_globals"):
        torch.serialization.add_safe_globals([argparse.Namespace])

    import onmt.opts
    from onmt.utils.parse import ArgumentParser

    from onmt_optimal.opennmt import options

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

    import onmt.inputters.dynamic_iterator

    onmt.inputters.dynamic_iterator.process = _process_keeping_empty

    import onmt.model_builder

    onmt.model_builder.load_test_model = _checked_loader(onmt.model_builder.load_test_model)

    stock_build = onmt.translate.translator.build_translator
    build = _certified(stock_build)
    onmt.translate.translator.build_translator = build
    for name in ("onmt.utils.distributed", "onmt.translate.translation_server"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "build_translator", None) is stock_build:
            module.build_translator = build


def _process_keeping_empty(*args, **kwargs):
    """``onmt.inputters.dynamic_iterator.process`` keeping empty source lines (``empty_lines``)."""
    from onmt_optimal.opennmt.empty_lines import process_keeping_empty

    return process_keeping_empty(*args, **kwargs)


def _certified(build_translator):
    """``build_translator`` that builds a ``CertifiedTranslator`` (``onmt.translate.translator.Translator`` is
    looked up at call time) and hands it ``-output`` as a ``DeferredOutput``."""

    @functools.wraps(build_translator)
    def build(opt, device_id=0, report_score=True, logger=None, out_file=None):
        import onmt.translate.translator

        from onmt_optimal.opennmt.translator import CertifiedTranslator

        onmt.translate.translator.Translator = CertifiedTranslator
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
        except Exception as err:
            cluster = sys.modules.get("onmt_optimal.distributed.cluster")  # imported only by -ray_workers runs
            if cluster is None or not isinstance(err, cluster.WorkerError):
                raise
            sys.stderr.write(f"onmt_translate: error: {err}\n")
            raise SystemExit(1)

    main._onmt_optimal = True
    cli.main = main
    cli.translate = _dispatching(cli.translate)


def _dispatching(stock_translate):
    """``onmt.bin.translate.translate`` (looked up by ``main`` at call time) that hands a run with
    ``-ray_workers N`` to the Ray driver, after OpenNMT-py's and our validation, so a bad flag, an unreadable
    -src or an -output in a missing directory is refused before Ray starts."""

    @functools.wraps(stock_translate)
    def translate(opt):
        if not getattr(opt, "ray_workers", 0):
            return stock_translate(opt)
        from onmt.utils.parse import ArgumentParser

        ArgumentParser.validate_translate_opts(opt)
        ArgumentParser._get_all_transform_translate(opt)
        ArgumentParser._validate_transforms_opts(opt)
        ArgumentParser.validate_translate_opts_dynamic(opt)
        from onmt_optimal.distributed.translate import run

        run(opt, prepare=apply)

    return translate
