"""OpenNMT-py's options as the plugin reads and checks them, and the new ``onmt_translate`` flags on its command line.

``Settings`` is OpenNMT-py's record of its own options: those both toolkits have (``options.Settings``) and those
only OpenNMT-py has (``-model``, ``-gpu``, ``-world_size``, ``-ratio``, ``-random_sampling_topk/topp``, the
transforms' files); ``read_parsed`` reads it, with ``Flags``, where an entry point gets the parsed options.
``validate`` checks them with ours, in OpenNMT-py's words (the shared checks of ``onmt_optimal.options`` among
OpenNMT-py's own); ``patch`` adds it to ``validate_translate_opts``. ``check_command`` is what the command alone
refuses (its files, sizes, device), and ``validate_parsed`` every check of parsed translate options as
``onmt_translate`` runs them: ``check_command``, then OpenNMT-py's validation sequence, ours included.
``add_options`` adds two argument groups, made from ``option_table``, to any OpenNMT-py translate parser (CLI and
YAML alike, since OpenNMT-py's configargparse reads YAML keys through the same parser); the Ray flags'
combinations are ``onmt_optimal.distributed.options``'s.
"""
from __future__ import annotations

from dataclasses import dataclass

from onmt_optimal import options as shared
from onmt_optimal.errors import OptionError
from onmt_optimal.flags import Flags
from onmt_optimal.option_table import OPENNMT, RAY, SEARCH, Option, taken_by

GROUP_TITLE = "Optimal stopping (onmt-optimal)"
RAY_GROUP_TITLE = "Many workers (onmt-optimal, Ray)"


@dataclass(frozen=True)
class Settings(shared.Settings):
    """OpenNMT-py's options the plugin reads: the shared ones and OpenNMT-py's own, each at its default here where
    the parsed options lack it (``options.Settings``)."""

    gpu: int | None = -1
    world_size: int | None = 1
    ratio: float = 0.0  # OpenNMT-py's own stopping rule
    random_sampling_topk: int = 0
    random_sampling_topp: float = 0.0
    models: object = None  # -model: a path or a list of them
    src_subword_model: str | None = None
    tgt_subword_model: str | None = None
    tgt_subword_vocab: str | None = None
    termbase_path: str | None = None
    tm_path: str | None = None
    tags_dictionary_path: str | None = None


def read_parsed(opt) -> tuple[Settings, Flags]:
    """OpenNMT-py's parsed options ``opt`` as the plugin's two records, read once where an entry point gets them."""
    return Settings.read(opt), Flags.read(opt, OPENNMT)


def validate(own: Settings, flags: Flags, run: bool = True) -> None:
    """Raise ``OptionError`` for any value or combination the search cannot honour, and OpenNMT-py's options that
    cannot go with ours, in this order: with ``run``, what the command's run cannot do (``check_run``);
    -world_size above 1; -dump_beam and the search's values (``options.check_decoding``); random sampling with
    beam search's options or -stats_file (``options.check_sampling``); our sizes (``options.check_our_sizes``)
    and OpenNMT-py's -ratio stopping rule, under our options; -stopping optimal with a coverage penalty
    (``options.check_stopping``). The Ray flags are ``distributed.options.validate``'s."""
    if run:
        check_run(own, flags)
    world_size = own.world_size or 1
    if world_size > 1 and flags.active:
        raise world_size_error(world_size)
    shared.check_decoding(own, flags, OPENNMT)
    shared.check_sampling(flags, OPENNMT, own.random_sampling_topk != 0 or own.random_sampling_topp != 0,
                          "-random_sampling_topk/-random_sampling_topp")
    if flags.active:
        shared.check_our_sizes(own)
        if own.ratio > 0:
            raise OptionError("OpenNMT-py's -ratio stopping rule cannot be combined with onmt-optimal's flags; "
                              "drop -ratio")
    shared.check_stopping(own, flags)


def world_size_error(world_size: int) -> OptionError:
    """OpenNMT-py 3.5.1's ``-world_size N`` inference (``InferenceEnginePY``, ``spawned_infer``) starts N processes
    that each initialise a torch.distributed group (NCCL by default) and each decode the *whole* input with the
    whole model (or, under ``-parallel_mode tensor_parallel``, a slice of it), every one writing ``-output``
    and, with our flags, ``-stats_file``: it does not split a corpus. So with our flags it is refused, and
    ``-ray_workers`` (``distributed``) is what splits one."""
    return OptionError(
        f"-world_size {world_size} is not supported with onmt-optimal's flags (OpenNMT-py 3.5.1 runs every "
        f"process over the whole input, each writing -output): use -ray_workers {world_size} instead "
        f"(with -gpu 0 for one GPU per worker)")


def check_run(own: Settings, flags: Flags, reads=None, writes=None) -> None:
    """What the command's run cannot do: its files (``options.check_run``, ``reads`` and ``writes`` as there),
    then a -gpu with no such device (``_check_device``)."""
    shared.check_run(own, flags, reads, writes)
    _check_device(own, flags)


def _check_device(own: Settings, flags: Flags) -> None:
    """``-gpu N`` needs CUDA device N here (with -ray_workers the workers, not this process, need it)."""
    gpu = own.gpu
    if gpu is None or gpu < 0 or flags.ray_workers:
        return
    import torch

    if not torch.cuda.is_available():
        build = "built without CUDA" if torch.version.cuda is None else "sees no CUDA device"
        raise OptionError(f"-gpu {gpu}: this machine's torch {torch.__version__} {build}; drop -gpu to decode "
                          f"on the CPU")
    count = torch.cuda.device_count()
    if gpu >= count:
        raise OptionError(f"-gpu {gpu}: there {'is' if count == 1 else 'are'} {count} CUDA device"
                          f"{'' if count == 1 else 's'} here (numbered from 0)")


def check_command(own: Settings, flags: Flags) -> None:
    """What ``onmt_translate`` refuses before OpenNMT-py's own validation and before the model loads, with or
    without our flags: sizes OpenNMT-py crashes on (``options.validate_sizes``), an ensemble's attention
    (``check_ensemble``), an unreadable -src, an unwritable output, a file the run writes that is one it reads or
    another it writes (``run_files``), a missing -gpu device (``check_run``). Not part of
    ``validate_translate_opts``, which OpenNMT-py's server and training call with placeholder files."""
    from onmt_optimal.opennmt import run_files

    shared.validate_sizes(own)
    check_ensemble(own)
    check_run(own, flags, reads=run_files.reads(own), writes=run_files.writes(own, flags))


def check_ensemble(own: Settings) -> None:
    """OpenNMT-py 3.5.1's ensemble (several ``-model`` files) averages the models' attention into none a beam can
    index: ``-replace_unk`` and ``-attn_debug`` ended in an IndexError traceback once the models had loaded."""
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
