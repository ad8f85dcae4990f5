"""scripts/make_report.py (``onmt_optimal_lab.paper.report``) and ``onmt_optimal_lab.paper.report.significance`` on fabricated results
(no decoding): files written, Table 2's argmax, README coverage, byte-identical reruns and ``--check``, the
paired-bootstrap statistics against sacrebleu itself, the labelling rule, and the committed results re-rendered
byte for byte from their committed inputs (where the test references are on this machine)."""
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from onmt_optimal_lab.paper.report import significance, stats

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "make_report.py"

FAMILIES = ["opennmt2017", "default", "default_avg", "shrinking_norm", "shrinking_reward", "optimal", "optimal_reward"]
FIXED = ("default.b5", "default.b16", "optimal.b16", "default.b10", "optimal.b10", "opennmt2017.b5", "opennmt2017.b16",
         "opennmt2017.b10")
BEAMS = [1, 2, 3, 4]
REWARDS = [0.0, 1.0, 1.2]
WORDS = "the a cat dog sat ran on under mat rug red big small house tree bird".split()


def corrupt(lines, p, seed):
    """Each word replaced by a random one with probability ``p`` (fixed seed)."""
    rng = random.Random(seed)
    return [" ".join(w if rng.random() >= p else rng.choice(WORDS) for w in line.split()) for line in lines]


def fake_outputs(folder: Path, n: int = 120, seed: int = 0):
    """References, sources and per-system test outputs; optimal_reward and shrinking_norm are equally good
    (a tie), the paper's baseline (opennmt2017, tuned b = 3) and the stock default at b = 16 are much worse, default
    and optimal at their tuned b = 1 are identical, opennmt2017 and default at b = 10 too."""
    rng = random.Random(seed)
    refs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 18))) for _ in range(n)]
    (folder / "test.src").write_text("".join(" ".join("x" * len(r.split())) + "\n" for r in refs))
    (folder / "test.ref0").write_text("".join(r + "\n" for r in refs))
    greedy = corrupt(refs, 0.45, 11)
    best = corrupt(refs, 0.2, 15)
    tie = corrupt(refs[:4], 0.3, 13) + best[4:]  # four sentences differ from optimal_reward's: a tie
    hyps = {
        "default.b1": greedy, "optimal.b1": list(greedy),
        "default_avg.b4": corrupt(refs, 0.3, 12), "shrinking_norm.b4": tie,
        "shrinking_reward.r1.b3": corrupt(refs, 0.25, 14), "optimal_reward.r1.2.b2": best,
        "default.b5": corrupt(refs, 0.5, 16), "default.b16": corrupt(refs, 0.6, 17),
        "optimal.b16": corrupt(refs, 0.7, 18), "default.b10": corrupt(refs, 0.55, 19),
        "optimal.b10": corrupt(refs, 0.55, 19), "opennmt2017.b3": corrupt(refs, 0.45, 21),
        "opennmt2017.b5": corrupt(refs, 0.5, 22), "opennmt2017.b16": corrupt(refs, 0.5, 23),
        "opennmt2017.b10": corrupt(refs, 0.55, 19),
    }
    (folder / "hyps").mkdir(exist_ok=True)
    for key, lines in hyps.items():
        (folder / "hyps" / f"test.{key}.txt").write_text("".join(x + "\n" for x in lines))
    outputs = {}
    for key, lines in hyps.items():
        lengths = [len(x.split()) for x in lines]
        saved = 1 if key.startswith("optimal") else 0
        outputs[key] = {"steps": [x + 2 - saved for x in lengths], "length": lengths,
                        "log_prob": [-0.5 * x for x in lengths]}
    sentences = {"src_tokens": [len(r.split()) for r in refs], "outputs": outputs}
    (folder / "test_sentences.json").write_text(json.dumps(sentences))
    return refs, hyps


