"""Table 2 (tuning the bounded reward on dev) and Table 3 (each decoder on test), with Table 3's paired statistics:
each row against the paper's baseline, against OpenNMT-py 3.5.1's default and against the strongest other length
fix."""
from __future__ import annotations

from onmt_optimal_lab.paper.report.cells import f2, f3, fmt_r
from onmt_optimal_lab.paper.report.paper import (BASELINE, FAMILIES, LABELS, LENGTH_FIXES, PAPER_B, PAPER_MOSES, PAPER_TABLE2,
                                       PAPER_TABLE3)
from onmt_optimal_lab.paper.report.results import Sweep, baseline_row, best, fixed_rows, row_key, same_r, tuned_rows
from onmt_optimal_lab.paper.report.significance import label
from onmt_optimal_lab.paper.report.stats import fmt_cmp, fmt_p, test_score

RULE_REF = "labels by the rule under \"How differences are tested\" in README.md"


def table2(sweep: Sweep, paper_name: str) -> tuple[str, dict]:
    lo, hi = sweep.beams[0], sweep.beams[-1]
    bests = {r: best(sweep.table2_series(r)) for r in sweep.rewards}
    top = max((b["bleu"] for b in bests.values() if b), default=None)
    cols = [fmt_r(r) for r in sweep.rewards]

    def row(label_, cells):
        return "| " + label_ + " | " + " | ".join(cells) + " |"

    def ours(key, fmt):
        cells = []
        for r in sweep.rewards:
            b = bests[r]
            if b is None:
                cells.append("n/a")
                continue
            s = fmt(b[key])
            cells.append(f"**{s}**" if key == "bleu" and b["bleu"] == top else s)
        return cells

    def paper(i, fmt):
        return [fmt(PAPER_TABLE2[k][i]) if (k := next((p for p in PAPER_TABLE2 if same_r(p, r)), None)) is not None
                else "n/a" for r in sweep.rewards]

    lines = [
        f"Tuning the bounded length reward r on dev: for each r, the best beam size b in {lo}..{hi} "
        f"(r = 0 is pure optimal stopping). Ours: {sweep.meta['dataset']} dev; paper: {paper_name}, NIST 06 "
        f"dev (their Table 2; r = 0.5 was in their grid but not in their table). Ties go to the smaller b.",
        "",
        row("reward r", cols),
        "|---|" + "---:|" * len(cols),
        row("BLEU (ours)", ours("bleu", f2)),
        row("len. ratio (ours)", ours("length_ratio", f3)),
        row("best b (ours)", ours("beam", str)),
        row("BLEU (paper)", paper(0, lambda x: f"{x:.1f}")),
        row("len. ratio (paper)", paper(1, lambda x: f"{x:.2f}")),
        row("best b (paper)", paper(2, str)),
        "",
    ]
    return "\n".join(lines), bests


def fixed_label(row: dict, n_default: int = 5) -> str:
    note = {n_default: " (OpenNMT-py's default b)", PAPER_B: " (the paper's b)"}.get(row["beam"], "")
    return f"{LABELS[row['family']]}, fixed b = {row['beam']}{note}"


def table3_rows(test: dict | None) -> list[tuple[str, dict]]:
    """(label, test row) of Table 3: each family at its dev-tuned setting, then the two baselines (the paper's and
    OpenNMT-py 3.5.1's default) at the fixed beam sizes."""
    out = [(LABELS[f], r) for f, r in sorted(tuned_rows(test).items(), key=lambda kv: FAMILIES.index(kv[0])
                                                if kv[0] in FAMILIES else len(FAMILIES))]
    beams = (test or {}).get("meta", {}).get("fixed_beams", [5, PAPER_B])
    for fam in (BASELINE, "default"):
        out += [(fixed_label(r), r) for r in sorted(fixed_rows(test), key=lambda r: r["beam"])
                if r["family"] == fam and r["beam"] in beams]
    return out


def rival(test: dict | None, row: dict, stats=None) -> dict | None:
    """The strongest length fix on test (dev-tuned rows of LENGTH_FIXES) other than ``row`` itself."""
    cands = [r for f, r in tuned_rows(test).items() if f in LENGTH_FIXES and row_key(r) != row_key(row)]
    return max(cands, key=lambda r: (test_score(r, stats)[0], -LENGTH_FIXES.index(r["family"])), default=None)


def baselines(test: dict | None) -> list[tuple[str, dict]]:
    """(name, test row) of the two baselines every Table 3 row is compared with."""
    out = [(f"the paper's baseline (`{BASELINE}`", baseline_row(test, BASELINE)),
           ("OpenNMT-py 3.5.1 default (`default`", baseline_row(test, "default"))]
    return [(f"{name}, b = {r['beam']})", r) for name, r in out if r is not None]


