"""The new ``eole predict`` options, in eole's own config style; eole's options as the plugin reads and checks them.

eole describes its options as pydantic models (``eole/config/``) and builds its ``--flag``/``-flag`` command line
from their fields (``eole.config.cli.add_model``). ``OptimalDecodingConfig`` holds our fields (``FIELDS``, made
from ``option_table``: the options eole takes, their help marked "(onmt-optimal)"); ``config_class()``
makes a subclass of eole's ``PredictConfig`` with them, which ``patch`` gives to ``eole predict`` (so the flags
appear in ``eole predict -h`` and YAML configs accept the keys; stock eole forbids unknown keys).

``Settings`` is eole's record of its own options: those both toolkits have (``options.Settings``) and those only
eole has (``model_path``, ``top_k``/``top_p``, ``self_speculative_decoding``, ``ref``, ``transforms_configs``, its
``world_size`` and ``ratio``); ``read_parsed`` reads it, with ``Flags``, from a config. Validation
(``validate``, run once, by ``Predict.build_config``: ``patch``) is the shared checks of ``onmt_optimal.options``
(they read only option values, no toolkit) among eole's own, in eole's words; flags are named as eole's command
line also spells them (``-stopping``; eole accepts ``--stopping`` and ``-stopping``). Every impossible
combination raises ``OptionError`` with a one-line message.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from onmt_optimal import options as shared
from onmt_optimal.option_table import EOLE, taken_by
from onmt_optimal.errors import OptionError
from onmt_optimal.flags import Flags
from onmt_optimal.options import Options, option_warnings

__all__ = ["FIELDS", "OptionError", "Options", "Settings", "config_class", "option_warnings", "read_parsed",
           "validate"]

PROG = "eole predict"

#: our fields, from the table: name -> (annotation, default, description)
FIELDS = {o.name: (o.annotation, o.default_for(EOLE), "(onmt-optimal) " + o.help_for(EOLE)) for o in taken_by(EOLE)}


@lru_cache(maxsize=None)
def fields_model():
    """``OptimalDecodingConfig``: an eole ``Config`` with our fields (made on first use: it imports pydantic)."""
    from pydantic import Field, create_model

    from eole.config.config import Config

    return create_model("OptimalDecodingConfig", __base__=Config, **{
        name: (annotation, Field(default=default, description=description))
        for name, (annotation, default, description) in FIELDS.items()})


@lru_cache(maxsize=None)
def config_class(base=None):
    """eole's ``PredictConfig`` (or ``base``) with our fields, under the same name (eole's messages name it).
    Ours come first among the bases so that pydantic lists them last (``eole predict -h``); they define no
    method, so eole's validators and settings are ``base``'s."""
    if base is None:
        from eole.config.run import PredictConfig as base
    cls = type(base.__name__, (fields_model(), base), {"__module__": __name__, "__qualname__": base.__qualname__})
    cls.model_rebuild(force=True)
    return cls


@dataclass(frozen=True)
class Settings(shared.Settings):
    """eole's options the plugin reads: the shared ones and eole's own (a config always has them; an argparse
    namespace of eole's command line, read for ``config`` and ``model_path``, has few)."""

    world_size: int | None = 1
    ratio: float = 0.0  # eole's own stopping rule
    top_k: int = 0
    top_p: float = 0.0
    self_speculative_decoding: bool = False
    model_path: object = None  # a path or a list of them
    ref: str | None = None
    transforms_configs: object = None  # the transforms' options, some of them files


def read_parsed(config) -> tuple[Settings, Flags]:
    """eole's config as the plugin's two records, read once where an entry point gets it."""
    return Settings.read(config), Flags.read(config, EOLE)


def validate(own: Settings, flags: Flags, run: bool = True) -> None:
    """``OptionError`` for any value or combination the search cannot honour (see the module docstring), in this
    order: sizes eole fails on with a traceback (``options.validate_sizes``; stock eole answers -max_length 0 with
    empty lines, which stays so where none of our options is given); a -model_path that is no model; with ``run``,
    what ``eole predict``'s run cannot do with its files (``options.check_run``; eole's server, whose config names
    no input, leaves it out); -dump_beam and the search's values (``options.check_decoding``); our sizes
    (``options.check_our_sizes``); -stopping optimal with a coverage penalty (``options.check_stopping``); eole's
    -world_size and -ratio (``_check_own_rules``); sampling (``options.check_sampling``); self-speculative
    decoding. ``own``, ``flags``: the config's records (``read_parsed``)."""
    shared.validate_sizes(own, max_length_zero=not flags.active)
    _check_model_paths(own)
    if run:
        shared.check_run(own, flags)
    shared.check_decoding(own, flags, EOLE)
    if flags.active:
        shared.check_our_sizes(own)
    shared.check_stopping(own, flags)
    _check_own_rules(own, flags)
    shared.check_sampling(flags, EOLE, own.top_k != 0 or own.top_p != 0, "-top_k/-top_p")
    if flags.active and own.self_speculative_decoding:
        raise OptionError("onmt-optimal's options decode with beam search: drop -self_speculative_decoding")


def _check_own_rules(own: Settings, flags: Flags) -> None:
    """eole's options that cannot go with ours, named as eole names them: ``-world_size`` above 1 (eole's
    multi-process inference) and eole's ``-ratio`` stopping rule."""
    world_size = own.world_size or 1
    if flags.active and world_size > 1:
        raise OptionError(f"-world_size {world_size}: onmt-optimal's options decode in one process, not with "
                          f"eole's multi-process inference; drop -world_size")
    if flags.active and own.ratio > 0:
        raise OptionError(f"eole's -ratio stopping rule cannot be combined with onmt-optimal's options "
                          f"({shared.beam_search_options(EOLE, ', ')}, -stats_file); drop -ratio")


def _check_model_paths(own: Settings) -> None:
    """Each ``model_path`` is an eole model directory (``config.json`` in it) or a Hugging Face model ID (eole's
    ``is_hf_model_id``: relative, with a slash, not on this disk, and of the Hub's form, ``hub_id``): eole says so
    only after a ValueError traceback, and took a mistyped local path (``~/models/x``, ``models/en/x``, or
    ``models/x`` where ``models`` is a local directory) for a Hub ID: a traceback, or a minute of retries."""
    import os

    paths = own.model_path
    for path in ([paths] if isinstance(paths, str) else paths or []):
        from eole.models.hf_resolver import is_hf_model_id

        if is_hf_model_id(path) and hub_id(path):
            continue
        if not os.path.exists(path):
            raise OptionError(f"-model_path {path}: no such directory")
        if not os.path.isfile(os.path.join(path, "config.json")):
            raise OptionError(f"-model_path {path} is not an eole model directory (it has no config.json)")
        check_model_files(path)


def hub_id(path: str) -> bool:
    """Whether ``path`` (not on this disk) has a Hugging Face model ID's form, ``org/name`` (letters, digits, ``-``,
    ``_``, ``.``; neither part starting or ending with ``-`` or ``.``), and is no local path: its ``org`` is no
    directory here, and it starts with none of ``/``, ``.``, ``~``."""
    import os
    import re

    part = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
    if not re.fullmatch(f"{part}/{part}", path) or "--" in path or ".." in path:
        return False
    return not os.path.isdir(path.split("/")[0])


def check_model_files(path: str) -> None:
    """The files of model directory ``path`` that eole reads whole, read before the model loads: ``config.json``
    and ``vocab.json`` as JSON, each ``model.*.safetensors`` shard's header and size (``safetensors.safe_open``,
    which reads no weight). A damaged one ended in a JSONDecodeError or SafetensorError traceback once the model
    began to load (a damaged ``config.json``, in a message that blamed ``-config``)."""
    import glob
    import json
    import os

    for name in ("config.json", "vocab.json"):
        member = os.path.join(path, name)
        if not os.path.isfile(member):
            continue
        try:
            with open(member, encoding="utf-8") as f:
                json.load(f)
        except OSError as err:
            raise OptionError(f"-model_path {path}: {name} cannot be read ({err.strerror})") from None
        except UnicodeDecodeError as err:
            raise OptionError(f"-model_path {path}: {name} is not UTF-8 text (byte offset {err.start}): the model "
                              f"is damaged") from None
        except json.JSONDecodeError as err:
            raise OptionError(f"-model_path {path}: {name} is not valid JSON (line {err.lineno}, column "
                              f"{err.colno}: {err.msg}): the model is damaged") from None
    shards = sorted(glob.glob(os.path.join(glob.escape(path), "model.*.safetensors")))
    if shards:
        import safetensors

        for shard in shards:
            try:
                with safetensors.safe_open(shard, framework="pt", device="cpu"):
                    pass
            except Exception as err:  # SafetensorError (a truncated file, a bad header), OSError
                reason = str(err).splitlines()[0] if str(err) else type(err).__name__
                raise OptionError(f"-model_path {path}: {os.path.basename(shard)} is truncated or damaged "
                                  f"({reason})") from None
