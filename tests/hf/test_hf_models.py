"""The search on trained transformers models (a tiny Marian and a tiny GPT-2, ``toy_hf``), batched with padded
inputs and transformers' own caches, called as a user calls it: the certificate is transformers' exact beam
search (``early_stopping="never"``) sentence for sentence, in no more steps; the bounded reward equals an
exhaustive run; ``stopping="default"`` is transformers' default beam search."""
from __future__ import annotations

import pytest
import torch

from helpers import toy_hf
from onmt_optimal.hf import optimal_beam_search

SOURCES = toy_hf.sources(24, seed=11)


def generate(toy, lines, **kwargs):
    calls = [0]
    hook = toy.model.register_forward_pre_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    try:
        out = toy.model.generate(**toy.inputs(lines), max_new_tokens=24, return_dict_in_generate=True, **kwargs)
    finally:
        hook.remove()
    return out, calls[0]


@pytest.mark.parametrize("num_beams", [5, 10])
@pytest.mark.parametrize("length_penalty", [0.0, 1.0])
def test_the_certificate_is_transformers_exact_answer(trained, num_beams, length_penalty):
    settings = dict(num_beams=num_beams, length_penalty=length_penalty)
    theirs, _ = generate(trained, SOURCES, early_stopping="never", output_scores=True, **settings)
    mine, _ = generate(trained, SOURCES, custom_generate=optimal_beam_search, stopping="optimal", **settings)
    assert torch.equal(theirs.sequences, mine.sequences)
    assert torch.equal(theirs.sequences_scores, mine.sequences_scores)
    assert all(s["stop_reason"] in ("certificate", "all_finished", "max_length") for s in mine.search_stats)


@pytest.mark.parametrize("length_penalty", [0.0, 1.0])
def test_steps_are_no_more_than_transformers_exact_search(trained, length_penalty):
    """Per sentence (each decoded alone, so transformers' steps are its own): our certificate's steps, and our
    decoder calls, are at most transformers' ``early_stopping="never"`` decoder calls."""
    fewer = 0
    for line in SOURCES[:6]:
        _, theirs = generate(trained, [line], num_beams=5, length_penalty=length_penalty, early_stopping="never")
        mine, calls = generate(trained, [line], num_beams=5, length_penalty=length_penalty,
                               custom_generate=optimal_beam_search)
        assert mine.search_stats[0]["steps"] == calls <= theirs
        fewer += calls < theirs
    if length_penalty == 0.0:
        assert fewer > 0


def test_nbest_is_transformers_exact_list(trained):
    settings = dict(num_beams=5, num_return_sequences=3, length_penalty=1.0)
    theirs, _ = generate(trained, SOURCES, early_stopping="never", output_scores=True, **settings)
    mine, _ = generate(trained, SOURCES, custom_generate=optimal_beam_search, **settings)
    assert torch.equal(theirs.sequences, mine.sequences)
    assert torch.equal(theirs.sequences_scores, mine.sequences_scores)


@pytest.mark.parametrize("num_beams", [5, 10])
def test_bounded_reward_equals_an_exhaustive_run(trained, num_beams):
    settings = dict(num_beams=num_beams, custom_generate=optimal_beam_search, length_reward=1.2, length_ratio=1.1)
    certified, calls = generate(trained, SOURCES, stopping="optimal", **settings)
    exhaustive, exhaustive_calls = generate(trained, SOURCES, stopping="exhaustive", **settings)
    assert torch.equal(certified.sequences, exhaustive.sequences)
    assert torch.equal(certified.sequences_scores, exhaustive.sequences_scores)
    assert calls <= exhaustive_calls
    for stats in certified.search_stats:
        assert stats["target_length"] == pytest.approx(1.1 * stats["src_length"])


def test_default_is_transformers_default_beam_search(trained):
    theirs, _ = generate(trained, SOURCES, num_beams=5, output_scores=True)
    mine, _ = generate(trained, SOURCES, num_beams=5, custom_generate=optimal_beam_search, stopping="default")
    assert torch.equal(theirs.sequences, mine.sequences)
    assert torch.equal(theirs.sequences_scores, mine.sequences_scores)


def test_dropping_finished_inputs_follows_the_caches(trained):
    """``drop_finished=True`` drops rows from transformers' own caches (Marian's encoder-decoder cache, GPT-2's
    dynamic cache) and per-row inputs: the same sequences (the scores may differ in the last bits: the model
    then runs on fewer rows)."""
    settings = dict(num_beams=5, custom_generate=optimal_beam_search, length_penalty=0.0)
    whole, _ = generate(trained, SOURCES, **settings)
    dropped, _ = generate(trained, SOURCES, drop_finished=True, **settings)
    assert torch.equal(whole.sequences, dropped.sequences)
    assert torch.allclose(whole.sequences_scores, dropped.sequences_scores, rtol=0, atol=1e-4)


def test_a_static_cache_works_unless_inputs_are_dropped(decoder_only):
    settings = dict(num_beams=3, cache_implementation="static")
    theirs, _ = generate(decoder_only, SOURCES[:4], early_stopping="never", **settings)
    mine, _ = generate(decoder_only, SOURCES[:4], custom_generate=optimal_beam_search, **settings)
    assert torch.equal(theirs.sequences, mine.sequences)
    with pytest.raises(ValueError, match="drop_finished=True does not take a StaticCache"):
        generate(decoder_only, SOURCES[:4], custom_generate=optimal_beam_search, drop_finished=True, **settings)


def test_inputs_embeds_alone_is_refused(decoder_only):
    inputs = decoder_only.inputs(SOURCES[:2])
    embeds = decoder_only.model.get_input_embeddings()(inputs["input_ids"])
    with pytest.raises(ValueError, match="needs input_ids"):
        decoder_only.model.generate(inputs_embeds=embeds, attention_mask=inputs["attention_mask"], num_beams=3,
                                    max_new_tokens=4, custom_generate=optimal_beam_search)
