#!/usr/bin/env python3
"""Benchmark: our beam search against stock OpenNMT-py's, side by side in one process, and the sweep's cost.

    python scripts/bench.py [--config tvsub|multi30k|transformer|CONFIG.yaml] [--src DEV] [--gpu 0]
    python scripts/bench.py --count-only --lines 50 --beams 10 --batches 32     # work per call, < 1 min

For beam sizes 1, 5, 10, 20 and batches of 1, 32 and 128 sentences, it decodes the same source with
  stock     OpenNMT-py's own BeamSearch (the translator's stock path), -length_penalty none
  default   our bookkeeping with OpenNMT-py's stopping rule (same output as stock)
  optimal   -stopping optimal
  optimal+r -stopping optimal -length_reward R -length_ratio RHO
  optimal-device  (on a GPU, or with --placement-variant) -stopping optimal with the search's bookkeeping next
            to the model, where ``optimal`` keeps it on the host there (``search.Beam``'s ``host``, ``AUTO``: one
            packed transfer a step instead of its tensor operations on the device); on CPU the variant is
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
``onmt_optimal.profiling``: aten ops (``torch.profiler``, host side, the CPU proxy for kernel launches) and, on
CUDA, device kernels, device-to-host copies and host synchronizations (``torch.cuda.set_sync_debug_mode``), each
also as a ratio to stock's. ``--count-only`` does only that pass (no timing, no sweep), the optimisation proxy.

Models (``--config``): ``tvsub`` (the TVsub LSTM, default), ``multi30k`` (the Multi30k bi-LSTM), ``transformer``
(the Multi30k transformer), each with its dev set; or a translate config path with ``--src``/``--refs``.
Writes benchmarks/RESULTS.md (or --out) and a JSON file beside it; ``--count-only`` writes only where --out
says. Progress bars go to stderr. Timings go in no test.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

VARIANTS = ["stock", "default", "optimal", "optimal+r"]
#: ``--clock``: what a decode's time is. On a shared or virtual machine the wall clock also counts the moments the
#: core is taken away (other jobs, the hypervisor's steal), which land on one variant's decode and not another's;
#: with one torch thread, the thread's CPU time counts only the decode's own work (here, TVsub batch 32, b = 1,
#: 30 rounds of stock against -stopping optimal: per-round ratios 0.82-1.11 on the wall clock, 0.92-1.17 and an
#: interquartile range half as wide on the CPU clock). A GPU's work is not the thread's: wall only there.
CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}
DATA = "../shared/data"
# --config shortcuts: translate config, raw dev source, raw dev references, Moses-escaped training data
MODELS = {
    "tvsub": ("configs/tvsub-zh-en/translate.yaml", f"{DATA}/tvsub-zh-en/dev.zh", [f"{DATA}/tvsub-zh-en/dev.en"],
              True),
    "multi30k": ("configs/multi30k-de-en/translate.yaml", f"{DATA}/multi30k-de-en/val.de",
                 [f"{DATA}/multi30k-de-en/val.en"], False),
    "transformer": ("configs/multi30k-de-en-transformer/translate.yaml", f"{DATA}/multi30k-de-en/val.de",
                    [f"{DATA}/multi30k-de-en/val.en"], False),
}
# per-call counts kept in each row (``onmt_optimal.profiling.OpCounts.per_call``), with their ratio to stock
COUNTS = ("aten_ops", "kernels", "dtoh", "syncs")


class ForwardTimer:
    """Accumulates the time spent in the model's forward pass (encoder; decoder step + generator + softmax)."""

    def __init__(self, translator, sync, clock=time.perf_counter):
        self.seconds = 0.0
        self.sync = sync
        self.clock = clock  # (``CLOCKS``; ``run_round`` times whole decodes with it too)
        for name in ("_run_encoder", "_decode_and_generate"):
            inner = getattr(translator, name)
            setattr(translator, name, self._timed(inner))

    def _timed(self, fn):
        def wrapper(*args, **kwargs):
            self.sync()
            start = self.clock()
            out = fn(*args, **kwargs)
            self.sync()
            self.seconds += self.clock() - start
            return out

        return wrapper


