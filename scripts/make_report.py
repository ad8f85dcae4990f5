#!/usr/bin/env python3
"""Turn the beam-search sweep into the paper's Tables 2-3, Figures 1-2 and ``results/README.md``.

Reads ``DIR/dev_sweep.json`` (every decoder family x beam size x reward on dev) and, when present,
``DIR/test_eval.json`` (each family at its dev-tuned beam size and reward, on dev and test), and writes
into ``DIR``:

    table2.md             tuning the bounded length reward r (paper's Table 2), ours and the paper's
    table3.md             final dev/test BLEU of each decoder at its dev-tuned setting and of the stock
                          default at fixed beams (paper's Table 3), with paired-bootstrap p-values and 95% CIs
                          of the differences (sacrebleu, ``scripts/significance.py``)
    table_length.md       BLEU and length ratio by source-length bucket; steps saved by output-length bucket
    fig1_model_score.png  mean model score vs beam size, default vs optimal stopping (paper's Figure 1)
    fig2_bleu_length.png  (a) BLEU and (b) length ratio vs beam size for every decoder (paper's Figure 2)
    README.md             how the numbers were made, both tables, the figures, steps saved by optimal
                          stopping, and a verdict on each of the paper's claims computed from the data

The statistics also read ``DIR/test_sentences.json`` and the test outputs ``DIR/hyps/test.*.txt`` that
``scripts/reproduce.py`` writes, and the test references named in ``test_eval.json`` (read from where they are,
cleaned as the reproduction cleaned them); without them the tables say so and the verdicts fall back to point
estimates. Everything is a function of those files (no clock, no network, a fixed bootstrap seed), so rerunning
on the same data gives byte-identical files.

    python scripts/make_report.py --results results
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

FAMILIES = ["default", "default_avg", "shrinking_norm", "shrinking_reward", "optimal", "optimal_reward"]
REWARD_FAMILIES = {"shrinking_reward", "optimal_reward"}
LABELS = {
    "default": "OpenNMT-py default (log-prob)",
    "default_avg": "OpenNMT-py default, avg length norm.",
    "shrinking_norm": "shrinking, len. norm.",
    "shrinking_reward": "shrinking, reward",
    "optimal": "optimal beam search (r=0)",
    "optimal_reward": "optimal beam search, bounded reward",
}
STYLE = {  # colour, marker, line style for the figures
    "default": ("tab:blue", "o", "-"),
    "default_avg": ("tab:cyan", "v", "--"),
    "shrinking_norm": ("tab:green", "s", "-"),
    "shrinking_reward": ("tab:olive", "D", "--"),
    "optimal": ("tab:red", "^", "-"),
    "optimal_reward": ("tab:purple", "*", "-"),
}

# The paper's numbers (Huang, Zhao & Ma 2017; Chinese-English, NIST 06 dev / NIST 08 test, 4 references).
PAPER_TABLE2 = {  # r -> (BLEU, length ratio, best b); r = 0.5 is in the paper's grid but not in its table
    0.0: (32.2, 0.88, 4), 1.0: (34.6, 0.95, 17), 1.1: (34.6, 0.96, 17), 1.2: (34.7, 0.97, 15),
    1.3: (34.6, 0.98, 20), 1.4: (34.6, 0.98, 20), 1.5: (34.6, 0.99, 17),
}
PAPER_TABLE3 = {  # family -> (b, r, dev BLEU, test BLEU); families the paper's Table 3 lacks are absent
    "default": (16, None, 33.60, 29.75),
    "shrinking_norm": (17, None, 33.71, 30.11),
    "shrinking_reward": (15, 1.3, 34.42, 30.37),
    "optimal_reward": (15, 1.2, 34.70, 30.61),
}
PAPER_MOSES = (70, 30.14, 29.41)

# Thresholds of the verdicts (stated in the README next to each verdict).
DEGRADE_BLEU = 0.5    # (b) a BLEU drop of at least this much from the best b to the largest b is "degrades"
SHORTER_RATIO = 0.01  # (b), (c) a length-ratio difference of at least this much is "shorter" / "longer"
SHORT_RATIO = 0.95    # (c) a dev length ratio below this is "short" (the paper reports about 0.9)
CLOSE_BLEU = 1.0      # (d) "close" means within this many BLEU

HOLDS, PARTLY, FAILS = "holds", "partly holds", "does not hold"
ALPHA = 0.05          # a difference is "resolved" when sacrebleu's paired-bootstrap p-value is below this

HISTORICAL = "opennmt2017"  # OpenNMT-py's search of early 2017 (returns the top of the beam), where present
LABELS[HISTORICAL] = "OpenNMT-py of early 2017 (top of beam)"
STYLE[HISTORICAL] = ("tab:gray", "x", ":")
N_SAMPLES_TEXT = "1000 resamples, seed 12345"
LENGTH_FIXES = ["default_avg", "shrinking_norm", "shrinking_reward", "optimal_reward"]
PAPER_B = 16  # the paper's beam for OpenNMT-py's default (its Table 3)
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))


# ----------------------------------------------------------------------------------------------- load
def load(results: Path):
    dev = json.loads((results / "dev_sweep.json").read_text())
    test_path = results / "test_eval.json"
    test = json.loads(test_path.read_text()) if test_path.exists() else None
    return dev, test


def same_r(a, b) -> bool:
    return abs(float(a or 0.0) - float(b or 0.0)) < 1e-9


def fmt_r(r) -> str:
    return "—" if r is None else f"{float(r):g}"


def f2(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"


def f3(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def refs(n: int) -> str:
    return f"{n} reference{'' if n == 1 else 's'}"


def signed(x, fmt=".2f") -> str:
    return f"{x:+{fmt}}"


class Sweep:
    """The dev sweep's rows, indexed by family (and reward for the reward families)."""

    def __init__(self, dev: dict):
        self.meta = dev["meta"]
        self.rows = dev["rows"]
        self.beams = sorted(self.meta.get("beams") or {r["beam"] for r in self.rows})
        self.rewards = list(self.meta["rewards"])

    def series(self, family: str, reward=None) -> list[dict]:
        """Rows of one family sorted by beam; reward families are filtered to one reward."""
        rows = [r for r in self.rows if r["family"] == family
                and (family not in REWARD_FAMILIES or same_r(r["reward"], reward))]
        return sorted(rows, key=lambda r: r["beam"])

    def at(self, family: str, beam: int, reward=None) -> dict | None:
        return next((r for r in self.series(family, reward) if r["beam"] == beam), None)

    def table2_series(self, r) -> list[dict]:
        return self.series("optimal") if same_r(r, 0.0) else self.series("optimal_reward", r)

    def tuned_from_dev(self, family: str) -> dict | None:
        """The family's best (beam, reward) on dev over the whole sweep."""
        return best([r for r in self.rows if r["family"] == family])


