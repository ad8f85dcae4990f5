"""Tiny eole models trained in the test run with the real ``eole build_vocab`` and ``eole train``.

Data: ``toy``'s synthetic task (source letters ``a..p``; each maps to one or two upper-case letters).

* ``encoder_decoder``: a one-layer LSTM encoder-decoder with attention on that task (about 15 s on one thread);
* ``decoder_only``: a two-layer transformer language model (``transformer_lm``) trained on prompt-response
  pairs, prompt = the source letters, response = the map of its last two letters, so beam search runs over a
  prompt's continuation (about 20 s). Neither is good at its task after 400 steps; both give real, varied beams
  that end with EOS.
"""
from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

from helpers import toy

COMMON = toy.CORPUS_YAML + """\
{share}training:
  model_path: {d}/model
  train_steps: {steps}
  valid_steps: 100000
  save_checkpoint_steps: {steps}
  batch_size: 64
  valid_batch_size: 64
  optim: adam
  learning_rate: 0.003
  bucket_size: 4096
  num_workers: 0
  world_size: 1
  gpu_ranks: []
seed: 1234
"""

MODELS = {
    "encoder_decoder": """\
model:
  architecture: rnn
  rnn_type: LSTM
  layers: 1
  hidden_size: 64
  embeddings:
    word_vec_size: 32
""",
    "decoder_only": """\
model:
  architecture: transformer_lm
  layers: 2
  hidden_size: 64
  heads: 2
  transformer_ff: 128
  embeddings:
    word_vec_size: 64
    position_encoding_type: SinusoidalInterleaved
""",
}


def write_pairs(path: Path, n: int, seed: int, kind: str, max_len: int = 10) -> None:
    """``path.src``/``path.tgt``: toy.py's task (encoder-decoder) or its prompt-response form (decoder-only)."""
    rng = random.Random(seed)
    with open(f"{path}.src", "w") as fs, open(f"{path}.tgt", "w") as ft:
        for _ in range(n):
            src = [rng.choice(toy.LETTERS) for _ in range(rng.randint(1, max_len))]
            tgt = toy.target_of(src if kind == "encoder_decoder" else src[-2:])
            fs.write(" ".join(src) + "\n")
            ft.write(" ".join(tgt) + "\n")


def eole(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "eole"), *map(str, args)], env=env,
                          capture_output=True, text=True)


def train(workdir: Path, kind: str, steps: int = 400) -> Path:
    """Build vocab and train with the real eole commands; returns the model directory."""
    workdir.mkdir(parents=True, exist_ok=True)
    write_pairs(workdir / "train", 3000, 1, kind)
    write_pairs(workdir / "valid", 100, 2, kind)
    share = "share_vocab: true\n" if kind == "decoder_only" else ""
    config = workdir / "train.yaml"
    config.write_text(COMMON.format(d=workdir, steps=steps, share=share) + MODELS[kind])
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), PYTHONWARNINGS="ignore")
    for cmd in (("build_vocab", "-config", config, "-n_sample", "-1"), ("train", "-config", config)):
        done = eole(*cmd, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
    return workdir / "model"