class PartTimer:
    """Splits the time outside the forward pass: the top-k (``_pick``), the rest of each step (``advance``), the
    examples leaving the batch (``update_finished``), the decoder's state following the beam's back-pointers
    (``map_state``, called by OpenNMT-py's decode loop every step); what is left is the rest of that loop
    (encoder-output reordering, results). Wraps the stock and our beam search classes alike."""

    PARTS = ("select", "step", "finish", "reorder")

    def __init__(self, sync, decoder, clock=time.perf_counter):
        from onmt.translate.beam_search import BeamSearchBase

        from onmt_optimal.search.beam import Beam

        self.seconds = dict.fromkeys(self.PARTS, 0.0)
        self.sync = sync
        self.clock = clock
        from onmt_optimal.lineage import CoreDriven
        from onmt_optimal.opennmt.beam_search import CertifiedBeamSearch

        # ours: advance and update_finished live in lineage.CoreDriven, the toolkit step in the adapter
        for cls in (BeamSearchBase, CoreDriven, CertifiedBeamSearch, Beam):
            for name, part in (("_pick", "select"), ("pick", "select"), ("advance", "step"),
                               ("update_finished", "finish")):
                if name in cls.__dict__:  # a later PartTimer (next model) replaces the earlier one's wrapper
                    fn = cls.__dict__[name]
                    setattr(cls, name, self._timed(getattr(fn, "_bench_inner", fn), part))
        decoder.map_state = self._timed(decoder.map_state, "reorder")

    def reset(self):
        self.seconds = dict.fromkeys(self.PARTS, 0.0)

    def _timed(self, fn, part):
        timer = self

        def wrapper(*args, **kwargs):
            timer.sync()
            start = timer.clock()
            out = fn(*args, **kwargs)
            timer.sync()
            timer.seconds[part] += timer.clock() - start
            return out

        wrapper._bench_inner = fn
        return wrapper

    def split(self):
        """Seconds per part, the top-k taken out of the step that calls it."""
        out = dict(self.seconds)
        out["step"] -= out["select"]
        return out


def search_for(variant: str, reward: float, ratio: float):
    from onmt_optimal.options import SearchConfig
    from onmt_optimal.search.beam import AUTO
    from onmt_optimal.search.registry import STOPPING_RULES, scoring_rule

    if variant == "stock":
        return SearchConfig(stock=True, rules=[])
    logprob = scoring_rule(length_penalty="none")
    rule = {
        "default": (logprob, STOPPING_RULES["default"]()),
        "optimal": (logprob, STOPPING_RULES["optimal"]()),
        "optimal+r": (scoring_rule(length_penalty="none", reward=reward, ratio=ratio), STOPPING_RULES["optimal"]()),
        "optimal-host": (logprob, STOPPING_RULES["optimal"]()),
        "optimal-device": (logprob, STOPPING_RULES["optimal"]()),
        "optimal-core": (logprob, STOPPING_RULES["optimal"]()),
    }[variant]
    # statistics stay in memory (translator._stats); optimal-host and optimal-device: the same search with its
    # bookkeeping on the host (search.Beam's ``host``), fed one packed transfer a step, or next to the model,
    # where the others have it where ``AUTO`` puts it (on the host next to a CUDA model)
    host = {"optimal-host": "cpu", "optimal-device": None}.get(variant, AUTO)
    return SearchConfig(stock=False, rules=[rule], host=host, beam_of_one=variant != "optimal-core")


def run_round(session, timer, parts, src, beam, batch, searches, sync, offset=0, order="interleaved"):
    """Decode ``src`` once through OpenNMT-py's pipeline, every batch with each variant in turn (``order``
    ``"block"``: the whole of ``src`` with one variant, then with the next, as a user decodes a file; the
    variants' order rotates from round to round).

    ``translate_batch`` runs the batch once per variant, in an order that rotates from batch to batch, so that
    every variant sees the machine in the same state (timing drift on a shared machine is seconds long).
    Reading, transforms, batching and writing happen once per batch and are not timed. With batches of more
    than one sentence, an untimed decode first warms the caches: a pass then holds only a few batches, which
    cannot spread the first decode's cold-cache cost evenly over the variants. Returns, per variant:
    decode seconds, forward seconds, the parts of the rest, the 1-best token ids and the statistics."""
    translator = session.translator
    translator.beam_size = beam
    session.opt.batch_size = batch
    session.engine.opt.batch_size = batch
    inner = translator.translate_batch
    out = {v: {"decode": 0.0, "forward": 0.0, "split": dict.fromkeys(PartTimer.PARTS, 0.0), "preds": [],
               "stats": {}} for v in searches}
    count = [offset]
    names = list(searches)
    # one pass of infer() per entry: None decodes each batch with every variant; [v] with variant v alone
    passes = [None]
    if order == "block":
        k = offset % len(names)
        passes = [[v] for v in names[k:] + names[:k]]
    current = [None]  # the entry of passes being decoded

    def translate_batch(batch_, attn_debug):
        block = current[0]
        k = count[0] % len(names)
        count[0] += 1
        results = {}
        if batch > 1 and block is None:  # warm-up, untimed
            translator.search = searches[names[k]]
            inner(batch_, attn_debug)
        for v in block or names[k:] + names[:k]:
            translator.search = searches[v]
            translator._stats = {}
            timer.seconds = 0.0
            parts.reset()
            sync()
            start = timer.clock()
            results[v] = inner(batch_, attn_debug)
            sync()
            out[v]["decode"] += timer.clock() - start
            out[v]["forward"] += timer.seconds
            for part, seconds in parts.split().items():
                out[v]["split"][part] += seconds
            out[v]["stats"].update(translator._stats)
            out[v]["preds"] += [[p.tolist() for p in preds] for preds in results[v]["predictions"]]
        return results[block[0] if block else names[0]]

    translator.translate_batch = translate_batch
    try:
        for entry in passes:
            current[0] = entry
            session.infer(src)
    finally:
        del translator.translate_batch
    return out