def best(rows: list[dict]) -> dict | None:
    """Row with the highest BLEU; ties go to the smallest beam, then the smallest reward."""
    if not rows:
        return None
    return min(rows, key=lambda r: (-r["bleu"], r["beam"], float(r["reward"] or 0.0)))


def tuned_rows(test: dict | None) -> dict:
    """family -> its test row at the dev-tuned setting (rows without a ``setting`` predate the fixed ones)."""
    return {r["family"]: r for r in (test or {}).get("rows", []) if r.get("setting", "tuned") == "tuned"}


def fixed_rows(test: dict | None) -> list[dict]:
    """Test rows at fixed beam sizes (stock default at b = 5 and 16, the steps-saved decodes)."""
    return [r for r in (test or {}).get("rows", []) if r.get("setting") == "fixed"]


def fixed_row(test: dict | None, family: str, beam: int) -> dict | None:
    return next((r for r in fixed_rows(test) if r["family"] == family and r["beam"] == beam), None)


def row_key(row: dict) -> str | None:
    """The output's key (``default.b16``) from its hypothesis file ``hyps/test.KEY.txt``."""
    hyp = row.get("hyp")
    return Path(hyp).name[len("test."):-len(".txt")] if hyp else None


def tuned_settings(sweep: Sweep, test: dict | None) -> dict:
    """family -> (beam, reward): from test_eval.json (the sweep's own dev tuning) or else the dev argmax."""
    out = {}
    test_rows = tuned_rows(test)
    for fam in FAMILIES:
        if fam in test_rows:
            out[fam] = (test_rows[fam]["beam"], test_rows[fam]["reward"])
        else:
            b = sweep.tuned_from_dev(fam)
            if b is not None:
                out[fam] = (b["beam"], b["reward"])
    return out


# ------------------------------------------------------------------------------------------ statistics
class Stats:
    """Per-sentence test outputs, references and sacrebleu's paired bootstrap between any two outputs.

    ``compare(system, baseline)`` is memoized; every comparison is its own ``PairedTest`` with the fixed seed, so
    its p-value does not depend on which other comparisons were asked for."""

    def __init__(self, results: Path, test: dict, sentences: dict, refs: list[list[str]]):
        self.refs = refs
        self.src_tokens = sentences["src_tokens"]
        self.outputs = sentences["outputs"]
        self.hyps = {}
        for row in test["rows"]:
            key = row_key(row)
            if key and key not in self.hyps:
                self.hyps[key] = (results / row["hyp"]).read_text(encoding="utf-8").split("\n")[:len(self.src_tokens)]
        self.signature = ""
        self._memo = {}

    def has(self, *keys) -> bool:
        return all(k in self.hyps for k in keys)

    def compare(self, system: str, baseline: str, idx: list[int] | None = None):
        from significance import paired_bootstrap, subset

        memo = (system, baseline, None if idx is None else tuple(idx))
        if memo not in self._memo:
            pick = (lambda x: x) if idx is None else (lambda x: subset(x, idx))
            result, sig = paired_bootstrap((baseline, pick(self.hyps[baseline])), [(system, pick(self.hyps[system]))],
                                           [pick(r) for r in self.refs])
            self.signature = self.signature or sig
            self._memo[memo] = result[system]
        return self._memo[memo]

    def bleu(self, key: str, idx: list[int]) -> tuple[float, float]:
        from significance import corpus_bleu, subset

        return corpus_bleu(subset(self.hyps[key], idx), [subset(r, idx) for r in self.refs])


def resolve(path: str) -> Path:
    """A path from the JSON meta: as written if it exists from here, else relative to the repository root."""
    p = Path(path)
    return p if p.is_absolute() or p.exists() else ROOT / p


def load_stats(results: Path, test: dict | None) -> tuple["Stats | None", str]:
    """The statistics' inputs, or (None, the one line saying what is missing)."""
    if not test or not any(r.get("hyp") for r in test.get("rows", [])):
        return None, "test_eval.json names no test outputs (made before the statistics existed)"
    sentences_path = results / "test_sentences.json"
    if not sentences_path.exists():
        return None, f"{sentences_path} is missing"
    missing = [r["hyp"] for r in test["rows"] if r.get("hyp") and not (results / r["hyp"]).exists()]
    if missing:
        return None, f"test outputs missing under {results}: {', '.join(missing)}"
    meta = test["meta"]
    ref_paths = [resolve(r) for r in meta["test_refs"]]
    absent = [str(r) for r in ref_paths if not r.exists()]
    if absent:
        return None, f"test references not found: {', '.join(absent)}"
    from prepare_data import normalize

    un = bool(meta.get("unescape_moses", False))
    refs = [[normalize(line, un) for line in r.read_text(encoding="utf-8").splitlines()] for r in ref_paths]
    sentences = json.loads(sentences_path.read_text())
    n = len(sentences["src_tokens"])
    bad = [str(p) for p, r in zip(ref_paths, refs) if len(r) != n]
    if bad:
        return None, f"references with a line count other than the test set's {n}: {', '.join(bad)}"
    return Stats(results, test, sentences, refs), ""


def fmt_p(p: float) -> str:
    return f"{p:.3f}"


def fmt_cmp(c) -> str:
    """``+1.09 [+0.49, +1.73]``: the difference and its 95% bootstrap interval."""
    return f"{c.diff:+.2f} [{c.ci_low:+.2f}, {c.ci_high:+.2f}]"


def resolved(c) -> str:
    """How a comparison reads: better / worse when p < ALPHA, else a tie these sentences cannot resolve."""
    if c.identical:
        return "identical outputs"
    if c.p < ALPHA:
        return "better" if c.diff > 0 else "worse"
    return "not resolved"


# --------------------------------------------------------------------------------------------- tables
def table2(sweep: Sweep, paper_name: str) -> tuple[str, dict]:
    lo, hi = sweep.beams[0], sweep.beams[-1]
    bests = {r: best(sweep.table2_series(r)) for r in sweep.rewards}
    top = max((b["bleu"] for b in bests.values() if b), default=None)
    cols = [fmt_r(r) for r in sweep.rewards]

    def row(label, cells):
        return "| " + label + " | " + " | ".join(cells) + " |"

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
    """(label, test row) of Table 3: each family at its dev-tuned setting, then the stock default (and the
    historical rule where present) at the fixed beam sizes."""
    out = [(LABELS[f], r) for f, r in sorted(tuned_rows(test).items(), key=lambda kv: FAMILIES.index(kv[0])
                                                if kv[0] in FAMILIES else len(FAMILIES))]
    beams = (test or {}).get("meta", {}).get("fixed_beams", [5, PAPER_B])
    for fam in ("default", HISTORICAL):
        out += [(fixed_label(r), r) for r in sorted(fixed_rows(test), key=lambda r: r["beam"])
                if r["family"] == fam and r["beam"] in beams]
    return out


