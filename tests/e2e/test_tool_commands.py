"""The package's ``ratio`` and ``sweep`` commands (``python -m onmt_optimal``) on the trained toy model."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import toy

BIN = Path(sys.executable).parent
# a minimal environment; PYTHONPATH passes through (a checkout other than the editable install's is tested so)
ENV = {"PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1", "PATH": str(BIN),
       **{k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "ATEN_CPU_CAPABILITY")}}


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
