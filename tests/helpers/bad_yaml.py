"""A YAML config that is small as text and huge once read: the alias bomb ("billion laughs") the tiers' config
readers must refuse in one line, before it expands."""
from __future__ import annotations


def alias_bomb(levels: int) -> str:
    """``9**levels`` values: key ``a`` holds 9 strings, and each next key (``b``, ``c``, ...) holds 9 aliases of the
    key before it."""
    keys = "abcdefghijklmnopqrstuvwxyz"[:levels]
    return "\n".join([
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *[f"{n}: &{n} [{','.join(['*' + p] * 9)}]" for p, n in zip(keys, keys[1:])],
    ]) + "\n"
