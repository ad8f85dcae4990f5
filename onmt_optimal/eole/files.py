"""``eole predict`` never writes a file it reads, nor two of its outputs into one file.

eole 0.6.4 opens ``output`` (and ``dump_beam``) for writing after the decode, appends its log to ``log_file`` from
the moment the engine starts, and we write ``stats_file``: named after an input, each of them destroys it (the
model's ``config.json`` or weights, the ``-config`` YAML, ``src``, ``tgt``), and two of them named alike lose one
of the two. ``check`` refuses such a run in one line (``OptionError``) before the model loads, with or without
the plugin's options. "The same file" is ``file_checks.same_file``'s: one path once symbolic links are resolved, or
one inode (a hard link); a stream (``/dev/stdout``, ``/dev/null``, a FIFO) is written in place and may be shared.
A model directory counts as every file in it (``model_path``: one or several), and as itself.
"""
from __future__ import annotations

import os

from onmt_optimal import file_checks
from onmt_optimal.errors import OptionError
from onmt_optimal.flags import Flags
from onmt_optimal.eole.options import Settings

#: the files a run writes: eole's option -> how it writes it
WRITTEN = {"output": "written at the end", "stats_file": "written at the end", "log_file": "appended to from the start",
           "dump_beam": "written at the end"}
#: the files eole predict reads, besides the model directories and the files its transforms read
READ = ("src", "tgt", "ref", "phrase_table", "src_subword_vocab")
#: the options that name a transform's file (eole.transforms; under transforms_configs)
TRANSFORM_FILE_SUFFIXES = ("_model", "_vocab", "_file", "_path", "_table")


def check(own: Settings, flags: Flags, config_file: str | None, also=()) -> None:
    """``OptionError`` when a file the config's run writes (``own``, ``flags``: its records; -stats_file is ours;
    or one of ``also``, ``(flag, path)`` pairs a tool writes beside the run) is one it reads (``config_file``: the
    ``-config`` YAML) or another file it writes."""
    written = [(f"-{name}", path) for name in WRITTEN
               if (path := _path(getattr(flags if name == "stats_file" else own, name)))]
    written += [(flag, path) for flag, path in also if _path(path)]
    _check_apart(own, list(_reads(own, config_file)), written)


def check_served(own: Settings, flags: Flags, config_file: str | None) -> None:
    """``check`` for a model of ``eole serve``: the files the server writes for it (``stats_file``, ``log_file``)
    against every file it reads for it (``config_file``: the server's YAML; the model directory's files; the
    files its transforms read, a tokenizer's model; a ``phrase_table``) and against each other. The server's
    config has no ``src`` or ``output`` (eole fills in placeholders): they are left out."""
    written = [(flag, path) for flag, path in (("-stats_file", _path(flags.stats_file)),
                                               ("-log_file", _path(own.log_file))) if path]
    _check_apart(own, list(_reads(own, config_file, names=("phrase_table",))), written)


def _check_apart(own: Settings, reads: list, written: list) -> None:
    """No file of ``written`` is one of ``reads``, another of ``written``, or a file of a model directory."""
    file_checks.check_distinct(reads, written)
    models = _model_directories(own)
    for flag, path in written:
        for model in models:
            member = _in_model(path, model)
            if member is not None:
                what = "the -model_path directory" if member == "." else f"the file {member} of the -model_path model"
                raise OptionError(f"{flag} {path} is {what} {model}: writing it would destroy the model; name "
                                  f"another file")


def _path(value) -> str | None:
    return value if isinstance(value, str) and value else None


def _reads(own: Settings, config_file: str | None, names=READ):
    if config_file:
        yield "-config", config_file
    for name in names:
        path = _path(getattr(own, name))
        if path:
            yield f"-{name}", path
    transforms = own.transforms_configs
    if transforms is not None:
        dumped = transforms.model_dump() if hasattr(transforms, "model_dump") else transforms
        yield from _transform_files(dumped, "transforms_configs")


def _transform_files(value, where: str):
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str) and item and (key == "path" or str(key).endswith(TRANSFORM_FILE_SUFFIXES)):
                yield f"{where}.{key}", item
            else:
                yield from _transform_files(item, f"{where}.{key}")


def _model_directories(own: Settings) -> list[str]:
    paths = own.model_path
    return [p for p in ([paths] if isinstance(paths, str) else paths or []) if isinstance(p, str) and os.path.isdir(p)]


def _in_model(path: str, model: str) -> str | None:
    """The file of ``model`` (a directory) that ``path`` names, relative to it (``.``: the directory), or None."""
    if os.path.realpath(path) == os.path.realpath(model):
        return "."
    for directory, _, names in os.walk(model):
        for name in names:
            member = os.path.join(directory, name)
            if os.path.isfile(member) and file_checks.same_file(path, member):
                return os.path.relpath(member, model)
    return None