def table3(sweep: Sweep, test: dict | None, tuned: dict, paper_name: str, stats=None, why: str = "") -> str:
    test_rows = tuned_rows(test)
    head = "| decoder | b | r | dev BLEU | test BLEU | test len. ratio | paper b | paper r | paper dev | paper test |"
    lines = [
        f"Each decoder at its dev-tuned beam size (and reward), then the two baselines at fixed beam sizes. Ours: "
        f"{sweep.meta['dataset']}; paper: {paper_name}, NIST 06 dev / NIST 08 test BLEU (their Table 3, which has "
        f"no pure optimal row and no length ratios). The paper's \"OpenNMT-py default\" row (b = {PAPER_B}, tuned on "
        f"its dev set) is its baseline, OpenNMT-py's search of early 2017: it stands beside `{BASELINE}`. "
        f"OpenNMT-py 3.5.1's default came later and has no row in the paper.",
        "",
        head,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def ours(t):
        bleu, lr = test_score(t, stats)
        return [str(t["beam"]), fmt_r(t["reward"]), f2(t["dev_bleu"]), f2(bleu), f3(lr)]

    for fam in FAMILIES:
        if fam not in tuned and fam not in PAPER_TABLE3:
            continue
        t = test_rows.get(fam)
        if t is not None:
            cells = ours(t)
        elif fam in tuned:
            d = sweep.at(fam, *tuned[fam])
            cells = [str(tuned[fam][0]), fmt_r(tuned[fam][1]), f2(d["bleu"] if d else None), "n/a", "n/a"]
        else:
            cells = ["—"] * 5
        p = PAPER_TABLE3.get(fam)
        paper = [str(p[0]), fmt_r(p[1]), f2(p[2]), f2(p[3])] if p else ["n/a"] * 4
        lines.append("| " + " | ".join([LABELS[fam]] + cells + paper) + " |")
    for label_, t in table3_rows(test):
        if t.get("setting") == "fixed":
            lines.append("| " + " | ".join([label_] + ours(t) + ["—"] * 4) + " |")
    b, dv, ts = PAPER_MOSES
    lines.append("| " + " | ".join(["Moses (phrase-based SMT)"] + ["—"] * 5 + [str(b), "—", f2(dv), f2(ts)]) + " |")
    lines.append("")
    lines += [table3_significance(test, stats, why), ""]
    return "\n".join(lines)


def table3_significance(test: dict | None, stats, why: str) -> str:
    """Each Table 3 row against the two baselines and against the strongest other length fix on test: the BLEU
    difference, its 95% bootstrap interval, sacrebleu's p-value and the label."""
    bases = baselines(test)
    if stats is None or not bases:
        reason = why or "neither baseline is among the test outputs"
        return f"Paired bootstrap: not computed ({reason})."
    n_seeds = len(stats.seeds)
    lines = [
        f"Paired bootstrap on test (sacrebleu's `PairedTest`, {stats.n_samples:,} resamples; figures from seed "
        f"{stats.seeds[0]}, {RULE_REF}, which checks them under {n_seeds} seeds): each row minus "
        + " and minus ".join(name for name, _ in bases) + ", and minus the strongest other length fix on test (of "
        "the dev-tuned `default_avg`, `shrinking_norm`, `shrinking_reward`, `optimal_reward`, the one with the "
        "highest test BLEU). Δ [95% interval of the difference over the resamples]; p: sacrebleu's p-value.",
        "",
        "| " + " | ".join(["decoder"] + [c for name, _ in bases for c in (f"Δ vs {name}", "p", "")]
                          + ["strongest other length fix", "Δ", "p", ""]) + " |",
        "|---|" + "---:|---:|---|" * len(bases) + "---|---:|---:|---|",
    ]
    for label_, row in table3_rows(test):
        key = row_key(row)
        cells = [label_]
        for _, base in bases:
            if key == row_key(base):
                cells += ["(baseline)", "", ""]
            else:
                c = stats.compare(key, row_key(base))
                cells += [fmt_cmp(c), fmt_p(c.p), label(c)]
        r = rival(test, row, stats)
        if r is None:
            cells += ["—", "", "", ""]
        else:
            c = stats.compare(key, row_key(r))
            cells += [f"{LABELS[r['family']]} (b = {r['beam']}, r = {fmt_r(r['reward'])})", fmt_cmp(c), fmt_p(c.p),
                      label(c)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"sacrebleu signature of the test: `{stats.signature}`"]
    return "\n".join(lines)
