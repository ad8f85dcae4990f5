"""The package's tools and its installation: length ratio, sweep CLI, metadata."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import toy
from onmt_optimal.evaluate import corpus_score
from onmt_optimal.length_ratio import estimate

BIN = Path(sys.executable).parent
# a minimal environment; PYTHONPATH passes through (a checkout other than the editable install's is tested so)
ENV = {"PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1", "PATH": str(BIN),
       **{k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "ATEN_CPU_CAPABILITY")}}


def test_installing_never_asks_for_torch_or_opennmt():
    """OpenNMT-py 3.5.1 pins torch<2.3: depending on it (or on torch) would let pip downgrade torch."""
    requires = [r.split(";")[0].strip().lower() for r in metadata.requires("onmt-optimal") or []]
    assert not [r for r in requires if r.startswith(("torch", "opennmt"))], requires


def test_length_ratio_corpus_and_sentence_means():
    est = estimate([2, 4, 0], [[3, 4, 5], [3, 8, 9]])  # the empty source is left out
    assert est.sentences == 2
    assert est.corpus == pytest.approx((3 + 6) / 6)
    assert est.sentence == pytest.approx((3 / 2 + 6 / 4) / 2)
    with pytest.raises(ValueError):
        estimate([0], [[1]])


def test_corpus_score_uses_every_reference_and_checks_lengths():
    hyps = ["a b c d", "e f"]
    one = corpus_score(hyps, [["a b c d", "x y"]])
    two = corpus_score(hyps, [["a b c d", "x y"], ["w w w w", "e f"]])
    assert two.bleu > one.bleu and "nrefs:2" in two.signature and "case:lc" in two.signature
    with pytest.raises(ValueError):
        corpus_score(hyps, [["only one line"]])


def test_ratio_and_sweep_commands(toy_model, tmp_path):
    toy.write_corpus(tmp_path / "dev", 12, seed=9, max_len=8)
    ratio = subprocess.run([sys.executable, "-m", "onmt_optimal", "ratio", "--src", str(tmp_path / "dev.src"),
                            "--refs", str(tmp_path / "dev.tgt"), "--", "-model", str(toy_model)],
                           capture_output=True, text=True, env=ENV)
    assert ratio.returncode == 0, ratio.stderr[-2000:]
    src = (tmp_path / "dev.src").read_text().split()
    tgt = (tmp_path / "dev.tgt").read_text().split()
    assert f"corpus {len(tgt) / len(src):.4f}" in ratio.stdout  # the toy model has no transforms
    out = tmp_path / "sweep.json"
    sweep = subprocess.run([sys.executable, "-m", "onmt_optimal", "sweep", "--src", str(tmp_path / "dev.src"),
                            "--refs", str(tmp_path / "dev.tgt"), "--beams", "1-2", "--rewards", "0,1",
                            "--out", str(out), "--", "-model", str(toy_model), "-max_length_ratio", "0"],
                           capture_output=True, text=True, env=ENV)
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    rows = json.loads(out.read_text())["rows"]
    families = {r["family"] for r in rows}
    assert families == {"default", "default_avg", "optimal", "optimal_reward", "shrinking_norm", "shrinking_reward"}
    assert {r["beam"] for r in rows} == {1, 2}
    assert all(r["sentences"] == 12 for r in rows)
