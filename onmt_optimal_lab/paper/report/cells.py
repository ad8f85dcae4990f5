"""How the report writes a number, in one place: every BLEU, difference and step count through ``f2``, every ratio
through ``f3`` ("n/a" for a missing one). Each figure is rounded once, from the one number it comes from
(``stats.test_score``: a test BLEU is scored from its output), so the same figure reads the same everywhere."""
from __future__ import annotations

import math


def fmt_r(r) -> str:
    return "—" if r is None else f"{float(r):g}"


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def printed(x: float, places: int) -> float:
    """``x`` as the report prints it with ``places`` decimals (what a reader can check a label against)."""
    return float(f"{x:.{places}f}")


def f2(x, signed: bool = False) -> str:
    return "n/a" if _missing(x) else f"{x:+.2f}" if signed else f"{x:.2f}"


def f3(x, signed: bool = False) -> str:
    return "n/a" if _missing(x) else f"{x:+.3f}" if signed else f"{x:.3f}"


def pct(x) -> str:
    return "n/a" if _missing(x) else f"{100 * x:.1f}%"


def refs(n: int) -> str:
    return f"{n} reference{'' if n == 1 else 's'}"
