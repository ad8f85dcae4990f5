"""OpenNMT-py's ``-precision`` with the new flags, on the trained toy model: in each precision ``-stopping optimal``
returns exactly what ``-stopping exhaustive`` returns, for every exact scoring rule with n-best, and without
the new flags the output is stock's, byte for byte.

``-precision fp16`` runs on the CPU too: the model, its log-probabilities and OpenNMT-py's running sums
(``log_probs += topk_log_probs``, in place) are float16; the certificate compares the beam's own float16 scores
(kept in float32, where they are exact) with bounds computed by the same float16 operations
(``search.scoring``). ``-precision int8`` is refused on a GPU by OpenNMT-py and on the CPU loads the float32
model: OpenNMT-py 3.5.1 compares the option's string with ``torch.int8`` before its ``quantize_dynamic``, so the
quantization never runs; its output is float32's (the last test holds it, so that this file notices when that
changes), whose exactness the other tiers check. Each sentence is its own batch, so the two stopping rules see the same tensors at every step and
their outputs compare byte for byte. The CUDA cases run where CUDA is (``helpers.precision``).
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from helpers import precision, toy
from helpers.rules import EXACT_RULES

pytestmark = pytest.mark.slow

COMMON = ["-beam_size", "4", "-n_best", "2", "-max_length", "30", "-max_length_ratio", "0", "-batch_size", "1"]
CASES = precision.cases(cpu=["fp16", "int8"], cuda=["fp16"])
HALF = precision.cases(cpu=["fp16"], cuda=["fp16"])


def device_args(device: str, prec: str) -> list[str]:
    return ["-precision", prec, *(["-gpu", "0"] if device == "cuda" else [])]


def run(worker, model, src, out, *args):
    done = worker.run("-model", model, "-src", src, "-output", out, *map(str, args))
    assert done.returncode == 0, done.stderr[-3000:]
    return out.read_bytes()


@pytest.mark.parametrize("device, prec", HALF)
def test_every_exact_rule_equals_the_exhaustive_beam(our_worker, toy_model, tmp_path, device, prec):
    """And the bounded reward is the rule asked for: ``log p + r * min(l, |y|)`` with float32's ``r``, from the
    float16 ``log p`` (a reward rounded to float16 would make ``r = 0.8`` into 0.7998)."""
    src = tmp_path / "test.src"
    toy.write_corpus(tmp_path / "test", 16, seed=3, max_len=14)
    for i, rule in enumerate(EXACT_RULES):
        args = [*COMMON, *device_args(device, prec), *rule, "-with_score", "-stats_file", tmp_path / f"s{i}"]
        optimal = run(our_worker, toy_model, src, tmp_path / f"opt{i}", *args, "-stopping", "optimal")
        exhaustive = run(our_worker, toy_model, src, tmp_path / f"exh{i}", *args, "-stopping", "exhaustive")
        assert optimal == exhaustive, rule
    for record in map(json.loads, (tmp_path / "s3").read_text().splitlines()):
        log_prob, reward = np.float32(record["log_prob"]), np.float32(0.8) * np.float32(
            min(record["target_length"], record["length"]))
        assert record["score"] == float(log_prob + reward), record


@pytest.mark.parametrize("device, prec", CASES)
def test_without_new_flags_output_is_stock_s(our_worker, stock_worker, toy_model, tmp_path, device, prec):
    toy.write_corpus(tmp_path / "test", 40, seed=3, max_len=14)
    src = tmp_path / "test.src"
    for args in ([], ["-length_penalty", "wu", "-alpha", "0.6", "-beam_size", "5", "-n_best", "2"]):
        ours = run(our_worker, toy_model, src, tmp_path / "ours", *device_args(device, prec), *args)
        stock = run(stock_worker, toy_model, src, tmp_path / "stock", *device_args(device, prec), *args)
        assert ours == stock, args


def test_int8_decodes_as_float32_in_opennmt_py_3_5_1(our_worker, toy_model, tmp_path):
    toy.write_corpus(tmp_path / "test", 16, seed=3, max_len=14)
    src = tmp_path / "test.src"
    args = [*COMMON, "-length_penalty", "none", "-with_score", "-stopping", "optimal"]
    assert (run(our_worker, toy_model, src, tmp_path / "int8", *args, "-precision", "int8")
            == run(our_worker, toy_model, src, tmp_path / "fp32", *args, "-precision", "fp32"))
    half = run(our_worker, toy_model, src, tmp_path / "fp16", *args, "-precision", "fp16")
    assert half != (tmp_path / "fp32").read_bytes()  # the precision reaches the model where it is applied
