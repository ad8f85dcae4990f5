"""How the report writes a number in a table cell or a sentence ("n/a" for a missing one)."""
from __future__ import annotations

import math


def fmt_r(r) -> str:
    return "—" if r is None else f"{float(r):g}"


def f2(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"


def f3(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def refs(n: int) -> str:
    return f"{n} reference{'' if n == 1 else 's'}"


def signed(x, fmt=".2f") -> str:
    return f"{x:+{fmt}}"

