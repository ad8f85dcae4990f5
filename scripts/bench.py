#!/usr/bin/env python3
"""Benchmark: our beam search against stock OpenNMT-py's, side by side in one process, and the sweep's cost.

    python scripts/bench.py [--config configs/tvsub-zh-en/translate.yaml] [--src DEV] [--gpu 0]

For beam sizes 1, 5, 10, 20 and batches of 1 and 32 sentences, it decodes the same source with
  stock     OpenNMT-py's own BeamSearch (the translator's stock path), -length_penalty none
  default   our bookkeeping with OpenNMT-py's stopping rule (same output as stock)
  optimal   -stopping optimal
  optimal+r -stopping optimal -length_reward R -length_ratio RHO
after a warm-up. Every batch is decoded by each variant in turn, in an order that rotates from batch to batch
(A/B/C/D, B/C/D/A, ...), so all variants see the machine in the same state; batches of several sentences are
first decoded once untimed, to warm the caches. A round is one pass over the source. It reports medians over
rounds: decoded sentences per second (decode time: ``translate_batch``, i.e. encoder, decoding loop, beam
search and results; reading, transforms, batching and writing are shared and not timed), total and mean
decoding steps, the share of decode time spent outside the model's forward pass (encoder, decoder step,
generator and softmax are timed), and each variant's ratio against stock in the same round. Then it times the
r x b sweep (8 rewards x 20 beam sizes) as one decode per beam against 160 separate decodes, and checks that
both give identical numbers.
Writes benchmarks/RESULTS.md (or --out) and a JSON file beside it. Timings go in no test.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

VARIANTS = ["stock", "default", "optimal", "optimal+r"]


class ForwardTimer:
    """Accumulates the time spent in the model's forward pass (encoder; decoder step + generator + softmax)."""

    def __init__(self, translator, sync):
        self.seconds = 0.0
        self.sync = sync
        for name in ("_run_encoder", "_decode_and_generate"):
            inner = getattr(translator, name)
            setattr(translator, name, self._timed(inner))

    def _timed(self, fn):
        def wrapper(*args, **kwargs):
            self.sync()
            start = time.perf_counter()
            out = fn(*args, **kwargs)
            self.sync()
            self.seconds += time.perf_counter() - start
            return out

        return wrapper


class PartTimer:
    """Splits the time outside the forward pass: the top-k (``_pick``), the rest of each step (``advance``), the
    examples leaving the batch (``update_finished``), the decoder's state following the beam's back-pointers
    (``map_state``, called by OpenNMT-py's decode loop every step); what is left is the rest of that loop
    (encoder-output reordering, results). Wraps the stock and our beam search classes alike."""

    PARTS = ("select", "step", "finish", "reorder")

    def __init__(self, sync, decoder):
        from onmt.translate.beam_search import BeamSearchBase

        from onmt_optimal.beam_search import CertifiedBeamSearch

        self.seconds = dict.fromkeys(self.PARTS, 0.0)
        self.sync = sync
        for cls in (BeamSearchBase, CertifiedBeamSearch):
            for name, part in (("_pick", "select"), ("_pick_one", "select"), ("advance", "step"),
                               ("update_finished", "finish")):
                if name in cls.__dict__:
                    setattr(cls, name, self._timed(cls.__dict__[name], part))
        decoder.map_state = self._timed(decoder.map_state, "reorder")

    def reset(self):
        self.seconds = dict.fromkeys(self.PARTS, 0.0)

    def _timed(self, fn, part):
        timer = self

        def wrapper(*args, **kwargs):
            timer.sync()
            start = time.perf_counter()
            out = fn(*args, **kwargs)
            timer.sync()
            timer.seconds[part] += time.perf_counter() - start
            return out

        return wrapper

    def split(self):
        """Seconds per part, the top-k taken out of the step that calls it."""
        out = dict(self.seconds)
        out["step"] -= out["select"]
        return out


def search_for(variant: str, reward: float, ratio: float):
    from onmt.translate.beam_search import GNMTGlobalScorer

    from onmt_optimal.options import SearchConfig
    from onmt_optimal.scoring import BoundedWordReward, StockScore
    from onmt_optimal.stopping import STOPPING_RULES

    if variant == "stock":
        return SearchConfig(stock=True, rules=[])
    logprob = StockScore(GNMTGlobalScorer(0.0, 0.0, "none", "none"))
    rule = {
        "default": (logprob, STOPPING_RULES["default"]()),
        "optimal": (logprob, STOPPING_RULES["optimal"]()),
        "optimal+r": (BoundedWordReward(reward, ratio), STOPPING_RULES["optimal"]()),
    }[variant]
    return SearchConfig(stock=False, rules=[rule])  # statistics stay in memory (translator._stats)


