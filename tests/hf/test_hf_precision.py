"""transformers models in the precisions users load them in (``torch_dtype=torch.bfloat16`` / ``float16``): the
certificate is still transformers' exact beam search, the bounded reward still an exhaustive run, and
``stopping="default"`` still transformers' default beam search, in that precision.

transformers casts each step's logits to float32 before its ``log_softmax`` (``_beam_search``), and so does
``optimal_beam_search``: the running sums, the scores and the bounds are float32 numbers in every precision,
computed by the same operations on both sides, so the comparisons are exact (``torch.equal``). The half
precision is the model's alone. The CPU runs both types; the CUDA cases run where CUDA is present
(``helpers.precision``).
"""
from __future__ import annotations

import copy

import pytest
import torch

from helpers import precision, toy_hf
from onmt_optimal.hf import optimal_beam_search

SOURCES = toy_hf.sources(16, seed=5)
CASES = precision.cases(cpu=["bfloat16", "float16"], cuda=["bfloat16", "float16"])


@pytest.fixture(scope="module")
def converted(request):
    """``converted(toy, device, dtype)``: a copy of a trained toy model on ``device`` in ``dtype``, made once."""
    made = {}

    def convert(toy, device, dtype):
        key = (id(toy), device, dtype)
        if key not in made:
            model = copy.deepcopy(toy.model).to(device=device, dtype=getattr(torch, dtype))
            made[key] = toy_hf.Toy(model, toy.tokenizer, toy.kind)
        return made[key]
    return convert


def generate(toy, device, **kwargs):
    inputs = {k: v.to(device) for k, v in toy.inputs(SOURCES).items()}
    return toy.model.generate(**inputs, max_new_tokens=20, return_dict_in_generate=True, **kwargs)


def assert_same(theirs, mine):
    assert torch.equal(theirs.sequences, mine.sequences)
    assert torch.equal(theirs.sequences_scores, mine.sequences_scores)


@pytest.mark.parametrize("device, dtype", CASES)
def test_every_rule_is_exact_in_the_model_s_precision(trained, converted, device, dtype):
    toy = converted(trained, device, dtype)
    assert toy.model.dtype == getattr(torch, dtype)
    for lp in (0.0, 1.0):  # transformers' length_penalty as the rule: the sum, and its default normalization
        settings = dict(num_beams=5, num_return_sequences=2, length_penalty=lp)
        theirs = generate(toy, device, early_stopping="never", output_scores=True, **settings)
        mine = generate(toy, device, custom_generate=optimal_beam_search, stopping="optimal", **settings)
        assert_same(theirs, mine)
        assert all(s["stop_reason"] in ("certificate", "all_finished", "max_length") for s in mine.search_stats)
    reward = dict(num_beams=5, num_return_sequences=2, custom_generate=optimal_beam_search, length_reward=1.2,
                  length_ratio=1.1)
    assert_same(generate(toy, device, stopping="exhaustive", **reward),
                generate(toy, device, stopping="optimal", **reward))


@pytest.mark.parametrize("device, dtype", CASES)
def test_default_is_transformers_default_beam_search_in_the_model_s_precision(trained, converted, device, dtype):
    toy = converted(trained, device, dtype)
    theirs = generate(toy, device, num_beams=5, output_scores=True)
    mine = generate(toy, device, num_beams=5, custom_generate=optimal_beam_search, stopping="default")
    assert_same(theirs, mine)


@pytest.mark.parametrize("device, dtype", CASES[:1])
def test_the_precision_changes_the_decode(trained, converted, device, dtype):
    """So that the tests above compare decodes of another model than float32's: its scores differ."""
    settings = dict(num_beams=5, custom_generate=optimal_beam_search)
    full = generate(trained, "cpu", **settings)
    half = generate(converted(trained, device, dtype), device, **settings)
    assert not torch.equal(full.sequences_scores, half.sequences_scores.to("cpu"))