def rival(test: dict | None, row: dict) -> dict | None:
    """The strongest length fix on test (dev-tuned rows of LENGTH_FIXES) other than ``row`` itself."""
    cands = [r for f, r in tuned_rows(test).items() if f in LENGTH_FIXES and row_key(r) != row_key(row)]
    return max(cands, key=lambda r: (r["test_bleu"], -LENGTH_FIXES.index(r["family"])), default=None)


def table3(sweep: Sweep, test: dict | None, tuned: dict, paper_name: str, stats=None, why: str = "") -> str:
    test_rows = tuned_rows(test)
    head = "| decoder | b | r | dev BLEU | test BLEU | test len. ratio | paper b | paper r | paper dev | paper test |"
    lines = [
        f"Each decoder at its dev-tuned beam size (and reward), then OpenNMT-py's default at fixed beam sizes. "
        f"Ours: {sweep.meta['dataset']}; paper: {paper_name}, NIST 06 dev / NIST 08 test BLEU (their Table 3, which "
        f"has no pure optimal row and no length ratios; their default row was at b = {PAPER_B}).",
        "",
        head,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for fam in FAMILIES:
        if fam not in tuned and fam not in PAPER_TABLE3:
            continue
        t = test_rows.get(fam)
        if t is not None:
            ours = [str(t["beam"]), fmt_r(t["reward"]), f2(t["dev_bleu"]), f2(t["test_bleu"]),
                    f3(t["test_length_ratio"])]
        elif fam in tuned:
            d = sweep.at(fam, *tuned[fam])
            ours = [str(tuned[fam][0]), fmt_r(tuned[fam][1]), f2(d["bleu"] if d else None), "n/a", "n/a"]
        else:
            ours = ["—"] * 5
        p = PAPER_TABLE3.get(fam)
        paper = [str(p[0]), fmt_r(p[1]), f2(p[2]), f2(p[3])] if p else ["n/a"] * 4
        lines.append("| " + " | ".join([LABELS[fam]] + ours + paper) + " |")
    for label, t in table3_rows(test):
        if t.get("setting") != "fixed":
            continue
        ours = [str(t["beam"]), fmt_r(t["reward"]), f2(t["dev_bleu"]), f2(t["test_bleu"]), f3(t["test_length_ratio"])]
        lines.append("| " + " | ".join([label] + ours + ["—"] * 4) + " |")
    b, dv, ts = PAPER_MOSES
    lines.append("| " + " | ".join(["Moses (phrase-based SMT)"] + ["—"] * 5 + [str(b), "—", f2(dv), f2(ts)]) + " |")
    lines.append("")
    lines += [table3_significance(test, stats, why), ""]
    return "\n".join(lines)


def table3_significance(test: dict | None, stats, why: str) -> str:
    """Each Table 3 row against the stock default at the paper's b = 16 and against the strongest other
    length fix on test: the BLEU difference, its 95% bootstrap interval and sacrebleu's p-value."""
    base = fixed_row(test, "default", PAPER_B)
    if stats is None or base is None:
        reason = why or f"no stock default at b = {PAPER_B} among the test outputs"
        return f"Paired bootstrap: not computed ({reason})."
    lines = [
        f"Paired bootstrap on test (sacrebleu `PairedTest`, {N_SAMPLES_TEXT}): each row minus the stock default at "
        f"b = {PAPER_B}, and minus the strongest other length fix on test (dev-tuned `default_avg`, "
        f"`shrinking_norm`, `shrinking_reward`, `optimal_reward`; chosen by test BLEU, the hardest rival). "
        f"Δ [95% interval of the difference over the same resamples]; p: sacrebleu's p-value (the smallest "
        f"possible with 1000 resamples is 0.001); \"not resolved\" when p >= {ALPHA}. The interval (percentiles of "
        f"the resampled differences) and the p-value (sacrebleu's test of |Δ| against the centred resampled "
        f"|Δ|) are different constructions and can disagree at the margin (an interval touching 0 with p just "
        f"below {ALPHA}); the verdicts use the p-value.",
        "",
        f"| decoder | b | r | test BLEU | Δ vs default b = {PAPER_B} | p | | strongest other length fix | Δ | p | |",
        "|---|---:|---:|---:|---:|---:|---|---|---:|---:|---|",
    ]
    bkey = row_key(base)
    for label, row in table3_rows(test):
        key = row_key(row)
        cells = [label, str(row["beam"]), fmt_r(row["reward"]), f2(row["test_bleu"])]
        if key == bkey:
            cells += ["(baseline)", "", ""]
        else:
            c = stats.compare(key, bkey)
            cells += [fmt_cmp(c), fmt_p(c.p), resolved(c)]
        r = rival(test, row)
        if r is None:
            cells += ["—", "", "", ""]
        else:
            c = stats.compare(key, row_key(r))
            cells += [f"{LABELS[r['family']]} (b = {r['beam']}, r = {fmt_r(r['reward'])})", fmt_cmp(c), fmt_p(c.p),
                      resolved(c)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"sacrebleu signature of the test: `{stats.signature}`"]
    return "\n".join(lines)


def length_table(test: dict | None, stats, why: str, n_buckets: int = 5) -> str:
    """BLEU and length ratio by source-length bucket (quantiles of the test sources' token counts) for the
    stock default at b = 16 and the length fixes of the paper's comparison; optimal + bounded reward minus
    the default with its bootstrap interval and p-value per bucket."""
    from significance import in_bucket, length_buckets

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
    from significance import in_bucket, length_buckets

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


# -------------------------------------------------------------------------------------------- figures
def _plot_series(ax, sweep, fam, reward, key, label):
    rows = sweep.series(fam, reward)
    if not rows:
        return
    colour, marker, ls = STYLE[fam]
    ax.plot([r["beam"] for r in rows], [r[key] for r in rows], color=colour, marker=marker, linestyle=ls,
            markersize=5, linewidth=1.5, label=label)


def _beam_ticks(ax, beams):
    step = 1 if len(beams) <= 10 else 5
    ax.set_xticks([b for b in beams if b == beams[0] or b % step == 0])


def fig1(sweep: Sweep, path: Path):
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4.2))
    _plot_series(ax, sweep, "default", None, "mean_log_prob", LABELS["default"])
    _plot_series(ax, sweep, "optimal", None, "mean_log_prob", "optimal beam search")
    _plot_series(ax, sweep, HISTORICAL, None, "mean_log_prob", LABELS[HISTORICAL])
    ax.set_xlabel("beam size b")
    ax.set_ylabel("mean model score (log-probability of the 1-best)")
    ax.set_title(f"Model score vs beam size ({sweep.meta['dataset']} dev)")
    ax.grid(alpha=0.3)
    _beam_ticks(ax, sweep.beams)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=150, metadata={"Software": None})
    plt.close(fig)


