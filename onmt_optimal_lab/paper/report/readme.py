"""``README.md`` of a results folder: how the numbers were made, the setup and its differences from the paper's,
the decoders (which one is the paper's baseline), how differences are tested (the labelling rule, stated once, and
whether any label depends on the bootstrap seed), both tables, the paper's ordering checked pair by pair, the
length tables, the figures, the steps saved and the verdicts (``claims``). Do-not-edit output: every number comes
from the result files or from the paper."""
from __future__ import annotations

from pathlib import Path

from onmt_optimal_lab.paper.report.cells import f2, fmt_r, refs
from onmt_optimal_lab.paper.report.claims import findings
from onmt_optimal_lab.paper.report.lengths import length_table, steps_by_length
from onmt_optimal_lab.paper.report.paper import BASELINE, HISTORICAL, LABELS, PAPER_TABLE3
from onmt_optimal_lab.paper.report.results import Sweep, baseline_row, row_key, tuned_rows
from onmt_optimal_lab.paper.report.significance import ALPHA, label
from onmt_optimal_lab.paper.report.stats import ROOT, fmt_cmp, fmt_p


def ordering_section(test: dict | None, stats, why: str) -> str:
    """The paper's Table 3 order on test, pair by pair: our difference, its interval, sacrebleu's p-value and the
    reading: as the paper / against the paper when the rule resolves it, else not resolved, saying which way the
    point estimate points."""
    rows = {f: r for f, r in tuned_rows(test).items() if f in PAPER_TABLE3 and f != BASELINE}
    base = baseline_row(test, BASELINE)
    if base is not None:
        rows[BASELINE] = base
    if stats is None or len(rows) < 2:
        return f"Not computed ({why or 'too few of the paper decoders among the test outputs'})."
    order = sorted(rows, key=lambda f: -PAPER_TABLE3[f][3])
    lines = [
        f"The paper's test order ({', '.join(f'{LABELS[f]} {PAPER_TABLE3[f][3]:.2f}' for f in order)}; each "
        f"decoder at its dev-tuned setting, the paper's baseline as `{BASELINE}` at b = "
        f"{base['beam'] if base else 'n/a'}), checked pair by pair on our test set with the paired bootstrap and the "
        f"rule above.",
        "",
        "| paper: higher | paper: lower | paper Δ | our Δ [95% interval] | p | reading |",
        "|---|---|---:|---:|---:|---|",
    ]
    for i, hi in enumerate(order):
        for lo in order[i + 1:]:
            c = stats.compare(row_key(rows[hi]), row_key(rows[lo]))
            paper = f2(PAPER_TABLE3[hi][3] - PAPER_TABLE3[lo][3], signed=True)
            lines.append(f"| {LABELS[hi]} | {LABELS[lo]} | {paper} | {fmt_cmp(c)} | {fmt_p(c.p)} | {reading(c)} |")
    lines.append("")
    return "\n".join(lines)


def reading(c) -> str:
    """A paper ordering (higher minus lower) on our test set."""
    if c.identical:
        return "identical outputs"
    if c.better:
        return "as the paper"
    if c.worse:
        return "against the paper"
    way = "as the paper" if c.diff > 0 else "reversed" if c.diff < 0 else "0"
    return f"{label(c)}; point estimate {way}"


