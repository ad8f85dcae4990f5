"""scripts/make_report.py (``onmt_optimal.report``) and ``onmt_optimal.report.significance`` on fabricated results
(no decoding): files written, Table 2's argmax, README coverage, byte-identical reruns, and the paired-bootstrap
statistics against sacrebleu itself."""
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from onmt_optimal.report import significance

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "make_report.py"

FAMILIES = ["default", "default_avg", "shrinking_norm", "shrinking_reward", "optimal", "optimal_reward"]
BEAMS = [1, 2, 3, 4]
REWARDS = [0.0, 1.0, 1.2]
WORDS = "the a cat dog sat ran on under mat rug red big small house tree bird".split()


def corrupt(lines, p, seed):
    """Each word replaced by a random one with probability ``p`` (fixed seed)."""
    rng = random.Random(seed)
    return [" ".join(w if rng.random() >= p else rng.choice(WORDS) for w in line.split()) for line in lines]


def fake_outputs(folder: Path, n: int = 120, seed: int = 0):
    """References, sources and per-system test outputs; optimal_reward and shrinking_norm are equally good
    (a tie), the stock default at b = 16 is much worse, default and optimal at their tuned b = 1 are identical."""
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
        "optimal.b10": corrupt(refs, 0.55, 19),
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
                     steps_beams=[10, 16], clean_test_refs=[str(folder / "test.ref0")])
    test_rows = []
    for key in hyps:
        parts = key.split(".")
        fam, beam = parts[0], int(parts[-1][1:])
        reward = float(".".join(parts[1:-1])[1:]) if len(parts) > 2 else None
        setting = "fixed" if key in ("default.b5", "default.b16", "optimal.b16", "default.b10", "optimal.b10") \
            else "tuned"
        bleu, lr = significance.corpus_bleu(hyps[key], [refs])
        test_rows.append({"family": fam, "beam": beam, "reward": reward, "setting": setting, "dev_bleu": 15.0,
                          "dev_length_ratio": 0.9, "test_bleu": round(bleu, 4), "test_length_ratio": round(lr, 5),
                          "test_mean_steps": 9.0, "test_mean_log_prob": -4.0, "hyp": f"hyps/test.{key}.txt"})
    (folder / "test_eval.json").write_text(json.dumps({"meta": test_meta, "rows": test_rows}))
    return expected


def run(folder: Path):
    return subprocess.run([sys.executable, str(SCRIPT), "--results", str(folder)], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, OMP_NUM_THREADS="1", MPLBACKEND="Agg"))


OUTPUTS = ["table2.md", "table3.md", "table_length.md", "fig1_model_score.png", "fig2_bleu_length.png", "README.md"]


@pytest.mark.parametrize("with_outputs", [True, False], ids=["statistics", "no-test-outputs"])
def test_make_report(tmp_path, with_outputs):
    expected = fake_results(tmp_path, with_outputs=with_outputs)
    proc = run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    for name in OUTPUTS:
        assert (tmp_path / name).stat().st_size > 0, name

    t2 = (tmp_path / "table2.md").read_text()
    best_row = next(line for line in t2.splitlines() if line.startswith("| best b (ours)"))
    assert [int(c) for c in best_row.strip("| ").split(" | ")[1:]] == [expected[r] for r in REWARDS]
    paper_bleu = next(line for line in t2.splitlines() if line.startswith("| BLEU (paper)"))
    assert paper_bleu.split(" | ")[1:] == ["32.2", "34.6", "34.7 |"]

    readme = (tmp_path / "README.md").read_text()
    for fam in FAMILIES:
        assert f"`{fam}`" in readme, fam
    for claim in ("(a)", "(b)", "(c)", "(d)", "(e)", "(f)"):
        assert f"**{claim} " in readme
    assert readme.count("**Verdict: ") >= 5  # (f) needs b = 10 in the sweep
    assert "fig1_model_score.png" in readme and "fig2_bleu_length.png" in readme
    assert "nrefs:1|case:mixed|tok:13a" in readme and "test box" in readme
    assert "34.70" in readme and "33.60" in readme  # the paper's Table 3 beside ours
    assert "\n## " in readme and not re.search(r"[^\n]\n## ", readme)  # every heading after a blank line
    if not with_outputs:
        assert "not computed (test_eval.json names no test outputs" in readme
        assert "no paired statistics" in proc.stderr

    before = {n: (tmp_path / n).read_bytes() for n in OUTPUTS}
    assert run(tmp_path).returncode == 0
    assert {n: (tmp_path / n).read_bytes() for n in OUTPUTS} == before  # reruns are byte-identical


