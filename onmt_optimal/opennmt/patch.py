"""The one place where OpenNMT-py 3.5.1 is changed. Every change is a substitution of a module attribute.

``apply()``, called when ``onmt`` is first imported (see ``hook``) or explicitly, may run any number of times: it
leaves an attribute that already holds one of our functions (``import_hook.ours``) as it is, so a second call
changes nothing and a call after OpenNMT-py's modules are imported afresh patches the new ones:

* ``torch.load`` safety: allow ``argparse.Namespace``, the only non-tensor global in an OpenNMT checkpoint, so
  checkpoints load on torch >= 2.6 with ``weights_only`` left on;
* ``onmt.opts.translate_opts`` (and its from-imported copies in ``onmt.bin.translate`` and
  ``onmt.utils.scoring_utils``) also adds our flag group, so CLI and YAML accept the flags;
* ``ArgumentParser.validate_translate_opts`` also validates our flags' values (one-line errors, before model
  loading), and with none of them accepts what stock accepts (the server and training call it with placeholder
  files); the checks of the command's own files are ``onmt_translate``'s (``apply_cli``);
* ``onmt.translate.translator.Translator`` becomes ``CertifiedTranslator`` (``build_translator`` looks the
  name up at call time), once, when the first translator is built (see below);
* ``onmt.inputters.dynamic_iterator.process`` keeps empty source lines at inference;
* ``onmt.model_builder.load_test_model`` reports a file that is not an OpenNMT checkpoint in one line, where
  onmt-optimal's entry points load (``checkpoint.one_line``);
* ``onmt.translate.translator.build_translator`` hands the translator ``-output`` as an ``output.RunOutput``:
  written to a temporary file and renamed into place with ``-stats_file`` once the translation has ended
  (``atomic``); stock opens (and so empties) it before the model loads, so a failed load, a missing ``-src``, a
  full disk or Ctrl-C lost the previous output;
* ``onmt.inputters.text_corpus.ParallelCorpus.load`` says which line of ``-src`` is not UTF-8 (``source``).

The translator and the empty-line reader are imported when first called, not by ``apply``: ``apply`` runs
when ``onmt`` finishes importing, which may be in the middle of importing one of them (whichever module of
ours imports OpenNMT-py first). So no module of the package imports this one back: no import cycle. For the
same reason ``Translator`` is replaced by the first ``build_translator`` call rather than by ``apply``.

``apply_cli()`` wraps ``onmt.bin.translate.main`` so those errors, a failed write, Ctrl-C and SIGTERM end the
command with a one-line message and a non-zero exit status instead of a traceback (``failures.run``), makes the
command line's own errors (an unknown flag or YAML key, a value of the wrong type) one line instead of a 100-line
usage text (``onmt.bin.translate._get_parser``), and wraps ``onmt.bin.translate.translate`` so that
``-ray_workers N`` runs on Ray (``onmt_optimal.distributed``; the workers run ``apply`` first, handed to them as
a function), after refusing, before the model loads, what the run cannot do: an unreadable -src, an unwritable
output, a file it writes that is one it reads (``-output`` naming the model, ``-log_file`` naming ``-src``: stock
destroyed the input and exited 0) or another it writes (``opennmt.run_files``). With our flags on and ``-output``
standard output (``-``, ``/dev/stdout``), the command's closing prints (``Time w/o python interpreter
load/terminate``, ``-profile``'s table) go to stderr, so stdout holds the translations alone
(``adapter.closing``); with none of our flags they stay where stock prints them.
"""
from __future__ import annotations

import argparse
import functools
import sys

from onmt_optimal.import_hook import mark, ours

PROG = "onmt_translate"

def apply() -> None:
    import torch

    if hasattr(torch.serialization, "add_safe_globals"):
        torch.serialization.add_safe_globals([argparse.Namespace])  # a set: adding it again changes nothing

    import onmt.opts
    from onmt.utils.parse import ArgumentParser

    if not ours(onmt.opts.translate_opts):
        onmt.opts.translate_opts = _with_our_options(onmt.opts.translate_opts)
    _replace_copies("translate_opts", onmt.opts.translate_opts, ("onmt.bin.translate", "onmt.utils.scoring_utils"))

    if not ours(ArgumentParser.validate_translate_opts):
        stock_validate = ArgumentParser.validate_translate_opts.__func__
        ArgumentParser.validate_translate_opts = classmethod(_validating_ours(stock_validate))

    import onmt.translate.translator

    import onmt.inputters.dynamic_iterator
    import onmt.inputters.text_corpus

    onmt.inputters.dynamic_iterator.process = _process_keeping_empty
    corpus = onmt.inputters.text_corpus.ParallelCorpus
    if not ours(corpus.load):
        corpus.load = mark(_utf8_checked(corpus.load))

    import onmt.model_builder

    if not ours(onmt.model_builder.load_test_model):
        onmt.model_builder.load_test_model = _checked_loader(onmt.model_builder.load_test_model)

    translator = onmt.translate.translator
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
        from onmt_optimal import options as meaning  # on first use, as in ``_with_our_options``
        from onmt_optimal.distributed import options as ray_options

        stock_validate(cls, opt)
        own, flags = meaning.read_parsed(opt)
        meaning.validate(own, flags, run=False)
        ray_options.validate(own, flags)
        for warning in meaning.option_warnings(own, flags):
            sys.stderr.write(f"{PROG}: warning: {warning}\n")

    return mark(validate_translate_opts)


