"""The search in transformers' ``generate`` on ``fixed_lm`` (a real transformers model with the core's synthetic
distributions): the certificate's n-best list equals transformers' exact beam search (``early_stopping="never"``)
and an exhaustive run of our search, for every rule; the comparisons can fail; refusals are one line."""
from __future__ import annotations

import json

import pytest
import torch
import transformers
from hypothesis import given, settings
from hypothesis import strategies as st

import onmt_optimal.hf.beam as hf_beam
from helpers.fixed_lm import fixed_lm, prompts
from onmt_optimal.hf import optimal_beam_search
from helpers.tiers import examples

EXAMPLES = [4, 5, 6]


def hf_exact(model, num_beams, n, T, lp):
    return model.generate(**prompts(EXAMPLES), num_beams=num_beams, num_return_sequences=n, max_new_tokens=T,
                          early_stopping="never", length_penalty=lp, return_dict_in_generate=True,
                          output_scores=True)


def ours(model, num_beams, n, T, lp=1.0, **kwargs):
    model.calls = 0
    out = model.generate(**prompts(EXAMPLES), num_beams=num_beams, num_return_sequences=n, max_new_tokens=T,
                         length_penalty=lp, custom_generate=optimal_beam_search, return_dict_in_generate=True,
                         **kwargs)
    return out, model.calls


def agrees_with_transformers(seed, num_beams, n, T, lp, eos_bias=0.0) -> bool:
    """Our certificate's n-best (sequences and scores) is transformers' exact beam search's, for every input."""
    model = fixed_lm(seed, eos_bias=eos_bias)
    theirs = hf_exact(model, num_beams, n, T, lp)
    mine, _ = ours(model, num_beams, n, T, lp)
    return (torch.equal(theirs.sequences, mine.sequences)
            and torch.equal(theirs.sequences_scores, mine.sequences_scores))


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 10**6), num_beams=st.integers(2, 4), n=st.integers(1, 4), T=st.integers(1, 6),
       lp=st.sampled_from([0.0, 0.5, 1.0, 2.0, -0.5]), eos_bias=st.floats(-2, 3))
def test_the_certificate_is_transformers_exact_beam_search(seed, num_beams, n, T, lp, eos_bias):
    """(``num_beams >= 2``: with one, transformers runs greedy search instead of its beam search.)"""
    n = min(n, num_beams)
    assert agrees_with_transformers(seed, num_beams, n, T, lp, eos_bias)


RULES = [dict(), dict(length_penalty=0.0), dict(length_reward=0.8, length_ratio=1.5), dict(length_reward=0.5),
         dict(bp_norm=True, length_ratio=2.0, length_penalty=0.0)]


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 10**6), num_beams=st.integers(1, 4), n=st.integers(1, 4), T=st.integers(1, 6),
       rule=st.sampled_from(RULES), eos_bias=st.floats(-2, 3))
def test_the_certificate_equals_an_exhaustive_run_for_every_rule(seed, num_beams, n, T, rule, eos_bias):
    """Every rule's n-best list, with its statistics' scores, equals the exhaustive run's on the same beam; the
    certificate never runs longer, and its 1-best does not depend on how long the list is."""
    n = min(n, num_beams)
    model = fixed_lm(seed, eos_bias=eos_bias)
    rule = dict(rule)
    lp = rule.pop("length_penalty", 1.0)
    certified, calls = ours(model, num_beams, n, T, lp, stopping="optimal", **rule)
    exhaustive, exhaustive_calls = ours(model, num_beams, n, T, lp, stopping="exhaustive", **rule)
    assert torch.equal(certified.sequences, exhaustive.sequences)
    assert torch.equal(certified.sequences_scores, exhaustive.sequences_scores)
    assert calls <= exhaustive_calls
    for a, b in zip(certified.search_stats, exhaustive.search_stats):
        assert a["steps"] <= b["steps"] and a["score"] == b["score"] and a["tokens"] == b["tokens"]
    one, _ = ours(model, num_beams, 1, T, lp, stopping="optimal", **rule)
    assert torch.equal(one.sequences_scores, certified.sequences_scores.view(len(EXAMPLES), n)[:, 0])


