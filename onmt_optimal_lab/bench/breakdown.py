"""Where the aten ops of a decoder call come from: per source function, for any search variant.

``breakdown`` decodes a source once untimed, then once under ``torch.profiler`` with stacks, and counts the aten
events per innermost OpenNMT-py or onmt-optimal function that issued them (``kernels``: only the ops that would be
kernels on an accelerator, ``profiling.kernel_like``). A ``-host`` variant runs with host and model on the same
CPU; its events are split by where they would run next to an accelerator (``host_side``): those of the search's
bookkeeping on the host are named with the prefix ``HOST``.
"""
from __future__ import annotations

import collections
from pathlib import Path

import torch

from onmt_optimal_lab.bench.variants import search
from onmt_optimal_lab.bench.profiling import counting_calls, kernel_like

ROOT = Path(__file__).resolve().parents[2]


#: the decoding strategy's code: stock's beam search and ours (search core, shared adapter, OpenNMT-py's step)
SEARCH = ("onmt/translate/beam_search.py", "onmt/translate/decode_strategy.py", "onmt_optimal/search/",
          "onmt_optimal/adapter/", "onmt_optimal/opennmt/beam_search.py")


#: the prefix of a function's name whose ops, with the bookkeeping on a host, run there
HOST = "host: "
#: the search core's functions that run on the decode's device when the bookkeeping is on a host (``search.transfer``):
#: the pick and the packing of the step's facts; everything else of ``onmt_optimal/search/`` runs on the host
DEVICE_SIDE = ("): pick", "): pack")


#: frames of Python's own making (3.11 runs a comprehension as a function of its own): they belong to the function
#: that holds them
INNER = ("<listcomp>", "<genexpr>", "<dictcomp>", "<setcomp>", "<lambda>")


def host_side(frames: list[str]) -> bool:
    """An event issued, with the bookkeeping on a host, by the search core on that host: its innermost named
    frame in ``onmt_optimal/search/`` (a comprehension's frame counts as its function's) is not one of
    ``DEVICE_SIDE``."""
    inner = next((f for f in frames if "onmt_optimal/search/" in f and not f.endswith(INNER)), None)
    return inner is not None and not inner.endswith(DEVICE_SIDE)


def breakdown(session, src: str, variant: str, kernels: bool = False) -> tuple[int, collections.Counter]:
    """(decoder calls, aten events per issuing function) of one decode of ``src`` by ``variant``
    (``variants.search``), after an untimed one."""
    translator = session.translator
    host = variant.removesuffix("-core").endswith("-host")  # the bookkeeping on the host
    translator.search = search(variant)
    session.infer(src)  # warm
    config = torch._C._profiler._ExperimentalConfig(verbose=True)
    with counting_calls(translator) as calls:
        with torch.profiler.profile(with_stack=True, experimental_config=config) as prof:
            session.infer(src)
    where = collections.Counter()
    for event in prof.events():
        if not event.name.startswith("aten::") or (kernels and not kernel_like(event)):
            continue
        frames = [f for f in event.stack if ("onmt_optimal" in f or "onmt/" in f) and "torch/" not in f]
        name = frames[0].split("site-packages/")[-1].replace(str(ROOT) + "/", "") if frames else "(other)"
        where[(HOST + name) if host and host_side(frames) else name] += 1
    return calls[0], where