def count_round(session, timer, parts, src, beam, batch, searches, cuda, progress=False):
    """Work per decoder call of each variant over one pass of ``src`` (``onmt_optimal.profiling.count``).

    Each variant decodes the whole of ``src`` through OpenNMT-py's pipeline under one profiler (the method of
    ``../shared/gpu/baseline-h100/profile_steps.py``): reading, transforms, batching and writing are counted
    too, the same for every variant. On a GPU, a first untimed pass per variant keeps one-time initialisations
    (a library's first call) out of the counts; aten ops on the host need none. The timers' synchronizations
    are switched off meanwhile (they are the benchmark's, not the search's). Returns ``{variant: OpCounts}``."""
    from tqdm import tqdm

    from onmt_optimal.profiling import count

    translator = session.translator
    translator.beam_size = beam
    session.opt.batch_size = batch
    session.engine.opt.batch_size = batch
    totals = {}
    syncs = timer.sync, parts.sync
    timer.sync = parts.sync = lambda: None
    try:
        for v in tqdm(searches, desc=f"counting batch {batch} b={beam}", leave=False, file=sys.stderr,
                      disable=not progress):
            translator.search = searches[v]
            translator._stats = {}
            if cuda:
                session.infer(src)
            totals[v] = count(lambda: session.infer(src), translator, cuda=cuda)
    finally:
        timer.sync, parts.sync = syncs
    return totals


def count_fields(totals) -> dict[str, dict]:
    """Row fields per variant: per-call counts (None where the device has none), their ratio to stock's, the
    decoder calls counted and the commonest synchronizing source lines."""
    stock = totals["stock"].per_call()
    fields = {}
    for v, counts in totals.items():
        per_call = counts.per_call()
        row = {"decoder_calls": per_call["decoder_calls"]}
        for name in COUNTS:
            row[f"{name}_per_call"] = per_call[name]
            ok = per_call[name] is not None and stock[name]
            row[f"{name}_vs_stock"] = per_call[name] / stock[name] if ok else None
        row["sync_sites"] = counts.sync_sites.most_common(8) if counts.syncs is not None else None
        fields[v] = row
    return fields