def fig2(sweep: Sweep, tuned: dict, path: Path):
    import matplotlib.pyplot as plt
    fig, (ax_b, ax_l) = plt.subplots(1, 2, figsize=(12, 5.4))
    for fam in FAMILIES:
        reward = tuned.get(fam, (None, None))[1] if fam in REWARD_FAMILIES else None
        label = LABELS[fam] + (f" r={fmt_r(reward)}" if fam in REWARD_FAMILIES else "")
        _plot_series(ax_b, sweep, fam, reward, "bleu", label)
        _plot_series(ax_l, sweep, fam, reward, "length_ratio", label)
    ax_l.axhline(1.0, color="gray", linestyle=":", linewidth=1)
    ax_b.set_title("(a) BLEU vs beam size")
    ax_l.set_title("(b) length ratio vs beam size")
    ax_b.set_ylabel("BLEU")
    ax_l.set_ylabel("length ratio (hypothesis / reference)")
    for ax in (ax_b, ax_l):
        ax.set_xlabel("beam size b")
        ax.grid(alpha=0.3)
        _beam_ticks(ax, sweep.beams)
    handles, labels = ax_b.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9, frameon=False)
    fig.suptitle(f"{sweep.meta['dataset']} dev")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path, dpi=150, metadata={"Software": None})
    plt.close(fig)


# ---------------------------------------------------------------------------------------------- claims
def verdict(flags: list[bool]) -> str:
    return HOLDS if all(flags) else PARTLY if any(flags) else FAILS


def family_scores(sweep: Sweep, test: dict | None, tuned: dict) -> dict:
    """family -> dict(beam, reward, dev_bleu, dev_lr, test_bleu, test_lr) at the dev-tuned setting."""
    test_rows = tuned_rows(test)
    out = {}
    for fam in FAMILIES:
        t = test_rows.get(fam)
        if t is not None:
            out[fam] = dict(beam=t["beam"], reward=t["reward"], dev_bleu=t["dev_bleu"],
                            dev_lr=t["dev_length_ratio"], test_bleu=t["test_bleu"], test_lr=t["test_length_ratio"])
        elif fam in tuned:
            d = sweep.at(fam, *tuned[fam])
            if d is not None:
                out[fam] = dict(beam=d["beam"], reward=d["reward"], dev_bleu=d["bleu"], dev_lr=d["length_ratio"],
                                test_bleu=None, test_lr=None)
    return out


def claim_a(sweep, scores, test=None, stats=None) -> tuple[str, str]:
    title = "(a) Optimal beam search with the bounded length reward is the best decoder on dev and on test."
    me = scores.get("optimal_reward")
    others = {f: s for f, s in scores.items() if f != "optimal_reward"}
    if me is None or not others:
        return title, "Not testable here: no optimal_reward (or no other) decoder in the results."
    parts, flags = [], []
    for split in ("dev", "test"):
        key = f"{split}_bleu"
        rivals = {f: s[key] for f, s in others.items() if s[key] is not None}
        if me[key] is None or not rivals:
            parts.append(f"No {split} numbers.")
            continue
        runner = max(rivals, key=lambda f: (rivals[f], -FAMILIES.index(f)))
        ok = me[key] >= rivals[runner]
        flags.append(ok)
        parts.append(f"On {split} it scores {f2(me[key])} BLEU against {f2(rivals[runner])} for the strongest "
                     f"other decoder ({LABELS[runner]}), {signed(me[key] - rivals[runner])}: "
                     f"{'best' if ok else 'not the best'}.")
    text = (f"Dev-tuned setting: b = {me['beam']}, r = {fmt_r(me['reward'])}. " + " ".join(parts))
    b1 = sweep.at("optimal_reward", sweep.beams[0], me["reward"])
    if b1 is not None and me["beam"] != sweep.beams[0]:
        bt = sweep.at("optimal_reward", me["beam"], me["reward"])
        if bt is not None:
            text += (f" On dev, b = {me['beam']} is {signed(bt['bleu'] - b1['bleu'])} BLEU over b = "
                     f"{sweep.beams[0]} at the same r (the paper: about +5 BLEU at b = 15 over b = 1).")
    tuned = tuned_rows(test)
    base = fixed_row(test, "default", PAPER_B)
    mine = tuned.get("optimal_reward")
    if stats is None or base is None or mine is None:
        v = verdict(flags) if flags else "not testable"
        if len(flags) == 1:
            v += " on dev only (no test numbers)"
        text += (" The verdict needs it best on both dev and test (point estimates: no paired test was possible). "
                 "Paper: 34.70 dev / 30.61 test, ahead of every other decoder on both.")
        return title, f"**Verdict: {v}.** " + text
    c16 = stats.compare(row_key(mine), row_key(base))
    tests = [f"against the stock default at b = {PAPER_B}: {fmt_cmp(c16)}, p = {fmt_p(c16.p)} "
             f"(paper: +0.86 at its b = {PAPER_B})"]
    base5 = fixed_row(test, "default", 5)
    if base5 is not None:
        c5 = stats.compare(row_key(mine), row_key(base5))
        tests.append(f"against the stock default at b = 5: {fmt_cmp(c5)}, p = {fmt_p(c5.p)}")
    comps = []
    for fam in FAMILIES:
        r = tuned.get(fam)
        if fam == "optimal_reward" or r is None:
            continue
        c = stats.compare(row_key(mine), row_key(r))
        comps.append((fam, c))
        tests.append(f"against dev-tuned {LABELS[fam]}: {fmt_cmp(c)}, p = {fmt_p(c.p)}")
    fixes = [(f, c) for f, c in comps if f in LENGTH_FIXES]
    beats_default = c16.diff > 0 and c16.p < ALPHA
    worse = [f for f, c in comps if c.diff < 0 and c.p < ALPHA] + ([] if c16.diff >= 0 or c16.p >= ALPHA
                                                                   else [f"default b = {PAPER_B}"])
    ties = [f for f, c in fixes if c.p >= ALPHA]
    if worse or not beats_default:
        v = FAILS
    elif ties or not all(flags):
        v = PARTLY
    else:
        v = HOLDS
    weakest = max(fixes, key=lambda fc: fc[1].p, default=None)
    rests = f"p = {fmt_p(c16.p)} against default b = {PAPER_B}"
    if weakest:
        rests += f" and p = {fmt_p(weakest[1].p)} against {LABELS[weakest[0]]} (the least resolved length fix)"
    text += (" Paired bootstrap on test: " + "; ".join(tests) + ". ")
    if ties:
        text += (f"Against {', '.join(LABELS[f] for f in ties)} the difference is not resolved by this test set "
                 f"(p >= {ALPHA}): on it the paper's ordering of these decoders cannot be decided. ")
    text += (f"Holds needs: better than default b = {PAPER_B} and every other length fix on test with p < {ALPHA}, "
             f"and best on dev (point estimate; the sweep keeps no per-sentence dev outputs); partly: better than "
             f"default b = {PAPER_B} with p < {ALPHA} but tied with some fix (or not best on dev); does not hold: "
             f"not better than default b = {PAPER_B}, or significantly worse than any decoder. The verdict rests on "
             f"{rests}. Paper: 34.70 dev / 30.61 test, ahead of every other decoder on both.")
    return title, f"**Verdict: {v}.** " + text