def _utf8_checked(load):
    """``ParallelCorpus.load`` that says which line is not UTF-8 (``source.checked``, imported on first use)."""

    @functools.wraps(load)
    def load_checked(corpus, *args, **kwargs):
        from onmt_optimal.adapter import source

        return source.checked(load)(corpus, *args, **kwargs)

    return load_checked


def _process_keeping_empty(*args, **kwargs):
    """``onmt.inputters.dynamic_iterator.process`` keeping empty source lines (``empty_lines``)."""
    from onmt_optimal.opennmt.empty_lines import process_keeping_empty

    return process_keeping_empty(*args, **kwargs)


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


def _checked_loader(load_test_model):
    """``load_test_model`` that, where onmt-optimal's entry points load (``checkpoint.one_line``), reports a
    missing file or one that is no OpenNMT-py checkpoint as ``CheckpointError``; elsewhere it is stock's."""

    @functools.wraps(load_test_model)
    def load(opt, device_id=0, model_path=None):
        from onmt_optimal.opennmt.checkpoint import CheckpointError, checkpoint_problem, one_line, quiet_load

        if not one_line():
            return load_test_model(opt, device_id, model_path)
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

    return mark(load)


def apply_cli() -> None:
    """Make ``onmt_translate`` end every fault with one line on stderr and a non-zero status."""
    import onmt.bin.translate as cli

    if ours(cli.main):
        return
    stock_main = cli.main

    @functools.wraps(stock_main)
    def main():
        from onmt_optimal import failures

        return failures.run(PROG, stock_main, _describe)

    cli.main = mark(main)
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
    configargparse prints the whole usage (over 100 lines) before the one that says what is wrong, and a
    deprecated flag (``-int8``, ``-fp32``: its action raises ``ArgumentTypeError``) ended in a traceback; and refuses
    a ``-save_config`` (written by the parser, which then exits) that names a file the run reads."""

    @functools.wraps(get_parser)
    def parser():
        made = get_parser()

        def error(message):
            from onmt_optimal import failures

            failures.fail(PROG, " ".join(str(message).split()) + f" ({PROG} -h lists the options)", 2)

        stock_write = made.write_config_file

        def write_config_file(parsed_namespace, output_file_paths, *args, **kwargs):
            from onmt_optimal.opennmt.run_files import save_config_problem
            from onmt_optimal.options import Settings

            problem = save_config_problem(Settings.read(parsed_namespace), output_file_paths)
            if problem:
                from onmt_optimal import failures

                failures.fail(PROG, problem, 2)
            return stock_write(parsed_namespace, output_file_paths, *args, **kwargs)

        stock_parse_known_args = made.parse_known_args

        def parse_known_args(*args, **kwargs):
            try:
                return stock_parse_known_args(*args, **kwargs)
            except argparse.ArgumentTypeError as err:  # a deprecated flag (-int8, -fp32): raised by its action
                error(str(err))

        # OpenNMT-py's _get_parser builds the parser itself, with no way to choose its class: its methods are
        # replaced on this one object
        made.error = error
        made.parse_known_args = parse_known_args
        _guard_config(made)
        made.write_config_file = write_config_file
        return made

    return parser


def _guard_config(parser) -> None:
    """The parser's YAML ``-config`` reader, preceded by ``yaml_guard`` (alias bombs, mappings as values)."""
    from onmt_optimal.adapter import yaml_guard

    reader = getattr(parser, "_config_file_parser", None)
    if reader is not None and type(reader).__name__ == "YAMLConfigFileParser":
        from onmt_optimal.opennmt.server_files import PATH_OPTIONS, yaml_dest

        reader.parse = yaml_guard.guarded(reader.parse, paths=PATH_OPTIONS, name_of=yaml_dest)


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
        from onmt_optimal.opennmt.options import check_command, validate_stock_sequence
        from onmt_optimal.options import read_parsed

        own, flags = read_parsed(opt)
        check_command(own, flags)
        closing.route(sys.modules.get("onmt.bin.translate"), flags.active, getattr(own, "output", None))
        if not workers(flags):
            with one_line_loads():
                return stock_translate(opt)
        validate_stock_sequence(opt)
        from onmt_optimal.distributed.translate import run

        run(opt, prepare=apply)

    return translate