def bench_decoding(session, timer, parts, src, n_lines, beams, batches, rounds, reward, ratio, sync,
                   min_seconds=0.0, cuda=False, count=True, time_it=True, progress=True, placement_variant=None,
                   order="interleaved"):
    """Every (batch, beam) configuration: a warm-up round, then ``rounds`` rounds, or more where rounds are
    short, so that each configuration is timed for at least ``min_seconds`` (a round of 1 s has a per-round
    ratio that wanders by several percent; the median of many of them does not). Then (``count``) one more
    pass that counts each variant's work per decoder call (``count_round``), after the timing so that it
    cannot disturb it. ``time_it=False``: the counting pass only. ``placement_variant``: add the bookkeeping in
    its other place, ``optimal-device`` on CUDA and ``optimal-host`` on CPU (None: on CUDA only, where the
    bookkeeping's place matters)."""
    from tqdm import tqdm

    from onmt_optimal.lines import ordered

    rows = []
    other = "optimal-device" if cuda else "optimal-host"
    every = VARIANTS + ([other] if (cuda if placement_variant is None else placement_variant) else [])
    configurations = [(batch, beam) for batch in batches for beam in beams]
    outer = tqdm(configurations, desc="configurations", file=sys.stderr, disable=not progress)
    for batch, beam in outer:
        variants = every + (["optimal-core"] if beam == 1 else [])
        outer.set_postfix_str(f"batch {batch} b={beam}")
        searches = {v: search_for(v, reward, ratio) for v in variants}
        config_rows = {v: {"batch": batch, "beam": beam, "variant": v} for v in variants}
        if time_it:
            bar = tqdm(total=rounds + 1, desc=f"rounds batch {batch} b={beam}", leave=False, file=sys.stderr,
                       disable=not progress)
            start = time.perf_counter()
            run_round(session, timer, parts, src, beam, batch, searches, sync, order=order)  # warm-up
            warm_up = time.perf_counter() - start
            n_rounds = max(rounds, math.ceil(min_seconds / warm_up))
            bar.total = n_rounds + 1
            bar.update()
            samples = []
            for k in range(n_rounds):
                samples.append(run_round(session, timer, parts, src, beam, batch, searches, sync, offset=k,
                                         order=order))
                bar.update()
            bar.close()
            last = samples[-1]
            assert last["default"]["preds"] == last["stock"]["preds"], "our default search must give stock's output"
            assert last["optimal"]["preds"] == last["stock"]["preds"], "log-prob optimal must give stock's 1-best"
            if "optimal-core" in last:
                assert last["optimal-core"]["preds"] == last["optimal"]["preds"], "a beam of one: the core must agree"
            if other in last:
                assert last[other]["preds"] == last["optimal"]["preds"], "the bookkeeping's place must not matter"
            steps = {v: [s["steps"] for s in ordered(last[v]["stats"])] for v in variants if v != "stock"}
            steps["stock"] = steps["default"]  # same beam, same stopping rule, same output (checked above)
            for v in variants:
                decode = [r[v]["decode"] for r in samples]
                ratios = [r["stock"]["decode"] / r[v]["decode"] for r in samples]
                config_rows[v].update({
                    "sent_per_s": n_lines / statistics.median(decode),
                    "seconds_median": statistics.median(decode),
                    "speed_vs_stock": statistics.median(ratios),
                    "speed_vs_stock_range": [min(ratios), max(ratios)],
                    "outside_forward": statistics.median([1 - r[v]["forward"] / r[v]["decode"] for r in samples]),
                    **{f"share_{p}": statistics.median([r[v]["split"][p] / r[v]["decode"] for r in samples])
                       for p in PartTimer.PARTS},
                    "total_steps": sum(steps[v]), "mean_steps": sum(steps[v]) / len(steps[v]),
                    "rounds": len(samples),
                })
        if count:
            totals = count_round(session, timer, parts, src, beam, batch, searches, cuda, progress)
            for v, fields in count_fields(totals).items():
                config_rows[v].update(fields)
        for v in variants:
            row = config_rows[v]
            rows.append(row)
            text = f"batch {batch:3d} beam {beam:2d} {v:14s}"
            if time_it:
                text += (f" {row['sent_per_s']:8.1f} sent/s  x{row['speed_vs_stock']:.3f} vs stock ({_range(row)})"
                         f"  outside forward {100 * row['outside_forward']:.1f}%  mean steps {row['mean_steps']:.2f}")
            if count:
                text += f"  per call: {_counts_text(row)}"
            tqdm.write(text)
            sys.stdout.flush()
    return rows


def _counts_text(row) -> str:
    """``aten 771.0 (x1.23)  kernels ...`` for the counts a row has."""
    parts = []
    for name, label in (("aten_ops", "aten ops"), ("kernels", "kernels"), ("dtoh", "DtoH"), ("syncs", "syncs")):
        value = row.get(f"{name}_per_call")
        if value is not None:
            ratio = row.get(f"{name}_vs_stock")
            parts.append(f"{label} {value:.1f}" + ("" if ratio is None else f" (x{ratio:.3f})"))
    return "  ".join(parts) + f"  [{row['decoder_calls']} calls]"


