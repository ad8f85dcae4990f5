"""The files an ``onmt_server`` config makes the server read and write, checked together before it starts.

The server reads its config file (``onmt_server -m``), each model's checkpoints (``"model"``/``"models"``,
joined to the model's root), its tokenizer's files (a SentencePiece ``"model"``, pyonmttok's ``*path``
parameters, joined as OpenNMT-py joins them) and a ``"config"`` of its ``"opt"``; it writes each model's
``stats_file`` and ``log_file`` (both joined to the model's root, appended to request by request) and a
``dump_beam``. ``check_config`` refuses, in one line naming the model (``options.OptionError``), a path-typed
option that is not a string, a ``"transforms"`` (the server applies none: ``TRANSFORMS``), a written file that
is not a regular file or cannot take appended lines (``file_checks.check_appended``), a written file that is a file
some model reads (through links too: ``file_checks.same_file``), and two written files of different kinds that are
one (models may share a ``stats_file``, told apart by the records' ``model``, or a ``log_file``).

Every key of a model's ``"opt"`` is read as OpenNMT-py's parser reads the ``-KEY`` token stock's ``parse_opt``
makes of it (``read_key``: a leading dash, ``OPTION=VALUE`` inside a key, a unique abbreviation, ``hX``), so that
no check is skipped by spelling (``by_dest``). ``CLIENT_OPTIONS`` are the only options a client's
``/clone_model`` may set (``client_problem``): decoding settings, each by its exact name, never a file, a config,
a package to load or an option that makes the parser exit (``server.patch_translation_server``).
"""
from __future__ import annotations

import functools
import json
import os

import yaml

from onmt_optimal import file_checks, serving
from onmt_optimal.adapter import yaml_guard
from onmt_optimal.opennmt import run_files
from onmt_optimal.option_table import OPENNMT, client_options
from onmt_optimal.errors import OptionError, OptionTypeError

#: path-typed options of a model's ``"opt"`` (OpenNMT-py's ``dest`` names)
PATH_OPTIONS = ("save_config", *run_files.READ, *run_files.WRITTEN)
#: what a client's ``/clone_model`` may set, the only options (``client_problem``): decoding settings
CLIENT_OPTIONS = client_options(OPENNMT)
#: the files a served model writes, in the order they are compared
APPENDED = ("stats_file", "log_file")

TRANSFORMS = ('"transforms" in a model\'s "opt" is ignored by onmt_server (it applies no transform to a request): '
              'give the model\'s SentencePiece or pyonmttok model in its "tokenizer" block instead')


def check_opt(opt: dict) -> dict:
    """A model's ``"opt"`` (before OpenNMT-py turns it into a command line), by option (``by_dest``: each key read
    as the parser reads it), with the values of a ``"config"`` YAML it loads where ``opt`` sets none: no
    ``"transforms"``, and each path-typed option a string (``5`` or ``["a", "b"]`` would name a file ``5`` or
    ``['a', 'b']``, a YAML ``true`` one named ``True``). Returns the options by ``dest``."""
    named = by_dest(opt)
    if isinstance(named.get("config"), str):
        for key, value in _config_values(named["config"]).items():
            key = _yaml_key(key, named["config"])
            if key in PATH_OPTIONS:
                file_checks.check_path_type(f"-{key} (in -config {named['config']})", value)
            if key in PATH_OPTIONS or key == "transforms":
                named.setdefault(key, value)
    if "transforms" in named:
        raise OptionError(TRANSFORMS)
    for name in PATH_OPTIONS:
        file_checks.check_path_type(f"-{name}", named.get(name))
    models = named.get("models")
    if not (models is None or isinstance(models, str)
            or isinstance(models, list) and all(isinstance(m, str) for m in models)):
        raise OptionTypeError(f"-model must be a file name or a list of them, got {models!r}")
    return named


def _config_values(path: str) -> dict:
    """The top-level values of the YAML ``path`` a model's ``"config"`` loads (configargparse reads each key as
    the option of that exact name); {} where it cannot be read (the parser then says why, to the operator)."""
    yaml_guard.check("-config", path)  # (a pathological file: one line)
    try:
        with open(path, encoding="utf-8") as f:
            values = yaml.load(f, Loader=yaml_guard._loader())
    except (OSError, ValueError, yaml.YAMLError):
        return {}
    return values if isinstance(values, dict) else {}


def _yaml_key(key, path: str) -> str:
    """The option a key of a ``"config"`` YAML sets: configargparse takes an option's name as it is and hands any
    other key to the parser as ``--KEY=VALUE``, which reads an abbreviation (``stats_fil``) as the option. Such a
    key is refused (``options.OptionError``), so that the checks read the files the YAML names."""
    if not isinstance(key, str) or f"--{key}" in _option_strings():
        return key
    try:
        found = read_token(f"--{key}")
    except _Unreadable:
        found = (True, None, None)
    if found is not None and found[0] is not None:
        raise OptionError(f"-config {path}: its key {_quoted(key)} is not an option's full name, which the parser "
                          f"would read as one: write it in full")
    return key