def fake_results(folder: Path, seed: int = 0, with_outputs: bool = True) -> dict:
    """Write a small dev_sweep.json and test_eval.json; return {reward: argmax-BLEU beam} of Table 2."""
    rng = random.Random(seed)
    meta = {"model": "fake LSTM", "dataset": "fake-subs zh-en", "src": "dev.zh", "refs": ["dev.en"],
            "ratio": 1.1, "beams": BEAMS, "rewards": REWARDS, "bleu_signature": "nrefs:1|case:mixed|tok:13a",
            "seconds": 12.5, "decodes": 0, "machine": "test box"}
    rows = []
    for fam in FAMILIES:
        rewards = [r for r in REWARDS if r > 0] if fam in ("shrinking_reward", "optimal_reward") else [None]
        for r in rewards:
            for b in BEAMS:
                rows.append({
                    "family": fam, "beam": b, "reward": r, "bleu": round(rng.uniform(10, 20), 2),
                    "length_ratio": round(rng.uniform(0.8, 1.05), 3), "mean_log_prob": -5 + 0.1 * b,
                    "mean_score": -5.0, "mean_steps": 10 - (0.5 * b if fam == "optimal" else 0.0),
                    "mean_length": 8.0, "sentences": 50, "stop_reasons": {"certificate": 50}})
    # a tie in r = 1.0: beams 2 and 4 share the best BLEU; the smaller beam must win
    tied = [x for x in rows if x["family"] == "optimal_reward" and x["reward"] == 1.0]
    for x in tied:
        x["bleu"] = min(x["bleu"], 19.0)
    tied[1]["bleu"] = tied[3]["bleu"] = 25.0
    meta["decodes"] = len(rows)
    (folder / "dev_sweep.json").write_text(json.dumps({"meta": meta, "rows": rows}))

    expected = {}
    for r in REWARDS:
        fam, rr = ("optimal", None) if r == 0 else ("optimal_reward", r)
        cand = [x for x in rows if x["family"] == fam and x["reward"] == rr]
        expected[r] = min(cand, key=lambda x: (-x["bleu"], x["beam"]))["beam"]
    assert expected[1.0] == 2

    test_meta = dict(meta, test_src="test.zh", test_refs=["test.en0", "test.en1", "test.en2"])
    if not with_outputs:  # the format before the statistics: tuned rows only, no outputs
        test_rows = []
        for fam in FAMILIES:
            cand = [x for x in rows if x["family"] == fam]
            t = min(cand, key=lambda x: (-x["bleu"], x["beam"]))
            test_rows.append({"family": fam, "beam": t["beam"], "reward": t["reward"], "dev_bleu": t["bleu"],
                              "dev_length_ratio": t["length_ratio"], "test_bleu": round(t["bleu"] - 2, 2),
                              "test_length_ratio": round(t["length_ratio"] + 0.01, 3), "test_mean_steps": 9.0})
        (folder / "test_eval.json").write_text(json.dumps({"meta": test_meta, "rows": test_rows}))
        return expected

    refs, hyps = fake_outputs(folder)
    test_meta.update(test_refs=[str(folder / "test.ref0")], unescape_moses=False, fixed_beams=[5, 16],
                     steps_beams=[10, 16], clean_test_refs=[str(folder / "test.ref0")],
                     bleu_signature="nrefs:1|case:lc|tok:13a|test")
    test_rows = []
    for key in hyps:
        parts = key.split(".")
        fam, beam = parts[0], int(parts[-1][1:])
        reward = float(".".join(parts[1:-1])[1:]) if len(parts) > 2 else None
        setting = "fixed" if key in FIXED else "tuned"
        bleu, lr = significance.corpus_bleu(hyps[key], [refs])
        test_rows.append({"family": fam, "beam": beam, "reward": reward, "setting": setting, "dev_bleu": 15.0,
                          "dev_length_ratio": 0.9, "test_bleu": round(bleu, 4), "test_length_ratio": round(lr, 5),
                          "test_mean_steps": 9.0, "test_mean_log_prob": -4.0, "hyp": f"hyps/test.{key}.txt"})
    (folder / "test_eval.json").write_text(json.dumps({"meta": test_meta, "rows": test_rows}))
    return expected


def run(folder: Path, *args):
    return subprocess.run([sys.executable, str(SCRIPT), "--results", str(folder), *args], capture_output=True,
                          text=True, timeout=900, env=dict(os.environ, OMP_NUM_THREADS="1", MPLBACKEND="Agg"))


