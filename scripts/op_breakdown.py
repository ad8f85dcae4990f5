"""Where the aten ops of a decoder call go: per source function, stock OpenNMT-py's search against ours.

    python scripts/op_breakdown.py --src dev50.zh -- -config configs/tvsub-zh-en/translate.yaml -batch_size 32
        -beam_size 10 -length_penalty none

Decodes ``--src`` once untimed, then once under ``torch.profiler`` (with stacks) for each of ``--variants``
(``onmt_optimal_lab.bench.variants``: ``stock`` or a ``-stopping`` name, log-probability; ``optimal-core``: through
the search core even at b = 1, where ``optimal`` runs stock's search of one item; ``NAME-host``: with the
search's bookkeeping on the host), and prints the aten events per decoder call (one call of
the translator's ``_decode_and_generate``), grouped by the innermost OpenNMT-py or onmt-optimal function that
issued them, and how many of them the search issued (stock's or ours: ``SEARCH``). ``--torch-topk`` puts
``torch.topk`` in place of the CPU's two-pass top-k, as on an accelerator. ``--kernels`` counts only the ops that
would be kernels on an accelerator (``onmt_optimal_lab.bench.profiling.kernel_like``), the CPU proxy for the CUDA kernels of a search:

    python scripts/op_breakdown.py --src dev50.zh --kernels --torch-topk -- -config ... -batch_size 32 ...

A ``-host`` variant runs here with host and model on the same CPU; its ops are split by where they would run
next to an accelerator (``host_side``): those of the search's bookkeeping on the host are listed apart and left
out of the per-call count, which is then the device's.
"""
from __future__ import annotations

import argparse

from onmt_optimal_lab.bench.breakdown import HOST, SEARCH, breakdown


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", required=True, help="source lines (already clean)")
    parser.add_argument("--variants", default="stock,optimal",
                        help="stock and/or -stopping names; NAME-core: through the search core at b = 1 too")
    parser.add_argument("--top", type=int, default=20, help="functions listed per variant")
    parser.add_argument("--torch-topk", action="store_true", help="torch.topk for every top-k, as on a GPU")
    parser.add_argument("--kernels", action="store_true",
                        help="count kernel-like ops only (onmt_optimal_lab.bench.profiling.kernel_like: no views, allocations "
                             "or wrappers), the CPU proxy for CUDA kernels")
    parser.add_argument("translate_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    import torch

    from onmt_optimal.search import top_k
    from onmt_optimal.opennmt.session import Session

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
