"""The scoring rules in half precision: a decode in float16 or bfloat16 hands the rules log-probabilities (and,
in OpenNMT-py, running sums) in that type.

* Admissibility survives it: on whole search trees whose log-probabilities are summed in the half type, as
  OpenNMT-py's ``-precision fp16`` sums them, no completion scores above any ancestor's bound (the argument is
  ``search.scoring``'s: rounding to nearest is monotone in every binary type, and a bound is computed with the
  score's own operations).
* The rules are the rules asked for: a length reward ``r`` is applied in float32, not rounded to the half type
  (``scoring.wide``), so a half-precision hypothesis scores ``log p + r * min(l, |y|)`` exactly as float32 computes
  it from the same ``log p``; and the kept scores stay in float32, where every half-precision score is exact.
"""
from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.rule_draws import RULE_AND_MODEL, scoring
from helpers.synthetic import BOS, EOS, PAD, SyntheticModel
from helpers.tiers import examples
from onmt_optimal.search.scoring import BoundedWordReward, StepView, WordReward

HALF = [torch.float16, torch.bfloat16]


def view(log_prob: torch.Tensor, t, T, src_len, eos):
    return StepView(log_prob=log_prob.view(1, 1), eos=torch.tensor([[bool(eos)]]),
                    src_len=torch.tensor([float(src_len)]), t=t, max_length=T)


def walk(model, rule, dtype, prefix, log_prob, T, src_len, ancestors, checked):
    """Expand ``prefix`` with every token, the running sum in ``dtype``; check each completion's score."""
    dist = model.log_probs(0, prefix).to(dtype)  # the model's log-probabilities in its own type
    t = len(prefix) + 1
    for tok in range(model.vocab_size):
        if tok in (PAD, BOS):
            continue
        lp = log_prob + dist[tok]  # a sum in the half type, as OpenNMT-py's in-place sum
        if tok == EOS or t == T:
            final = float(rule.final(view(lp, t, T, src_len, tok == EOS)))
            for bound in ancestors:
                assert final <= bound, (prefix + (tok,), final, bound)
            checked.append(final)
        else:
            bound = float(rule.bound(view(lp, t, T, src_len, False)))
            walk(model, rule, dtype, prefix + (tok,), lp, T, src_len, ancestors + [bound], checked)


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    dtype=st.sampled_from(HALF),
    **RULE_AND_MODEL,
    reward=st.sampled_from([0.0, 0.4, 0.8, 1.2, 5.0]),
    ratio=st.sampled_from([0.3, 1.0, 1.27, 3.0]),
    src_len=st.integers(1, 6),
)
def test_no_completion_scores_above_any_ancestor_bound_in_half_precision(dtype, rule, seed, sharpness, eos_bias, T,
                                                                         alpha, reward, ratio, src_len):
    model = SyntheticModel(7, seed, eos_bias, sharpness)
    checked: list = []
    walk(model, scoring(rule, alpha, reward, ratio), dtype, (), torch.zeros((), dtype=dtype), T, src_len, [], checked)
    assert checked


@pytest.mark.parametrize("dtype", HALF, ids=str)
@pytest.mark.parametrize("rule", [BoundedWordReward(0.8, 1.5), WordReward(0.3)], ids=lambda r: r.name)
def test_a_length_reward_is_added_in_float32(dtype, rule):
    """``r = 0.8`` is 0.7998 in float16 and 0.8008 in bfloat16: a reward in the scores' type would change the rule.
    The score of a half-precision ``log p`` is float32's score of the same number, and so is its bound."""
    log_prob = torch.tensor([[-1.703125, -8.25]], dtype=dtype)
    for t, T in ((7, 30), (16, 30), (30, 30)):
        half = StepView(log_prob=log_prob, eos=torch.tensor([[True, False]]), src_len=torch.tensor([4.0]), t=t,
                        max_length=T)
        full = StepView(log_prob=log_prob.float(), eos=half.eos, src_len=half.src_len, t=t, max_length=T)
        assert rule.final(half).dtype == torch.float32
        assert torch.equal(rule.final(half), rule.final(full))
        assert torch.equal(rule.bound(half), rule.bound(full))


@pytest.mark.parametrize("dtype", HALF, ids=str)
def test_the_kept_scores_are_float32(dtype):
    """A kept score rounded to the half type could round up past a bound it is compared with."""
    from test_certificate import build

    strategy = build("none", "optimal", beam=2, batch=1, n_best=1, max_length=5)
    strategy.initialize(torch.zeros(1, 3, 1), torch.tensor([3]))
    strategy.topk_log_probs = strategy.topk_log_probs.to(dtype)  # the sums of a decode in the half type
    strategy._start_search(torch.tensor([3]))
    assert strategy.core.kept.score.dtype == torch.float32


def test_half_precision_top_k_is_torch_topk():
    """Half-precision sums tie often; the beam's top-k must break ties at the k-th place as stock's
    ``torch.topk`` does (the bookkeeping with OpenNMT-py's rule reproduces stock's beam)."""
    from onmt_optimal.search.top_k import top_k

    g = torch.Generator().manual_seed(0)
    scores = (-torch.randint(0, 400, (4, 40_000), generator=g) / 16).to(torch.float16)  # 100 of each value
    for k in (5, 10):
        assert torch.equal(top_k(scores, k)[1], torch.topk(scores, k, dim=1)[1])
