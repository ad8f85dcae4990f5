"""``optimal_beam_search``'s keyword arguments and transformers' ``length_penalty``: a value that would make
float32 scores infinite or NaN, or an argument of the wrong type, is one ``ValueError`` line before the search
starts (``onmt_optimal.search.limits``), on ``fixed_lm`` (fast)."""
from __future__ import annotations

import math

import pytest
import torch

from helpers.fixed_lm import fixed_lm, prompts
from onmt_optimal.hf import optimal_beam_search

EXAMPLES = [4, 5, 6]

BAD = [
    (dict(length_reward=1e39), "length_reward 1e+39 is too large"),
    (dict(length_reward=True), "length_reward must be a finite number"),
    (dict(length_reward=10**400), "length_reward must be a finite number >= 0 (got an integer of 401 digits"),
    (dict(length_reward=1.0, length_ratio=10**400), "length_ratio must be a finite number > 0 (got an integer of"),
    (dict(length_reward=1.0, length_ratio=1e38), "length_ratio 1e+38 is too large"),
    (dict(length_penalty=math.nan), "length_penalty must be a finite number"),
    (dict(length_penalty=math.inf), "length_penalty must be a finite number"),
    (dict(length_penalty=-1000.0), "length_penalty must be between"),
    (dict(stopping=3), "stopping must be one of"),
    (dict(stopping=None), "stopping must be one of"),
    (dict(stopping={"optimal": 1}), "stopping must be one of"),
    (dict(bp_norm="yes", length_ratio=1.0), "bp_norm must be True or False"),
]


@pytest.mark.parametrize("kwargs,message", BAD, ids=[repr(k) for k, _ in BAD])
def test_values_that_broke_the_search_are_one_line(kwargs, message):
    """Before: empty outputs with -inf scores (length_penalty nan), every score inf (length_reward 1e39),
    ``TypeError: 'int' object is not iterable`` (stopping=3)."""
    model = fixed_lm(0)
    with pytest.raises(ValueError) as error:
        model.generate(**prompts(EXAMPLES), num_beams=3, max_new_tokens=4, custom_generate=optimal_beam_search,
                       **kwargs)
    assert message in str(error.value) and "\n" not in str(error.value), str(error.value)


def test_the_largest_reward_gives_finite_scores():
    model = fixed_lm(0, eos_bias=1.0)
    out = model.generate(**prompts(EXAMPLES), num_beams=3, max_new_tokens=4, custom_generate=optimal_beam_search,
                         length_reward=1e33, return_dict_in_generate=True)
    assert torch.isfinite(out.sequences_scores).all()
    assert all(math.isfinite(stats["score"]) for stats in out.search_stats)


OTHER_SEARCHES = [
    (dict(force_words_ids=[[3]]), "force_words_ids=[[3]]"),
    (dict(num_beam_groups=3, diversity_penalty=0.5), "num_beam_groups=3"),
    (dict(diversity_penalty=0.5), "diversity_penalty=0.5"),
]


@pytest.mark.parametrize("kwargs,message", OTHER_SEARCHES, ids=[repr(k) for k, _ in OTHER_SEARCHES])
def test_the_settings_of_another_search_are_one_line(kwargs, message):
    """Before: constrained and group beam search's settings were ignored by the loop, silently (transformers' own
    generate runs those searches or refuses them)."""
    model = fixed_lm(0)
    with pytest.raises(ValueError) as error:
        model.generate(**prompts(EXAMPLES), num_beams=3, max_new_tokens=4, custom_generate=optimal_beam_search,
                       **kwargs)
    assert message in str(error.value) and "another search" in str(error.value), str(error.value)
    assert "\n" not in str(error.value)


def test_an_input_of_padding_only_is_one_line():
    """Before: a row whose attention mask is all zeros decoded to max_length on padding."""
    model = fixed_lm(0)
    inputs = prompts(EXAMPLES)
    inputs["attention_mask"][1] = 0
    with pytest.raises(ValueError) as error:
        model.generate(**inputs, num_beams=3, max_new_tokens=4, custom_generate=optimal_beam_search)
    assert "input 1 of the batch" in str(error.value) and "all padding" in str(error.value), str(error.value)
