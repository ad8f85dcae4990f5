"""The values a scoring rule's numbers may take so that every score and bound stays a finite float32 number.

Scores are float32 tensors (``scoring``); an option value that passes "is a finite number" can still make them
infinite (every hypothesis then ties at ``inf`` and the search answers at random) or NaN. Each function here
returns a one-line complaint (the option named by the caller's ``name``), or None when the value is usable.
``T`` is the largest output length (the toolkit's ``max_length``). The invariants, from float32's largest
finite value ``FLOAT32_MAX = (2 - 2**-23) * 2**127``:

* a length reward ``r`` (Sec. 4: ``log p + r * min(l, |y|)``, ``|y| <= T``) keeps ``r * T <= FLOAT32_MAX / 4``:
  every reward term is finite, and so is the sum of two of them (a score and what a bound adds on top of it),
  each rounded up to float32 (a factor of 2 for the sum, one for the roundings);
* a length penalty ``lp(n, alpha)`` (OpenNMT-py's ``avg`` ``n ** alpha`` and ``wu`` ``((5 + n) / 6) ** alpha``,
  transformers' ``n ** length_penalty``) keeps ``lp(T, alpha)`` and ``1 / lp(T, alpha)`` at most
  ``sqrt(FLOAT32_MAX)``: a normalized score ``log p / lp`` is then finite for every ``|log p|`` up to
  ``sqrt(FLOAT32_MAX)`` (half of float32's exponent range for the penalty, half for the log-probability);
* a length ratio ``rho`` keeps ``l = rho * |x|`` finite for every source float32 counts exactly
  (``|x| <= 2**24``, the largest run of integers a float32 holds): ``rho * 2**24 <= FLOAT32_MAX``; and is a
  normal float32 number (``rho >= 2**-126``), below which ``l`` rounds to 0 (``1e-300`` gave ``l = 0``).
"""
from __future__ import annotations

import math

#: float32's largest finite value (``torch.finfo(torch.float32).max``)
FLOAT32_MAX = (2 - 2**-23) * 2**127
#: float32 counts every integer up to this one exactly (24 significand bits)
FLOAT32_EXACT_INTEGERS = 2**24
#: float32's smallest normal value (``torch.finfo(torch.float32).tiny``): below it a ratio keeps no precision
FLOAT32_TINY = 2.0**-126

#: the base of each length penalty at length ``n``: ``lp(n, alpha) = base(n) ** alpha``
PENALTY_BASES = {
    "avg": lambda n: float(n),
    "wu": lambda n: (5 + n) / 6.0,
}


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value) -> bool:
    """A number that is a finite float (an integer beyond a float's range is not: ``math.isfinite`` would raise)."""
    try:
        return _is_number(value) and math.isfinite(value)
    except OverflowError:
        return False


def _shown(value) -> str:
    """The value as an error line shows it: an integer beyond a float's range by its number of digits."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            float(value)
        except OverflowError:
            return f"an integer of {len(str(abs(value)))} digits, beyond a float's range"
    return repr(value)


def largest_reward(T: int) -> float:
    """The largest length reward whose every term ``r * |y|`` (``|y| <= T``) leaves room for a second one."""
    return FLOAT32_MAX / 4 / max(int(T), 1)


def reward_error(name: str, reward, T: int | None, per: str | None = None) -> str | None:
    """A length reward: a finite number >= 0 with ``reward * T <= FLOAT32_MAX / 4``; with ``per`` (the length
    each request gives, e.g. ``max_tokens``, where ``T`` is not known yet), with ``T = 1``, the least it gives."""
    if not _finite(reward) or reward < 0:
        return f"{name} must be a finite number >= 0 (got {_shown(reward)})"
    if T is not None and reward > largest_reward(T):
        return (f"{name} {reward:g} is too large for float32 scores: {name} * max_length ({T}) must stay below "
                f"a quarter of float32's largest value, so at most {largest_reward(T):.6g}")
    if per is not None and reward > largest_reward(1):
        return (f"{name} {reward:g} is too large for float32 scores at any {per}: at most "
                f"{largest_reward(1):.6g} (divided by a request's {per})")
    return None


def ratio_error(name: str, ratio) -> str | None:
    """A length ratio (None: not given): a finite number with ``2**-126 <= ratio`` and
    ``ratio * 2**24 <= FLOAT32_MAX``."""
    if ratio is None:
        return None
    if not _finite(ratio) or ratio <= 0:
        return f"{name} must be a finite number > 0 (got {_shown(ratio)})"
    if ratio < FLOAT32_TINY:
        return (f"{name} {ratio:g} is too small: below float32's smallest normal number ({FLOAT32_TINY:.6g}), "
                f"l = {name} * |x| rounds to 0 on every line")
    largest = FLOAT32_MAX / FLOAT32_EXACT_INTEGERS
    if ratio > largest:
        return (f"{name} {ratio:g} is too large: l = {name} * |x| must stay a finite float32 number for every "
                f"source, so at most {largest:.6g}")
    return None


def largest_exponent(kind: str, T: int) -> float:
    """The largest ``|alpha|`` with ``lp(T, |alpha|) <= sqrt(FLOAT32_MAX)`` (inf where ``lp`` is 1 at ``T``)."""
    base = PENALTY_BASES[kind](max(int(T), 1))
    return math.inf if base <= 1 else math.log(FLOAT32_MAX) / 2 / math.log(base)


def exponent_error(name: str, alpha, kind: str | None, T: int | None) -> str | None:
    """A length penalty's exponent: a finite number, and with ``kind`` (``avg``, ``wu``; None or ``none``: the
    value is unused, only its finiteness is checked) and ``T``, ``|alpha| <= largest_exponent(kind, T)``."""
    if not _finite(alpha):
        return f"{name} must be a finite number (got {_shown(alpha)})"
    if kind in PENALTY_BASES and T is not None:
        largest = largest_exponent(kind, T)
        if abs(alpha) > largest:
            return (f"{name} must be between -{largest:.4g} and {largest:.4g} for float32 scores (got {alpha:g}): "
                    f"the length penalty at max_length ({T}) and its inverse stay within the square root of "
                    f"float32's largest value")
    return None


def finite_error(name: str, value) -> str | None:
    """Any other float of the score (e.g. a coverage penalty's ``beta``): a finite number."""
    if not _finite(value):
        return f"{name} must be a finite number (got {_shown(value)})"
    return None
