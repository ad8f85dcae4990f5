"""A tiny synthetic translation task and the real OpenNMT-py commands that train a model on it.

Source sentences are random strings over ``a..p``; the target maps each source letter to one upper-case
letter (``a``-``h``) or to two (``i``-``p``: ``I I``), so the target is about 1.5x the source length. A
one-layer LSTM with attention learns it well enough in a few hundred steps to give real, varied beams.
Everything goes through the real ``onmt_build_vocab`` and ``onmt_train`` console scripts.
"""
from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

LETTERS = "abcdefghijklmnop"


def target_of(src_tokens: list[str]) -> list[str]:
    out = []
    for tok in src_tokens:
        out.extend([tok.upper()] * (2 if tok >= "i" else 1))
    return out


def write_corpus(path: Path, n: int, seed: int, min_len: int = 1, max_len: int = 10) -> None:
    rng = random.Random(seed)
    with open(f"{path}.src", "w") as fs, open(f"{path}.tgt", "w") as ft:
        for _ in range(n):
            src = [rng.choice(LETTERS) for _ in range(rng.randint(min_len, max_len))]
            fs.write(" ".join(src) + "\n")
            ft.write(" ".join(target_of(src)) + "\n")



def source_file(folder: Path, name: str, n: int, seed: int, **lengths) -> Path:
    """``folder/name.src``: ``n`` source lines of the task (``write_corpus``, its targets beside them)."""
    write_corpus(folder / name, n, seed, **lengths)
    return folder / f"{name}.src"

#: the corpus part of a training config, as OpenNMT-py and eole (which kept its keys) both read it: the task's
#: train and valid files in the folder ``{d}``, the vocabularies and the samples built there
CORPUS_YAML = """\
save_data: {d}/run
src_vocab: {d}/vocab.src
tgt_vocab: {d}/vocab.tgt
overwrite: true
data:
  corpus_1:
    path_src: {d}/train.src
    path_tgt: {d}/train.tgt
  valid:
    path_src: {d}/valid.src
    path_tgt: {d}/valid.tgt
"""

TRAIN_YAML = CORPUS_YAML + """\
encoder_type: rnn
decoder_type: rnn
rnn_type: LSTM
layers: 1
hidden_size: 64
word_vec_size: 32
global_attention: general
optim: adam
learning_rate: 0.003
batch_size: 64
valid_batch_size: 64
train_steps: {steps}
valid_steps: 10000
save_checkpoint_steps: {steps}
save_model: {d}/model
seed: 1234
bucket_size: 4096
num_workers: 0
report_every: 100
"""


# the same task with a transformer encoder-decoder (layers 1 from TRAIN_YAML; Adam as above)
TRANSFORMER = {"encoder_type: rnn": "encoder_type: transformer", "decoder_type: rnn": "decoder_type: transformer",
               "rnn_type: LSTM\n": "", "global_attention: general\n": "",
               "hidden_size: 64": "hidden_size: 32\nheads: 2\ntransformer_ff: 64\nposition_encoding: true"}
#: transformers of other shapes (two layers, four heads of 12): relative positions (a product whose rows are the
#: batch's rows times the heads), and rotary embeddings
SHAPES = {"transformer-relative": "max_relative_positions: 20", "transformer-rotary": "max_relative_positions: -1"}


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def train_toy_model(workdir: Path, steps: int = 300, n_train: int = 3000, arch: str = "rnn") -> Path:
    """Build vocab and train with the real OpenNMT-py console scripts; returns the checkpoint path.

    ``arch``: ``rnn`` (1-layer LSTM with attention and input feeding), ``transformer`` or one of ``SHAPES``."""
    workdir.mkdir(parents=True, exist_ok=True)
    write_corpus(workdir / "train", n_train, seed=1)
    write_corpus(workdir / "valid", 100, seed=2)
    text = TRAIN_YAML.format(d=workdir, steps=steps)
    if arch == "transformer":
        for old, new in TRANSFORMER.items():
            text = text.replace(old, new)
    elif arch in SHAPES:
        for old, new in {**TRANSFORMER, "layers: 1": "layers: 2", "word_vec_size: 32": "word_vec_size: 48",
                         "hidden_size: 64": f"hidden_size: 48\nheads: 4\ntransformer_ff: 64\n{SHAPES[arch]}"}.items():
            text = text.replace(old, new)
    config = workdir / "train.yaml"
    config.write_text(text)
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    subprocess.run([_bin("onmt_build_vocab"), "-config", str(config), "-n_sample", "-1"],
                   check=True, env=env, capture_output=True)
    subprocess.run([_bin("onmt_train"), "-config", str(config)], check=True, env=env, capture_output=True)
    return workdir / f"model_step_{steps}.pt"