def bench_sweep(session, src, refs, beams, rewards, ratio, progress=False, clock=time.perf_counter):
    from onmt_optimal.sweep import Decoder, run_sweep

    decoders = [Decoder("optimal" if r == 0 else "optimal_reward", "optimal",
                        "logprob" if r == 0 else "bounded_reward", None if r == 0 else r) for r in rewards]
    start = clock()
    joint = run_sweep(session, src, refs, beams, decoders, ratio, progress=progress)["rows"]
    joint_s = clock() - start
    start = clock()
    separate = []
    for decoder in decoders:
        separate += run_sweep(session, src, refs, beams, [decoder], ratio, progress=progress)["rows"]
    separate_s = clock() - start
    key = lambda r: (r["family"], r["reward"] or 0.0, r["beam"])  # noqa: E731
    exact = ("bleu", "length_ratio", "mean_steps", "mean_length", "stop_reasons")
    pairs = list(zip(sorted(joint, key=key), sorted(separate, key=key)))
    identical = all(a[k] == b[k] for a, b in pairs for k in exact)
    # model scores: the forward pass sees other batch sizes once examples leave at other steps, so float32
    # sums of the same hypotheses can differ in the last digits
    score_gap = max(abs(a[k] - b[k]) for a, b in pairs for k in ("mean_log_prob", "mean_score"))
    return {"configurations": len(decoders) * len(beams), "joint_seconds": joint_s,
            "separate_seconds": separate_s, "speedup": separate_s / joint_s, "identical": identical,
            "max_mean_score_gap": score_gap}


def resolve_models(args, parser) -> list[dict]:
    """``--config`` names (``MODELS``) or one translate config path; the dev data comes from the name, or from a
    path's matching name, unless ``--src``/``--refs`` say otherwise. One clear line on a bad name or path."""
    models = []
    for item in [c.strip() for c in args.config.split(",") if c.strip()]:
        name = item if item in MODELS else next((n for n, m in MODELS.items() if m[0] == item), None)
        if name is None and not Path(item).is_file():
            parser.error(f"--config {item}: neither a model name ({', '.join(MODELS)}) nor a config file")
        config, src, refs, unescape = MODELS[name] if name else (item, None, None, False)
        src, refs = args.src or src, args.refs or refs
        if src is None or not refs:
            parser.error(f"--config {item}: give its dev data with --src and --refs")
        src = src.replace(DATA, args.data, 1) if not args.src else src
        refs = [r.replace(DATA, args.data, 1) for r in refs] if not args.refs else refs
        for path in [config, src, *refs, _model_path(config)]:
            if path and not Path(path).is_file():
                parser.error(f"--config {item}: no such file: {path}")
        models.append({"name": name or Path(item).parent.name, "config": config, "src": src, "refs": refs,
                       "unescape_moses": unescape if args.unescape_moses is None else args.unescape_moses})
    if not models:
        parser.error("--config: no model given")
    return models


def _model_path(config: str) -> str | None:
    """The checkpoint a translate config names (None if it names none, e.g. a -model flag comes later)."""
    import yaml

    try:
        model = (yaml.safe_load(Path(config).read_text(encoding="utf-8")) or {}).get("model")
    except (OSError, yaml.YAMLError, AttributeError):
        return None
    return model[0] if isinstance(model, list) and model else model if isinstance(model, str) else None


