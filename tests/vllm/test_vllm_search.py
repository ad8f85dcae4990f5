"""``optimal_beam_search`` against vLLM's own ``LLM.beam_search`` on one engine (the ``llm`` fixture).

* ``stopping="exhaustive"`` returns vLLM's answers: every one of the ``beam_width`` sequences, its tokens, its
  ``cum_logprob`` (the same float) and its text, in vLLM's order; its steps are the steps vLLM runs a prompt
  (until no beam is live, or ``max_tokens``).
* ``stopping="optimal"`` returns the same answers in no more steps, under vLLM's ``length_penalty`` score (0: the
  log-probability, where the certificate stops early; 1: vLLM's default, whose bound looks to ``max_tokens``;
  negative), and under every other rule (bounded reward, per-word reward, BP-norm) the same answers as
  ``"exhaustive"`` under that rule.
* Bad arguments raise one-line ``TypeError``/``ValueError``.
"""
import pytest
from vllm.entrypoints.generate.beam_search.utils import BeamSearchOutput
from vllm.sampling_params import BeamSearchParams, StructuredOutputsParams

from helpers import toy_vllm
from onmt_optimal.search.record import Record, StopReason
from onmt_optimal.vllm import optimal_beam_search

BEAM, MAX_TOKENS = 3, 12


@pytest.fixture(scope="module")
def prompts(toy):
    return toy_vllm.prompts(toy, 6, seed=5)


def answers(outputs):
    return [[(s.tokens, s.cum_logprob, s.text) for s in out.sequences] for out in outputs]


@pytest.fixture(scope="module")
def vllm_answers(llm, prompts):
    """vLLM's own beam search, per length penalty (computed once)."""
    cache = {}

    def get(lp, beam=BEAM):
        if (lp, beam) not in cache:
            cache[lp, beam] = llm.beam_search(prompts, BeamSearchParams(beam_width=beam, max_tokens=MAX_TOKENS,
                                                                        length_penalty=lp))
        return cache[lp, beam]
    return get


@pytest.mark.parametrize("lp, beam", [(0.0, BEAM), (1.0, BEAM), (-0.5, BEAM), (0.0, 1), (0.0, 6), (1.0, 6)])
def test_exhaustive_and_optimal_return_vllm_answers(llm, prompts, vllm_answers, lp, beam):
    params = BeamSearchParams(beam_width=beam, max_tokens=MAX_TOKENS, length_penalty=lp)
    theirs = vllm_answers(lp, beam)
    exhaustive = optimal_beam_search(llm, prompts, params, stopping="exhaustive")
    optimal = optimal_beam_search(llm, prompts, params, stopping="optimal")
    assert all(isinstance(out, BeamSearchOutput) and isinstance(out.record, Record) for out in optimal)
    assert answers(exhaustive) == answers(theirs)
    assert answers(optimal) == answers(theirs)
    assert all(len(out.sequences) == beam for out in optimal)  # the n-best, as vLLM returns it
    for e, o, prompt in zip(exhaustive, optimal, prompts):
        assert e.record.stop_reason in (StopReason.ALL_FINISHED, StopReason.MAX_LENGTH)
        assert o.record.steps <= e.record.steps
        assert o.record.src_length == len(prompt["prompt_token_ids"])
        assert o.record.score == e.record.score and o.record.log_prob == o.sequences[0].cum_logprob
        top = o.sequences[0].tokens[o.record.src_length:]
        assert o.record.tokens == [tok for tok in top if tok != toy_vllm.toy_hf.EOS]
        assert o.record.length == len(o.record.tokens)
    if lp == 0:  # the log-probability: the certificate holds early on this model
        assert sum(o.record.steps for o in optimal) < sum(e.record.steps for e in exhaustive)
        assert any(o.record.stop_reason == StopReason.CERTIFICATE for o in optimal)


@pytest.mark.parametrize("rule", [dict(length_reward=0.8, length_ratio=1.5), dict(length_reward=0.3),
                                  dict(bp_norm=True, length_ratio=1.5), dict(length_ratio=1.5)])
