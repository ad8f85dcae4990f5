"""The benchmarks' reports: Markdown from their rows, one report from several runs' JSON, a report written whole."""
from __future__ import annotations

import json
from pathlib import Path


def combine(runs: list[dict]) -> tuple[dict, list[dict], dict | None]:
    """(meta, rows, sweep) of one report of several runs' JSON (e.g. batches or models run by separate device
    calls): every run's rows, the first sweep, the models of all of them."""
    meta, rows = runs[0]["meta"], [row for run in runs for row in run["rows"]]
    sweep = next((run["sweep"] for run in runs if run["sweep"]), None)
    if len(runs) > 1:
        models = {m["name"]: m for run in runs for m in run["meta"].get("models", [])}
        meta = dict(meta, sweep_lines=next((r["meta"]["sweep_lines"] for r in runs if r["sweep"]), 0),
                    models=list(models.values()) or meta.get("models"))
    return meta, rows, sweep


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
    "Work per decoder call (`onmt_optimal_lab/bench/profiling.py`): one more pass of each variant over the same "
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
    run = ("`python scripts/bench.py" + (" --count-only" if meta.get("count_only") else "")
           + (f" --precision {meta['precision']}" if meta.get("precision", "fp32") != "fp32" else "") + "`")
    where = meta["device"] + (f", {meta['precision']}" if meta.get("precision", "fp32") != "fp32" else "")
    lines = [f"# Benchmark: onmt-optimal vs stock OpenNMT-py, {what} ({where})", "",
             f"{run} on {meta['machine']}; -length_penalty none"
             + (f", {_rounds(meta, timed)} after a warm-up, medians" if timed else "") + ". Models: "
             + "; ".join(f"{'`' + m['name'] + '` ' if m['name'] else ''}(`{m['config']}`, first {m['lines']} dev "
                         f"sentences, rho = {m['ratio']:.4f})" for m in models)
             + f". optimal+r: r = {meta['reward']}, rho as given.", ""]
    if meta.get("partial"):
        lines += ["**Partial**: the run ended before its last configuration; the rows below are those it had "
                  "measured.", ""]
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
                     f"{r['speed_vs_stock']:.3f} | {speed_range(r)} | {100 * r['outside_forward']:.1f}% | "
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
    pruned = [r for r in rows if "same_as_optimal" in r]
    if pruned:
        lines += ["", "optimal+prune (`-prune_dead`, the dead rows skipped) writes optimal's translations: "
                  + ", ".join(f"batch {r['batch']}, b = {r['beam']}: {'yes' if r['same_as_optimal'] else 'NO'}"
                              for r in pruned) + "."]
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


def speed_range(row) -> str:
    low, high = row.get("speed_vs_stock_range") or (None, None)
    return "" if low is None else f"{low:.2f}-{high:.2f}"


def write_report(results: dict, out: Path, markdown: str) -> None:
    """``out`` (.md, ``markdown``) and its .json (``results``) beside it, each written whole (a temporary file
    renamed over it)."""
    for path, text in ((out.with_suffix(".json"), json.dumps(results, indent=1) + "\n"), (out, markdown)):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        tmp.replace(path)