def main() -> None:
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
    parser.add_argument("--out", help="report (a JSON file beside it); default benchmarks/RESULTS.md, "
                                      "benchmarks/RESULTS-gpu.md on a GPU")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                        help="progress bars on stderr")
    parser.add_argument("--render", metavar="JSON", nargs="+",
                        help="only write --out again from a run's JSON file; several: one report of their rows "
                             "(e.g. a GPU run split over device calls by --batches), with its JSON beside it")
    args = parser.parse_args()
    if args.render:
        if not args.out:
            parser.error("--render needs --out")
        runs = [json.loads(Path(path).read_text()) for path in args.render]
        meta, rows = runs[0]["meta"], [row for run in runs for row in run["rows"]]
        sweep = next((run["sweep"] for run in runs if run["sweep"]), None)
        if len(runs) > 1:  # one report of parts, e.g. batches or models run by separate device calls
            models = {m["name"]: m for run in runs for m in run["meta"].get("models", [])}
            meta = dict(meta, sweep_lines=next((r["meta"]["sweep_lines"] for r in runs if r["sweep"]), 0),
                        models=list(models.values()) or meta.get("models"))
            Path(args.out).with_suffix(".json").write_text(
                json.dumps({"meta": meta, "rows": rows, "sweep": sweep}, indent=1) + "\n")
        Path(args.out).write_text(report(meta, rows, sweep))
        return
    try:
        beams = [int(b) for b in args.beams.split(",")]
        batches = [int(b) for b in args.batches.split(",")]
    except ValueError:
        parser.error("--beams and --batches take comma-separated integers, e.g. 1,5,10,20")
    if min(beams + batches) < 1 or args.lines < 1:
        parser.error("--beams, --batches and --lines must be at least 1")
    models = resolve_models(args, parser)

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
    clock = CLOCKS[args.clock]
    out = Path(args.out) if args.out else None
    if out is None and not args.count_only:
        out = ROOT / "benchmarks" / ("RESULTS-gpu.md" if cuda else "RESULTS.md")
    from onmt_optimal.length_ratio import estimate_with_model
    from onmt_optimal.session import Session

    from reproduce import clean_copy

    threads = f"{args.threads} thread{'s' if args.threads > 1 else ''}"
    device = torch.cuda.get_device_name(args.gpu) if cuda else f"CPU ({threads})"
    machine = f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}"
    if cuda:
        machine += f", CUDA {torch.version.cuda}"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    rows, sweep, metas = [], None, []
    with contextlib.ExitStack() as scratch:  # the runs' folders, removed however the run ends
        for m, model in enumerate(models):
            # this run's own folder: two runs at once (e.g. a --count-only beside a full run) must not rewrite each
            # other's source files mid-decode
            (ROOT / "work" / "bench").mkdir(parents=True, exist_ok=True)
            work = Path(scratch.enter_context(tempfile.TemporaryDirectory(prefix=f"{model['name']}-",
                                                                          dir=ROOT / "work" / "bench")))
            # cleaned as the training data was (whitespace, Moses escapes), like scripts/reproduce.py does
            clean_src = clean_copy(model["src"], work / "dev.src", model["unescape_moses"])
            clean_refs = [clean_copy(r, work / f"dev.ref{i}", model["unescape_moses"])
                          for i, r in enumerate(model["refs"])]
            lines = clean_src.read_text(encoding="utf-8").splitlines()
            src = work / "bench.src"
            # each batch is decoded once per variant: an empty line would be answered only once (empty_lines.take)
            kept = [line for line in lines if line.strip()][: args.lines]
            src.write_text("\n".join(kept) + "\n", encoding="utf-8")
            session = Session(["-config", model["config"], "-gpu", str(args.gpu)])
            timer = ForwardTimer(session.translator, sync, clock)
            parts = PartTimer(sync, session.translator.model.decoder, clock)
            refs = [r.read_text(encoding="utf-8").splitlines() for r in clean_refs]
            ratio = estimate_with_model(session, lines, refs).corpus
            if args.progress:
                print(f"model {model['name']} ({model['config']}), {device}", file=sys.stderr)
            for row in bench_decoding(session, timer, parts, src, len(kept), beams, batches, args.rounds, args.reward,
                                      ratio, sync, args.min_seconds, cuda=cuda, count=args.count or args.count_only,
                                      time_it=not args.count_only, progress=args.progress,
                                      placement_variant=args.placement_variant, order=args.order):
                rows.append({"model": model["name"], **row})
            if m == 0 and args.sweep_lines > 0 and not args.count_only:
                sweep_src = work / "sweep.src"
                sweep_src.write_text("\n".join(lines[: args.sweep_lines]) + "\n", encoding="utf-8")
                sweep = bench_sweep(session, sweep_src, [r[: args.sweep_lines] for r in refs], list(range(1, 21)),
                                    [0, 0.5, 1, 1.1, 1.2, 1.3, 1.4, 1.5], ratio, progress=args.progress,
                                    clock=clock)
                sweep["model"] = model["name"]
                print(f"sweep: {sweep}")
            metas.append({"name": model["name"], "config": model["config"], "src": model["src"], "lines": len(kept),
                          "ratio": ratio})
            del session, timer, parts
    first = metas[0]
    meta = {"device": device, "machine": machine, "models": metas,
            "config": first["config"], "lines": first["lines"], "rounds": args.rounds,
            "min_seconds": args.min_seconds, "reward": args.reward, "ratio": first["ratio"],
            "sweep_lines": args.sweep_lines if sweep else 0, "count_only": args.count_only, "order": args.order,
            "clock": args.clock}
    if out is None:
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows, "sweep": sweep}, indent=1) + "\n")
    out.write_text(report(meta, rows, sweep))
    print(f"-> {out}")