OUTPUTS = ["table2.md", "table3.md", "table_length.md", "fig1_model_score.png", "fig2_bleu_length.png", "README.md"]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Fabricated results with test outputs, and make_report's run on them: (folder, Table 2's expected beams,
    the run)."""
    folder = tmp_path_factory.mktemp("report")
    expected = fake_results(folder)
    proc = run(folder)
    assert proc.returncode == 0, proc.stderr
    return folder, expected, proc


def check_common(folder: Path, expected: dict):
    for name in OUTPUTS:
        assert (folder / name).stat().st_size > 0, name
    t2 = (folder / "table2.md").read_text()
    best_row = next(line for line in t2.splitlines() if line.startswith("| best b (ours)"))
    assert [int(c) for c in best_row.strip("| ").split(" | ")[1:]] == [expected[r] for r in REWARDS]
    paper_bleu = next(line for line in t2.splitlines() if line.startswith("| BLEU (paper)"))
    assert paper_bleu.split(" | ")[1:] == ["32.2", "34.6", "34.7 |"]
    readme = (folder / "README.md").read_text()
    for fam in FAMILIES:
        assert f"`{fam}`" in readme, fam
    for claim in ("(a)", "(b)", "(c)", "(d)", "(e)", "(f)"):
        assert f"**{claim} " in readme
    assert readme.count("**Verdict: ") >= 5  # (f) needs b = 10 in the sweep
    assert "fig1_model_score.png" in readme and "fig2_bleu_length.png" in readme
    assert "nrefs:1|case:mixed|tok:13a" in readme and "test box" in readme
    assert "34.70" in readme and "33.60" in readme  # the paper's Table 3 beside ours
    assert "\n## " in readme and not re.search(r"[^\n]\n## ", readme)  # every heading after a blank line
    return readme


def test_make_report_without_test_outputs(tmp_path):
    expected = fake_results(tmp_path, with_outputs=False)
    proc = run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    readme = check_common(tmp_path, expected)
    assert "not computed (test_eval.json names no test outputs" in readme
    assert "no paired statistics" in proc.stderr
    before = {n: (tmp_path / n).read_bytes() for n in OUTPUTS}
    assert run(tmp_path).returncode == 0
    assert {n: (tmp_path / n).read_bytes() for n in OUTPUTS} == before  # reruns are byte-identical


def test_make_report(made):
    folder, expected, _ = made
    readme = check_common(folder, expected)
    setup = readme.split("## Setup")[1].split("\n## ")[0]
    assert "dev: `nrefs:1|case:mixed|tok:13a`; test: `nrefs:1|case:lc|tok:13a|test`" in setup  # each its own
    decoders = readme.split("## Decoders")[1].split("\n## ")[0]
    assert "`opennmt2017` | OpenNMT-py's search of early 2017, **the paper's baseline**" in decoders
    # the rule is stated once, in its own section; the tables point to it
    assert readme.count("**How a difference is labelled**") == 1
    assert "Seed check: " in readme and "--paired-bs-n 10000" in readme


def test_check_writes_nothing_and_names_what_differs(made, tmp_path):
    folder, _, _ = made
    proc = run(folder, "--check")
    assert proc.returncode == 0, proc.stderr
    assert "every file is what its inputs give" in proc.stdout  # a rerun renders the same bytes
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    (copy / "table2.md").write_text((copy / "table2.md").read_text().replace("32.2", "32.3"))
    (copy / "fig1_model_score.png").unlink()
    mtimes = {p.name: p.stat().st_mtime_ns for p in copy.iterdir() if p.is_file()}
    proc = run(copy, "--check")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "differs from what its inputs give: table2.md, fig1_model_score.png" in proc.stderr
    assert {p.name: p.stat().st_mtime_ns for p in copy.iterdir() if p.is_file()} == mtimes  # nothing written


def sacrebleu_test(baseline, system, refs, seed=12345, n_samples=significance.N_SAMPLES):
    """sacrebleu's own paired bootstrap, called directly: its Result for the system."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    old = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        _, scores = PairedTest([("b", baseline), ("s", system)], {"BLEU": BLEU(lowercase=True, force=True)},
                               references=refs, test_type="bs", n_samples=n_samples)()
    finally:
        os.environ.pop("SACREBLEU_SEED") if old is None else os.environ.__setitem__("SACREBLEU_SEED", old)
    return scores["BLEU"][1]


def cells_of(table: str, start: str) -> list[str]:
    row = next(line for line in table.splitlines() if line.startswith(start))
    return [c.strip() for c in row.strip("|").split("|")]


