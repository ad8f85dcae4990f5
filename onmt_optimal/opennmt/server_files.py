"""The files an ``onmt_server`` config makes the server read and write, each key of a model's ``"opt"`` read as
OpenNMT-py's parser reads it, and the options a client may set; why each check: docs/serving.md, "onmt_server"."""
from __future__ import annotations

import json
import os

import yaml

from onmt_optimal import file_checks, serving
from onmt_optimal.adapter import yaml_guard
from onmt_optimal.errors import OptionError, OptionTypeError
from onmt_optimal.opennmt import run_files
from onmt_optimal.opennmt.option_reading import PATH_OPTIONS, option_strings, parser, read_token
from onmt_optimal.option_table import OPENNMT, client_options

#: what a client's ``/clone_model`` may set, the only options (``client_problem``): decoding settings
CLIENT_OPTIONS = client_options(OPENNMT)
#: the files a served model writes, in the order they are compared
APPENDED = ("stats_file", "log_file")
#: options whose parsing ends the process (stock's server never answered the request, or ended at start-up)
EXITING = {"help": "print its help", "save_config": "write a config file"}


def check_opt(opt: dict) -> dict:
    """A model's ``"opt"`` by ``dest`` (``by_dest``), with its ``"config"`` YAML's files, checked."""
    named = by_dest(opt)
    if isinstance(named.get("config"), str):
        yaml_guard.check("-config", named["config"])  # (a pathological file: one line)
        try:
            with open(named["config"], encoding="utf-8") as f:
                values = yaml.load(f, Loader=yaml_guard._loader())
        except (OSError, ValueError, yaml.YAMLError):
            values = {}  # (the parser says why)
        for key, value in (values if isinstance(values, dict) else {}).items():
            if isinstance(key, str) and f"--{key}" not in option_strings() and read_token(f"--{key}", (True,))[0]:
                raise OptionError(f"-config {named['config']}: its key {_quoted(key)} is not an option's full name, "
                                  f"which the parser would read as one: write it in full")
            if key in PATH_OPTIONS:
                file_checks.check_path_type(f"-{key} (in -config {named['config']})", value)
            if key in PATH_OPTIONS or key == "transforms":
                named.setdefault(key, value)
    if "transforms" in named:
        raise OptionError('"transforms" in a model\'s "opt" is ignored by onmt_server (it applies no transform to '
                          'a request): give the model\'s SentencePiece or pyonmttok model in its "tokenizer" block '
                          'instead')
    for name in PATH_OPTIONS:
        file_checks.check_path_type(f"-{name}", named.get(name))
    models = named.get("models")
    if not (models is None or isinstance(models, str)
            or isinstance(models, list) and all(isinstance(m, str) for m in models)):
        raise OptionTypeError(f"-model must be a file name or a list of them, got {models!r}")
    return named


def read_key(key) -> tuple[str | None, str | None, str | None]:
    """How the server reads a key of a model's ``"opt"`` (stock writes it ``-KEY``): ``(dest, option string,
    explicit argument)``, ``dest`` None for no option it knows; ``OptionError`` for a key it cannot read."""
    if key == "models":
        return "models", "-model", None  # stock's own key: "-model" and the model's files
    if not isinstance(key, str) or not key:
        raise OptionError(f"{json.dumps(key)} is not an option's name")
    found = read_token(f"-{key}", ambiguous=None)
    if found is None:
        raise OptionError(f"{_quoted(key)} could abbreviate several options' names: write one in full")
    return (None, None, None) if found[0] is None else (found[0].dest, found[1], found[2])


def _quoted(key, most: int = 60) -> str:
    text = json.dumps(key, ensure_ascii=False)
    return text if len(text) <= most else f"{text[:most - 4]}...\""


def by_dest(opt: dict) -> dict:
    """``opt``'s values by ``dest`` (``read_key``), the last winning; a key or value that misleads refused."""
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


def _check_value(key, value) -> None:
    """A value stock's ``parse_opt`` writes as a token of its own (any but a boolean) must be read as a value."""
    if isinstance(value, bool):
        return
    for token in ([str(v) for v in value] if key == "models" and isinstance(value, list) else [str(value)]):
        action, option_string, _ = read_token(token)
        if action is not None:
            raise OptionError(f"the value of {_quoted(key)} would be read as the option {option_string}: a value "
                              f"may not start with '-' followed by an option's name")