def claim_b(sweep, test=None, stats=None) -> tuple[str, str]:
    title = "(b) Pure optimal beam search (r = 0) gets worse with larger beams because its outputs get shorter."
    rows = sweep.series("optimal")
    if not rows:
        return title, "Not testable here: no optimal rows."
    top, last = best(rows), rows[-1]
    drop = top["bleu"] - last["bleu"]
    shorter = top["length_ratio"] - last["length_ratio"]
    flags = [drop >= DEGRADE_BLEU, shorter >= SHORTER_RATIO]
    text = (f"Its best beam on dev is b = {top['beam']} ({f2(top['bleu'])} BLEU, length ratio "
            f"{f3(top['length_ratio'])}); at b = {last['beam']} it gets {f2(last['bleu'])} BLEU "
            f"({signed(-drop)}) with length ratio {f3(last['length_ratio'])} ({signed(-shorter, '.3f')}). "
            f"Counted as degrading if BLEU falls by at least {DEGRADE_BLEU} and as shortening if the length "
            f"ratio falls by at least {SHORTER_RATIO}: degrades {'yes' if flags[0] else 'no'}, "
            f"shortens {'yes' if flags[1] else 'no'}. Paper: best at b = 4 with 32.2 BLEU and length ratio "
            f"0.88, worse beyond it.")
    tuned, large = tuned_rows(test).get("optimal"), fixed_row(test, "optimal", PAPER_B)
    if stats is not None and tuned is not None and large is not None and tuned["beam"] != large["beam"]:
        c = stats.compare(row_key(large), row_key(tuned))
        sig = c.diff < 0 and c.p < ALPHA
        flags.append(sig)
        text += (f" On test, b = {PAPER_B} against its dev-tuned b = {tuned['beam']}: {fmt_cmp(c)} BLEU, "
                 f"p = {fmt_p(c.p)} ({'worse, resolved' if sig else 'not a resolved drop'}), length ratio "
                 f"{f3(large['test_length_ratio'])} against {f3(tuned['test_length_ratio'])}. The test check "
                 f"(a drop with p < {ALPHA}) is part of the verdict; it rests on p = {fmt_p(c.p)}.")
    return title, f"**Verdict: {verdict(flags)}.** " + text


def claim_c(sweep, scores) -> tuple[str, str]:
    title = ("(c) OpenNMT-py's default search and the shrinking beam with length normalization are less short "
             "than pure optimal search, but still short (length ratio about 0.9).")
    ref = sweep.series("optimal")
    ref_last = ref[-1] if ref else None
    flags, parts = [], []
    for fam in ("default", "shrinking_norm"):
        s = scores.get(fam)
        if s is None:
            parts.append(f"`{fam}`: no results.")
            continue
        short = s["dev_lr"] < SHORT_RATIO
        flags.append(short)
        p = (f"`{fam}` at its tuned b = {s['beam']} has dev length ratio {f3(s['dev_lr'])}"
             + (f" (test {f3(s['test_lr'])})" if s["test_lr"] is not None else "")
             + f": {'short' if short else 'not short'}")
        last = sweep.at(fam, ref_last["beam"]) if ref_last else None
        if last is not None:
            longer = last["length_ratio"] - ref_last["length_ratio"] >= SHORTER_RATIO
            flags.append(longer)
            p += (f"; at b = {ref_last['beam']} its length ratio is {f3(last['length_ratio'])} against "
                  f"{f3(ref_last['length_ratio'])} for pure optimal search "
                  f"({'longer' if longer else 'not longer'})")
        parts.append(p + ".")
    extra = ""
    s = scores.get("default_avg")
    if s is not None:
        extra = (f" For reference, `default_avg` (avg length normalization) at b = {s['beam']} has dev length ratio "
                 f"{f3(s['dev_lr'])}.")
    text = (" ".join(parts) + f" Counted as short below {SHORT_RATIO} and as longer at a difference of at least "
            f"{SHORTER_RATIO}; the verdict combines all of these checks. It rests on no p-value: length ratios are "
            f"descriptive here (their BLEU consequences are tested in (a), (b) and the length table)." + extra)
    return title, f"**Verdict: {verdict(flags) if flags else 'not testable'}.** " + text


def claim_d(scores, test=None, stats=None) -> tuple[str, str]:
    title = ("(d) The shrinking beam with the (unbounded) length reward is close to, but below, optimal search "
             "with the bounded reward.")
    a, b = scores.get("optimal_reward"), scores.get("shrinking_reward")
    if a is None or b is None:
        return title, "Not testable here: one of the two decoders has no results."
    flags, parts = [], []
    for split in ("dev", "test"):
        key = f"{split}_bleu"
        if a[key] is None or b[key] is None:
            continue
        gap = a[key] - b[key]
        below, close = gap > 0, abs(gap) <= CLOSE_BLEU
        parts.append(f"on {split} shrinking + reward gets {f2(b[key])} against {f2(a[key])} "
                     f"({signed(-gap)}: {'below' if below else 'not below'}, {'close' if close else 'not close'})")
        if split == "dev" or stats is None:
            flags += [below, close]
    joined = "; ".join(parts)
    text = (f"Shrinking + reward is tuned to b = {b['beam']}, r = {fmt_r(b['reward'])}; optimal + bounded "
            f"reward to b = {a['beam']}, r = {fmt_r(a['reward'])}. " + joined[:1].upper() + joined[1:] + ".")
    tuned = tuned_rows(test)
    ra, rb = tuned.get("optimal_reward"), tuned.get("shrinking_reward")
    if stats is not None and ra is not None and rb is not None:
        c = stats.compare(row_key(rb), row_key(ra))
        below = c.diff < 0 and c.p < ALPHA
        above = c.diff > 0 and c.p < ALPHA
        close = max(abs(c.ci_low), abs(c.ci_high)) <= CLOSE_BLEU
        flags += [below, close and not above]
        text += (f" Paired bootstrap on test, shrinking + reward minus optimal + bounded reward: {fmt_cmp(c)}, "
                 f"p = {fmt_p(c.p)}: " + ("below, resolved" if below else "above, resolved" if above else
                                         "the order is not resolved by this test set") +
                 f"; {'close' if close else 'not close'} (the whole 95% interval within ±{CLOSE_BLEU} BLEU). "
                 f"The verdict counts dev as point estimates and test by this test; it rests on p = {fmt_p(c.p)}.")
    else:
        text += f" Below means strictly lower BLEU, close means within {CLOSE_BLEU} BLEU (point estimates)."
    text += " Paper: 0.28 below on dev (34.42 vs 34.70) and 0.24 below on test (30.37 vs 30.61)."
    v = verdict(flags) if flags else "not testable"
    if len(parts) == 1:
        v += " on dev only (no test numbers)"
    return title, f"**Verdict: {v}.** " + text