def run_round(session, timer, parts, src, beam, batch, searches, sync, offset=0):
    """Decode ``src`` once through OpenNMT-py's pipeline, every batch with each variant in turn.

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

    def translate_batch(batch_, attn_debug):
        names = list(searches)
        k = count[0] % len(names)
        count[0] += 1
        results = {}
        if batch > 1:  # warm-up, untimed
            translator.search = searches[names[k]]
            inner(batch_, attn_debug)
        for v in names[k:] + names[:k]:
            translator.search = searches[v]
            translator._stats = {}
            timer.seconds = 0.0
            parts.reset()
            sync()
            start = time.perf_counter()
            results[v] = inner(batch_, attn_debug)
            sync()
            out[v]["decode"] += time.perf_counter() - start
            out[v]["forward"] += timer.seconds
            for part, seconds in parts.split().items():
                out[v]["split"][part] += seconds
            out[v]["stats"].update(translator._stats)
            out[v]["preds"] += [[p.tolist() for p in preds] for preds in results[v]["predictions"]]
        return results[names[0]]

    translator.translate_batch = translate_batch
    try:
        session.infer(src)
    finally:
        del translator.translate_batch
    return out


def bench_decoding(session, timer, parts, src, n_lines, beams, batches, rounds, reward, ratio, sync,
                   min_seconds=0.0):
    """Every (batch, beam) configuration: a warm-up round, then ``rounds`` rounds, or more where rounds are
    short, so that each configuration is timed for at least ``min_seconds`` (a round of 1 s has a per-round
    ratio that wanders by several percent; the median of many of them does not)."""
    from onmt_optimal.translator import ordered

    rows = []
    for batch in batches:
        for beam in beams:
            searches = {v: search_for(v, reward, ratio) for v in VARIANTS}
            start = time.perf_counter()
            run_round(session, timer, parts, src, beam, batch, searches, sync)  # warm-up
            warm_up = time.perf_counter() - start
            samples = []
            for k in range(max(rounds, math.ceil(min_seconds / warm_up))):
                samples.append(run_round(session, timer, parts, src, beam, batch, searches, sync, offset=k))
            last = samples[-1]
            assert last["default"]["preds"] == last["stock"]["preds"], "our default search must give stock's output"
            assert last["optimal"]["preds"] == last["stock"]["preds"], "log-prob optimal must give stock's 1-best"
            steps = {v: [s["steps"] for s in ordered(last[v]["stats"])] for v in VARIANTS if v != "stock"}
            steps["stock"] = steps["default"]  # same beam, same stopping rule, same output (checked above)
            for v in VARIANTS:
                decode = [r[v]["decode"] for r in samples]
                ratios = [r["stock"]["decode"] / r[v]["decode"] for r in samples]
                rows.append({
                    "batch": batch, "beam": beam, "variant": v,
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
                print(f"batch {batch:2d} beam {beam:2d} {v:10s} {rows[-1]['sent_per_s']:8.1f} sent/s  "
                      f"x{rows[-1]['speed_vs_stock']:.3f} vs stock ({_range(rows[-1])})  outside forward "
                      f"{100 * rows[-1]['outside_forward']:.1f}%  mean steps {rows[-1]['mean_steps']:.2f}",
                      flush=True)
    return rows


def bench_sweep(session, src, refs, beams, rewards, ratio):
    from onmt_optimal.sweep import Decoder, run_sweep

    decoders = [Decoder("optimal" if r == 0 else "optimal_reward", "optimal",
                        "logprob" if r == 0 else "bounded_reward", None if r == 0 else r) for r in rewards]
    start = time.perf_counter()
    joint = run_sweep(session, src, refs, beams, decoders, ratio, progress=False)["rows"]
    joint_s = time.perf_counter() - start
    start = time.perf_counter()
    separate = []
    for decoder in decoders:
        separate += run_sweep(session, src, refs, beams, [decoder], ratio, progress=False)["rows"]
    separate_s = time.perf_counter() - start
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="configs/tvsub-zh-en/translate.yaml")
    parser.add_argument("--src", default="../shared/data/tvsub-zh-en/dev.zh", help="raw dev source")
    parser.add_argument("--refs", nargs="*", default=["../shared/data/tvsub-zh-en/dev.en"],
                        help="raw dev references (for the length ratio and the sweep's BLEU)")
    parser.add_argument("--unescape-moses", action="store_true",
                        help="undo Moses escapes, as the TVsub model's training data was (scripts/prepare_data.py)")
    parser.add_argument("--lines", type=int, default=320, help="first N source lines")
    parser.add_argument("--beams", default="1,5,10,20")
    parser.add_argument("--batches", default="1,32")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per configuration, at least")
    parser.add_argument("--min-seconds", type=float, default=60.0,
                        help="more rounds where a configuration's rounds take less than this in all")
    parser.add_argument("--reward", type=float, default=1.2)
    parser.add_argument("--sweep-lines", type=int, default=200, help="0: skip the sweep timing")
    parser.add_argument("--gpu", type=int, default=None, help="GPU id (default: 0 when CUDA is available, else CPU)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (1: steady timings; more oversubscribe a 2-core machine)")
    parser.add_argument("--out", default="benchmarks/RESULTS.md")
    parser.add_argument("--render", metavar="JSON", help="only write --out again from a run's JSON file")
    args = parser.parse_args()
    if args.render:
        run = json.loads(Path(args.render).read_text())
        Path(args.out).write_text(report(run["meta"], run["rows"], run["sweep"]))
        return

    import torch

    torch.set_num_threads(args.threads)
    if args.gpu is None:
        args.gpu = 0 if torch.cuda.is_available() else -1
    from onmt_optimal.length_ratio import estimate_with_model
    from onmt_optimal.session import Session

    from reproduce import clean_copy

    work = ROOT / "work" / "bench"
    work.mkdir(parents=True, exist_ok=True)
    # cleaned as the training data was (whitespace, Moses escapes), like scripts/reproduce.py does
    clean_src = clean_copy(args.src, work / "dev.src", args.unescape_moses)
    clean_refs = [clean_copy(r, work / f"dev.ref{i}", args.unescape_moses) for i, r in enumerate(args.refs)]
    lines = clean_src.read_text(encoding="utf-8").splitlines()
    src = work / "bench.src"
    # each batch is decoded once per variant: an empty line would be answered only once (empty_lines.take)
    src.write_text("\n".join([line for line in lines if line.strip()][: args.lines]) + "\n", encoding="utf-8")
    session = Session(["-config", args.config, "-gpu", str(args.gpu)])
    sync = torch.cuda.synchronize if args.gpu >= 0 else (lambda: None)
    timer = ForwardTimer(session.translator, sync)
    parts = PartTimer(sync, session.translator.model.decoder)
    refs = [r.read_text(encoding="utf-8").splitlines() for r in clean_refs]
    ratio = estimate_with_model(session, lines, refs).corpus
    threads = f"{args.threads} thread{'s' if args.threads > 1 else ''}"
    device = torch.cuda.get_device_name(args.gpu) if args.gpu >= 0 else f"CPU ({threads})"

    rows = bench_decoding(session, timer, parts, src, min(args.lines, len(lines)), [int(b) for b in args.beams.split(",")],
                          [int(b) for b in args.batches.split(",")], args.rounds, args.reward, ratio, sync,
                          args.min_seconds)
    sweep = None
    if args.sweep_lines > 0:
        sweep_src = work / "sweep.src"
        sweep_src.write_text("\n".join(lines[: args.sweep_lines]) + "\n", encoding="utf-8")
        sweep = bench_sweep(session, sweep_src, [r[: args.sweep_lines] for r in refs], list(range(1, 21)),
                            [0, 0.5, 1, 1.1, 1.2, 1.3, 1.4, 1.5], ratio)
        print(f"sweep: {sweep}")
    meta = {"device": device, "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}",
            "config": args.config, "lines": args.lines, "rounds": args.rounds, "min_seconds": args.min_seconds,
            "reward": args.reward,
            "ratio": ratio, "sweep_lines": args.sweep_lines}
    out = Path(args.out)
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


def report(meta, rows, sweep) -> str:
    lines = [f"# Benchmark: onmt-optimal vs stock OpenNMT-py ({meta['device']})", "",
             f"`python scripts/bench.py` on {meta['machine']}; model config `{meta['config']}`, first "
             f"{meta['lines']} dev sentences, -length_penalty none, {_rounds(meta, rows)} after a warm-up, "
             f"medians. optimal+r: r = {meta['reward']}, rho = {meta['ratio']:.4f}.", "",
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
             "translation results).", "",
             "| batch | beam | variant | sent/s | x stock | range | outside forward | top-k | step | leaving "
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
    if sweep is None:
        return "\n".join(lines + [""])
    lines += ["", f"Sweep of {sweep['configurations']} (r, b) configurations on {meta['sweep_lines']} sentences: "
              f"one decode per beam size {sweep['joint_seconds']:.1f} s, separate decodes "
              f"{sweep['separate_seconds']:.1f} s, speed-up x{sweep['speedup']:.2f}; identical BLEU, length "
              f"ratio, steps and stop reasons: {sweep['identical']}; largest gap in a mean model score: "
              f"{sweep['max_mean_score_gap']:.2e}.", ""]
    return "\n".join(lines)


def _range(row) -> str:
    low, high = row.get("speed_vs_stock_range") or (None, None)
    return "" if low is None else f"{low:.2f}-{high:.2f}"


if __name__ == "__main__":
    main()