def yaml_dest(key: str) -> str:
    """The option a key of an OpenNMT-py ``-config`` YAML sets: its own name, or the option configargparse's
    ``--KEY=VALUE`` reads as (an abbreviation: ``stats_fil``); the key itself where none."""
    if f"--{key}" in _option_strings():
        return _option_strings()[f"--{key}"]
    try:
        found = read_token(f"--{key}")
    except _Unreadable:
        return key
    return found[0].dest if found is not None and found[0] is not None else key


class _Unreadable(Exception):
    """A command-line token OpenNMT-py's parser could not read (an ambiguous abbreviation)."""


@functools.lru_cache(maxsize=1)
def _parser():
    """``onmt_translate``'s parser as the server builds it (ours included), whose errors are raised, not printed."""
    import onmt.opts
    from onmt.utils.parse import ArgumentParser

    class Reading(ArgumentParser):
        def error(self, message):
            raise _Unreadable(" ".join(str(message).split()))

    parser = Reading()
    onmt.opts.translate_opts(parser)
    return parser


def read_token(token: str):
    """How OpenNMT-py's parser reads one command-line ``token``: ``(action, option string, explicit argument)``
    for an option (``action`` None: one it does not know), None for a value; argparse's own reading (an exact
    option string, ``OPTION=VALUE``, a unique abbreviation, ``-h`` followed by more letters). Raises
    ``_Unreadable`` for an ambiguous abbreviation."""
    found = _parser()._parse_optional(token)
    if isinstance(found, list):  # (newer Pythons: every reading, each with its separator)
        if len(found) != 1:
            raise _Unreadable(f"ambiguous option: {token}")
        found = found[0]
    if found is None:
        return None
    if len(found) == 4:
        found = (found[0], found[1], found[3])
    return found


def read_key(key) -> tuple[str | None, str | None, str | None]:
    """How OpenNMT-py's server reads a key of a model's ``"opt"``: stock's ``parse_opt`` writes it ``-KEY`` on a
    command line, so ``"-stats_file"``, ``"stats_fil"`` and ``"stats_file=/a/file"`` all set ``stats_file``.
    Returns ``(dest, option string, explicit argument)``: ``dest`` None for a key the parser does not read as an
    option it knows (it refuses it), the explicit argument not None where the key holds a value of its own
    (``OPTION=VALUE``, ``hX``). Raises ``options.OptionError`` for a key it cannot read (not a string, ambiguous)."""
    if key == "models":
        return "models", "-model", None  # stock's own key: "-model" and the model's files
    if not isinstance(key, str) or not key:
        raise OptionError(f"{json.dumps(key)} is not an option's name")
    try:
        found = read_token(f"-{key}")
    except _Unreadable:
        raise OptionError(f"{_quoted(key)} could abbreviate several options' names: write one in full") from None
    if found is None or found[0] is None:
        return None, None, None
    action, option_string, explicit = found
    return action.dest, option_string, explicit


def _quoted(key, most: int = 60) -> str:
    text = json.dumps(key, ensure_ascii=False)
    return text if len(text) <= most else f"{text[:most - 4]}...\""


def by_dest(opt: dict) -> dict:
    """``opt``'s values by the option each key sets, read as OpenNMT-py's parser reads it (``read_key``:
    ``"-log_file"`` sets ``log_file``, ``"model"`` and ``"models"`` set ``models``), the last one winning as on a
    command line; a key the parser does not know stays as it is (the parser refuses it). Refused in one line
    (``options.OptionError``), so that no check can be skipped by spelling: a key that abbreviates an option's
    name (``"stats_fil"``), that holds its value (``"stats_file=/a/file"``, ``"hX"``), that makes the parser exit
    (``"h"``, ``"help"``, ``"save_config"``), and a value that the parser would read as an option
    (``"verbose": "-stats_file=/a/file"``)."""
    named = {}
    for key, value in opt.items():
        dest, option_string, explicit = read_key(key)
        if dest is None:
            named[key] = value
            continue
        if explicit is not None:
            raise OptionError(f"{_quoted(key)} holds a value inside the key (the parser reads it as "
                              f"{option_string} with a value): write \"{dest}\": VALUE")
        if key != "models" and option_string.lstrip("-") != key.lstrip("-"):
            raise OptionError(f"{_quoted(key)} abbreviates an option's name: write it in full")
        if dest in EXITING:
            raise OptionError(f"{_quoted(key)} makes OpenNMT-py's parser {EXITING[dest]} and exit: not an option "
                              f"of a served model")
        _check_value(key, value)
        named[dest] = value
    return named