def claim_e(sweep, test=None, stats=None) -> tuple[str, str]:
    title = ("(e) Figure 1: optimal stopping finds better model scores than the default search, more so with "
             "larger beams.")
    hist = bool(sweep.series(HISTORICAL))
    base = HISTORICAL if hist else "default"
    pairs = [(b, sweep.at(base, b), sweep.at("optimal", b)) for b in sweep.beams]
    pairs = [(b, d, o) for b, d, o in pairs if d is not None and o is not None]
    if len(pairs) < 2:
        return title, "Not testable here: too few beams with both decoders."
    diffs = [(b, o["mean_log_prob"] - d["mean_log_prob"]) for b, d, o in pairs]
    never_worse = all(x >= -1e-9 for _, x in diffs)
    half = len(diffs) // 2
    low = sum(x for _, x in diffs[:half]) / half
    high = sum(x for _, x in diffs[half:]) / (len(diffs) - half)
    flags = [never_worse, high > low]
    worst = min(diffs, key=lambda t: t[1])
    text = (f"Mean log-probability of the 1-best on dev, optimal minus `{base}`: {signed(diffs[0][1], '.3f')} at "
            f"b = {diffs[0][0]}, {signed(diffs[-1][1], '.3f')} at b = {diffs[-1][0]}; the smallest difference is "
            f"{signed(worst[1], '.3f')} (b = {worst[0]}), so optimal is "
            f"{'never' if never_worse else 'sometimes'} worse. Mean difference over the smaller half of the beams "
            f"{signed(low, '.3f')}, over the larger half {signed(high, '.3f')} "
            f"({'widens' if high > low else 'does not widen'}). It rests on no p-value: model scores are compared "
            f"descriptively.")
    if hist:
        text += (f" `{HISTORICAL}` is OpenNMT-py's search as the paper ran it (early 2017: it stops when the top "
                 f"of the beam is completed and returns that item, never storing earlier completions).")
        if stats is not None:
            for beam in sorted({r["beam"] for r in fixed_rows(test) if r["family"] == HISTORICAL}):
                h, o = fixed_row(test, HISTORICAL, beam), fixed_row(test, "optimal", beam)
                if h is None or o is None:
                    continue
                lh, lo = stats.outputs[row_key(h)]["log_prob"], stats.outputs[row_key(o)]["log_prob"]
                better = sum(y > x + 1e-4 for x, y in zip(lh, lo))
                worse_n = sum(y < x - 1e-4 for x, y in zip(lh, lo))
                text += (f" On test at b = {beam}, optimal's 1-best scores higher on {better} of {len(lh)} "
                         f"sentences and lower on {worse_n}.")
        return title, f"**Verdict: {verdict(flags)}.** " + text
    if all(abs(x) < 1e-9 for _, x in diffs):
        return title, (
            "**Verdict: does not hold here, by construction.** " + text + " OpenNMT-py 3.5.1's default search "
            "returns the best completed hypothesis it has collected when it stops, not the top item of the beam as "
            "the 2017 OpenNMT-py did; with log-probability and n_best = 1 that is exactly the optimal answer (the "
            "paper's Theorem 2: it stops no earlier than the certificate, and nothing completed after the "
            "certificate can score higher). The two return the same translations; what optimal stopping saves is "
            "decoding steps (below). The paper's baseline (OpenNMT-py before 2017-08-26) returned the top of the "
            f"beam; the results have no `{HISTORICAL}` rows to compare against.")
    return title, f"**Verdict: {verdict(flags)}.** " + text


def claim_f(sweep) -> tuple[str, str]:
    title = ("(f) Optimal stopping finishes 3-5 steps earlier than OpenNMT-py's search at b = 10, and the "
             "advantage widens with the beam size.")
    hist = bool(sweep.series(HISTORICAL))
    base = HISTORICAL if hist else "default"
    saved = {}
    for b in sweep.beams:
        d, o = sweep.at(base, b), sweep.at("optimal", b)
        if d is not None and o is not None:
            saved[b] = d["mean_steps"] - o["mean_steps"]
    if 10 not in saved or len(saved) < 2:
        return title, "Not testable here: no default and optimal rows at b = 10 and another beam."
    last = max(saved)
    flags = [saved[10] >= 3, saved[last] > saved[10]]
    d10 = sweep.at(base, 10)
    text = (f"Against `{base}` on dev: {f2(saved[10])} steps saved per sentence at b = 10 "
            f"({f2(d10['mean_steps'])} steps, mean output {f2(d10['mean_length'])} tokens), {f2(saved[last])} at "
            f"b = {last} ({'widens' if flags[1] else 'does not widen'}). Counted as holding when at least 3 steps "
            f"are saved at b = 10 and more at the largest beam (descriptive: means over all dev sentences; the "
            f"test decodes by output length are in the steps section). Sentences here are far shorter than NIST's, "
            f"so fewer steps can be saved. It rests on no p-value (step counts are descriptive).")
    return title, f"**Verdict: {verdict(flags)}.** " + text


