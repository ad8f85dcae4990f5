"""End to end: ``eole predict -stopping optimal -prune_dead`` (the dead rows skipped, ``search.dead``: eole's decoder
runs only for the rows the search needs, ``eole.translator.CertifiedTranslator._decode_needed_rows``) against the
same decode without, in the same process, on tiny eole models trained in the run, each trained briefly, unsure
enough that items die before the certificate holds.

On an RNN encoder-decoder the outputs (n-best lists with ``-with_score``) are byte-identical; so is every statistic
of every line but ``completed`` and ``stop_reason``, which may differ (``search.dead``'s docstring); the pruned
run's lines have one key more, ``rows_skipped``. Where pruning does not apply (eole's own rule; a transformer
decoder, whose attention's last bits depend on a row's place in the batch; a decoder-only model) the bytes of the
output and every statistic are equal, each line skipping 0 rows.
"""
from __future__ import annotations

import json
import os

import pytest

from helpers import pruned, toy_eole

CASES = [
    ["-beam_size", "5", "-batch_size", "1"],
    ["-beam_size", "5", "-batch_size", "16"],
    ["-beam_size", "5", "-batch_size", "16", "-n_best", "3", "-with_score"],
    ["-beam_size", "6", "-batch_size", "16", "-block_ngram_repeat", "2", "-n_best", "2"],
    ["-beam_size", "4", "-batch_size", "16", "-length_reward", "1.0", "-length_ratio", "1.1"],
]

TRANSFORMER = """\
model:
  architecture: transformer
  layers: 1
  hidden_size: 64
  heads: 2
  transformer_ff: 128
  embeddings:
    word_vec_size: 64
    position_encoding_type: SinusoidalInterleaved
"""


def _train(workdir, model: str, steps: int):
    """``toy_eole.train``'s encoder-decoder task, with ``model`` (eole's YAML) for ``steps`` steps."""
    workdir.mkdir(parents=True, exist_ok=True)
    toy_eole.write_pairs(workdir / "train", 3000, 1, "encoder_decoder")
    toy_eole.write_pairs(workdir / "valid", 100, 2, "encoder_decoder")
    config = workdir / "train.yaml"
    config.write_text(toy_eole.COMMON.format(d=workdir, steps=steps, share="") + model)
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), PYTHONWARNINGS="ignore")
    for cmd in (("build_vocab", "-config", config, "-n_sample", "-1"), ("train", "-config", config)):
        done = toy_eole.eole(*cmd, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
    return workdir / "model"


@pytest.fixture(scope="module")
def rnn(tmp_path_factory):
    return _train(tmp_path_factory.mktemp("dead_rnn"), toy_eole.MODELS["encoder_decoder"], 60)


@pytest.fixture(scope="module")
def transformer(tmp_path_factory):
    return _train(tmp_path_factory.mktemp("dead_transformer"), TRANSFORMER, 100)


def _decode(ours, model, src, out, args):
    out.mkdir()
    done = ours.predict("-model_path", model, "-src", src, "-output", out / "hyp", "-stats_file", out / "stats",
                        "-length_penalty", "none", "-max_length_ratio", "0", *args)
    assert done.returncode == 0, done.stderr[-3000:]
    return (out / "hyp").read_bytes(), [json.loads(line) for line in (out / "stats").read_text().splitlines()]


def _compare(ours, model, src, tmp_path, args):
    hyp, stats = _decode(ours, model, src, tmp_path / "plain", args)
    pruned_hyp, pruned_stats = _decode(ours, model, src, tmp_path / "pruned", [*args, "-prune_dead"])
    return pruned.compare(hyp, stats, pruned_hyp, pruned_stats, " ".join(args))


@pytest.mark.parametrize("args", CASES, ids=" ".join)
def test_pruned_decode_answers_as_the_unpruned_one(ours, rnn, src, tmp_path, args):
    differ, skipped = _compare(ours, rnn, src, tmp_path, ["-stopping", "optimal", *args])
    if args == CASES[1]:  # rows were skipped (else the comparison would pass vacuously)
        assert skipped > 0


@pytest.mark.parametrize("args", CASES[1:3], ids=" ".join)
def test_a_transformer_is_not_pruned(ours, transformer, src, tmp_path, args):
    """eole's transformer decoder is left whole (``CertifiedTranslator._may_decode_needed_rows``): its CPU
    attention's last bits depend on a row's place in the batch, which a compacted batch changes."""
    differ, skipped = _compare(ours, transformer, src, tmp_path, ["-stopping", "optimal", *args])
    assert differ == {"completed": 0, "stop_reason": 0} and skipped == 0


def test_not_applicable_is_byte_identical(ours, rnn, src, tmp_path):
    differ, skipped = _compare(ours, rnn, src, tmp_path,
                               ["-stopping", "default", "-beam_size", "5", "-batch_size", "16"])
    assert differ == {"completed": 0, "stop_reason": 0} and skipped == 0


def test_decoder_only_is_not_pruned(ours, decoder_only, src, tmp_path):
    """eole's ``GeneratorLM`` keeps its own decode loop: with -prune_dead nothing is skipped, nothing changes."""
    differ, skipped = _compare(ours, decoder_only, src, tmp_path,
                               ["-stopping", "optimal", "-beam_size", "5", "-batch_size", "16"])
    assert differ == {"completed": 0, "stop_reason": 0} and skipped == 0
