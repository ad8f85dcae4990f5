"""The TVsub Transformer's training commands, end to end on the toy task dressed as TVsub's files:
``scripts/pack_tvsub_transformer.sh`` (prepare_data.py with ``--spm-from``, onmt_build_vocab, the packed
folder), then ``scripts/train_tvsub_transformer.sh`` with the real ``configs/tvsub-zh-en-transformer/train.yaml``
and a tiny model on the command line, ended by its wall-clock budget (``scripts/train_wallclock.py``), then
``onmt_translate`` with ``configs/tvsub-zh-en-transformer/translate.yaml`` on the released fp16 checkpoint
(loaded as fp32 on the CPU). Everything runs in a temporary folder (``RUN_DIR``): nothing of the repository's
``work/`` or ``models/`` is touched.
"""
from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from helpers import toy
from onmt_optimal_lab.paper.corpus import train_spm

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
TINY = ["-enc_layers", "1", "-dec_layers", "1", "-hidden_size", "32", "-word_vec_size", "32", "-transformer_ff",
        "64", "-heads", "2", "-batch_size", "512", "-valid_batch_size", "512", "-num_workers", "0",
        "-bucket_size", "2048", "-warmup_steps", "10", "-save_checkpoint_steps", "5", "-valid_steps", "5",
        "-report_every", "5"]


def _tvsub_like(data: Path, spm_dir: Path) -> None:
    """The toy task under TVsub's file names, and SentencePiece models where models/tvsub-zh-en keeps them."""
    data.mkdir()
    toy.write_corpus(data / "train", 600, seed=1)
    for side, name in (("src", "train.zh.gz"), ("tgt", "train.en.gz")):
        with gzip.open(data / name, "wt", encoding="utf-8") as f:
            f.write((data / f"train.{side}").read_text())
    toy.write_corpus(data / "dev", 20, seed=2)
    toy.write_corpus(data / "test", 20, seed=3)
    shutil.copy(data / "dev.src", data / "dev.zh")
    shutil.copy(data / "dev.tgt", data / "dev.en")
    shutil.copy(data / "test.src", data / "test.zh")
    for i in range(3):
        shutil.copy(data / "test.tgt", data / f"test.ref{i}.en")
    spm_dir.mkdir(parents=True)
    for side in ("src", "tgt"):
        train_spm(str(data / f"train.{side}"), str(spm_dir / f"{side}.spm"), 24, 1.0, "unigram", 1, 10000)


def test_pack_train_by_budget_release_and_translate(tmp_path):
    run, pack = tmp_path / "run", tmp_path / "pack"
    _tvsub_like(tmp_path / "data", run / "models" / "tvsub-zh-en")
    env = {**os.environ, "RUN_DIR": str(run), "DATA": str(tmp_path / "data"), "VENV": sys.prefix,
           "PYTHON": sys.executable, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    packed = subprocess.run(["bash", str(ROOT / "scripts" / "pack_tvsub_transformer.sh"), str(pack)], env=env,
                            capture_output=True, text=True)
    assert packed.returncode == 0, packed.stdout[-2000:] + packed.stderr[-2000:]
    assert sorted(p.name for p in pack.iterdir()) == sorted(
        ["train.src.bz2", "train.tgt.bz2", "dev.src", "dev.ref0", "src.spm.model", "tgt.spm.model", "vocab.src",
         "vocab.tgt", "prep.json"])

    # far more steps than the budget allows: the budget ends the run
    trained = subprocess.run(["bash", str(ROOT / "scripts" / "train_tvsub_transformer.sh"), str(pack), "35", "--",
                              *TINY, "-train_steps", "1000000"], env=env, capture_output=True, text=True)
    assert trained.returncode == 0, trained.stdout[-3000:] + trained.stderr[-2000:]
    assert "train_wallclock: stopped (budget)" in trained.stdout
    model_dir = run / "models" / "tvsub-zh-en-transformer"
    assert {"model.pt", "src.spm.model", "tgt.spm.model", "vocab.src", "vocab.tgt", "train.yaml", "prep.json",
            "train.log"} <= {p.name for p in model_dir.iterdir()}
    torch.serialization.add_safe_globals([argparse.Namespace])
    ckpt = torch.load(model_dir / "model.pt", map_location="cpu", weights_only=True)
    assert "optim" not in ckpt
    weights = [t for part in ("model", "generator") for t in ckpt[part].values() if t.is_floating_point()]
    assert weights and all(t.dtype == torch.float16 for t in weights)
    assert ckpt["opt"].model_dtype == "fp32"  # no CUDA here: the CPU fallback trained in fp32

    hyp = tmp_path / "hyp.txt"
    translated = subprocess.run([str(BIN / "onmt_translate"), "-config",
                                 str(ROOT / "configs" / "tvsub-zh-en-transformer" / "translate.yaml"),
                                 "-src", str(pack / "dev.src"), "-output", str(hyp), "-max_length", "30"],
                                cwd=run, env=env, capture_output=True, text=True)
    assert translated.returncode == 0, translated.stderr[-2000:]
    assert len(hyp.read_text().splitlines()) == 20