def test_the_comparison_with_transformers_can_fail(monkeypatch):
    """Mutations the comparison catches: transformers' default estimate (the current length) as our bound, and
    offering every hit of the candidates (transformers offers only the first ``num_beams``)."""
    cases = [(seed, 3, 1, 6, 1.0, 1.0) for seed in range(30)]
    assert all(agrees_with_transformers(*case) for case in cases)

    def current_length(self, view):
        return view.log_prob / (view.t ** self.length_penalty)

    with monkeypatch.context() as patch:
        patch.setattr("onmt_optimal.hf.scoring.LengthPenalty.bound", current_length)
        assert not all(agrees_with_transformers(*case) for case in cases)

    real_collect = hf_beam.step.collect

    def every_hit(*, completed, **kwargs):
        return real_collect(completed=torch.ones_like(completed), **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(hf_beam.step, "collect", every_hit)
        assert not all(agrees_with_transformers(*case) for case in cases)


def test_we_stop_no_later_than_transformers_exact_search():
    """Steps: never more decoder calls than transformers' ``early_stopping="never"``, often fewer."""
    fewer = 0
    for seed in range(15):
        model = fixed_lm(seed, eos_bias=1.0)
        model.calls = 0
        hf_exact(model, 3, 1, 6, 0.0)
        theirs = model.calls
        _, mine = ours(model, 3, 1, 6, 0.0)
        assert mine <= theirs
        fewer += mine < theirs
    assert fewer > 0


def test_default_is_transformers_early_stopping():
    """``stopping="default"`` answers as transformers' own beam search under each ``early_stopping``, and from
    the same decode as the certificate (``rule_results``)."""
    for seed in range(10):
        model = fixed_lm(seed, eos_bias=1.0)
        for early_stopping in (False, True, "never"):
            theirs = model.generate(**prompts(EXAMPLES), num_beams=3, max_new_tokens=6, length_penalty=1.0,
                                    early_stopping=early_stopping, return_dict_in_generate=True,
                                    output_scores=True)
            mine, _ = ours(model, 3, 1, 6, 1.0, stopping="default", early_stopping=early_stopping)
            assert torch.equal(theirs.sequences, mine.sequences)
            assert torch.equal(theirs.sequences_scores, mine.sequences_scores)
            both, _ = ours(model, 3, 1, 6, 1.0, stopping=["optimal", "default"], early_stopping=early_stopping)
            certified, _ = ours(model, 3, 1, 6, 1.0)
            assert torch.equal(both.sequences, certified.sequences)
            for i, (optimal, default) in enumerate(both.rule_results):
                assert optimal["score"] == certified.search_stats[i]["score"]
                assert default["score"] == float(mine.sequences_scores[i])
                assert default["score"] <= optimal["score"]


def test_shrinking_runs_its_own_beam():
    """The shrinking beam ends when every slot has completed (or at ``max_length``); it keeps its best."""
    model = fixed_lm(1, eos_bias=1.0)
    out, _ = ours(model, 3, 1, 6, 0.0, stopping="shrinking")
    for stats in out.search_stats:
        assert stats["stop_reason"] in ("all_finished", "max_length")
        assert stats["completed"] <= 3 or stats["stop_reason"] == "max_length"


def test_statistics_and_output_classes():
    model = fixed_lm(2, eos_bias=1.0)
    out, _ = ours(model, 3, 2, 6, 0.0, length_reward=0.5, length_ratio=2.0)
    assert isinstance(out, transformers.generation.utils.GenerateBeamDecoderOnlyOutput)
    assert out.sequences.shape[0] == 2 * len(EXAMPLES) and len(out.search_stats) == len(EXAMPLES)
    for i, stats in enumerate(out.search_stats):
        assert set(stats) >= {"steps", "stop_reason", "score", "log_prob", "length", "target_length",
                              "src_length", "completed"}
        assert stats["src_length"] == 1 and stats["target_length"] == 2.0
        assert stats["score"] == pytest.approx(stats["log_prob"] + 0.5 * min(2.0, stats["length"]))
        assert float(out.sequences_scores[2 * i]) == stats["score"]
    plain = model.generate(**prompts(EXAMPLES), num_beams=3, max_new_tokens=6,
                           custom_generate=optimal_beam_search)
    assert isinstance(plain, torch.Tensor)


def test_statistics_are_plain_json_values():
    """``search_stats`` and ``rule_results`` hold plain values, as the statistics file and vLLM's server: a
    ``str`` stop reason (it was the package's ``StopReason``), so they are strict JSON and read back equal."""
    model = fixed_lm(2, eos_bias=1.0)
    out, _ = ours(model, 3, 1, 6, 0.0, stopping=["optimal", "default"])
    reasons = {stats["stop_reason"] for per_input in out.rule_results for stats in per_input}
    assert reasons and all(type(reason) is str for reason in reasons), reasons
    assert all(type(stats["stop_reason"]) is str for stats in out.search_stats)
    for values in (out.search_stats, out.rule_results):
        assert json.loads(json.dumps(values, allow_nan=False)) == values


def test_nothing_of_transformers_is_patched():
    """Without the callable, generate runs transformers' own beam search, before and after a decode of ours."""
    model = fixed_lm(3, eos_bias=1.0)
    before = model.generate(**prompts(EXAMPLES), num_beams=3, max_new_tokens=6)
    ours(model, 3, 1, 6)
    assert transformers.GenerationMixin._beam_search.__module__ == "transformers.generation.utils"
    assert torch.equal(model.generate(**prompts(EXAMPLES), num_beams=3, max_new_tokens=6), before)


@pytest.mark.parametrize("kwargs, message", [
    (dict(stopping="fastest"), "stopping must be one of"),
    (dict(stopping=["shrinking", "optimal"]), "shrinking"),
    (dict(length_reward=-1.0), "length_reward must be"),
    (dict(length_ratio=0.0), "length_ratio must be"),
    (dict(bp_norm=True), "bp_norm=True needs length_ratio"),
    (dict(bound="predicted"), "bound='predicted' needs length_ratio"),
    (dict(bound="loose"), "bound must be one of"),
    (dict(stopping="default", length_reward=1.0, length_ratio=1.0), "stopping='default'"),
    (dict(do_sample=True), "do_sample=True"),
    (dict(output_scores=True), "output_scores=True"),
    (dict(sequence_bias={(5,): 2.0}), "SequenceBiasLogitsProcessor"),
    (dict(max_time=10.0), "MaxTimeCriteria"),
    (dict(num_return_sequences=4), "num_return_sequences"),
])
def test_refusals_are_one_line(kwargs, message):
    model = fixed_lm(0)
    with pytest.raises(ValueError) as error:
        model.generate(**prompts(EXAMPLES), num_beams=3, max_new_tokens=4, custom_generate=optimal_beam_search,
                       **kwargs)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_processors_that_work_give_transformers_beam():
    """``no_repeat_ngram_size``, ``bad_words_ids``, ``min_new_tokens``, ``repetition_penalty``: as transformers."""
    model = fixed_lm(5, eos_bias=1.5)
    settings_ = dict(no_repeat_ngram_size=2, bad_words_ids=[[7]], min_new_tokens=2, repetition_penalty=1.3)
    theirs = model.generate(**prompts(EXAMPLES), num_beams=3, max_new_tokens=6, early_stopping="never",
                            return_dict_in_generate=True, output_scores=True, **settings_)
    mine, _ = ours(model, 3, 1, 6, **settings_)
    assert torch.equal(theirs.sequences, mine.sequences)
    assert torch.equal(theirs.sequences_scores, mine.sequences_scores)


@pytest.mark.parametrize("stopping", ["optimal", "exhaustive", "shrinking", ["optimal", "default"]])
def test_dropping_finished_inputs_changes_no_answer(stopping):
    """``drop_finished=True`` (inputs leave the batch when done) gives the same answers and statistics on a model
    whose numbers do not depend on the batch's shape."""
    for seed in range(6):
        model = fixed_lm(seed, eos_bias=1.0)
        kept, _ = ours(model, 3, 2, 6, 1.0, stopping=stopping)
        dropped, calls = ours(model, 3, 2, 6, 1.0, stopping=stopping, drop_finished=True)
        assert torch.equal(kept.sequences, dropped.sequences)
        assert torch.equal(kept.sequences_scores, dropped.sequences_scores)
        assert kept.rule_results == dropped.rule_results


def test_drop_finished_is_a_bool():
    with pytest.raises(ValueError, match="drop_finished must be True or False"):
        ours(fixed_lm(0), 3, 1, 4, drop_finished="yes")
