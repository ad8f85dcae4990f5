"""The files an ``onmt_server`` config makes the server read and write, checked together before it starts.

The server reads its config file (``onmt_server -m``), each model's checkpoints (``"model"``/``"models"``,
joined to the model's root), its tokenizer's files (a SentencePiece ``"model"``, pyonmttok's ``*path``
parameters, joined as OpenNMT-py joins them) and a ``"config"`` of its ``"opt"``; it writes each model's
``stats_file`` and ``log_file`` (both joined to the model's root, appended to request by request) and a
``dump_beam``. ``check_config`` refuses, in one line naming the model (``options.OptionError``), a path-typed
option that is not a string, a ``"transforms"`` (the server applies none: ``TRANSFORMS``), a written file that
is not a regular file or cannot take appended lines (``options.check_appended``), a written file that is a file
some model reads (through links too: ``options._same_file``), and two written files of different kinds that are
one (models may share a ``stats_file``, told apart by the records' ``model``, or a ``log_file``).

``CLIENT_REFUSED`` are the options a client's ``/clone_model`` may not set: every option that names a file (or a
package to load), so that no request chooses a path (``server.patch_translation_server``).
"""
from __future__ import annotations

import functools
import json
import os

from onmt_optimal.opennmt import run_files

#: path-typed options of a model's ``"opt"`` (OpenNMT-py's ``dest`` names)
PATH_OPTIONS = ("save_config", *run_files.READ, *run_files.WRITTEN)
#: what a client's ``/clone_model`` may not set: the files, the checkpoints (a clone keeps its model's), the
#: options that hold a file inside a structure or name a package to load, and ``transforms``
CLIENT_REFUSED = ("model", "models", *PATH_OPTIONS, "src_onmttok_kwargs", "tgt_onmttok_kwargs",
                  "src_spacy_language_model", "tgt_spacy_language_model", "transforms")
#: the files a served model writes, in the order they are compared
APPENDED = ("stats_file", "log_file")

TRANSFORMS = ('"transforms" in a model\'s "opt" is ignored by onmt_server (it applies no transform to a request): '
              'give the model\'s SentencePiece or pyonmttok model in its "tokenizer" block instead')


def check_opt(opt: dict) -> dict:
    """A model's ``"opt"`` (before OpenNMT-py turns it into a command line), by option (``by_dest``): no
    ``"transforms"``, and each path-typed option a string (``5`` or ``["a", "b"]`` would name a file ``5`` or
    ``['a', 'b']``). Returns ``by_dest(opt)``."""
    from onmt_optimal.options import OptionError, OptionTypeError, check_path_type

    named = by_dest(opt)
    if "transforms" in named:
        raise OptionError(TRANSFORMS)
    for name in PATH_OPTIONS:
        check_path_type(f"-{name}", named.get(name))
    models = named.get("models")
    if not (models is None or isinstance(models, str)
            or isinstance(models, list) and all(isinstance(m, str) for m in models)):
        raise OptionTypeError(f"-model must be a file name or a list of them, got {models!r}")
    return named


def by_dest(opt: dict) -> dict:
    """``opt``'s values by the option each key sets (``"-log_file"`` sets ``log_file``, ``"model"`` and
    ``"models"`` set ``models``), the last one winning as on a command line; a key OpenNMT-py's parser does not
    know stays as it is (the parser refuses it). A key that abbreviates an option's name (``"stats_fil"``, which
    argparse would take for ``-stats_file``) is refused: the checks read options by their full names."""
    from onmt_optimal.options import OptionError

    actions = _option_strings()
    named = {}
    for key, value in opt.items():
        flag = f"-{key}"
        if key == "models" or flag in actions:
            named["models" if key == "models" else actions[flag]] = value
        elif any(known.startswith(flag) for known in actions):
            raise OptionError(f'"{key}" abbreviates an option\'s name: write it in full')
        else:
            named[key] = value
    return named


@functools.lru_cache(maxsize=1)
def _option_strings() -> dict:
    """``onmt_translate``'s option strings (``-stats_file``, ``--stats_file``, ...) -> the option's ``dest``, as
    the server's parser registers them (ours included)."""
    import onmt.opts
    from onmt.utils.parse import ArgumentParser

    parser = ArgumentParser()
    onmt.opts.translate_opts(parser)
    return {string: action.dest for string, action in parser._option_string_actions.items()}


