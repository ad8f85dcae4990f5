"""The named repairs of OpenNMT-py 3.5.1: stock behaviours we change that are not the search.

The search enters OpenNMT-py at its seams (``patch``: the options, their validation, ``build_translator``, the
command's ``translate``). Everything else the plugin replaces outside the server (``server`` holds the server's
own) is here, one function a repair, each saying what stock does and why we change it; ``docs/seams.md`` lists
them with the test that fails when stock changes (and ``tests/e2e/test_stock_fingerprints.py`` fails when a
module holding one is no longer 3.5.1's). Each leaves an attribute that is already ours (``import_hook.ours``) as
it is, so ``apply`` and ``apply_cli`` may run any number of times.

What they import of the plugin, they import when first called, not here: ``apply`` runs when ``onmt`` finishes
importing, possibly in the middle of importing a module of ours (``patch``'s docstring says more).
"""
from __future__ import annotations

import argparse
import functools
import sys

from onmt_optimal.import_hook import around, mark, ours

PROG = "onmt_translate"


def apply() -> None:
    """The repairs every entry point needs (``onmt_translate``, the server, training's validation, the tools)."""
    checkpoints_load_with_weights_only()
    empty_source_lines_are_kept()
    a_source_not_utf8_is_one_line()
    a_bad_checkpoint_is_one_line()


def apply_cli() -> None:
    """The repairs of ``onmt_translate``'s command line."""
    every_fault_is_one_line()
    parser_errors_are_one_line()


def checkpoints_load_with_weights_only() -> None:
    """torch >= 2.6 loads with ``weights_only`` and refuses the ``argparse.Namespace`` an OpenNMT-py checkpoint
    holds (its only non-tensor global): allow that class, so checkpoints load with ``weights_only`` left on."""
    import torch

    if hasattr(torch.serialization, "add_safe_globals"):
        torch.serialization.add_safe_globals([argparse.Namespace])  # a set: adding it again changes nothing


def empty_source_lines_are_kept() -> None:
    """``onmt.inputters.dynamic_iterator.process`` drops empty source lines, so outputs (and statistics) no longer
    line up with the input: keep them at inference (``empty_lines``)."""
    import onmt.inputters.dynamic_iterator as iterator

    if not ours(iterator.process):
        iterator.process = _process_keeping_empty


@mark
def _process_keeping_empty(*args, **kwargs):
    from onmt_optimal.opennmt.empty_lines import process_keeping_empty

    return process_keeping_empty(*args, **kwargs)


def a_source_not_utf8_is_one_line() -> None:
    """``ParallelCorpus.load`` ends a line that is not UTF-8 in a ``UnicodeDecodeError`` traceback: say which
    line, in one line (``source.checked``)."""
    import onmt.inputters.text_corpus

    corpus = onmt.inputters.text_corpus.ParallelCorpus
    if not ours(corpus.load):
        corpus.load = around(corpus.load)(_load_checked)


def _load_checked(load, self, *args, **kwargs):
    from onmt_optimal.adapter import source

    return source.checked(load)(self, *args, **kwargs)


def a_bad_checkpoint_is_one_line() -> None:
    """``onmt.model_builder.load_test_model`` ends a missing file, a directory or a file that is no OpenNMT-py
    checkpoint in a pickle/zip traceback: where onmt-optimal's entry points load (``checkpoint.one_line``), one
    ``CheckpointError`` line saying why; elsewhere stock's."""
    import onmt.model_builder

    if ours(onmt.model_builder.load_test_model):
        return
    load_test_model = onmt.model_builder.load_test_model

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

    onmt.model_builder.load_test_model = mark(load)


def every_fault_is_one_line() -> None:
    """``onmt.bin.translate.main`` ends a fault, a failed write, Ctrl-C or SIGTERM in a traceback: one line on
    stderr and a non-zero exit instead (``failures.run``)."""
    import onmt.bin.translate as cli

    if not ours(cli.main):
        cli.main = around(cli.main)(_one_line_main)


def _one_line_main(stock_main):
    from onmt_optimal import failures

    return failures.run(PROG, stock_main, _describe)


def _describe(err: Exception) -> str | None:
    """The line for a Ray worker's failure (``-ray_workers`` runs only import the cluster), else None."""
    cluster = sys.modules.get("onmt_optimal.distributed.cluster")
    if cluster is not None and isinstance(err, cluster.WorkerError):
        return str(err)
    return None


def parser_errors_are_one_line() -> None:
    """``onmt.bin.translate._get_parser`` builds a configargparse parser that prints its whole usage (over 100
    lines) before the line saying what is wrong, ends a deprecated flag (``-int8``, ``-fp32``: its action raises
    ``ArgumentTypeError``) in a traceback, expands YAML alias bombs, and lets ``-save_config`` overwrite any file,
    the run's inputs too. Ours: one line each, and such a ``-save_config`` refused. OpenNMT-py builds the parser
    itself, with no way to choose its class, so the methods are replaced on the one object it returns."""
    import onmt.bin.translate as cli

    if ours(cli._get_parser):
        return
    get_parser = cli._get_parser

    @functools.wraps(get_parser)
    def parser():
        made = get_parser()

        def error(message):
            from onmt_optimal import failures

            failures.fail(PROG, " ".join(str(message).split()) + f" ({PROG} -h lists the options)", 2)

        stock_write = made.write_config_file

        def write_config_file(parsed_namespace, output_file_paths, *args, **kwargs):
            from onmt_optimal.opennmt.run_files import save_config_problem
            from onmt_optimal.opennmt.options import Settings

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

        made.error = error
        made.parse_known_args = parse_known_args
        guard_config(made)
        made.write_config_file = write_config_file
        return made

    cli._get_parser = mark(parser)


def guard_config(parser) -> None:
    """The parser's YAML ``-config`` reader, preceded by ``yaml_guard`` (alias bombs, mappings as values)."""
    from onmt_optimal.adapter import yaml_guard

    reader = getattr(parser, "_config_file_parser", None)
    if reader is not None and type(reader).__name__ == "YAMLConfigFileParser":
        from onmt_optimal.opennmt.option_reading import PATH_OPTIONS, yaml_dest

        reader.parse = yaml_guard.guarded(reader.parse, paths=PATH_OPTIONS, name_of=yaml_dest)
