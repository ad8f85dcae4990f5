"""``-ray_workers`` and its companions: their validation, and what to install when Ray is missing.

``validate`` runs with OpenNMT-py's own validation of the command line (``patch.apply``), after the search's
(``opennmt.options.validate``), so a bad combination is refused in one line before Ray starts. The Ray flags are
registered on the command line with the others (``opennmt.options.add_options``).
"""
from __future__ import annotations

import importlib.util
import math

from onmt_optimal.errors import OptionError
from onmt_optimal.flags import Flags
from onmt_optimal.opennmt.options import Settings, world_size_error

RAY_INSTALL = "pip install ray==2.60.0 (the version tested; from a clone of onmt-optimal: pip install '.[ray]')"


def workers(flags: Flags) -> int:
    """``-ray_workers``: 0 decodes in this process."""
    return flags.ray_workers or 0


def uses_new_flags(flags: Flags) -> bool:
    """True when any onmt-optimal flag other than -progress is set."""
    return flags.active or workers(flags) != 0


def validate(own: Settings, flags: Flags) -> None:
    """-ray_workers and its companions, and OpenNMT-py's own -world_size with them (``world_size_error``)."""
    n = workers(flags)
    world_size = own.world_size or 1
    if world_size > 1 and uses_new_flags(flags):
        raise world_size_error(world_size)
    if n < 0:
        raise OptionError(f"-ray_workers must be a number >= 0 (got {n})")
    gpus, timeout = flags.ray_gpus_per_worker, flags.ray_timeout
    if n == 0:
        for flag, value in (("-ray_address", flags.ray_address or None),
                            ("-ray_gpus_per_worker", gpus), ("-ray_timeout", timeout)):
            if value is not None:
                raise OptionError(f"{flag} needs -ray_workers N (N >= 1)")
        return
    if timeout is not None:
        if not flags.ray_address:
            raise OptionError("-ray_timeout bounds the wait for the cluster at -ray_address: give -ray_address too")
        if math.isnan(timeout) or math.isinf(timeout) or timeout <= 0:
            raise OptionError(f"-ray_timeout must be a number of seconds > 0 (got {timeout:g})")
    if gpus is not None and (math.isnan(gpus) or gpus < 0):
        raise OptionError(f"-ray_gpus_per_worker must be a number >= 0 (got {gpus})")
    on_gpu = own.gpu >= 0
    if gpus is not None and gpus > 0 and not on_gpu:
        raise OptionError("-ray_gpus_per_worker needs -gpu 0 (each worker decodes on the GPU Ray gives it)")
    if on_gpu and gpus == 0:
        raise OptionError("-gpu with -ray_gpus_per_worker 0: drop -gpu to decode on CPU workers")
    refused = [(own.random_sampling_topk != 0 or own.random_sampling_topp != 0,
                "random sampling (-random_sampling_topk/-random_sampling_topp) draws from one random stream "
                "across the whole input, which workers cannot share"),
               (bool(own.tgt), "-tgt (gold scores)"),
               (own.attn_debug, "-attn_debug (printed per sentence, by each worker)"),
               (own.align_debug, "-align_debug (printed per sentence, by each worker)"),
               (own.verbose, "-verbose (printed per sentence, by each worker)")]
    for refused_here, what in refused:
        if refused_here:
            raise OptionError(f"-ray_workers does not take {what}: run it in one process (drop -ray_workers)")
    if importlib.util.find_spec("ray") is None:
        raise OptionError(f"-ray_workers needs Ray, which is not installed: {RAY_INSTALL}")