def ordering_section(test: dict | None, stats, why: str) -> str:
    """The paper's Table 3 order on test, pair by pair: our difference, its interval, sacrebleu's p-value."""
    rows = {f: r for f, r in tuned_rows(test).items() if f in PAPER_TABLE3 and f != "default"}
    base = fixed_row(test, "default", PAPER_B)
    if base is not None:
        rows["default"] = base
    if stats is None or len(rows) < 2:
        return f"Not computed ({why or 'too few of the paper decoders among the test outputs'})."
    order = sorted(rows, key=lambda f: -PAPER_TABLE3[f][3])
    lines = [
        f"The paper's test order ({', '.join(f'{LABELS[f]} {PAPER_TABLE3[f][3]:.2f}' for f in order)}; the default "
        f"at b = {PAPER_B} as in the paper, the others dev-tuned), checked pair by pair on our test set with "
        f"sacrebleu's paired bootstrap ({N_SAMPLES_TEXT}).",
        "",
        "| paper: higher | paper: lower | paper Δ | our Δ [95% interval] | p | reading |",
        "|---|---|---:|---:|---:|---|",
    ]
    for i, hi in enumerate(order):
        for lo in order[i + 1:]:
            c = stats.compare(row_key(rows[hi]), row_key(rows[lo]))
            reading = ("as the paper" if c.diff > 0 else "against the paper") if c.p < ALPHA else \
                "identical outputs" if c.identical else "not resolved by this test set"
            lines.append(f"| {LABELS[hi]} | {LABELS[lo]} | {PAPER_TABLE3[hi][3] - PAPER_TABLE3[lo][3]:+.2f} | "
                         f"{fmt_cmp(c)} | {fmt_p(c.p)} | {reading} |")
    lines.append("")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ readme
