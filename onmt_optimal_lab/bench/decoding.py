"""The benchmark's decoding measure: every (batch, beam) configuration, each variant timed over rounds against
stock in the same rounds, then its work per decoder call counted."""
from __future__ import annotations

import math
import statistics
import sys
import time

from tqdm import tqdm

from onmt_optimal_lab.bench.render import speed_range
from onmt_optimal_lab.bench.rounds import count_fields, count_round, run_round
from onmt_optimal_lab.bench.timers import PartTimer
from onmt_optimal_lab.bench.variants import VARIANTS, search
from onmt_optimal.adapter.lines import ordered


def bench_decoding(session, timer, parts, src, n_lines, beams, batches, rounds, reward, ratio, sync,
                   min_seconds=0.0, cuda=False, count=True, time_it=True, progress=True, placement_variant=None,
                   order="interleaved"):
    """Every (batch, beam) configuration: a warm-up round, then ``rounds`` rounds, or more where rounds are
    short, so that each configuration is timed for at least ``min_seconds`` (a short round's per-round ratio
    wanders; the median of many of them does not). Then (``count``) one more
    pass that counts each variant's work per decoder call (``count_round``), after the timing so that it
    cannot disturb it. ``time_it=False``: the counting pass only. ``placement_variant``: add the bookkeeping in
    its other place, ``optimal-device`` on CUDA and ``optimal-host`` on CPU (None: on CUDA only, where the
    bookkeeping's place matters). Yields each configuration's rows, one per variant, as soon as it is measured (a
    run cut short keeps what it has)."""
    other = "optimal-device" if cuda else "optimal-host"
    every = VARIANTS + ([other] if (cuda if placement_variant is None else placement_variant) else [])
    configurations = [(batch, beam) for batch in batches for beam in beams]
    outer = tqdm(configurations, desc="configurations", file=sys.stderr, disable=not progress)
    for batch, beam in outer:
        variants = every + (["optimal-core"] if beam == 1 else [])
        outer.set_postfix_str(f"batch {batch} b={beam}")
        searches = {v: search(v, reward, ratio) for v in variants}
        config_rows = {v: {"batch": batch, "beam": beam, "variant": v} for v in variants}
        if time_it:
            samples = _timed_rounds(session, timer, parts, src, beam, batch, searches, sync, rounds, min_seconds,
                                    order, progress)
            for v, fields in _timing_fields(samples, variants, n_lines, other).items():
                config_rows[v].update(fields)
        if count:
            totals = count_round(session, timer, parts, src, beam, batch, searches, cuda, progress)
            for v, fields in count_fields(totals).items():
                config_rows[v].update(fields)
        for v in variants:
            _report(config_rows[v], time_it, count)
        yield [config_rows[v] for v in variants]


def _timed_rounds(session, timer, parts, src, beam, batch, searches, sync, rounds, min_seconds, order,
                  progress) -> list[dict]:
    """One configuration's timed rounds, after a warm-up round: ``rounds``, or more where rounds are short, so
    that it is timed for at least ``min_seconds``."""
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
        samples.append(run_round(session, timer, parts, src, beam, batch, searches, sync, offset=k, order=order))
        bar.update()
    bar.close()
    return samples


def _timing_fields(samples: list[dict], variants: list[str], n_lines: int, other: str) -> dict:
    """Per variant, its timing fields over the rounds ``samples``, once the last round's outputs are checked
    against stock's."""
    last = samples[-1]
    assert last["default"]["preds"] == last["stock"]["preds"], "our default search must give stock's output"
    assert last["optimal"]["preds"] == last["stock"]["preds"], "log-prob optimal must give stock's 1-best"
    if "optimal-core" in last:
        assert last["optimal-core"]["preds"] == last["optimal"]["preds"], "a beam of one: the core must agree"
    if other in last:
        assert last[other]["preds"] == last["optimal"]["preds"], "the bookkeeping's place must not matter"
    steps = {v: [s["steps"] for s in ordered(last[v]["stats"])] for v in variants if v != "stock"}
    steps["stock"] = steps["default"]  # same beam, same stopping rule, same output (checked above)
    out = {}
    for v in variants:
        decode = [r[v]["decode"] for r in samples]
        ratios = [r["stock"]["decode"] / r[v]["decode"] for r in samples]
        out[v] = {
            "sent_per_s": n_lines / statistics.median(decode),
            "seconds_median": statistics.median(decode),
            "speed_vs_stock": statistics.median(ratios),
            "speed_vs_stock_range": [min(ratios), max(ratios)],
            "outside_forward": statistics.median([1 - r[v]["forward"] / r[v]["decode"] for r in samples]),
            **{f"share_{p}": statistics.median([r[v]["split"][p] / r[v]["decode"] for r in samples])
               for p in PartTimer.PARTS},
            "total_steps": sum(steps[v]), "mean_steps": sum(steps[v]) / len(steps[v]),
            "rounds": len(samples),
        }
    if "optimal+prune" in out:  # recorded, not asserted: a GPU's kernels may round a product of fewer rows otherwise
        out["optimal+prune"]["same_as_optimal"] = last["optimal+prune"]["preds"] == last["optimal"]["preds"]
    return out


def _report(row: dict, time_it: bool, count: bool) -> None:
    """One configuration's variant, one line."""
    text = f"batch {row['batch']:3d} beam {row['beam']:2d} {row['variant']:14s}"
    if time_it:
        text += (f" {row['sent_per_s']:8.1f} sent/s  x{row['speed_vs_stock']:.3f} vs stock ({speed_range(row)})"
                 f"  outside forward {100 * row['outside_forward']:.1f}%  mean steps {row['mean_steps']:.2f}")
        if "same_as_optimal" in row:
            text += f"  output {'=' if row['same_as_optimal'] else '!='} optimal's"
    if count:
        text += f"  per call: {_counts_text(row)}"
    tqdm.write(text)
    sys.stdout.flush()


def _counts_text(row) -> str:
    """``aten 771.0 (x1.23)  kernels ...`` for the counts a row has."""
    parts = []
    for name, label in (("aten_ops", "aten ops"), ("kernels", "kernels"), ("dtoh", "DtoH"), ("syncs", "syncs")):
        value = row.get(f"{name}_per_call")
        if value is not None:
            ratio = row.get(f"{name}_vs_stock")
            parts.append(f"{label} {value:.1f}" + ("" if ratio is None else f" (x{ratio:.3f})"))
    return "  ".join(parts) + f"  [{row['decoder_calls']} calls]"