def steps_section(sweep: Sweep) -> str:
    wanted = [b for b in (10, 20) if b in sweep.beams]
    if sweep.beams and sweep.beams[-1] not in wanted:
        wanted.append(sweep.beams[-1])
    same = all(sweep.at(HISTORICAL, b) is not None and sweep.at("default", b) is not None
               and sweep.at(HISTORICAL, b)["mean_steps"] == sweep.at("default", b)["mean_steps"] for b in sweep.beams)
    who = f"default and `{HISTORICAL}`" if same else "default"
    lines = [
        "Mean decoding steps per sentence on dev, the rule \"stop when the top item of the beam is finished\" "
        + (f"(OpenNMT-py 3.5.1's default and `{HISTORICAL}` both stop by it, at the same step on every beam of the "
           f"sweep) " if same else "(OpenNMT-py 3.5.1's default) ")
        + "minus optimal stopping, both on raw log-probability. The paper reports optimal stopping finishing 3-5 "
        "steps earlier at b = 10 on NIST (Section 3).",
        "",
        f"| b | steps, {who} | steps, optimal | saved | saved (%) | mean output length, default |",
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
        f"- BLEU (sacrebleu), dev: `{m['bleu_signature']}`"
        + (f"; test: `{test_meta['bleu_signature']}`" if test_meta else ""),
        f"- machine: {m['machine']}",
        f"- dev sweep: {m['decodes']} decodes in {m['seconds']:.0f} s ({m['seconds'] / 3600:.2f} h)",
    ]
    total = m["seconds"]
    if test_meta:
        same = test_meta["machine"] == m["machine"]
        lines.append(f"- test evaluation: {test_meta['decodes']} decodes in {test_meta['seconds']:.0f} s"
                     + ("" if same else f" (machine: {test_meta['machine']})"))
        total += test_meta["seconds"]
        lines.append(f"- total: {total:.0f} s ({total / 3600:.2f} h)")
    note = m.get("notes")
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
    bleu = f"sacrebleu, dev `{m['bleu_signature']}`" + (f", test `{test['meta']['bleu_signature']}`" if test else "")
    rows = [
        ("task / data", "Chinese-English news, 1M training pairs (BPE)", m["dataset"]),
        ("dev set", "NIST 06 newswire, 616 sentences, 4 references", f"{dev_n} sentences, {refs(len(m['refs']))}"),
        ("test set", "NIST 08 newswire, 691 sentences, 4 references", test_refs),
        ("sentence length", "English training side: 23M tokens over 1M sentences (their Table 1)",
         f"mean 1-best length on dev: {out_len}"),
        ("model", "OpenNMT-py default settings, 29M parameters, 20 epochs at about 1 h each on a GeForce 980 Ti "
         "(epoch 15 kept)", m["model"]),
        ("baseline search", "OpenNMT-py (PyTorch) of 2017: stops when the top hypothesis of a step is completed "
         "and returns it", f"`{BASELINE}`, that rule on OpenNMT-py 3.5.1's beam; 3.5.1's own default beside it"),
        ("length ratio for l", "1.27", f"{m['ratio']:g}"),
        ("BLEU", "case-insensitive 4-reference BLEU-4", bleu),
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


def testing_section(test: dict | None, stats, results: Path | None = None) -> str:
    """The labelling rule (stated once for the whole report), the seed check over every comparison the report
    made, the test's signature, and how to recompute a p-value with sacrebleu's command line."""
    if stats is None or not test:
        return ""
    seeds = ", ".join(map(str, stats.seeds))
    lines = [
        f"Every BLEU difference on test is tested with sacrebleu's paired bootstrap (`PairedTest`, "
        f"{stats.n_samples:,} resamples of the test sentences); the difference's 95% interval is read off the same "
        f"resamples. Figures are those of seed {stats.seeds[0]} (sacrebleu's default).",
        "",
        f"**How a difference is labelled** (the one rule of this report): *better* or *worse* only when, under each "
        f"of the seeds {seeds}, sacrebleu's p-value is below {ALPHA} and the 95% interval lies on one side of 0, "
        f"both as printed (p to 3 decimals, the interval to 2, so that no label contradicts the figures beside it); "
        f"*not resolved* when under none of them; *borderline (k of {len(stats.seeds)} seeds)* when under some "
        f"only. Borderline counts as not resolved in every verdict.",
        "",
    ]
    pairs = {}  # A vs B and B vs A are one test (same resamples, same p, the interval negated)
    for c, n in stats.with_sizes(stats.comparisons):
        if not c.identical:
            pairs.setdefault((frozenset((c.system, c.baseline)), n), (c, n))
    tested = list(pairs.values())
    border = [(c, n) for c, n in tested if label(c).startswith("borderline")]
    if border:
        lines.append(f"Seed check: of the {len(tested)} pairs compared in this report, {len(border)} "
                     f"{'is' if len(border) == 1 else 'are'} borderline (the label would depend on the seed): "
                     + "; ".join(f"`{c.system}` vs `{c.baseline}`"
                                 + ("" if n is None else f" on {n} sentences of one source-length group")
                                 + " (p and interval by seed: " + ", ".join(
                                     f"{fmt_p(d.p)} [{f2(d.ci_low, signed=True)}, {f2(d.ci_high, signed=True)}]"
                                     for d in c.draws) + ")" for c, n in border) + ".")
    else:
        lines.append(f"Seed check: each of the {len(tested)} pairs compared in this report gets the same label "
                     f"under all {len(stats.seeds)} seeds.")
    lines += ["", f"sacrebleu signature of the test: `{stats.signature}`", ""]
    meta = test["meta"]
    base, mine = baseline_row(test, BASELINE), tuned_rows(test).get("optimal_reward")
    if base is not None and mine is not None:
        refs_ = " ".join(meta.get("clean_test_refs") or meta["test_refs"])
        where = (lambda h: rel_to_root(results / h)) if results is not None else str
        lines += [
            "To recompute one p-value (here optimal + bounded reward against the paper's baseline) with sacrebleu's "
            "command line from the committed outputs, from the repository root, after `make reproduce` has written "
            "the cleaned references (whitespace collapsed"
            + (", Moses escapes undone" if meta.get("unescape_moses") else "") + "; the first `-i` file is the "
            f"baseline, seed {stats.seeds[0]} is sacrebleu's default, `SACREBLEU_SEED` sets another):",
            "",
            f"    sacrebleu {refs_} -i {where(base['hyp'])} {where(mine['hyp'])} -m bleu -lc --force --paired-bs "
            f"--paired-bs-n {stats.n_samples}",
            "",
        ]
    return "\n".join(lines)


def block(text: str) -> str:
    """A README section's text followed by one blank line (nothing for an empty section)."""
    return text.rstrip("\n") + "\n" if text.strip() else ""


DECODERS = [
    (HISTORICAL, "OpenNMT-py's search of early 2017, **the paper's baseline**: the paper ran OpenNMT-py, the "
                 "PyTorch port of OpenNMT, whose search ends as soon as the top hypothesis of a step is completed "
                 "and returns that one, never looking at other completed hypotheses (its Sections 2 and 5.1). Here: "
                 "stop when the top item of the beam is completed and return that item; an approximation on "
                 "OpenNMT-py 3.5.1's beam (`onmt_optimal/search/stopping.py`); raw log-probability"),
    ("default", "OpenNMT-py 3.5.1's rule, a later one: stop when the top item of the beam is finished (and n_best "
                "are collected), return the best collected; raw log-probability"),
    ("default_avg", "the same with OpenNMT-py's default length normalization (`avg`)"),
    ("shrinking_norm", "RNNsearch shrinking beam, length-normalized score (paper's 2a)"),
    ("shrinking_reward", "shrinking beam, unbounded per-word reward r (paper's 2b)"),
    ("optimal", "optimal stopping on raw log-probability (paper's Section 3; r = 0)"),
    ("optimal_reward", "optimal stopping with the bounded length reward r (paper's Section 4)"),
]


def readme(sweep, test, tuned, t2, t3, paper_name, stats=None, why="", results: Path | None = None) -> str:
    claims = findings(sweep, test, tuned, stats)
    ordering = ordering_section(test, stats, why)
    lengths = length_table(test, stats, why)
    steps = steps_by_length(test, stats, why)
    testing = testing_section(test, stats, results)  # last: it reports on every comparison made above
    parts = _opening(sweep, test, paper_name) + [
        "## How differences are tested",
        "",
        block(testing or f"Not computed ({why or 'no test outputs'})."),
        "## Table 2: tuning the bounded reward (dev)",
        "",
        t2,
        "## Table 3: decoders on test, with paired significance",
        "",
        block(t3),
        "## The paper's ordering on this test set",
        "",
        block(ordering),
        "## BLEU and length by source length (test)",
        "",
        block(lengths),
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
        block(steps),
        "## Findings: the paper's claims on this data",
        "",
        "Each verdict is computed by `scripts/make_report.py` from the files above with the thresholds it "
        "states; a BLEU difference counts only when the rule under \"How differences are tested\" labels it "
        "better or worse, and each verdict names the p-value it rests on. \"partly holds\": some of the checks "
        "behind a claim pass and some fail; \"not shown\": the test set does not resolve the difference the claim "
        "needs, and contradicts nothing.",
        "",
    ]
    for title, body in claims:
        parts += [f"**{title}**", "", body, ""]
    return "\n".join(parts)


def _opening(sweep, test, paper_name) -> list[str]:
    """The README's lines up to its decoders: what it reproduces, how it was made, the setup and its
    differences from the paper's, the decoders."""
    tested_files = ("`dev_sweep.json` and `test_eval.json`" if test else
                    "`dev_sweep.json` (`test_eval.json` was not there, so there are no test numbers)")
    decoders = ["| family | search |", "|---|---|"] + [
        f"| `{fam}` | {text} |" for fam, text in DECODERS if fam != HISTORICAL or sweep.series(HISTORICAL)]
    return [
        f"# Results: optimal beam search on {sweep.meta['dataset']}",
        "",
        f"Reproduction of {paper_name}, *When to Finish? Optimal Beam Search for Neural Text Generation (modulo "
        "beam size)*, Section 5 (Table 2, Table 3, Figures 1-2) with this package's `-stopping optimal` and "
        "`-length_reward`.",
        "",
        "Made by `make reproduce`: the sweep writes `dev_sweep.json` (every decoder x beam size x reward on dev) "
        "and `test_eval.json` (each decoder at its dev-tuned setting, and the two baselines at fixed beam sizes, "
        "on test), with every test output in `hyps/` and per-sentence steps in `test_sentences.json`; then "
        "`python scripts/make_report.py --results DIR` writes this file, the tables and the figures from "
        f"{tested_files} (`--check` compares instead of writing). Do not edit by hand; every number here comes "
        "from those files or from the paper.",
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
    ]