def steps_section(sweep: Sweep) -> str:
    wanted = [b for b in (10, 20) if b in sweep.beams]
    if sweep.beams and sweep.beams[-1] not in wanted:
        wanted.append(sweep.beams[-1])
    lines = [
        "Mean decoding steps per sentence on dev, OpenNMT-py's rule (stop when the top item of the beam is "
        "finished) minus optimal stopping, both on raw log-probability. The paper reports optimal stopping "
        "finishing 3-5 steps earlier at b = 10 on NIST (Section 3).",
        "",
        "| b | steps, default | steps, optimal | saved | saved (%) | mean output length, default |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for b in sorted(set(wanted) | {10, 20}):
        if b not in sweep.beams:
            lines.append(f"| {b} | not in the sweep | | | | |")
            continue
        d, o = sweep.at("default", b), sweep.at("optimal", b)
        if d is None or o is None:
            lines.append(f"| {b} | n/a | n/a | n/a | n/a | n/a |")
            continue
        saved = d["mean_steps"] - o["mean_steps"]
        pct = 100 * saved / d["mean_steps"] if d["mean_steps"] else float("nan")
        lines.append(f"| {b} | {f2(d['mean_steps'])} | {f2(o['mean_steps'])} | {f2(saved)} | {pct:.1f} | "
                     f"{f2(d['mean_length'])} |")
    pairs = [(sweep.at("default", b), sweep.at("optimal", b)) for b in sweep.beams]
    pairs = [(d, o) for d, o in pairs if d and o]
    if pairs:
        later = [d["beam"] for d, o in pairs if o["mean_steps"] > d["mean_steps"] + 1e-9]
        lines += ["", "Over all beam sizes, optimal stopping took " +
                  ("no more steps on average than the default rule at every b (as Theorem 2 requires)."
                   if not later else f"more steps than the default rule at b = {', '.join(map(str, later))}.")]
    lines.append("")
    return "\n".join(lines)


def setup_section(dev_meta: dict, test_meta: dict | None, sweep: Sweep) -> str:
    m = dev_meta
    lines = [
        f"- model: {m['model']}",
        f"- data: {m['dataset']}; dev source `{m['src']}`, {refs(len(m['refs']))}: "
        + ", ".join(f"`{r}`" for r in m["refs"]),
    ]
    if test_meta:
        lines.append(f"- test: source `{test_meta['test_src']}`, {refs(len(test_meta['test_refs']))}: "
                     + ", ".join(f"`{r}`" for r in test_meta["test_refs"]))
    lines += [
        f"- bounded reward target length l = ratio x |x| with ratio = {m['ratio']:g}",
        f"- grid: b = {sweep.beams[0]}..{sweep.beams[-1]}, r in {{{', '.join(fmt_r(r) for r in sweep.rewards)}}}",
        f"- BLEU (sacrebleu): `{m['bleu_signature']}`",
        f"- machine: {m['machine']}",
        f"- dev sweep: {m['decodes']} decodes in {m['seconds']:.0f} s ({m['seconds'] / 3600:.2f} h)",
    ]
    total = m["seconds"]
    if test_meta:
        lines.append(f"- test evaluation: {test_meta['decodes']} decodes in {test_meta['seconds']:.0f} s "
                     f"(machine: {test_meta['machine']})")
        total += test_meta["seconds"]
        lines.append(f"- total: {total:.0f} s ({total / 3600:.2f} h)")
    for key in ("notes",):
        note = m.get(key)
        if note:
            lines += [f"- {n}" for n in ([note] if isinstance(note, str) else note)]
    return "\n".join(lines) + "\n"


def differences_section(sweep: Sweep, test: dict | None) -> str:
    m = sweep.meta
    dev_n = max((r["sentences"] for r in sweep.rows), default=0)
    test_refs = refs(len(test["meta"]["test_refs"])) if test else "n/a"
    d5 = sweep.at("default", 5) or (sweep.series("default") or [None])[-1]
    out_len = (f"{f2(d5['mean_length'])} tokens as the model counts them (default search, b = {d5['beam']})"
               if d5 else "n/a")
    rows = [
        ("task / data", "Chinese-English news, 1M training pairs (BPE)", m["dataset"]),
        ("dev set", "NIST 06 newswire, 616 sentences, 4 references", f"{dev_n} sentences, {refs(len(m['refs']))}"),
        ("test set", "NIST 08 newswire, 691 sentences, 4 references", test_refs),
        ("sentence length", "English training side: 23M tokens over 1M sentences (their Table 1)",
         f"mean 1-best length on dev: {out_len}"),
        ("model", "OpenNMT-py default settings, 29M parameters, 20 epochs at about 1 h each on a GeForce 980 Ti "
         "(epoch 15 kept)", m["model"]),
        ("length ratio for l", "1.27", f"{m['ratio']:g}"),
        ("BLEU", "case-insensitive 4-reference BLEU-4", f"sacrebleu `{m['bleu_signature']}`"),
    ]
    lines = ["| | paper | here |", "|---|---|---|"] + [f"| {a} | {b} | {c} |" for a, b, c in rows]
    lines += ["", "Absolute BLEU is therefore not comparable with the paper's; the comparison is about the shape "
              "of the curves and the order of the decoders.", ""]
    return "\n".join(lines)


def rel_to_root(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path.resolve())


def recompute_section(test: dict | None, stats, results: Path | None = None) -> str:
    """How a reader recomputes a p-value with sacrebleu's own command line from the committed outputs."""
    if stats is None or not test:
        return ""
    meta = test["meta"]
    base, mine = fixed_row(test, "default", PAPER_B), tuned_rows(test).get("optimal_reward")
    if base is None or mine is None:
        return ""
    refs = " ".join(meta.get("clean_test_refs") or meta["test_refs"])
    where = (lambda h: rel_to_root(results / h)) if results is not None else str
    return ("To recompute a p-value (here optimal + bounded reward against the stock default at b = 16) with "
            "sacrebleu's command line from the committed outputs, from the repository root, after `make reproduce` "
            "has written the cleaned references (whitespace collapsed"
            + (", Moses escapes undone" if meta.get("unescape_moses") else "") + "):\n\n"
            f"    sacrebleu {refs} -i {where(base['hyp'])} {where(mine['hyp'])} -m bleu -lc --force --paired-bs\n\n"
            "(1000 resamples and seed 12345 are sacrebleu's defaults; the first `-i` file is the baseline).\n")


def block(text: str) -> str:
    """A README section's text followed by one blank line (nothing for an empty section)."""
    return text.rstrip("\n") + "\n" if text.strip() else ""


def readme(sweep, test, tuned, t2, t3, paper_name, stats=None, why="", results: Path | None = None) -> str:
    scores = family_scores(sweep, test, tuned)
    claims = [claim_a(sweep, scores, test, stats), claim_b(sweep, test, stats), claim_c(sweep, scores),
              claim_d(scores, test, stats), claim_e(sweep, test, stats), claim_f(sweep)]
    tested = ("`dev_sweep.json` and `test_eval.json`" if test else
              "`dev_sweep.json` (`test_eval.json` was not there, so there are no test numbers)")
    decoders = [
        "| family | search |",
        "|---|---|",
        "| `default` | OpenNMT-py 3.5.1's rule: stop when the top item of the beam is finished (and n_best are "
        "collected), return the best collected; raw log-probability |",
        "| `default_avg` | the same with OpenNMT-py's default length normalization (`avg`) |",
        "| `shrinking_norm` | RNNsearch shrinking beam, length-normalized score (paper's 2a) |",
        "| `shrinking_reward` | shrinking beam, unbounded per-word reward r (paper's 2b) |",
        "| `optimal` | optimal stopping on raw log-probability (paper's Section 3; r = 0) |",
        "| `optimal_reward` | optimal stopping with the bounded length reward r (paper's Section 4) |",
    ]
    if sweep.series(HISTORICAL):
        decoders.append(f"| `{HISTORICAL}` | OpenNMT-py's search of early 2017, the paper's baseline: stop when "
                        f"the top item of the beam is completed and return that item (earlier completions are "
                        f"never stored) |")
    parts = [
        f"# Results: optimal beam search on {sweep.meta['dataset']}",
        "",
        f"Reproduction of {paper_name}, *When to Finish? Optimal Beam Search for Neural Text Generation (modulo "
        "beam size)*, Section 5 (Table 2, Table 3, Figures 1-2) with this package's `-stopping optimal` and "
        "`-length_reward`.",
        "",
        "Made by `make reproduce`: the sweep writes `dev_sweep.json` (every decoder x beam size x reward on dev) "
        "and `test_eval.json` (each decoder at its dev-tuned setting, and the stock default at fixed beam sizes, "
        "on test), with every test output in `hyps/` and per-sentence steps in `test_sentences.json`; then "
        "`python scripts/make_report.py --results DIR` writes this file, the tables and the figures from "
        f"{tested}. Do not edit by hand; every number here comes from those files or from the paper.",
        "",
        "## Setup",
        "",
        setup_section(sweep.meta, test["meta"] if test else None, sweep),
        "## Differences from the paper's setup",
        "",
        differences_section(sweep, test),
        "## Decoders",
        "",
        "\n".join(decoders),
        "",
        "## Table 2: tuning the bounded reward (dev)",
        "",
        t2,
        "## Table 3: decoders on test, with paired significance",
        "",
        block(t3),
        block(recompute_section(test, stats, results)),
        "## The paper's ordering on this test set",
        "",
        block(ordering_section(test, stats, why)),
        "## BLEU and length by source length (test)",
        "",
        block(length_table(test, stats, why)),
        "## Figures",
        "",
        "Figure 1: model score vs beam size (paper's Figure 1).",
        "",
        "![model score vs beam size](fig1_model_score.png)",
        "",
        "Figure 2: (a) BLEU and (b) length ratio vs beam size on dev; the reward decoders at their dev-tuned r "
        "(paper's Figure 2).",
        "",
        "![BLEU and length ratio vs beam size](fig2_bleu_length.png)",
        "",
        "## Steps saved by optimal stopping",
        "",
        steps_section(sweep),
        block(steps_by_length(test, stats, why)),
        "## Findings: the paper's claims on this data",
        "",
        "Each verdict is computed by `scripts/make_report.py` from the files above with the thresholds it "
        f"states; a BLEU difference counts only when sacrebleu's paired-bootstrap p-value is below {ALPHA}, and "
        "each verdict names the p-value it rests on. \"partly holds\" means some of the checks behind a claim pass "
        "and some fail.",
        "",
    ]
    for title, body in claims:
        parts += [f"**{title}**", "", body, ""]
    return "\n".join(parts)


# -------------------------------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="Writes table2.md, table3.md, table_length.md, fig1_model_score.png, "
                                        "fig2_bleu_length.png and README.md into --results.")
    ap.add_argument("--results", type=Path, required=True,
                    help="folder with dev_sweep.json (and test_eval.json, test_sentences.json, hyps/); "
                         "the outputs go here too")
    ap.add_argument("--paper-name", default="Huang et al. (2017)",
                    help="how the tables and README name the paper (default: %(default)s)")
    args = ap.parse_args(argv)
    if not (args.results / "dev_sweep.json").exists():
        ap.error(f"{args.results / 'dev_sweep.json'} not found")

    os.environ.setdefault("MPLBACKEND", "Agg")
    import matplotlib
    matplotlib.use("Agg")

    dev, test = load(args.results)
    sweep = Sweep(dev)
    tuned = tuned_settings(sweep, test)
    stats, why = load_stats(args.results, test)
    if stats is None and test is not None:
        print(f"make_report: no paired statistics: {why}", file=sys.stderr)
    t2, _ = table2(sweep, args.paper_name)
    t3 = table3(sweep, test, tuned, args.paper_name, stats, why)
    tl = length_table(test, stats, why) + "\n" + steps_by_length(test, stats, why)
    (args.results / "table2.md").write_text(t2)
    (args.results / "table3.md").write_text(t3)
    (args.results / "table_length.md").write_text(tl)
    fig1(sweep, args.results / "fig1_model_score.png")
    fig2(sweep, tuned, args.results / "fig2_bleu_length.png")
    (args.results / "README.md").write_text(readme(sweep, test, tuned, t2, t3, args.paper_name, stats, why,
                                                               args.results))
    for name in ("table2.md", "table3.md", "table_length.md", "fig1_model_score.png", "fig2_bleu_length.png",
                 "README.md"):
        print(args.results / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
