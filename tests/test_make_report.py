"""scripts/make_report.py on fake sweep results: files written, Table 2's argmax, README coverage, reruns."""
import json
import os
import random
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "make_report.py"
FAMILIES = ["default", "default_avg", "shrinking_norm", "shrinking_reward", "optimal", "optimal_reward"]
BEAMS = [1, 2, 3, 4]
REWARDS = [0.0, 1.0, 1.2]


def fake_results(folder: Path, seed: int = 0) -> dict:
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

    test_rows = []
    for fam in FAMILIES:
        cand = [x for x in rows if x["family"] == fam]
        t = min(cand, key=lambda x: (-x["bleu"], x["beam"]))
        test_rows.append({"family": fam, "beam": t["beam"], "reward": t["reward"], "dev_bleu": t["bleu"],
                          "dev_length_ratio": t["length_ratio"], "test_bleu": round(t["bleu"] - 2, 2),
                          "test_length_ratio": round(t["length_ratio"] + 0.01, 3), "test_mean_steps": 9.0})
    test_meta = dict(meta, test_src="test.zh", test_refs=["test.en0", "test.en1", "test.en2"])
    (folder / "test_eval.json").write_text(json.dumps({"meta": test_meta, "rows": test_rows}))
    return expected


def run(folder: Path):
    return subprocess.run([sys.executable, str(SCRIPT), "--results", str(folder)], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, OMP_NUM_THREADS="1", MPLBACKEND="Agg"))


OUTPUTS = ["table2.md", "table3.md", "fig1_model_score.png", "fig2_bleu_length.png", "README.md"]


def test_make_report(tmp_path):
    expected = fake_results(tmp_path)
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
    for claim in ("(a)", "(b)", "(c)", "(d)"):
        assert f"**{claim} " in readme
    assert readme.count("**Verdict: ") >= 4
    assert "fig1_model_score.png" in readme and "fig2_bleu_length.png" in readme
    assert "nrefs:1|case:mixed|tok:13a" in readme and "test box" in readme
    assert "34.70" in readme and "33.60" in readme  # the paper's Table 3 beside ours

    before = {n: (tmp_path / n).read_bytes() for n in OUTPUTS}
    assert run(tmp_path).returncode == 0
    assert {n: (tmp_path / n).read_bytes() for n in OUTPUTS} == before  # reruns are byte-identical


def test_help():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "--results" in proc.stdout