def test_statistics_in_the_report(made):
    """Table 3's p-values are sacrebleu's for the committed outputs, against the paper's baseline (the dev-tuned
    opennmt2017) and the strongest length fix; claim (a) is worded against the paper's baseline and reads the
    fabricated tie as a tie; the ordering table sets the paper's 29.75 row against opennmt2017."""
    folder, _, _ = made
    refs = [(folder / "test.ref0").read_text().splitlines()]
    hyp = {p.name[5:-4]: p.read_text().splitlines() for p in (folder / "hyps").glob("test.*.txt")}
    t3 = (folder / "table3.md").read_text()
    assert "nrefs:1|bs:10000|seed:12345|case:lc|eff:no|tok:13a|smooth:exp|version:" in t3
    assert "fixed b = 5" in t3 and "fixed b = 16" in t3
    top = cells_of(t3, "| OpenNMT-py of early 2017 (the paper's baseline) |")
    assert top[1] == "3" and top[-1] == "29.75"  # the paper's baseline row beside the dev-tuned opennmt2017
    assert cells_of(t3, "| OpenNMT-py 3.5.1 default (log-prob) |")[-1] == "n/a"
    sig_table = t3.split("Paired bootstrap on test")[1]
    assert "Δ vs the paper's baseline (`opennmt2017`, b = 3)" in sig_table
    assert "Δ vs OpenNMT-py 3.5.1 default (`default`, b = 1)" in sig_table
    cells = cells_of(sig_table, "| optimal beam search, bounded reward |")
    p_base = sacrebleu_test(hyp["opennmt2017.b3"], hyp["optimal_reward.r1.2.b2"], refs).p_value
    assert cells[2] == "< 0.001" and p_base < 0.0005 and cells[3] == "better"
    assert cells[7].startswith("shrinking, len. norm.")
    p_tie = sacrebleu_test(hyp["shrinking_norm.b4"], hyp["optimal_reward.r1.2.b2"], refs).p_value
    assert float(cells[9]) == pytest.approx(p_tie, abs=5e-4) and cells[10] == "not resolved"
    assert cells_of(sig_table, "| optimal beam search (r=0) |")[6] == "identical outputs"

    readme = (folder / "README.md").read_text()
    claim_a = readme.split("**(a) ")[1].split("**(b) ")[0]
    assert "**Verdict: partly holds.**" in claim_a
    assert "against the paper's baseline (`opennmt2017`, dev-tuned b = 3): " in claim_a
    assert "p < 0.001: better; the paper: +0.86 against its baseline" in claim_a
    assert "does not resolve the difference" in claim_a
    ordering = readme.split("## The paper's ordering")[1].split("\n## ")[0]
    paper_row = "| optimal beam search, bounded reward | OpenNMT-py of early 2017 (the paper's baseline) | +0.86 |"
    assert paper_row in ordering
    assert "not resolved; point estimate" in ordering and "as the paper" in ordering
    lengths = (folder / "table_length.md").read_text()
    assert "opennmt2017, b = 3" in lengths and "| all | 120 |" in lengths and "b = 10 (test):" in lengths
    assert "`opennmt2017` stops at the same step as the default on every sentence at b = 10" in lengths
    all_steps = cells_of(lengths.split("b = 10 (test):")[1], "| all |")
    assert all_steps[4] == "1.00" and all_steps[6] == "100.0%"  # the fabricated optimal takes one step fewer each
    claim_f = readme.split("**(f) ")[1]
    assert "That happens on 100.0% of the test sentences, which then save 1.00 steps each" in claim_f