def _rounds(meta, rows) -> str:
    """How many timed rounds each configuration got (runs before ``--min-seconds`` got ``--rounds`` each)."""
    counts = {}
    for r in rows:
        counts.setdefault(r.get("rounds", meta["rounds"]), []).append(f"batch {r['batch']} b = {r['beam']}")
    if len(counts) == 1:
        n = next(iter(counts))
        return f"{n} round{'s' if n != 1 else ''}"
    least = min(counts)
    more = "; ".join(f"{n} for {', '.join(dict.fromkeys(where))}" for n, where in sorted(counts.items()) if n != least)
    return f"{least} rounds ({more}: at least {meta.get('min_seconds', 0):.0f} s of rounds per configuration)"


TIMING_NOTES = [
    "Each batch is decoded by every variant in turn, in an order that rotates from batch to batch, so "
    "all variants see the machine in the same state; a batch of several sentences is first decoded once, "
    "untimed, to warm the caches. A round is one pass over the sentences. sent/s "
    "counts decode time: `translate_batch` (encoder, decoding loop, beam search, results), not the "
    "reading, transforms, batching and writing that all variants share. x stock: median over rounds of "
    "stock's decode time / this variant's in the same round; range: the lowest and highest per-round "
    "ratio. `default` runs stock's search under our bookkeeping, so its ratio is the bookkeeping's cost "
    "alone.", "",
    "Outside forward = share of decode time outside the model's forward pass (encoder, decoder step, "
    "generator, softmax), split into the beam's top-k, the rest of its step (for ours: the search "
    "bookkeeping), examples leaving the batch, the decoder state following the beam (OpenNMT-py's "
    "`map_state`, every step) and the rest of OpenNMT-py's decoding loop (encoder-output reordering, "
    "translation results).", ""]

CLOCK_NOTES = {
    "wall": "Clock: wall (`--clock wall`), elapsed time.",
    "cpu": "Clock: CPU (`--clock cpu`, the default on CPU): the decoding thread's CPU time (`time.thread_time`, "
           "one torch thread), so that moments when other jobs or the virtual machine's host take the core "
           "away count for no variant.",
}

COUNT_NOTES = [
    "Work per decoder call (`onmt_optimal/profiling.py`): one more pass of each variant over the same "
    "sentences through OpenNMT-py's whole pipeline (reading, transforms, batching and writing included, the "
    "same for every variant), its counts divided by the calls of the translator's `_decode_and_generate` (one "
    "per decoding step of a batch). aten ops: every `aten::` "
    "operator `torch.profiler` records on the host, nested ones included (the host's dispatches; on a GPU the "
    "kernel launches move with them). Kernels: device-side events of the profiler's CUDA trace (kernels, "
    "memcpy, memset); DtoH: the device-to-host copies among them; syncs: host synchronizations reported by "
    "`torch.cuda.set_sync_debug_mode(\"warn\")` in a separate, unprofiled decode, with the commonest source "
    "lines (file:line: count over the pass). The counts include the forward pass, the same for every variant. "
    "x stock: this variant's count per call / stock's. Counts, not timings: they do not depend on the "
    "machine's load.", ""]


def report(meta, rows, sweep) -> str:
    models = meta.get("models") or [{"name": None, "config": meta["config"], "lines": meta["lines"],
                                     "ratio": meta["ratio"]}]
    timed = [r for r in rows if "sent_per_s" in r]
    counted = [r for r in rows if r.get("aten_ops_per_call") is not None]
    what = "speed and work per decoder call" if timed and counted else "speed" if timed else "work per decoder call"
    run = "`python scripts/bench.py" + (" --count-only`" if meta.get("count_only") else "`")
    lines = [f"# Benchmark: onmt-optimal vs stock OpenNMT-py, {what} ({meta['device']})", "",
             f"{run} on {meta['machine']}; -length_penalty none"
             + (f", {_rounds(meta, timed)} after a warm-up, medians" if timed else "") + ". Models: "
             + "; ".join(f"{'`' + m['name'] + '` ' if m['name'] else ''}(`{m['config']}`, first {m['lines']} dev "
                         f"sentences, rho = {m['ratio']:.4f})" for m in models)
             + f". optimal+r: r = {meta['reward']}, rho as given.", ""]
    if timed and meta.get("order") == "block":
        lines += ["Order: block (`--order block`). Each round decodes all the sentences with one variant, then "
                  "with the next, as a user decodes a file, in an order that rotates from round to round; no "
                  "untimed warm-up decode per batch. The notes below otherwise hold.", ""]
    lines += TIMING_NOTES if timed else []
    lines += [CLOCK_NOTES[meta.get("clock", "wall")], ""] if timed else []
    lines += COUNT_NOTES if counted else []
    for m in models:
        mine = [r for r in rows if r.get("model") == m["name"]]
        if len(models) > 1 or m["name"]:
            lines += [f"## {m['name']} (`{m['config']}`)", ""]
        lines += _timing_table(r for r in mine if "sent_per_s" in r)
        lines += _count_table([r for r in mine if r.get("aten_ops_per_call") is not None])
    if sweep is None:
        return "\n".join(lines)
    lines += [f"Sweep of {sweep['configurations']} (r, b) configurations on {meta['sweep_lines']} sentences"
              + (f" ({sweep['model']})" if sweep.get("model") else "") + ": "
              f"one decode per beam size {sweep['joint_seconds']:.1f} s, separate decodes "
              f"{sweep['separate_seconds']:.1f} s, speed-up x{sweep['speedup']:.2f}; identical BLEU, length "
              f"ratio, steps and stop reasons: {sweep['identical']}; largest gap in a mean model score: "
              f"{sweep['max_mean_score_gap']:.2e}.", ""]
    return "\n".join(lines)


