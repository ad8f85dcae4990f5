"""vLLM's ``length_penalty`` score as a rule (``onmt_optimal.vllm.scoring``), without an engine: its final score is
vLLM's own ``get_beam_search_score`` bit for bit, and its bound is admissible for every pair of lengths a live item
and its descendants can have, on float64 sums as vLLM adds them."""
import math

import torch
from hypothesis import given
from hypothesis import strategies as st
from vllm.entrypoints.generate.beam_search.utils import get_beam_search_score

from onmt_optimal.search.scoring import StepView
from onmt_optimal.vllm.scoring import VLLMLengthPenalty

EOS = 1
PENALTIES = st.one_of(st.sampled_from([0.0, 1.0, 0.5, 2.0, -0.5, -1.0, 1e-9]),
                      st.floats(-3, 3, allow_nan=False))
LOGPROB = st.floats(-30, 0, allow_nan=False, allow_infinity=False)


def view(sums, eos, P, t, T):
    return StepView(log_prob=torch.tensor([sums], dtype=torch.float64), eos=torch.tensor([eos]),
                    src_len=torch.tensor([float(P)], dtype=torch.float64), t=t, max_length=T)


@given(lp=PENALTIES, P=st.integers(1, 20), t=st.integers(1, 20), extra=st.integers(0, 10),
       sums=st.lists(LOGPROB, min_size=1, max_size=6), data=st.data())
def test_final_is_vllm_score(lp, P, t, extra, sums, data):
    T = t + extra
    eos = data.draw(st.lists(st.booleans(), min_size=len(sums), max_size=len(sums)))
    rule = VLLMLengthPenalty(lp)
    got = rule.final(view(sums, eos, P, t, T)).tolist()[0]
    for s, e, g in zip(sums, eos, got):
        tokens = [7] * (P + t - 1) + [EOS if e else 7]
        assert g == get_beam_search_score(tokens, s, EOS, lp)  # bit for bit


@given(lp=PENALTIES, P=st.integers(1, 30), t=st.integers(1, 30), extra=st.integers(1, 30), s=LOGPROB,
       steps=st.lists(st.floats(-5, 0, allow_nan=False), min_size=1, max_size=30))
def test_bound_is_admissible(lp, P, t, extra, s, steps):
    """Every descendant of an item of step t < T: a float64 sum that only falls, ending by an end token at
    t' in t+1..T (L' = P + t' - 1) or cut at T (L' = P + T), scores at most the item's bound."""
    T = t + extra
    rule = VLLMLengthPenalty(lp)
    bound = rule.bound(view([s], [False], P, t, T)).item()
    total = s
    for k, x in enumerate(steps[:T - t], start=t + 1):
        total = total + x  # vLLM's cum_logprob: Python float additions
        ended = get_beam_search_score([7] * (P + k - 1) + [EOS], total, EOS, lp)
        cut = get_beam_search_score([7] * (P + k), total, EOS, lp)
        assert ended <= bound, (k, ended, bound)
        if k == T:
            assert cut <= bound, (k, cut, bound)


def test_bound_looks_as_far_as_max_tokens_for_positive_penalty():
    rule = VLLMLengthPenalty(1.0)
    assert rule.bound(view([-6.0], [False], 4, 2, 10)).item() == -6.0 / 14
    assert VLLMLengthPenalty(-1.0).bound(view([-6.0], [False], 4, 2, 10)).item() == -6.0 / (6 ** -1.0)
    assert VLLMLengthPenalty(0.0).bound(view([-6.0], [False], 4, 2, 10)).item() == -6.0
    assert math.isinf(VLLMLengthPenalty(1.0).bound(view([float("-inf")], [False], 4, 2, 10)).item())