def test_missing_references(tmp_path):
    """References that are not there: one line on stderr and 'not computed' in the report, no traceback."""
    fake_results(tmp_path)
    (tmp_path / "test.ref0").unlink()
    proc = run(tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert "test references not found" in proc.stderr
    assert "Paired bootstrap: not computed (test references not found" in (tmp_path / "table3.md").read_text()


def test_paired_bootstrap_is_sacrebleus():
    """Under every seed, p-value, BLEU and the bootstrap mean and CI of the system equal those of sacrebleu's own
    PairedTest (same seed, 10,000 resamples): the comparison runs on the very resamples sacrebleu draws."""
    rng = random.Random(3)
    refs = [[" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(80)]]
    base, better, same = corrupt(refs[0], 0.5, 1), corrupt(refs[0], 0.1, 2), corrupt(refs[0], 0.5, 1)
    result = significance.paired_bootstrap(("base", base), [("better", better), ("same", same)], refs)
    c = result["better"]
    assert significance.signature(refs).startswith("nrefs:1|bs:10000|seed:12345|")
    assert [d.seed for d in c.draws] == list(significance.SEEDS)
    for d in c.draws:
        theirs = sacrebleu_test(base, better, refs, seed=d.seed)
        assert (d.p, d.mean, d.ci) == (theirs.p_value, theirs.mean, theirs.ci)  # exactly, not approximately
        assert c.bleu == theirs.score
    assert c.ci_low < c.diff < c.ci_high and c.ci_low > 0 and c.p < 0.01 and significance.label(c) == "better"
    # identical outputs: sacrebleu alone would say p = 1/10001; reported as no difference
    assert result["same"].identical and result["same"].p == 1.0 and result["same"].diff == 0.0
    assert significance.label(result["same"]) == "identical outputs"
    with pytest.raises(ValueError):
        significance.paired_bootstrap(("base", base), [("short", base[:-1])], refs)


def comparison(*draws):
    return significance.Comparison("s", "b", 20.0, 19.5, tuple(significance.Draw(i, p, lo, hi, 20.0, 1.0)
                                                               for i, (p, lo, hi) in enumerate(draws)))


def test_label_needs_p_and_interval_under_every_seed():
    """better/worse only when every seed has p < 0.05 and the interval on one side of 0, as printed; an interval
    touching 0 with a small p is not resolved (the old p-only rule called it better); seeds that disagree:
    borderline."""
    assert significance.label(comparison(*[(0.01, 0.1, 0.9)] * 5)) == "better"
    assert significance.label(comparison(*[(0.01, -0.9, -0.1)] * 5)) == "worse"
    assert significance.label(comparison(*[(0.039, -0.38, 1.23)] * 5)) == "not resolved"
    assert significance.label(comparison(*[(0.2, -0.3, 1.0)] * 5)) == "not resolved"
    # as printed: an interval from +0.004 reads [+0.00, ...] and p = 0.0499 reads 0.050: neither resolves
    assert significance.label(comparison(*[(0.028, 0.004, 1.16)] * 5)) == "not resolved"
    assert significance.label(comparison(*[(0.0499, 0.1, 1.16)] * 5)) == "not resolved"
    assert significance.label(comparison(*[(0.0449, 0.006, 1.16)] * 5)) == "better"
    flips = comparison((0.048, 0.01, 1.1), (0.052, -0.01, 1.1), (0.049, 0.02, 1.0), (0.051, -0.02, 1.0),
                       (0.047, 0.01, 1.1))
    assert significance.label(flips) == "borderline (3 of 5 seeds)" and not flips.better


def test_reproduce_tunes_the_papers_baseline():
    """make reproduce tunes the historical opennmt2017 rule (the paper's baseline) on dev like every decoder, and
    still decodes it at the fixed beams."""
    from onmt_optimal_lab.paper import reproduce

    decoders = reproduce.decoders([0.0, 1.0])
    rows = [{"family": d.family, "reward": d.reward, "beam": b, "bleu": 10.0 + (b == 3 and d.family == "opennmt2017")}
            for d in decoders for b in (1, 3, 5)]
    tuned, settings = reproduce.tuned_and_fixed(decoders, rows, [5], [])
    assert tuned["opennmt2017"]["beam"] == 3
    got = {(d.family, b, s) for d, b, s in settings}
    assert ("opennmt2017", 3, "tuned") in got and ("opennmt2017", 5, "fixed") in got


@pytest.mark.parametrize("lengths", [[], [4], [1, 1, 1, 1], [3, 1, 2, 2, 9, 9, 9, 40, 5, 6, 7, 7, 8],
                                     list(range(1, 101)), [1] * 50 + [2] * 3 + [30] * 50])
def test_length_buckets(lengths):
    buckets = significance.length_buckets(lengths, 5)
    assert len(buckets) <= 5
    if not lengths:
        assert buckets == []
        return
    assert buckets[0][0] == min(lengths) and buckets[-1][1] == max(lengths)
    for (lo, hi), (lo2, _) in zip(buckets, buckets[1:]):
        assert lo <= hi and lo2 == hi + 1  # contiguous, no gaps, no overlaps
    members = [significance.in_bucket(lengths, b) for b in buckets]
    assert sorted(i for m in members for i in m) == list(range(len(lengths)))  # every sentence in exactly one


COMMITTED = [ROOT / "results", ROOT / "results" / "multi30k-de-en"]


@pytest.mark.parametrize("folder", COMMITTED, ids=["tvsub", "multi30k"])
def test_committed_results_are_what_their_inputs_give(folder):
    """scripts/make_report.py --check on the committed results: every table, figure and README is re-rendered
    byte for byte from the committed JSON and outputs (needs the test references, which are never committed)."""
    meta = json.loads((folder / "test_eval.json").read_text())["meta"]
    refs = [stats.resolve(r) for r in meta["test_refs"]]
    if not all(r.exists() for r in refs):
        pytest.skip(f"test references not on this machine: {', '.join(map(str, refs))}")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--results", str(folder), "--check"], capture_output=True,
                          text=True, timeout=1800, cwd=ROOT, env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert proc.returncode == 0, proc.stderr


def test_help():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "--results" in proc.stdout and "--check" in proc.stdout