def _timing_table(rows) -> list[str]:
    rows = list(rows)
    if not rows:
        return []
    lines = ["| batch | beam | variant | sent/s | x stock | range | outside forward | top-k | step | leaving "
             "| state reorder | other | mean steps | total steps |",
             "|---:|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        reorder = r.get("share_reorder")  # absent from runs before it was timed: then part of "other"
        loop = r["outside_forward"] - r["share_select"] - r["share_step"] - r["share_finish"] - (reorder or 0)
        lines.append(f"| {r['batch']} | {r['beam']} | {r['variant']} | {r['sent_per_s']:.1f} | "
                     f"{r['speed_vs_stock']:.3f} | {_range(r)} | {100 * r['outside_forward']:.1f}% | "
                     f"{100 * r['share_select']:.1f}% | {100 * r['share_step']:.1f}% | "
                     f"{100 * r['share_finish']:.1f}% | "
                     f"{'-' if reorder is None else f'{100 * reorder:.1f}%'} | {100 * loop:.1f}% | "
                     f"{r['mean_steps']:.2f} | {r['total_steps']} |")
    lines += ["", "Steps: decoding steps until each sentence stops. Stock keeps no per-sentence count; its steps are "
              "those of `default`, the same search, whose output the run checks to be identical to stock's.",
              "", "Steps saved by optimal stopping (mean per sentence, stock minus optimal, log-probability):", ""]
    for batch in sorted({r["batch"] for r in rows}):
        for beam in sorted({r["beam"] for r in rows}):
            get = {r["variant"]: r for r in rows if r["batch"] == batch and r["beam"] == beam}
            if "stock" in get and "optimal" in get:
                lines.append(f"- batch {batch}, b = {beam}: "
                             f"{get['stock']['mean_steps'] - get['optimal']['mean_steps']:.2f}")
    return lines + [""]


def _count_table(rows) -> list[str]:
    """Work per decoder call; the device columns only where the run had a GPU."""
    if not rows:
        return []
    device = any(r.get("kernels_per_call") is not None for r in rows)

    def cell(r, name, digits=1):
        value, ratio = r.get(f"{name}_per_call"), r.get(f"{name}_vs_stock")
        return "- | -" if value is None else f"{value:.{digits}f} | " + ("-" if ratio is None else f"{ratio:.3f}")

    head = "| batch | beam | variant | decoder calls | aten ops / call | x stock |"
    rule = "|---:|---:|---|---:|---:|---:|"
    if device:
        head += " kernels / call | x stock | DtoH / call | syncs / call | x stock | main sync sites |"
        rule += "---:|---:|---:|---:|---:|---|"
    lines = ["Work per decoder call:", "", head, rule]
    for r in rows:
        line = f"| {r['batch']} | {r['beam']} | {r['variant']} | {r['decoder_calls']} | {cell(r, 'aten_ops')} |"
        if device:
            dtoh = r.get("dtoh_per_call")
            sites = ", ".join(f"{site}: {n}" for site, n in (r.get("sync_sites") or [])[:4])
            line += (f" {cell(r, 'kernels')} | {'-' if dtoh is None else f'{dtoh:.2f}'} | {cell(r, 'syncs', 2)} |"
                     f" {sites} |")
        lines.append(line)
    return lines + [""]


def _range(row) -> str:
    low, high = row.get("speed_vs_stock_range") or (None, None)
    return "" if low is None else f"{low:.2f}-{high:.2f}"


if __name__ == "__main__":
    main()