def sacrebleu_p(baseline, system, refs):
    """sacrebleu's own paired bootstrap, called directly (1000 resamples, seed 12345)."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    os.environ["SACREBLEU_SEED"] = "12345"
    _, scores = PairedTest([("b", baseline), ("s", system)], {"BLEU": BLEU(lowercase=True)}, references=refs,
                           test_type="bs", n_samples=1000)()
    return scores["BLEU"][1].p_value


def test_statistics_in_the_report(tmp_path):
    """Every p-value in Table 3's paired-bootstrap table is sacrebleu's for the committed outputs; the verdict of
    claim (a) names the p-values it rests on and reads the fabricated tie as a tie."""
    fake_results(tmp_path)
    refs = [(tmp_path / "test.ref0").read_text().splitlines()]
    hyp = {p.name[5:-4]: p.read_text().splitlines() for p in (tmp_path / "hyps").glob("test.*.txt")}
    assert run(tmp_path).returncode == 0
    t3 = (tmp_path / "table3.md").read_text()
    assert "nrefs:1|bs:1000|seed:12345|case:lc|eff:no|tok:13a|smooth:exp|version:" in t3
    assert "fixed b = 5" in t3 and "fixed b = 16" in t3
    sig_table = t3.split("Paired bootstrap on test")[1]
    row = next(line for line in sig_table.splitlines() if line.startswith("| optimal beam search, bounded reward | 2 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[5]) == pytest.approx(sacrebleu_p(hyp["default.b16"], hyp["optimal_reward.r1.2.b2"], refs),
                                            abs=5e-4)
    assert cells[6] == "better" and cells[7].startswith("shrinking, len. norm.")
    assert float(cells[9]) == pytest.approx(sacrebleu_p(hyp["shrinking_norm.b4"], hyp["optimal_reward.r1.2.b2"],
                                                        refs), abs=5e-4)
    assert cells[10] == "not resolved"

    readme = (tmp_path / "README.md").read_text()
    claim_a = readme.split("**(a) ")[1].split("**(b) ")[0]
    assert "**Verdict: partly holds.**" in claim_a
    assert "p = 0.001 against default b = 16" in claim_a
    assert "not resolved by this test set" in claim_a
    ordering = readme.split("## The paper's ordering")[1].split("\n## ")[0]
    assert "| optimal beam search, bounded reward | OpenNMT-py default (log-prob) | +0.86 |" in ordering
    assert "not resolved by this test set" in ordering and "as the paper" in ordering
    lengths = (tmp_path / "table_length.md").read_text()
    assert "| all | 120 |" in lengths and "b = 10 (test):" in lengths
    all_steps = next(line for line in lengths.splitlines()[lengths.splitlines().index("b = 10 (test):"):]
                     if line.startswith("| all |"))
    assert all_steps.split(" | ")[4] == "1.00"  # the fabricated optimal outputs take one step fewer each


def test_missing_references(tmp_path):
    """References that are not there: one line on stderr and 'not computed' in the report, no traceback."""
    fake_results(tmp_path)
    (tmp_path / "test.ref0").unlink()
    proc = run(tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert "test references not found" in proc.stderr
    assert "Paired bootstrap: not computed (test references not found" in (tmp_path / "table3.md").read_text()


def test_paired_bootstrap_is_sacrebleus():
    """p-value, BLEU and sacrebleu's bootstrap mean and CI of the system come out of sacrebleu's PairedTest, and the
    interval of the difference is computed on the very resamples that test drew (its mean and CI reproduce)."""
    rng = random.Random(3)
    refs = [[" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(80)]]
    base, better, same = corrupt(refs[0], 0.5, 1), corrupt(refs[0], 0.1, 2), corrupt(refs[0], 0.5, 1)
    result, sig = significance.paired_bootstrap(("base", base), [("better", better), ("same", same)], refs)
    c = result["better"]
    assert sig.startswith("nrefs:1|bs:1000|seed:12345|")
    assert c.p == pytest.approx(sacrebleu_p(base, better, refs))
    assert c.bleu == pytest.approx(significance.corpus_bleu(better, refs)[0])
    idxs = np.random.default_rng(significance.SEED).choice(80, size=(1000, 80), replace=True)
    scores = significance.resampled_scores(significance.bleu_metric(), better, refs, idxs)
    from sacrebleu.significance import estimate_ci
    assert (c.mean, c.ci) == pytest.approx(estimate_ci(scores))
    assert c.ci_low < c.diff < c.ci_high and c.ci_low > 0 and c.p < 0.01
    # identical outputs: sacrebleu alone would say p = 1/1001; reported as no difference
    assert result["same"].identical and result["same"].p == 1.0 and result["same"].diff == 0.0
    with pytest.raises(ValueError):
        significance.paired_bootstrap(("base", base), [("short", base[:-1])], refs)


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


def test_help():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "--results" in proc.stdout
