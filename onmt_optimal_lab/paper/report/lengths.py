"""The test set by length: BLEU and length ratio by source-length bucket (with the paired bootstrap of optimal +
bounded reward against the paper's baseline per bucket), and steps saved by the default's output length."""
from __future__ import annotations

from onmt_optimal_lab.paper.report.cells import f2, pct
from onmt_optimal_lab.paper.report.paper import BASELINE, HISTORICAL, LABELS
from onmt_optimal_lab.paper.report.results import baseline_row, fixed_row, fixed_rows, row_key, tuned_rows
from onmt_optimal_lab.paper.report.significance import in_bucket, label, length_buckets
from onmt_optimal_lab.paper.report.stats import fmt_cmp, fmt_p


def span(bucket: tuple[int, int] | None) -> str:
    if bucket is None:
        return "all"
    return f"{bucket[0]}" if bucket[0] == bucket[1] else f"{bucket[0]}–{bucket[1]}"


def length_table(test: dict | None, stats, why: str, n_buckets: int = 5) -> str:
    """BLEU and length ratio by source-length bucket (quantiles of the test sources' token counts) for the paper's
    baseline and the length fixes of the paper's comparison; optimal + bounded reward minus the paper's baseline
    with its bootstrap interval, p-value and label per bucket. The whole test set is Table 3's."""
    base = baseline_row(test, BASELINE)
    tuned = tuned_rows(test)
    cols = [(f"{BASELINE}, b = {base['beam']}" if base else "", base)] + [
        (LABELS[f], tuned.get(f)) for f in ("shrinking_norm", "shrinking_reward", "optimal_reward")]
    cols = [(name, r) for name, r in cols if r is not None]
    if stats is None or base is None or len(cols) < 2:
        return f"Length buckets: not computed ({why or 'the paper baseline is not among the test outputs'})."
    me = tuned.get("optimal_reward")
    lengths = stats.src_tokens
    lines = [
        f"Test sentences grouped by source length (whitespace tokens of the cleaned source, cut at quantiles "
        f"into at most {n_buckets} groups); BLEU (length ratio) of each decoder on each group, each at the "
        f"setting of Table 3 (which has the whole test set)"
        + (f"; the last columns: optimal + bounded reward minus the paper's baseline ({BASELINE}, b = "
           f"{base['beam']}), paired bootstrap on that group, labelled by the same rule." if me else "."),
        "",
        "| source tokens | sentences | " + " | ".join(n for n, _ in cols) + (" | Δ | p | |" if me else " |"),
        "|---|---:|" + "---:|" * len(cols) + ("---:|---:|---|" if me else ""),
    ]
    for bucket in length_buckets(lengths, n_buckets):
        idx = in_bucket(lengths, bucket)
        cells = [span(bucket), str(len(idx))]
        for _, r in cols:
            b, lr = stats.bleu(row_key(r), idx)
            cells.append(f"{f2(b)} ({lr:.3f})")
        if me:
            c = stats.compare(row_key(me), row_key(base), idx)
            cells += [fmt_cmp(c), fmt_p(c.p), label(c)]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    return "\n".join(lines)


def same_steps(a: dict, b: dict) -> bool:
    return a["steps"] == b["steps"]


def steps_by_length(test: dict | None, stats, why: str, n_buckets: int = 5) -> str:
    """Steps saved per sentence by output-length bucket: the stopping rules that share a beam (default, optimal,
    and the historical rule where present) at each beam size decoded for it, bucketed by the default's output
    length in model tokens; with the share of sentences on which optimal stopping stops earlier at all."""
    if stats is None:
        return f"Steps by output length: not computed ({why})."
    beams = sorted({r["beam"] for r in fixed_rows(test) if r["family"] == "optimal"})
    blocks, notes = [], []
    for beam in beams:
        d, o, h = (fixed_row(test, f, beam) for f in ("default", "optimal", HISTORICAL))
        if d is None or o is None:
            continue
        dd, oo = stats.outputs[row_key(d)], stats.outputs[row_key(o)]
        hh = stats.outputs.get(row_key(h)) if h is not None else None
        if hh and same_steps(hh, dd):
            notes.append(beam)
            hh = None
        head = ("| default's output length | sentences | steps, default | steps, optimal | saved | saved (%) | "
                "optimal stops earlier | saved there |")
        rule = "|---|---:|---:|---:|---:|---:|---:|---:|"
        if hh:
            head += f" steps, {HISTORICAL} | saved vs {HISTORICAL} |"
            rule += "---:|---:|"
        lines = [f"b = {beam} (test):", "", head, rule]
        for bucket in length_buckets(dd["length"], n_buckets) + [None]:
            idx = in_bucket(dd["length"], bucket) if bucket else list(range(len(dd["length"])))
            if not idx:
                continue
            sd = sum(dd["steps"][i] for i in idx) / len(idx)
            so = sum(oo["steps"][i] for i in idx) / len(idx)
            earlier = [i for i in idx if oo["steps"][i] < dd["steps"][i]]
            there = (sum(dd["steps"][i] - oo["steps"][i] for i in earlier) / len(earlier)) if earlier else None
            row = [span(bucket), str(len(idx)), f2(sd), f2(so), f2(sd - so),
                   f"{100 * (sd - so) / sd:.1f}" if sd else "n/a", pct(len(earlier) / len(idx)), f2(there)]
            if hh:
                sh = sum(hh["steps"][i] for i in idx) / len(idx)
                row += [f2(sh), f2(sh - so)]
            lines.append("| " + " | ".join(row) + " |")
        blocks.append("\n".join(lines))
    if not blocks:
        return "Steps by output length: no test decodes of default and optimal stopping at a shared beam size."
    intro = ("Mean decoding steps per test sentence, grouped by the length (model tokens) of the default "
             "search's output, cut at quantiles; saved = default minus optimal stopping (same beam, same "
             "translations on log-probability); \"optimal stops earlier\": the share of sentences on which it "
             "stops at an earlier step at all, \"saved there\": the mean saving on those sentences.")
    if notes:
        intro += (f" `{HISTORICAL}` stops at the same step as the default on every sentence at b = "
                  f"{', '.join(map(str, notes))} (both stop when the top item of the beam is finished), so its "
                  f"steps are the default's.")
    return intro + "\n\n" + "\n\n".join(blocks) + "\n"