#: options whose parsing ends the process (stock's server never answered the request, or ended at start-up)
EXITING = {"help": "print its help", "save_config": "write a config file"}


def _check_value(key, value) -> None:
    """A value stock's ``parse_opt`` writes as a token of its own (any but a boolean) must be read as a value:
    ``"verbose": "-stats_file=/a/file"`` would set ``-stats_file``."""
    if isinstance(value, bool):
        return
    for token in ([str(v) for v in value] if key == "models" and isinstance(value, list) else [str(value)]):
        try:
            found = read_token(token)
        except _Unreadable:
            found = (None, token, None)
        if found is not None and found[0] is not None:
            raise OptionError(f"the value of {_quoted(key)} would be read as the option {found[1]}: a value may "
                              f"not start with '-' followed by an option's name")


def client_problem(opt: dict) -> str | None:
    """Why a client's ``"opt"`` (``/clone_model``) is refused, in one line, or None: each key must name, in full and
    as OpenNMT-py's parser reads it (``read_key``), an option of ``CLIENT_OPTIONS``, a switch must be true or
    false and any other value a word or a number that the parser reads as a value. Nothing of a file is said."""
    allowed = CLIENT_OPTIONS
    for key, value in opt.items():
        try:
            dest, option_string, explicit = read_key(key)
        except OptionError as err:
            return str(err)
        if key not in allowed or dest != key or explicit is not None:
            said = "" if dest is None or explicit is not None or option_string.lstrip("-") == key else \
                f" (the parser reads it as {option_string})"
            return (f"{_quoted(key)}{said} is not an option a client may set: a client's \"opt\" sets only "
                    f"{', '.join(allowed)}, each by its name")
        switch = _parser()._option_string_actions[option_string].nargs == 0
        if switch and not isinstance(value, bool):
            return f"\"{dest}\" is a switch: true or false (got {'a list' if value == [] else serving.kind(value)})"
        if not switch and (isinstance(value, bool) or not isinstance(value, (str, int, float))):
            return f"\"{dest}\" takes a word or a number (got {'a list' if value == [] else serving.kind(value)})"
        try:
            _check_value(key, value)
        except OptionError as err:
            return str(err)
    return None


@functools.lru_cache(maxsize=1)
def _option_strings() -> dict:
    """``onmt_translate``'s option strings (``-stats_file``, ``--stats_file``, ...) -> the option's ``dest``, as
    the server's parser registers them (ours included)."""
    return {string: action.dest for string, action in _parser()._option_string_actions.items()}


def check_config(config_file: str) -> None:
    """Everything ``config_file`` makes the server read and write (module docstring), before it reads any of it;
    a refusal is an ``options.OptionError`` naming the model."""
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
    SERVER_READS[:] = reads


#: the files the server started last reads (``check_config``), against which each model's written files are checked
#: again once OpenNMT-py has parsed its options (``check_written``)
SERVER_READS: list = []


def check_written(writes: list) -> None:
    """``writes`` (``(flag, path)`` pairs: the files a model writes, as its parsed options name them, whatever
    spelling or YAML named them) are none of the files the server reads (``SERVER_READS``), by identity."""
    for flag, path in writes:
        if path and isinstance(path, str):
            serving.check_apart(flag, path, [(what if reader is None else f"{reader}'s {what}", read)
                                             for reader, what, read in SERVER_READS])


def _model_files(conf, models_root: str) -> tuple[list, list]:
    """``(reads, writes)`` of one model entry: ``(what, path)`` and ``(flag, path)`` pairs; its own options'
    types and its written files checked (``check_opt``, ``file_checks.check_appended``)."""
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
    reads += [(f"-{name} file", opt[name]) for name in run_files.READ
              if name not in ("config", "src", "tgt") and isinstance(opt.get(name), str) and opt[name]]
    writes = []
    for name in APPENDED:
        if opt.get(name):
            path = os.path.join(root, opt[name])
            file_checks.check_appended(f"-{name}", path)
            writes.append((f"-{name}", path))
    if opt.get("dump_beam"):
        file_checks.check_writable("-dump_beam", opt["dump_beam"])
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
    for i, (model, flag, path) in enumerate(writes):
        def whose(owner, what):
            return what if owner is None else f"the {what}" if owner == model else f"{owner}'s {what}"

        serving.check_apart(flag, path, prefix=f"{model}: ",
                            reads=[(whose(reader, what), read) for reader, what, read in reads],
                            writes=[(other_flag if owner == model else whose(owner, other_flag), other)
                                    for owner, other_flag, other in writes[:i] if other_flag != flag])
