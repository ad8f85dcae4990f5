"""Where the aten ops of a decoder call go: per source function, stock OpenNMT-py's search against ours.

    python scripts/op_breakdown.py --src dev50.zh -- -config configs/tvsub-zh-en/translate.yaml -batch_size 32
        -beam_size 10 -length_penalty none

Decodes ``--src`` once untimed, then once under ``torch.profiler`` (with stacks) for each of ``--variants``
(``stock`` or a ``-stopping`` name, log-probability; ``optimal-core``: through the search core even at b = 1,
where ``optimal`` runs stock's search of one item; ``NAME-host``: with the search's bookkeeping on the host,
``SearchConfig.host``), and prints the aten events per decoder call (one call of
the translator's ``_decode_and_generate``), grouped by the innermost OpenNMT-py or onmt-optimal function that
issued them, and how many of them the search issued (stock's or ours: ``SEARCH``). ``--torch-topk`` puts
``torch.topk`` in place of the CPU's two-pass top-k, as on an accelerator. ``--kernels`` counts only the ops that
would be kernels on an accelerator (``onmt_optimal.profiling.kernel_like``), the CPU proxy for the issue's
"CUDA kernels of our search <= stock's":

    python scripts/op_breakdown.py --src dev50.zh --kernels --torch-topk -- -config ... -batch_size 32 ...

A ``-host`` variant runs here with host and model on the same CPU; its ops are split by where they would run
next to an accelerator (``host_side``): those of the search's bookkeeping on the host are listed apart and left
out of the per-call count, which is then the device's.
"""
from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


#: the decoding strategy's code: stock's beam search and ours (search, adapter, lineage)
SEARCH = ("onmt/translate/beam_search.py", "onmt/translate/decode_strategy.py", "onmt_optimal/search/",
          "onmt_optimal/lineage.py", "onmt_optimal/opennmt/beam_search.py")


#: the prefix of a function's name whose ops, with the bookkeeping on a host, run there
HOST = "host: "
#: the search core's functions that run on the decode's device when the bookkeeping is on a host (``search.Beam``):
#: the pick and the packing of the step's facts; everything else of ``onmt_optimal/search/`` runs on the host
DEVICE_SIDE = ("): pick", "): _pack")


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
    import torch

    from onmt_optimal.options import SearchConfig
    from onmt_optimal.profiling import kernel_like
    from onmt_optimal.search.registry import STOPPING_RULES, scoring_rule

    translator = session.translator
    core = variant.endswith("-core")  # through the search core even for a beam of one item (search.beam_of_one)
    host = variant.endswith("-host")  # the bookkeeping on the host
    stopping = variant.removesuffix("-core").removesuffix("-host")
    translator.search = (SearchConfig(stock=True, rules=[]) if variant == "stock"
                         else SearchConfig(stock=False, rules=[(scoring_rule(), STOPPING_RULES[stopping]())],
                                           beam_of_one=not core, host="cpu" if host else None))
    session.infer(src)  # warm
    calls = [0]
    inner = translator._decode_and_generate

    def counted(*args, **kwargs):
        calls[0] += 1
        return inner(*args, **kwargs)

    translator._decode_and_generate = counted
    config = torch._C._profiler._ExperimentalConfig(verbose=True)
    try:
        with torch.profiler.profile(with_stack=True, experimental_config=config) as prof:
            session.infer(src)
    finally:
        translator._decode_and_generate = inner
    where = collections.Counter()
    for event in prof.events():
        if not event.name.startswith("aten::") or (kernels and not kernel_like(event)):
            continue
        frames = [f for f in event.stack if ("onmt_optimal" in f or "onmt/" in f) and "torch/" not in f]
        name = frames[0].split("site-packages/")[-1].replace(str(ROOT) + "/", "") if frames else "(other)"
        where[(HOST + name) if host and host_side(frames) else name] += 1
    return calls[0], where


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", required=True, help="source lines (already clean)")
    parser.add_argument("--variants", default="stock,optimal",
                        help="stock and/or -stopping names; NAME-core: through the search core at b = 1 too")
    parser.add_argument("--top", type=int, default=20, help="functions listed per variant")
    parser.add_argument("--torch-topk", action="store_true", help="torch.topk for every top-k, as on a GPU")
    parser.add_argument("--kernels", action="store_true",
                        help="count kernel-like ops only (onmt_optimal.profiling.kernel_like: no views, allocations "
                             "or wrappers), the CPU proxy for CUDA kernels")
    parser.add_argument("translate_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    import torch

    from onmt_optimal.search import top_k
    from onmt_optimal.session import Session

    if args.torch_topk:
        top_k.TopK.__call__ = lambda self, scores, k: torch.topk(scores, k, dim=1)
    session = Session([a for a in args.translate_args if a != "--"])
    what = "kernel-like ops" if args.kernels else "aten ops"
    for variant in args.variants.split(","):
        calls, where = breakdown(session, args.src, variant, args.kernels)
        on_host = sum(n for name, n in where.items() if name.startswith(HOST))
        search = sum(n for name, n in where.items() if any(part in name for part in SEARCH) and not name.startswith(HOST))
        print(f"{variant}: {calls} decoder calls, {(sum(where.values()) - on_host) / calls:.1f} {what} per call, "
              f"{search / calls:.1f} of them in the search" + (f"; {on_host / calls:.1f} more on the host" if on_host else ""))
        for name, n in where.most_common(args.top):
            print(f"  {n / calls:7.1f}  {name}")


if __name__ == "__main__":
    main()