def check_config(config_file: str) -> None:
    """Everything ``config_file`` makes the server read and write (module docstring), before it reads any of it;
    a refusal is an ``options.OptionError`` naming the model."""
    from onmt_optimal.options import OptionError

    try:
        with open(config_file, encoding="utf-8") as f:
            confs = json.load(f)
    except OSError as err:
        raise OptionError(f"cannot read it ({err.strerror or err})") from None
    except ValueError as err:
        raise OptionError(f"not JSON ({err})") from None
    if not isinstance(confs, dict) or not isinstance(confs.get("models"), list):
        raise OptionError('not a server config: an object with a list of "models" is expected')
    models_root = confs.get("models_root", "./available_models")
    reads, writes = [(None, "the server's config file (-m)", config_file)], []
    for i, conf in enumerate(confs["models"]):
        name = f"model {conf.get('id', f'#{i}') if isinstance(conf, dict) else f'#{i}'}"
        try:
            model_reads, model_writes = _model_files(conf, models_root)
        except OptionError as err:
            raise OptionError(f"{name}: {err}") from None
        reads += [(name, what, path) for what, path in model_reads]
        writes += [(name, flag, path) for flag, path in model_writes]
    _check_distinct(reads, writes)


def _model_files(conf, models_root: str) -> tuple[list, list]:
    """``(reads, writes)`` of one model entry: ``(what, path)`` and ``(flag, path)`` pairs; its own options'
    types and its written files checked (``check_opt``, ``options.check_appended``)."""
    from onmt_optimal.options import OptionError, _check_writable, check_appended

    if not isinstance(conf, dict) or not isinstance(conf.get("opt"), dict):
        raise OptionError('a model is an object whose "opt" is an object ({} for the defaults)')
    if conf.get("models", conf.get("model")) is None:
        raise OptionError('"model" (or "models") is missing: name its checkpoint')
    opt, root = check_opt(conf["opt"]), conf.get("model_root", models_root)
    check_opt({"models": conf.get("models", conf.get("model"))})
    if not isinstance(root, str):
        raise OptionError(f'"model_root" must be a directory name (a string), got {root!r}')
    models = conf.get("models", conf.get("model"))
    reads = [("-model file", os.path.join(root, m)) for m in ([models] if isinstance(models, str) else models)]
    reads += [(f"tokenizer's {what}", os.path.join(root, path)) for what, path in _tokenizer_files(conf)]
    if opt.get("config"):
        reads.append(("-config file", opt["config"]))
    writes = []
    for name in APPENDED:
        if opt.get(name):
            path = os.path.join(root, opt[name])
            check_appended(f"-{name}", path)
            writes.append((f"-{name}", path))
    if opt.get("dump_beam"):
        _check_writable("-dump_beam", opt["dump_beam"])
        writes.append(("-dump_beam", opt["dump_beam"]))
    return reads, writes


def _tokenizer_files(conf: dict) -> list[tuple[str, str]]:
    """The files of a model's ``"tokenizer"`` block (relative to the model's root, as OpenNMT-py reads them):
    a SentencePiece ``"model"``, pyonmttok's ``*path`` parameters; one block for both sides or one per side."""
    block = conf.get("tokenizer")
    if not isinstance(block, dict):
        return []
    sides = [("src", block["src"]), ("tgt", block["tgt"])] if "src" in block and "tgt" in block else [("", block)]
    found = []
    for side, tokenizer in sides:
        if not isinstance(tokenizer, dict):
            continue
        label = f"{side} " if side else ""
        if tokenizer.get("type") == "sentencepiece" and isinstance(tokenizer.get("model"), str):
            found.append((f"{label}SentencePiece model", tokenizer["model"]))
        params = tokenizer.get("params")
        if tokenizer.get("type") == "pyonmttok" and isinstance(params, dict):
            found += [(f"{label}{key}", value) for key, value in params.items()
                      if key.endswith("path") and isinstance(value, str)]
    return found


def _check_distinct(reads: list, writes: list) -> None:
    """No written file is one some model reads, nor a written file of another kind (``reads``: ``(model, what,
    path)``, model None for the server's own; ``writes``: ``(model, flag, path)``)."""
    from onmt_optimal.options import OptionError, _same_file

    for i, (model, flag, path) in enumerate(writes):
        for reader, what, read in reads:
            if _same_file(path, read):
                whose = what if reader is None else f"the {what}" if reader == model else f"{reader}'s {what}"
                raise OptionError(f"{model}: {flag} {path} is {whose} {read}, which the server reads: writing it "
                                  f"would destroy it; name another file")
        for other_model, other_flag, other in writes[:i]:
            if other_flag != flag and _same_file(path, other):
                owner = "" if other_model == model else f"{other_model}'s "
                raise OptionError(f"{model}: {flag} {path} and {owner}{other_flag} {other} are the same file: one "
                                  f"would write into the other; name two different files")
