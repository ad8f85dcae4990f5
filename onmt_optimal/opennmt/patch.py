"""Where the search enters OpenNMT-py 3.5.1: its seams. Every change is a substitution of a module attribute.

``apply()``, called when ``onmt`` is first imported (see ``hook``) or explicitly, may run any number of times: it
leaves an attribute that already holds one of our functions (``import_hook.ours``) as it is, so a second call
changes nothing and a call after OpenNMT-py's modules are imported afresh patches the new ones:

* ``onmt.opts.translate_opts`` (and its from-imported copies in ``onmt.bin.translate`` and
  ``onmt.utils.scoring_utils``) also adds our flag group, so CLI and YAML accept the flags;
* ``ArgumentParser.validate_translate_opts`` also validates our flags' values (one-line errors, before model
  loading), and with none of them accepts what stock accepts (the server and training call it with placeholder
  files); the checks of the command's own files are ``onmt_translate``'s (``apply_cli``);
* ``onmt.translate.translator.build_translator`` (and its copies in ``onmt.utils.distributed`` and the server)
  builds a ``CertifiedTranslator`` and hands it ``-output`` as an ``output.RunOutput``: written to a temporary
  file and renamed into place with ``-stats_file`` once the translation has ended (``atomic``); stock opens (and
  so empties) it before the model loads, so a failed load, a missing ``-src``, a full disk or Ctrl-C lost the
  previous output;
* ``onmt.translate.translator.Translator`` becomes ``CertifiedTranslator`` (``build_translator`` looks the name
  up at call time), once, when the first translator is built (see below).

``apply()`` also makes the repairs (``repairs.apply``: stock behaviours we change that are not the search).
The translator is imported when first called, not by ``apply``: ``apply`` runs when ``onmt`` finishes importing,
which may be in the middle of importing one of OpenNMT-py's modules (whichever module of ours imports OpenNMT-py
first). So no module of the package imports this one back: no import cycle. For the same reason ``Translator``
is replaced by the first ``build_translator`` call rather than by ``apply``.

``apply_cli()`` makes the command line's repairs (``repairs.apply_cli``: one-line faults and parser errors) and
wraps ``onmt.bin.translate.translate`` so that ``-ray_workers N`` runs on Ray (``onmt_optimal.distributed``; the
workers run ``apply`` first, handed to them as a function), after refusing, before the model loads, what the run
cannot do: an unreadable -src, an unwritable output, a file it writes that is one it reads (``-output`` naming
the model, ``-log_file`` naming ``-src``: stock destroyed the input and exited 0) or another it writes
(``opennmt.run_files``). With our flags on and ``-output`` standard output (``-``, ``/dev/stdout``), the
command's closing prints (``Time w/o python interpreter load/terminate``, ``-profile``'s table) go to stderr, so
stdout holds the translations alone (``adapter.closing``); with none of our flags they stay where stock prints
them.
"""
from __future__ import annotations

import functools
import sys

from onmt_optimal.import_hook import mark, ours
from onmt_optimal.opennmt import repairs
from onmt_optimal.opennmt.repairs import PROG

def apply() -> None:
    import onmt.opts
    from onmt.utils.parse import ArgumentParser

    repairs.apply()
    if not ours(onmt.opts.translate_opts):
        onmt.opts.translate_opts = _with_our_options(onmt.opts.translate_opts)
    _replace_copies("translate_opts", onmt.opts.translate_opts, ("onmt.bin.translate", "onmt.utils.scoring_utils"))

    if not ours(ArgumentParser.validate_translate_opts):
        stock_validate = ArgumentParser.validate_translate_opts.__func__
        ArgumentParser.validate_translate_opts = classmethod(_validating_ours(stock_validate))

    import onmt.translate.translator as translator

    if not ours(translator.build_translator):
        translator.build_translator = _certified(translator.build_translator)
    _replace_copies("build_translator", translator.build_translator,
                    ("onmt.utils.distributed", "onmt.translate.translation_server"))


