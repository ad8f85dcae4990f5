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
* ``onmt.translate.translator.build_translator`` hands the translator ``-output`` as an ``output.RunOutput``:
  written to a temporary file and renamed into place with ``-stats_file`` once the translation has ended
  (``atomic``); stock opens (and so empties) it before the model loads, so a failed load, a missing ``-src``, a
  full disk or Ctrl-C lost the previous output;
* ``onmt.inputters.text_corpus.ParallelCorpus.load`` says which line of ``-src`` is not UTF-8 (``source``).

The translator and the empty-line reader are imported when first called, not by ``apply``: ``apply`` runs
when ``onmt`` finishes importing, which may be in the middle of importing one of them (whichever module of
ours imports OpenNMT-py first). So no module of the package imports this one back: no import cycle.

``apply_cli()`` wraps ``onmt.bin.translate.main`` so those errors, a failed write, Ctrl-C and SIGTERM end the
command with a one-line message and a non-zero exit status instead of a traceback (``failures.run``), makes the
command line's own errors (an unknown flag or YAML key, a value of the wrong type) one line instead of a 100-line
usage text (``onmt.bin.translate._get_parser``), and wraps ``onmt.bin.translate.translate`` so that
``-ray_workers N`` runs on Ray (``onmt_optimal.distributed``; the workers run ``apply`` first, handed to them as
a function).
"""
from __future__ import annotations

import argparse
import functools
import sys

from onmt_optimal.opennmt.checkpoint import CheckpointError, checkpoint_problem, quiet_load
from onmt_optimal.opennmt.output import RunOutput

PROG = "onmt_translate"

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

    from onmt_optimal import options as meaning
    from onmt_optimal.distributed import options as ray_options

    def validate_translate_opts(cls, opt):
        meaning.validate_sizes(opt)  # before stock's checks, which do not catch these
        stock_validate(cls, opt)
        meaning.validate(opt)
        ray_options.validate(opt)
        for warning in meaning.option_warnings(opt):
            sys.stderr.write(f"{PROG}: warning: {warning}\n")

    ArgumentParser.validate_translate_opts = classmethod(validate_translate_opts)

    import onmt.translate.translator

    import onmt.inputters.dynamic_iterator
    import onmt.inputters.text_corpus

    from onmt_optimal import source

    onmt.inputters.dynamic_iterator.process = _process_keeping_empty
    corpus = onmt.inputters.text_corpus.ParallelCorpus
    corpus.load = source.checked(corpus.load)

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
    looked up at call time) and hands it ``-output`` as a ``RunOutput``."""

    @functools.wraps(build_translator)
    def build(opt, device_id=0, report_score=True, logger=None, out_file=None):
        import onmt.translate.translator

        from onmt_optimal.opennmt.translator import CertifiedTranslator

        onmt.translate.translator.Translator = CertifiedTranslator
        if out_file is None:
            out_file = RunOutput(opt.output)
        return build_translator(opt, device_id=device_id, report_score=report_score, logger=logger,
                                out_file=out_file)

    return build


def _checked_loader(load_test_model):
    @functools.wraps(load_test_model)
    def load(opt, device_id=0, model_path=None):
        path = model_path if model_path is not None else opt.models[0]
        try:
            with quiet_load():
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
    """Make ``onmt_translate`` end every fault with one line on stderr and a non-zero status."""
    import onmt.bin.translate as cli

    if getattr(cli.main, "_onmt_optimal", False):
        return
    stock_main = cli.main

    @functools.wraps(stock_main)
    def main():
        from onmt_optimal import failures

        return failures.run(PROG, stock_main, _describe)

    main._onmt_optimal = True
    cli.main = main
    cli.translate = _dispatching(cli.translate)
    cli._get_parser = _one_line_errors(cli._get_parser)


def _describe(err: Exception) -> str | None:
    """The line for a Ray worker's failure (``-ray_workers`` runs only import the cluster), else None."""
    cluster = sys.modules.get("onmt_optimal.distributed.cluster")
    if cluster is not None and isinstance(err, cluster.WorkerError):
        return str(err)
    return None


def _one_line_errors(get_parser):
    """``onmt.bin.translate._get_parser`` whose parser reports a bad flag, YAML key or value in one line: stock
    configargparse prints the whole usage (over 100 lines) before the one that says what is wrong."""

    @functools.wraps(get_parser)
    def parser():
        made = get_parser()

        def error(message):
            from onmt_optimal import failures

            failures.fail(PROG, " ".join(str(message).split()) + f" ({PROG} -h lists the options)", 2)

        made.error = error
        return made

    return parser


def _dispatching(stock_translate):
    """``onmt.bin.translate.translate`` (looked up by ``main`` at call time) that hands a run with
    ``-ray_workers N`` to the Ray driver, after OpenNMT-py's and our validation, so a bad flag, an unreadable
    -src or an -output in a missing directory is refused before Ray starts."""

    @functools.wraps(stock_translate)
    def translate(opt):
        from onmt_optimal.distributed.options import workers

        if not workers(opt):
            return stock_translate(opt)
        from onmt_optimal.opennmt.options import validate_parsed

        validate_parsed(opt)
        from onmt_optimal.distributed.translate import run

        run(opt, prepare=apply)

    return translate
