"""A YAML config file (``-config``) looked at before a toolkit reads it, so that a pathological one is one
``OptionError`` line instead of a traceback, a ``MemoryError`` or a multi-megabyte error "line".

Both toolkits load the config with PyYAML's safe loader (OpenNMT-py through configargparse, eole in
``RunBin.build_config``), which follows aliases: a few hundred bytes of nested aliases (a "billion laughs"
file) describe billions of values, which the toolkits then turn into strings or error messages. ``check``
composes the file's node graph (linear in the file: an alias is a reference to its anchor's node) and counts the
values it stands for with every alias expanded, counting each node once per reference through a memo, and
refuses a file whose expansion exceeds ``MAX_VALUES`` or whose size exceeds ``MAX_BYTES`` (both far beyond any
translation config), and one that is not UTF-8 text (``not_text``: a model file given as ``-config``). A file
PyYAML cannot parse is left to the toolkit, which reports it its own way.

``scalar_values`` (OpenNMT-py, whose configargparse passes each top-level value to its flag as ``str(value)``)
refuses a mapping, or a list holding a mapping or a list, where a flag takes a word or a list of words: stock
turned ``stats_file: {a: 1}`` into a file named ``{'a': 1}``; and, for the path-typed options it is given, a
value that is not a string (``stats_file: 5`` named a file ``5``, ``true`` one named ``True``).
"""
from __future__ import annotations

import os

from onmt_optimal.errors import OptionError

#: the most values a config may stand for with its aliases expanded
MAX_VALUES = 100_000
#: the largest config file read (bytes)
MAX_BYTES = 16 * 2**20


def _loader():
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def expanded_size(node, limit: int) -> int:
    """How many values ``node`` stands for with every alias expanded, counted up to just past ``limit``."""
    import yaml

    memo: dict[int, int] = {}

    def size(n) -> int:
        known = memo.get(id(n))
        if known is not None:
            return known
        total = 1
        if isinstance(n, yaml.MappingNode):
            children = [child for pair in n.value for child in pair]
        elif isinstance(n, yaml.SequenceNode):
            children = n.value
        else:
            children = ()
        for child in children:
            total += size(child)
            if total > limit:
                break
        memo[id(n)] = total
        return total

    return size(node)


def check(flag: str, path: str, text: str | None = None) -> None:
    """``OptionError`` for a config at ``path`` (or its ``text``) too large or expanding to too many values."""
    import yaml

    if text is None:
        try:
            if os.path.getsize(path) > MAX_BYTES:
                raise OptionError(f"{flag} {path} is larger than {MAX_BYTES // 2**20} MiB: not a config file")
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            return  # the toolkit says it its own way
        except UnicodeDecodeError as err:
            raise not_text(flag, path, err) from None
    elif len(text) > MAX_BYTES:
        raise OptionError(f"{flag} {path} is larger than {MAX_BYTES // 2**20} MiB: not a config file")
    try:
        node = yaml.compose(text, Loader=_loader())
    except yaml.YAMLError:
        return  # not YAML: the toolkit's own message
    except RecursionError:
        raise OptionError(f"{flag} {path}: its values are nested too deeply to read") from None
    if node is None:
        return
    try:
        size = expanded_size(node, MAX_VALUES)
    except RecursionError:
        raise OptionError(f"{flag} {path}: its values are nested too deeply to read") from None
    if size > MAX_VALUES:
        raise OptionError(f"{flag} {path}: its aliases expand to more than {MAX_VALUES} values (a 'billion "
                          f"laughs' file?): refused")


def not_text(flag: str, path: str, err: UnicodeDecodeError) -> OptionError:
    """The refusal of a config that is not UTF-8 text (a model file given as ``-config``, a UTF-16 file): both
    toolkits' YAML readers ended in a ``UnicodeDecodeError`` traceback."""
    return OptionError(f"{flag} {path} is not a YAML config: byte offset {err.start} is not UTF-8 text "
                       f"({err.reason})")


def scalar_values(flag: str, path: str, parsed: dict, paths: tuple = (), name_of=None) -> None:
    """``OptionError`` for a top-level value that is a mapping, or a list holding a mapping or a list, and for a
    value of a path-typed option (``paths``: their keys) that is not a string (``stats_file: 5`` or ``true`` named a
    file ``5`` or ``True``); ``name_of(key)``: the option a key sets where the toolkit's parser reads more than
    the exact name (an abbreviation), else the key."""
    for key, value in parsed.items():
        if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value)):
            kind = "a mapping" if isinstance(value, dict) else "a list of lists or mappings"
            raise OptionError(f"{flag} {path}: {key} is {kind}, not a value of -{key} (write a word, a number or "
                              f"a list of them)")
    for key, value in parsed.items():
        name = name_of(key) if name_of is not None and isinstance(key, str) else key
        if name in paths and value is not None and not isinstance(value, str):
            raise OptionError(f"{flag} {path}: {key} must be a file name (a string), got {value!r}")


def guarded(stock_parse, flag: str = "-config", paths: tuple = (), name_of=None):
    """configargparse's ``YAMLConfigFileParser.parse(stream)`` (OpenNMT-py's ``-config``) preceded by ``check``
    and ``scalar_values``; a valid config reaches the stock parser unchanged."""
    import io

    import yaml

    def parse(stream):
        path = getattr(stream, "name", "stream")
        try:
            text = stream.read(MAX_BYTES + 1)
        except UnicodeDecodeError as err:
            raise not_text(flag, path, err) from None
        check(flag, path, text)
        try:
            parsed = yaml.load(text, Loader=_loader())
        except yaml.YAMLError:
            parsed = None  # the stock parser says what is wrong
        if isinstance(parsed, dict):
            scalar_values(flag, path, parsed, paths, name_of)
        copy = io.StringIO(text)
        copy.name = path
        return stock_parse(copy)

    return parse