def client_problem(opt: dict, model=None) -> str | None:
    """Why a client's ``"opt"`` is refused, in one line (nothing of a file said), or None (docs/serving.md)."""
    try:
        for key, value in opt.items():
            dest, option_string, explicit = read_key(key)
            if key not in CLIENT_OPTIONS or dest != key or explicit is not None:
                said = "" if dest is None or explicit is not None or option_string.lstrip("-") == key else \
                    f" (the parser reads it as {option_string})"
                return (f"{_quoted(key)}{said} is not an option a client may set: a client's \"opt\" sets only "
                        f"{', '.join(CLIENT_OPTIONS)}, each by its name")
            switch = parser()._option_string_actions[option_string].nargs == 0
            got = "a list" if value == [] else serving.kind(value)
            if switch and not isinstance(value, bool):
                return f"\"{dest}\" is a switch: true or false (got {got})"
            if not switch and (isinstance(value, bool) or not isinstance(value, (str, int, float))):
                return f"\"{dest}\" takes a word or a number (got {got})"
            _check_value(key, value)
    except OptionError as err:
        return str(err)
    if model is None:
        return None
    actions, asked = {name: parser()._option_string_actions[f"-{name}"] for name in (*serving.SIZES, "batch_type")}, {}
    for name, action in actions.items():  # as the parser reads it; None where the parser will refuse it
        try:
            asked[name] = (action.type or str)(str(opt[name])) if name in opt else action.default
        except (TypeError, ValueError):
            asked[name] = None
    return serving.size_problem(asked, model, 'the model\'s "opt" in the server\'s config',
                                {name: action.default for name, action in actions.items()})


#: the files the server started last reads (``check_config``), against which each model's written files are checked
#: again once OpenNMT-py has parsed its options (``check_written``)
SERVER_READS: list = []


def check_config(config_file: str) -> None:
    """Everything ``config_file`` makes the server read and write, checked first; refusals name the model."""
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
    for i, (model, flag, path) in enumerate(writes):
        def whose(owner, what):
            return what if owner is None else f"the {what}" if owner == model else f"{owner}'s {what}"

        file_checks.check_apart(flag, path, prefix=f"{model}: ",
                                reads=[(whose(reader, what), read) for reader, what, read in reads],
                                writes=[(other_flag if owner == model else whose(owner, other_flag), other)
                                        for owner, other_flag, other in writes[:i] if other_flag != flag])
    SERVER_READS[:] = reads


def check_written(writes: list) -> None:
    """``writes`` (a model's parsed ``(flag, path)``) are none of the files in ``SERVER_READS``."""
    for flag, path in writes:
        if path and isinstance(path, str):
            file_checks.check_apart(flag, path, [(what if reader is None else f"{reader}'s {what}", read)
                                                 for reader, what, read in SERVER_READS])


def _model_files(conf, models_root: str) -> tuple[list, list]:
    """``(reads, writes)`` of one model entry, ``(what, path)`` and ``(flag, path)``; its options checked."""
    if not isinstance(conf, dict) or not isinstance(conf.get("opt"), dict):
        raise OptionError('a model is an object whose "opt" is an object ({} for the defaults)')
    models = conf.get("models", conf.get("model"))
    if models is None:
        raise OptionError('"model" (or "models") is missing: name its checkpoint')
    opt, root = check_opt(conf["opt"]), conf.get("model_root", models_root)
    check_opt({"models": models})
    if not isinstance(root, str):
        raise OptionError(f'"model_root" must be a directory name (a string), got {root!r}')
    reads = [("-model file", os.path.join(root, m)) for m in ([models] if isinstance(models, str) else models)]
    reads += [(f"tokenizer's {what}", os.path.join(root, path)) for what, path in _tokenizer_files(conf)]
    reads += [(f"-{name} file", opt[name]) for name in run_files.READ  # (-config the first)
              if name not in ("src", "tgt") and isinstance(opt.get(name), str) and opt[name]]
    writes = [(f"-{name}", os.path.join(root, opt[name])) for name in APPENDED if opt.get(name)]
    for flag, path in writes:
        file_checks.check_appended(flag, path)
    if opt.get("dump_beam"):
        file_checks.check_writable("-dump_beam", opt["dump_beam"])
        writes.append(("-dump_beam", opt["dump_beam"]))
    return reads, writes


def _tokenizer_files(conf: dict) -> list[tuple[str, str]]:
    """The files of a model's ``"tokenizer"`` block (one for both sides or one per side), relative to its root."""
    block = conf.get("tokenizer")
    if not isinstance(block, dict):
        return []
    sides = [("src ", block["src"]), ("tgt ", block["tgt"])] if "src" in block and "tgt" in block else [("", block)]
    found = []
    for label, tokenizer in sides:
        if not isinstance(tokenizer, dict):
            continue
        if tokenizer.get("type") == "sentencepiece" and isinstance(tokenizer.get("model"), str):
            found.append((f"{label}SentencePiece model", tokenizer["model"]))
        params = tokenizer.get("params")
        if tokenizer.get("type") == "pyonmttok" and isinstance(params, dict):
            found += [(f"{label}{key}", value) for key, value in params.items()
                      if key.endswith("path") and isinstance(value, str)]
    return found
