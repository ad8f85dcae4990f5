"""The test set by length: BLEU and length ratio by source-length bucket (with the paired bootstrap of optimal +
bounded reward against the stock default per bucket), and steps saved by the default's output length."""
from __future__ import annotations

from onmt_optimal.report.cells import f2
from onmt_optimal.report.paper import HISTORICAL, LABELS, PAPER_B
from onmt_optimal.report.results import fixed_row, fixed_rows, row_key, tuned_rows
from onmt_optimal.report.significance import in_bucket, length_buckets
from onmt_optimal.report.stats import N_SAMPLES_TEXT, fmt_cmp, fmt_p


def length_table(test: dict | None, stats, why: str, n_buckets: int = 5) -> str:
    """BLEU and length ratio by source-length bucket (quantiles of the test sources' token counts) for the
    stock default at b = 16 and the length fixes of the paper's comparison; optimal + bounded reward minus
    the default with its bootstrap interval and p-value per bucket."""
    base = fixed_row(test, "default", PAPER_B)
    tuned = tuned_rows(test)
    cols = [(f"default b = {PAPER_B}", base)] + [(LABELS[f], tuned.get(f)) for f in
                                                  ("shrinking_norm", "shrinking_reward", "optimal_reward")]
    cols = [(name, r) for name, r in cols if r is not None]
    if stats is None or base is None or len(cols) < 2:
        return f"Length buckets: not computed ({why or 'the stock default at b = 16 is not among the outputs'})."
    me = tuned.get("optimal_reward")
    lengths = stats.src_tokens
    lines = [
        f"Test sentences grouped by source length (whitespace tokens of the cleaned source, cut at quantiles "
        f"into at most {n_buckets} groups); BLEU (length ratio) of each decoder on each group, each at the "
        f"setting of Table 3" + (f"; the last columns: optimal + bounded reward minus default b = {PAPER_B}, "
                                  f"paired bootstrap ({N_SAMPLES_TEXT}) on that group." if me else "."),
        "",
        "| source tokens | sentences | " + " | ".join(n for n, _ in cols) + (" | Δ | p |" if me else " |"),
        "|---|---:|" + "---:|" * len(cols) + ("---:|---:|" if me else ""),
    ]
    for bucket in length_buckets(lengths, n_buckets):
        idx = in_bucket(lengths, bucket)
        span = f"{bucket[0]}" if bucket[0] == bucket[1] else f"{bucket[0]}–{bucket[1]}"
        cells = [span, str(len(idx))]
        for _, r in cols:
            b, lr = stats.bleu(row_key(r), idx)
            cells.append(f"{b:.2f} ({lr:.3f})")
        if me:
            c = stats.compare(row_key(me), row_key(base), idx)
            cells += [fmt_cmp(c), fmt_p(c.p)]
        lines.append("| " + " | ".join(cells) + " |")
    b_all = [stats.bleu(row_key(r), list(range(len(lengths)))) for _, r in cols]
    lines.append("| all | " + str(len(lengths)) + " | " + " | ".join(f"{b:.2f} ({lr:.3f})" for b, lr in b_all)
                 + (" | " + fmt_cmp(stats.compare(row_key(me), row_key(base))) + " | "
                    + fmt_p(stats.compare(row_key(me), row_key(base)).p) + " |" if me else " |"))
    lines.append("")
    return "\n".join(lines)


def steps_by_length(test: dict | None, stats, why: str, n_buckets: int = 5) -> str:
    """Steps saved per sentence by output-length bucket: the stopping rules that share a beam (default,
    optimal, and the historical rule where present) at each beam size decoded for it, bucketed by the
    default's output length in model tokens."""
    if stats is None:
        return f"Steps by output length: not computed ({why})."
    beams = sorted({r["beam"] for r in fixed_rows(test) if r["family"] == "optimal"})
    blocks = []
    for beam in beams:
        d, o, h = (fixed_row(test, f, beam) for f in ("default", "optimal", HISTORICAL))
        if d is None or o is None:
            continue
        dd, oo = stats.outputs[row_key(d)], stats.outputs[row_key(o)]
        hh = stats.outputs.get(row_key(h)) if h is not None else None
        head = "| default's output length | sentences | steps, default | steps, optimal | saved | saved (%) |"
        rule = "|---|---:|---:|---:|---:|---:|"
        if hh:
            head += f" steps, {HISTORICAL} | saved vs {HISTORICAL} |"
            rule += "---:|---:|"
        lines = [f"b = {beam} (test):", "", head, rule]
        for bucket in length_buckets(dd["length"], n_buckets) + [None]:
            idx = in_bucket(dd["length"], bucket) if bucket else list(range(len(dd["length"])))
            if not idx:
                continue
            span = "all" if bucket is None else (f"{bucket[0]}" if bucket[0] == bucket[1]
                                                 else f"{bucket[0]}–{bucket[1]}")
            sd = sum(dd["steps"][i] for i in idx) / len(idx)
            so = sum(oo["steps"][i] for i in idx) / len(idx)
            row = [span, str(len(idx)), f2(sd), f2(so), f2(sd - so), f"{100 * (sd - so) / sd:.1f}" if sd else "n/a"]
            if hh:
                sh = sum(hh["steps"][i] for i in idx) / len(idx)
                row += [f2(sh), f2(sh - so)]
            lines.append("| " + " | ".join(row) + " |")
        blocks.append("\n".join(lines))
    if not blocks:
        return "Steps by output length: no test decodes of default and optimal stopping at a shared beam size."
    intro = ("Mean decoding steps per test sentence, grouped by the length (model tokens) of the default "
             "search's output, cut at quantiles; saved = default minus optimal stopping (same beam, same "
             "translations on log-probability).")
    return intro + "\n\n" + "\n\n".join(blocks) + "\n"

