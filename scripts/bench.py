#!/usr/bin/env python3
"""Benchmark: our beam search against stock OpenNMT-py's, side by side in one process, and the sweep's cost.

    python scripts/bench.py [--config tvsub|multi30k|transformer|CONFIG.yaml] [--src DEV] [--gpu 0]
    python scripts/bench.py --count-only --lines 50 --beams 10 --batches 32     # work per call only

For beam sizes 1, 5, 10, 20 and batches of 1, 32 and 128 sentences, it decodes the same source with
  stock     OpenNMT-py's own BeamSearch (the translator's stock path), -length_penalty none
  default   our bookkeeping with OpenNMT-py's stopping rule (same output as stock)
  optimal   -stopping optimal
  optimal+r -stopping optimal -length_reward R -length_ratio RHO
  optimal-device  (on a GPU, or with --placement-variant) -stopping optimal with the search's bookkeeping next
            to the model, where ``optimal`` keeps it on the host there (the ``host`` option,
            ``search.transfer.AUTO``: one packed transfer a step instead of its tensor operations on the
            device); on CPU the variant is
            optimal-host, the bookkeeping behind a transfer to the same CPU
  optimal-core  (b = 1 only) -stopping optimal through the search core, where ``optimal`` runs OpenNMT-py's own
            beam search of one item and scores its answer (``search.beam_of_one``): the measure of that special path
after a warm-up. Every batch is decoded by each variant in turn, in an order that rotates from batch to batch
(A/B/C/D, B/C/D/A, ...), so all variants see the machine in the same state; batches of several sentences are
first decoded once untimed, to warm the caches. With ``--order block`` a round decodes the whole source with one
variant, then with the next (their order rotating from round to round), as a user decodes a file: each variant
then runs with its own working set in the caches, which the interleaved order shares out among them (at batch 1
that may cost the search with more operations a few percent). A round is one pass over the source. It reports
medians over rounds: decoded sentences per second (decode time: ``translate_batch``, i.e. encoder, decoding loop, beam
search and results; reading, transforms, batching and writing are shared and not timed), total and mean
decoding steps, the share of decode time spent outside the model's forward pass (encoder, decoder step,
generator and softmax are timed), and each variant's ratio against stock in the same round. Then it times the
r x b sweep (8 rewards x 20 beam sizes) as one decode per beam against 160 separate decodes, and checks that
both give identical numbers.

Per variant and configuration it also counts the work of one decoder call (one call of the translator's
``_decode_and_generate``, i.e. one step of the batch), over one more pass after the timed rounds, with
``onmt_optimal_lab.bench.profiling``: aten ops (``torch.profiler``, host side, the CPU proxy for kernel launches) and, on
CUDA, device kernels, device-to-host copies and host synchronizations (``torch.cuda.set_sync_debug_mode``), each
also as a ratio to stock's. ``--count-only`` does only that pass (no timing, no sweep), the optimisation proxy.

Models (``--config``): ``tvsub`` (the TVsub LSTM, default), ``multi30k`` (the Multi30k bi-LSTM), ``transformer``
(the Multi30k transformer), each with its dev set; or a translate config path with ``--src``/``--refs``.
Writes benchmarks/RESULTS.md (or --out) and a JSON file beside it; ``--count-only`` writes only where --out
says. Progress bars go to stderr. Timings go in no test.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from onmt_optimal_lab.bench.models import DATA, MODELS, UsageError, resolve_models
from onmt_optimal_lab.bench.precision import PRECISIONS
from onmt_optimal_lab.bench.render import combine, report
from onmt_optimal_lab.bench.timers import CLOCKS

ROOT = Path(__file__).resolve().parent.parent


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="tvsub",
                        help=f"comma-separated model names ({', '.join(MODELS)}) or translate config paths "
                             "(default: tvsub)")
    parser.add_argument("--data", default=DATA, help="the shared data folder the model names' dev sets are in")
    parser.add_argument("--src", help="raw dev source (default: the model's dev set)")
    parser.add_argument("--refs", nargs="*",
                        help="raw dev references (for the length ratio and the sweep's BLEU; default: the model's)")
    parser.add_argument("--unescape-moses", action=argparse.BooleanOptionalAction, default=None,
                        help="undo Moses escapes, as the TVsub model's training data was (scripts/prepare_data.py); "
                             "default: on for tvsub")
    parser.add_argument("--lines", type=int, default=320, help="first N source lines")
    parser.add_argument("--beams", default="1,5,10,20")
    parser.add_argument("--batches", default="1,32,128")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per configuration, at least")
    parser.add_argument("--min-seconds", type=float, default=60.0,
                        help="more rounds where a configuration's rounds take less than this in all")
    parser.add_argument("--order", choices=("interleaved", "block"), default="interleaved",
                        help="interleaved: each batch by every variant in turn (the same machine state for all); "
                             "block: the whole source by one variant, then the next, as a user decodes a file "
                             "(each variant's own working set in the caches)")
    parser.add_argument("--reward", type=float, default=1.2)
    parser.add_argument("--sweep-lines", type=int, default=200,
                        help="sweep timing on the first model's first N lines (0: skip)")
    parser.add_argument("--count", action=argparse.BooleanOptionalAction, default=True,
                        help="count the work per decoder call after each configuration's timed rounds")
    parser.add_argument("--count-only", action="store_true",
                        help="only count the work per decoder call: no timing, no sweep; writes only with --out")
    parser.add_argument("--gpu", type=int, default=None, help="GPU id (default: 0 when CUDA is available, else CPU)")
    parser.add_argument("--placement-variant", action=argparse.BooleanOptionalAction, default=None,
                        help="also decode the search's bookkeeping in its other place: optimal-device on a GPU "
                             "(default there), optimal-host on CPU")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default=None,
                        help="what a decode's time is: wall (elapsed; the only one on a GPU) or cpu (this thread's "
                             "CPU time: what the decode itself cost, without the time other jobs or a virtual "
                             "machine's host take the core away; with --threads 1); default: cpu on CPU")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (1: steady timings; more oversubscribe a 2-core machine)")
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32",
                        help="the model's precision, the same for stock and every variant: fp32; fp16 "
                             "(-precision fp16, also on the CPU); int8 (dynamic quantization of the linear and "
                             "LSTM layers, which OpenNMT-py 3.5.1's -precision int8 does not apply)")
    parser.add_argument("--out", help="report (a JSON file beside it); default benchmarks/RESULTS.md, "
                                      "benchmarks/RESULTS-gpu.md on a GPU")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                        help="progress bars on stderr")
    parser.add_argument("--render", metavar="JSON", nargs="+",
                        help="only write --out again from a run's JSON file; several: one report of their rows "
                             "(e.g. a GPU run split over device calls by --batches), with its JSON beside it")
    return parser, parser.parse_args(argv)


def write(out: Path, run: dict, with_json: bool = True) -> None:
    """The report at ``out`` and (``with_json``) the run's JSON beside it, put in place together
    (``atomic.Outputs``): a run killed while writing leaves the earlier pair as it was."""
    from onmt_optimal import atomic

    out.parent.mkdir(parents=True, exist_ok=True)
    files = [("--out", out, report(run["meta"], run["rows"], run["sweep"]))]
    if with_json:
        files.append(("--out (its JSON)", out.with_suffix(".json"), json.dumps(run, indent=1) + "\n"))
    with atomic.Outputs() as outputs:  # (one file per flag)
        for flag, path, text in files:
            with atomic.TextFile(outputs, flag, str(path)) as file:
                file.write(text)
        outputs.commit()


def main(argv=None) -> None:
    parser, args = parse_args(argv)
    if args.render:
        if not args.out:
            parser.error("--render needs --out")
        meta, rows, sweep = combine([json.loads(Path(path).read_text()) for path in args.render])
        write(Path(args.out), {"meta": meta, "rows": rows, "sweep": sweep}, with_json=len(args.render) > 1)
        return
    try:
        beams = [int(b) for b in args.beams.split(",")]
        batches = [int(b) for b in args.batches.split(",")]
    except ValueError:
        parser.error("--beams and --batches take comma-separated integers, e.g. 1,5,10,20")
    if min(beams + batches) < 1 or args.lines < 1:
        parser.error("--beams, --batches and --lines must be at least 1")
    try:
        models = resolve_models(args)
    except UsageError as err:
        parser.error(str(err))

    import torch

    torch.set_num_threads(args.threads)
    if args.gpu is None:
        args.gpu = 0 if torch.cuda.is_available() else -1
    if args.gpu >= 0 and (not torch.cuda.is_available() or args.gpu >= torch.cuda.device_count()):
        parser.error(f"--gpu {args.gpu}: no such CUDA device here (use --gpu -1 for the CPU)")
    cuda = args.gpu >= 0
    if args.clock is None:
        args.clock = "wall" if cuda else "cpu"
    if args.clock == "cpu" and (cuda or args.threads > 1):
        parser.error("--clock cpu times this thread alone: a CPU run with --threads 1 (a GPU's work is not "
                     "this thread's)")
    out = Path(args.out) if args.out else None
    if out is None and not args.count_only:
        out = ROOT / "benchmarks" / ("RESULTS-gpu.md" if cuda else "RESULTS.md")
    from onmt_optimal_lab.bench.measure import measure

    run = measure(models, args, beams, batches, ROOT / "work" / "bench",
                  on_progress=None if out is None else (lambda partial: write(out, partial)))
    if out is not None:
        write(out, run)
        print(f"-> {out}")


if __name__ == "__main__":
    main()
