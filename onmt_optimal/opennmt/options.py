"""The new ``onmt_translate`` flags on OpenNMT-py's command line.

``add_options`` adds two argument groups, made from ``option_table``, to any OpenNMT-py translate parser (CLI
and YAML alike, since OpenNMT-py's configargparse reads YAML keys through the same parser). What the flags mean
(their validation, ``OptionError``, and the search they select, ``Options.from_opt``) is toolkit-free and lives
in ``onmt_optimal.options``, the Ray flags' combinations in ``onmt_optimal.distributed.options``.
``validate_parsed`` is every check of parsed translate options as ``onmt_translate`` runs them: the command's
own (``check_command``: its files, sizes, device), then OpenNMT-py's validation sequence, ours included
(``patch`` adds the value checks of our flags to ``validate_translate_opts``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from onmt_optimal.option_table import OPENNMT, RAY, SEARCH, Option, taken_by

if TYPE_CHECKING:
    from onmt_optimal.flags import Flags
    from onmt_optimal.options import Settings

GROUP_TITLE = "Optimal stopping (onmt-optimal)"
RAY_GROUP_TITLE = "Many workers (onmt-optimal, Ray)"


def check_command(own: Settings, flags: Flags) -> None:
    """What ``onmt_translate`` refuses before OpenNMT-py's own validation and before the model loads, with or
    without our flags: sizes OpenNMT-py crashes on (``validate_sizes``), an unreadable -src, an unwritable
    output, a file the run writes that is one it reads or another it writes (``run_files``), a missing -gpu
    device (``check_run``). Not part of ``validate_translate_opts``, which OpenNMT-py's server and training
    call with placeholder files."""
    from onmt_optimal import options
    from onmt_optimal.opennmt import run_files

    options.validate_sizes(own)
    check_ensemble(own)
    options.check_run(own, flags, reads=run_files.reads(own), writes=run_files.writes(own, flags))


def check_ensemble(own: Settings) -> None:
    """OpenNMT-py 3.5.1's ensemble (several ``-model`` files) averages the models' attention into none a beam can
    index: ``-replace_unk`` and ``-attn_debug`` ended in an IndexError traceback once the models had loaded."""
    from onmt_optimal.errors import OptionError

    models = own.models
    if isinstance(models, list) and len(models) > 1:
        for flag in ("replace_unk", "attn_debug"):
            if getattr(own, flag):
                raise OptionError(f"-{flag} needs one model's attention: OpenNMT-py 3.5.1's ensemble of "
                                  f"{len(models)} -model files has none a beam can use; give one -model")


def validate_stock_sequence(opt) -> None:
    """OpenNMT-py's checks of parsed translate options, in ``onmt_translate``'s order (``onmt.bin.translate``):
    its own and our flags' (``validate_translate_opts``, patched), then the transforms'."""
    from onmt.utils.parse import ArgumentParser

    ArgumentParser.validate_translate_opts(opt)
    ArgumentParser._get_all_transform_translate(opt)
    ArgumentParser._validate_transforms_opts(opt)
    ArgumentParser.validate_translate_opts_dynamic(opt)


def validate_parsed(opt) -> None:
    """Every check ``onmt_translate`` makes of parsed translate options, as it makes them: ``check_command``,
    then ``validate_stock_sequence``."""
    from onmt_optimal.options import read_parsed

    check_command(*read_parsed(opt))
    validate_stock_sequence(opt)


def add_options(parser) -> None:
    """Register the flags on an OpenNMT-py ``ArgumentParser`` (idempotent): OpenNMT-py's options of the table
    (``option_table``), the search's in one group, the Ray flags in another."""
    if any(getattr(a, "dest", None) == "stopping" for a in parser._actions):
        return
    group = parser.add_argument_group(
        GROUP_TITLE,
        "Huang, Zhao & Ma (2017), 'When to Finish? Optimal Beam Search for Neural Text Generation'. "
        "With none of these flags onmt_translate is stock OpenNMT-py.",
    )
    for option in taken_by(OPENNMT, SEARCH):
        _add(group, option)
    ray = parser.add_argument_group(
        RAY_GROUP_TITLE,
        "Spread -src over several processes, GPUs or machines with Ray (pip install ray==2.60.0). The "
        "output and -stats_file are those of one process, byte for byte: each worker decodes exactly the batches "
        "one process would (onmt_optimal/distributed).",
    )
    for option in taken_by(OPENNMT, RAY):
        _add(ray, option)


def _add(group, option: Option) -> None:
    """``option`` as a flag, ``--name``/``-name``: a switch for a bool; the allowed values as the metavar of a
    choice (``validate`` refuses the others, in one line)."""
    kwargs = {"help": option.help_for(OPENNMT)}
    if option.type is bool:
        kwargs["action"] = "store_true"
    else:
        kwargs["default"] = option.default_for(OPENNMT)
        if option.type is not str:
            kwargs["type"] = option.type
        choices = option.choices_for(OPENNMT)
        kwargs["metavar"] = "{" + ",".join(choices) + "}" if choices else option.metavar
    group.add(f"--{option.name}", f"-{option.name}", **kwargs)