def test_optimal_equals_exhaustive_under_every_rule(llm, prompts, rule):
    params = BeamSearchParams(beam_width=BEAM, max_tokens=MAX_TOKENS, length_penalty=0.0)
    exhaustive = optimal_beam_search(llm, prompts, params, stopping="exhaustive", **rule)
    optimal = optimal_beam_search(llm, prompts, params, stopping="optimal", **rule)
    assert answers(optimal) == answers(exhaustive)
    for e, o, prompt in zip(exhaustive, optimal, prompts):
        assert o.record.steps <= e.record.steps
        assert o.record.score == e.record.score
        if "length_ratio" in rule:
            assert o.record.target_length == pytest.approx(rule["length_ratio"] * len(prompt["prompt_token_ids"]))


def test_concurrency_limit_and_text_prompts(llm, prompts, vllm_answers):
    params = BeamSearchParams(beam_width=BEAM, max_tokens=MAX_TOKENS, length_penalty=0.0)
    chunked = optimal_beam_search(llm, prompts, params, concurrency_limit=4)
    assert answers(chunked) == answers(vllm_answers(0.0))
    texts = ["a b c =", "p ="]  # vLLM tokenizes them
    assert answers(optimal_beam_search(llm, texts, params)) == answers(llm.beam_search(texts, params))


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(stopping="shrinking"), ValueError, "stopping must be one of"),
    (dict(stopping=None), ValueError, "stopping must be one of"),
    (dict(length_reward=-1.0), ValueError, "length_reward must be a finite number >= 0"),
    (dict(length_reward="1"), TypeError, "length_reward must be a finite number >= 0"),
    (dict(length_ratio=0), ValueError, "length_ratio must be a finite number > 0"),
    (dict(length_ratio=float("nan")), ValueError, "length_ratio must be a finite number > 0"),
    (dict(bp_norm=True), ValueError, "bp_norm=True needs length_ratio"),
    (dict(bp_norm=1, length_ratio=1.0), TypeError, "bp_norm must be True or False"),
    (dict(bp_norm=True, length_ratio=1.0, length_reward=1.0), ValueError, "two different scores"),
    (dict(concurrency_limit=0), ValueError, "concurrency_limit must be a positive int"),
])
def test_bad_arguments_are_one_line(llm, prompts, kwargs, error, words):
    params = BeamSearchParams(beam_width=BEAM, max_tokens=MAX_TOKENS, length_penalty=0.0)
    with pytest.raises(error) as caught:
        optimal_beam_search(llm, prompts, params, **kwargs)
    assert words in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("lp, kwargs, words", [
    (float("nan"), {}, "params.length_penalty must be a finite number"),
    (float("inf"), {}, "params.length_penalty must be a finite number"),
    (1e6, {}, "params.length_penalty must be between"),
    (0.0, dict(length_reward=1e308), "length_reward 1e+308 is too large"),
])
def test_values_that_broke_vllm_scores_are_one_line(llm, prompts, lp, kwargs, words):
    """Before: NaN scores (length_penalty NaN or inf), an infinite score (length_reward 1e308), an OverflowError
    from vLLM's sort key (length_penalty 1e6)."""
    params = BeamSearchParams(beam_width=BEAM, max_tokens=MAX_TOKENS, length_penalty=lp)
    with pytest.raises(ValueError) as caught:
        optimal_beam_search(llm, prompts, params, **kwargs)
    assert words in str(caught.value) and "\n" not in str(caught.value), str(caught.value)


def test_bad_objects_and_refused_settings(llm, prompts):
    params = BeamSearchParams(beam_width=BEAM, max_tokens=MAX_TOKENS)
    with pytest.raises(TypeError, match="takes a vllm.LLM first"):
        optimal_beam_search(object(), prompts, params)
    with pytest.raises(TypeError, match="params must be a vllm.sampling_params.BeamSearchParams"):
        optimal_beam_search(llm, prompts, {"beam_width": 2})
    with pytest.raises(ValueError, match="max_tokens must be at least 1"):
        optimal_beam_search(llm, prompts, BeamSearchParams(beam_width=BEAM, max_tokens=0))
    with pytest.raises(ValueError, match="needs length_penalty=0"):
        optimal_beam_search(llm, prompts, params, length_ratio=1.5)
    grammar = BeamSearchParams(beam_width=BEAM, max_tokens=MAX_TOKENS,
                               structured_outputs=StructuredOutputsParams(regex="[A-P ]+"))
    with pytest.raises(ValueError, match="does not take structured_outputs"):
        optimal_beam_search(llm, prompts, grammar)
