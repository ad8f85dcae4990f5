"""``prune_dead=True``: the offline search does not send its dead beams to the engine, and answers the same.

* On the tiny model, for several prompts, at beam 4 and 8, under vLLM's ``length_penalty`` (0 and 1) and under the
  length reward: the texts, token ids, ``cum_logprob`` of every answer, the scores and the steps are those of the
  search that sends every beam; fewer requests reach the engine where a beam died (counted at vLLM's call that
  sends them), exactly ``rows_skipped`` fewer, and each record says how many.
* Where pruning does not hold (``stopping="exhaustive"``, ``ignore_eos``) nothing is skipped: ``rows_skipped`` 0;
  without ``prune_dead`` the record has no ``rows_skipped``.
* ``ceiling`` (the largest sum with a beam's key) and the ranking fact the proof rests on, as properties.
"""
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from vllm.sampling_params import BeamSearchParams

from helpers import toy_vllm
from onmt_optimal.vllm import optimal_beam_search
from onmt_optimal.vllm.dead_beams import CEILING_STEPS, ceiling

MAX_TOKENS = 14
RULES = [dict(length_penalty=0.0), dict(length_penalty=1.0), dict(length_penalty=0.0, length_reward=0.4),
         dict(length_penalty=0.0, length_reward=0.8, length_ratio=1.5)]


@pytest.fixture(scope="module")
def prompts(toy):
    return toy_vllm.prompts(toy, 8, seed=11)


class Sent:
    """Counts the requests vLLM's offline step sends the engine (one a beam): its call ``_render_and_run_requests``
    on this ``llm``, wrapped for the ``with`` block."""

    def __init__(self, llm):
        self.llm, self.requests = llm, 0

    def __enter__(self):
        stock = self.llm._render_and_run_requests

        def counted(*, params, **rest):
            self.requests += len(params)
            return stock(params=params, **rest)
        self.llm._render_and_run_requests = counted
        return self

    def __exit__(self, *exc):
        del self.llm._render_and_run_requests


def run(llm, prompts, params, **options):
    with Sent(llm) as sent:
        outputs = optimal_beam_search(llm, prompts, params, **options)
    return outputs, sent.requests


def answers(outputs):
    return [[(s.text, s.tokens, s.cum_logprob) for s in out.sequences] for out in outputs]


def records(outputs):
    return [(o.record.steps, o.record.score, o.record.log_prob, o.record.length, o.record.tokens) for o in outputs]


@pytest.mark.parametrize("beam", [4, 8])
@pytest.mark.parametrize("rule", RULES, ids=lambda r: ",".join(f"{k}={v}" for k, v in r.items()))
def test_pruned_answers_are_the_unpruned_answers(llm, prompts, beam, rule):
    rule = dict(rule)
    params = BeamSearchParams(beam_width=beam, max_tokens=MAX_TOKENS, length_penalty=rule.pop("length_penalty"))
    full, sent_full = run(llm, prompts, params, **rule)
    pruned, sent_pruned = run(llm, prompts, params, prune_dead=True, **rule)
    assert answers(pruned) == answers(full)
    assert records(pruned) == records(full)
    assert all(o.record.rows_skipped is None for o in full)
    skipped = [o.record.rows_skipped for o in pruned]
    assert all(isinstance(n, int) and n >= 0 for n in skipped)
    assert sent_pruned == sent_full - sum(skipped)
    assert sum(skipped) > 0  # beams died: fewer requests
    assert all(p.record.completed <= f.record.completed for p, f in zip(pruned, full))


def test_beams_die_on_the_tiny_model(llm, prompts):
    """Where the certificate holds late, beams die first: the pruned search sends fewer requests."""
    params = BeamSearchParams(beam_width=8, max_tokens=MAX_TOKENS, length_penalty=0.0)
    full, sent_full = run(llm, prompts, params, length_reward=0.4)
    pruned, sent_pruned = run(llm, prompts, params, length_reward=0.4, prune_dead=True)
    assert answers(pruned) == answers(full)
    assert sent_pruned < sent_full
    assert sum(o.record.rows_skipped for o in pruned) == sent_full - sent_pruned


@pytest.mark.parametrize("options, params", [
    (dict(stopping="exhaustive"), dict()),
    (dict(), dict(ignore_eos=True)),
], ids=["exhaustive", "ignore_eos"])
def test_where_it_does_not_hold_nothing_is_skipped(llm, prompts, options, params):
    params = BeamSearchParams(beam_width=4, max_tokens=8, length_penalty=0.0, **params)
    full, sent_full = run(llm, prompts[:3], params, **options)
    pruned, sent_pruned = run(llm, prompts[:3], params, prune_dead=True, **options)
    assert answers(pruned) == answers(full) and sent_pruned == sent_full
    assert [o.record.rows_skipped for o in pruned] == [0, 0, 0]


def test_a_switch_that_is_not_a_bool_is_one_line(llm, prompts):
    params = BeamSearchParams(beam_width=2, max_tokens=4)
    with pytest.raises(TypeError, match=r"^prune_dead must be True or False \(got 1\)$"):
        optimal_beam_search(llm, prompts[:1], params, prune_dead=1)


sums = st.floats(min_value=-1e4, max_value=0.0, allow_nan=False) | st.floats(max_value=0.0, allow_nan=False)
exponents = st.sampled_from([0, 0.0, 1.0, 0.5, -0.5, 2, 1.3])
lengths = st.integers(min_value=0, max_value=300)


@given(s=sums, lp=exponents, L=lengths)
def test_ceiling_is_the_largest_sum_with_the_key(s, lp, L):
    d = float(max(L, 1) ** lp)
    x = ceiling(s, d)
    if x == math.inf:  # not found within CEILING_STEPS floats: the beam counts as needed
        return
    assert x >= s and x / d == s / d
    assert math.nextafter(x, math.inf) / d != s / d


@given(p=sums, m=sums, c=sums, lp=exponents, L=lengths)
def test_a_sum_above_the_ceiling_ranks_strictly_above(p, m, c, lp, L):
    """The proof's step 2 in vLLM's key ``s / d``: a candidate whose sum is above ``X(s_p)`` ranks strictly above
    every child of ``p`` (whose sums are at most ``s_p``)."""
    d = float(max(L, 1) ** lp)
    x = ceiling(p, d)
    c = min(c, p)
    if m > x:
        assert m / d > c / d


def test_ceiling_gives_up_as_needed():
    assert ceiling(0.0, 1e300) == math.inf  # every float just above 0 divides to 0: never found
    assert CEILING_STEPS >= 4
