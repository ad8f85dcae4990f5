"""How OpenNMT-py's translate parser reads a token or a YAML key: which option it sets, under which name. The
server reads a model's ``"opt"`` with it (``server_files``) and the ``-config`` guard names a YAML key's option
with it (``repairs.guard_config``)."""
from __future__ import annotations

import functools

from onmt_optimal.opennmt import run_files

#: path-typed options (OpenNMT-py's ``dest`` names): a ``-config`` YAML or a model's ``"opt"`` gives each a string
PATH_OPTIONS = ("save_config", *run_files.READ, *run_files.WRITTEN)


def yaml_dest(key: str) -> str:
    """The option a key of an OpenNMT-py ``-config`` YAML sets (configargparse's ``--KEY=VALUE``), else the key."""
    action = read_token(f"--{key}")[0]
    return key if action is None else action.dest


class _Unreadable(Exception):
    """A command-line token OpenNMT-py's parser could not read (an ambiguous abbreviation)."""


@functools.lru_cache(maxsize=1)
def parser():
    """``onmt_translate``'s parser as the server builds it (ours included), whose errors are raised, not printed."""
    import onmt.opts
    from onmt.utils.parse import ArgumentParser

    class Reading(ArgumentParser):
        def error(self, message):
            raise _Unreadable(" ".join(str(message).split()))

    made = Reading()
    onmt.opts.translate_opts(made)
    return made


@functools.lru_cache(maxsize=1)
def option_strings() -> dict:
    """``onmt_translate``'s option strings (``-stats_file``, ``--stats_file``, ...) -> the option's ``dest``."""
    return {string: action.dest for string, action in parser()._option_string_actions.items()}


def read_token(token: str, ambiguous=(None, None, None)) -> tuple:
    """How OpenNMT-py's parser reads ``token``: ``(action, option string, explicit argument)``, ``(None, None,
    None)`` for a value or an option it does not know, ``ambiguous`` for an ambiguous abbreviation."""
    try:
        found = parser()._parse_optional(token)
    except _Unreadable:
        return ambiguous
    if isinstance(found, list):  # (newer Pythons: every reading, each with its separator)
        if len(found) != 1:
            return ambiguous
        found = found[0]
    if found is None:
        return None, None, None
    return found if len(found) != 4 else (found[0], found[1], found[3])
