"""The tools' own arguments (``python -m onmt_optimal sweep`` and ``ratio``), parsed and checked before a model
loads: each bad value is one ``OptionError`` line (exit status 2 under ``failures.run``), never a traceback after
the model has loaded, a value silently dropped, or an earlier ``--out`` replaced by a file of no rows.

Values: ``--beams`` (sizes and ranges ``LO-HI``, each size at least 1, no size twice, at most ``MAX_BEAMS``), ``--rewards`` (finite
numbers >= 0 that keep float32 scores finite: ``search.limits``), ``--ratio`` (finite, > 0: ``search.limits``),
``--ray-workers`` and ``--ray-gpus-per-worker`` (>= 0). Files: ``--out`` is never a file the run reads
(``--src``, a ``--refs`` file, or a file named among the translate options: the model, its config), through
symbolic and hard links alike (``file_checks.same_file``), and must be a file that can be written."""
from __future__ import annotations

import math
import os

from onmt_optimal import file_checks
from onmt_optimal.errors import OptionError
from onmt_optimal.search import limits

BEAMS_FORM = "sizes and ranges LO-HI, e.g. 1-20 or 1,5,10"


#: the most beam sizes one sweep takes (each is at least one decode of the whole --src)
MAX_BEAMS = 1000


def parse_beams(spec: str, flag: str = "--beams") -> list[int]:
    """The beam sizes of ``spec`` (``1-20``, ``1,5,10``, ``1-3,8``), in order, at most ``MAX_BEAMS`` of them;
    ``OptionError`` for anything else. The ranges are counted before any is spelled out (``1-100000000`` is
    refused at once)."""
    beams: list[int] = []
    seen: set[int] = set()
    for part in str(spec).split(","):
        lo, dash, hi = part.strip().partition("-")
        try:
            first = int(lo)
            last = int(hi) if dash else first
        except ValueError:
            raise OptionError(f"{flag} {spec}: {part.strip()!r} is not a beam size or a range ({BEAMS_FORM})") \
                from None
        if first < 1:
            raise OptionError(f"{flag} {spec}: a beam holds at least 1 item (got {first})")
        if last < first:
            raise OptionError(f"{flag} {spec}: the range {part.strip()} is empty (write LO-HI with LO <= HI)")
        if len(beams) + last - first + 1 > MAX_BEAMS:
            raise OptionError(f"{flag} {spec} names more than {MAX_BEAMS} beam sizes (the sweep decodes --src once "
                              f"for each): sweep fewer")
        for beam in range(first, last + 1):
            if beam in seen:
                raise OptionError(f"{flag} {spec} names beam size {beam} twice")
            seen.add(beam)
            beams.append(beam)
    return beams


def parse_rewards(spec: str, max_length: int | None = None, flag: str = "--rewards") -> list[float]:
    """The length rewards of ``spec`` (``0,0.5,1``): each a finite number >= 0 that keeps float32 scores finite
    up to ``max_length`` (``search.limits.reward_error``), none twice."""
    rewards: list[float] = []
    for part in str(spec).split(","):
        try:
            reward = float(part)
        except ValueError:
            raise OptionError(f"{flag} {spec}: {part.strip()!r} is not a number (write e.g. 0,0.5,1)") from None
        problem = limits.reward_error(flag, reward, max_length)
        if problem is not None:
            raise OptionError(problem)
        if reward in rewards:
            raise OptionError(f"{flag} {spec} names reward {reward:g} twice")
        rewards.append(reward)
    return rewards


def check_ratio(ratio: float | None, flag: str = "--ratio") -> None:
    problem = limits.ratio_error(flag, ratio)
    if problem is not None:
        raise OptionError(problem)


def check_ray(workers: int, gpus_per_worker: float) -> None:
    if workers < 0:
        raise OptionError(f"--ray-workers must be at least 0 (got {workers}; 0 decodes in this process)")
    if not math.isfinite(gpus_per_worker) or gpus_per_worker < 0:
        raise OptionError(f"--ray-gpus-per-worker must be a finite number >= 0 (got {gpus_per_worker})")


def check_out(out: str, src: str, refs: list[str], translate_args: list[str]) -> None:
    """``--out`` is a writable file and none of those the run reads (``src``, ``refs``, and any existing file
    that ``translate_args`` names)."""
    file_checks.check_writable("--out", out)
    reads = [("--src", src)] + [("--refs", path) for path in refs]
    reads += [(previous, arg) for previous, arg in zip([""] + translate_args, translate_args)
              if not arg.startswith("-") and os.path.isfile(arg)]
    for flag, path in reads:
        if file_checks.same_file(out, path):
            named = (f"the {flag} file" if flag.startswith("--")
                     else f"a file the run reads ({flag + ' ' if flag else ''}{path})")
            raise OptionError(f"--out {out} is {named}: writing it would destroy it; name another file")