def _replace_copies(name: str, ours, modules: tuple) -> None:
    """Point each module of ``modules`` already imported whose ``name`` is stock's (a ``from ... import`` copy
    taken before ``apply``) at ``ours``, which wraps stock's."""
    stock = ours.__wrapped__
    for module_name in modules:
        module = sys.modules.get(module_name)
        if module is not None and getattr(module, name, None) is stock:
            setattr(module, name, ours)


def _with_our_options(stock_translate_opts):
    """``onmt.opts.translate_opts`` that also adds our flag group."""
    @functools.wraps(stock_translate_opts)
    def translate_opts(parser):
        from onmt_optimal.opennmt import options  # on first use: ``import onmt`` alone does not load the search

        stock_translate_opts(parser)
        options.add_options(parser)

    return mark(translate_opts)


def _validating_ours(stock_validate):
    """``ArgumentParser.validate_translate_opts`` (the function under the classmethod) that also validates our
    flags' values and Ray's, and prints our warnings. With none of our flags it accepts what stock accepts: the
    checks of the command's files, sizes and device are ``onmt_translate``'s (``_dispatching``), since OpenNMT-py's
    translation server and its training's validation translator call this with placeholders (``-src
    dummy_src``)."""

    @functools.wraps(stock_validate)
    def validate_translate_opts(cls, opt):
        from onmt_optimal.distributed import options as ray_options  # on first use, as in ``_with_our_options``
        from onmt_optimal.opennmt import options
        from onmt_optimal.options import option_warnings

        stock_validate(cls, opt)
        own, flags = options.read_parsed(opt)
        options.validate(own, flags, run=False)
        ray_options.validate(own, flags)
        for warning in option_warnings(own, flags):
            sys.stderr.write(f"{PROG}: warning: {warning}\n")

    return mark(validate_translate_opts)


def _certified(build_translator):
    """``build_translator`` that builds a ``CertifiedTranslator`` (``onmt.translate.translator.Translator`` is
    looked up at call time) and hands it ``-output`` as a ``RunOutput``."""

    @functools.wraps(build_translator)
    def build(opt, device_id=0, report_score=True, logger=None, out_file=None):
        from onmt_optimal.opennmt.output import RunOutput

        _use_certified_translator()
        if out_file is None:
            out_file = RunOutput(opt.output)
        return build_translator(opt, device_id=device_id, report_score=report_score, logger=logger,
                                out_file=out_file)

    return mark(build)


def _use_certified_translator() -> None:
    """``onmt.translate.translator.Translator`` becomes ``CertifiedTranslator``, the first time only (the module
    docstring says why ``apply`` does not do it)."""
    import onmt.translate.translator

    from onmt_optimal.opennmt.translator import CertifiedTranslator

    if onmt.translate.translator.Translator is not CertifiedTranslator:
        onmt.translate.translator.Translator = CertifiedTranslator


def apply_cli() -> None:
    """``onmt_translate``'s command line: its repairs, and ``translate`` dispatching to Ray."""
    import onmt.bin.translate as cli

    repairs.apply_cli()
    if not ours(cli.translate):
        cli.translate = _dispatching(cli.translate)


def _dispatching(stock_translate):
    """``onmt.bin.translate.translate`` (looked up by ``main`` at call time) that first refuses what the
    command's run cannot do (``options.check_command``: an unreadable -src, an -output in a missing directory, a
    file written over one the run reads, before OpenNMT-py's validation and the model load), then hands a run
    with ``-ray_workers N`` to the Ray driver after OpenNMT-py's and our validation, so a bad flag is refused
    before Ray starts."""

    @functools.wraps(stock_translate)
    def translate(opt):
        from onmt_optimal.adapter import closing
        from onmt_optimal.distributed.options import workers
        from onmt_optimal.opennmt.checkpoint import one_line_loads
        from onmt_optimal.opennmt.options import check_command, read_parsed, validate_stock_sequence

        own, flags = read_parsed(opt)
        check_command(own, flags)
        closing.route(sys.modules.get("onmt.bin.translate"), flags.active, getattr(own, "output", None))
        if not workers(flags):
            with one_line_loads():
                return stock_translate(opt)
        validate_stock_sequence(opt)
        from onmt_optimal.distributed.translate import run

        run(opt, prepare=apply)

    return mark(translate)
