"""Admissibility, checked on every expansion of a whole (tiny) search tree, not just of the beam.

For every live prefix of every length, and every completed hypothesis that extends it (ending in EOS, or cut
at max_length), the rule's final score must not exceed the rule's bound of the prefix. Log-probabilities are
accumulated in float32 exactly as OpenNMT-py does, so rounding is part of what is checked.
"""
from __future__ import annotations

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.rule_draws import RULE_AND_MODEL, scoring
from helpers.tiers import examples

from onmt_optimal.search.scoring import StepView, WordReward
from helpers.synthetic import BOS, EOS, PAD, SyntheticModel


def view(rule, log_prob, t, T, src_len, eos, like_cuda=False):
    lp = torch.tensor([[log_prob]], dtype=torch.float32)
    return StepView(log_prob=lp, eos=torch.tensor([[bool(eos)]]),
                    src_len=torch.tensor([float(src_len)]), t=t, max_length=T, like_cuda=like_cuda)


def walk(model, rule, prefix, log_prob, T, src_len, ancestors, checked, like_cuda=False):
    """Expand ``prefix`` (a live item at step len(prefix)) with every token; check each completion."""
    dist = model.log_probs(0, prefix)
    t = len(prefix) + 1
    for tok in range(model.vocab_size):
        if tok in (PAD, BOS):
            continue
        lp = float(torch.tensor(log_prob, dtype=torch.float32) + dist[tok])  # float32 sum, like OpenNMT-py
        ends = tok == EOS or t == T
        if ends:
            final = float(rule.final(view(rule, lp, t, T, src_len, tok == EOS, like_cuda)))
            for bound in ancestors:
                assert final <= bound, (prefix + (tok,), final, bound)
            checked.append(final)
        else:
            bound = float(rule.bound(view(rule, lp, t, T, src_len, False, like_cuda)))
            walk(model, rule, prefix + (tok,), lp, T, src_len, ancestors + [bound], checked, like_cuda)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    **RULE_AND_MODEL,
    reward=st.sampled_from([0.0, 0.4, 1.2, 5.0]),
    ratio=st.sampled_from([0.3, 1.0, 1.27, 3.0]),
    src_len=st.integers(1, 6),
    like_cuda=st.booleans(),
)
def test_no_completion_scores_above_any_ancestor_bound(rule, seed, sharpness, eos_bias, T, alpha, reward,
                                                       ratio, src_len, like_cuda):
    """``like_cuda``: divisions by a Python number as CUDA computes them (``StepView.divide``), as the bookkeeping
    on the host computes next to a CUDA model: admissible there too."""
    model = SyntheticModel(7, seed, eos_bias, sharpness)
    checked: list = []
    walk(model, scoring(rule, alpha, reward, ratio), (), 0.0, T, src_len, [], checked, like_cuda)
    assert checked


def test_a_division_as_cuda_computes_it():
    """``StepView.divide``: CUDA's float32 ``x / d`` for a Python number ``d`` is ``x * (1.0f / float(d))`` (one
    rounding for the reciprocal, one for the product), which differs from the CPU's division in the last bit
    for some ``x``; the view reproduces either."""
    x = torch.linspace(-40.0, -0.01, 20001, dtype=torch.float32).view(1, -1)
    d = 1.9**0.6  # an OpenNMT-py length penalty, in double as it computes them
    inverse = torch.tensor(1.0, dtype=torch.float32) / torch.tensor(d, dtype=torch.float32)
    plain = StepView(log_prob=x, eos=x > 0, src_len=torch.ones(1), t=1, max_length=2)
    cuda = StepView(log_prob=x, eos=x > 0, src_len=torch.ones(1), t=1, max_length=2, like_cuda=True)
    assert torch.equal(plain.divide(x, d), x / d)
    assert torch.equal(cuda.divide(x, d), x * inverse)
    assert not torch.equal(x / d, x * inverse)  # the two differ somewhere: the flag matters


def test_word_reward_bound_rounds_as_its_score():
    """Found by the property test above: with r = 1.2 and T = 3 the bound's r * T, computed in double and rounded
    to float32 only when added, was one ulp below the score's float32 r * |y| at |y| = T, so a completion that
    adds log p = 0 scored above its prefix's bound (-11.925446 > -11.925447)."""
    rule, T, log_prob = WordReward(1.2), 3, -15.525446891784668
    prefix = StepView(log_prob=torch.tensor([[log_prob]]), eos=torch.tensor([[False]]), src_len=torch.tensor([1.0]),
                      t=2, max_length=T)
    ended = StepView(log_prob=torch.tensor([[log_prob]]), eos=torch.tensor([[False]]), src_len=torch.tensor([1.0]),
                     t=T, max_length=T)
    assert float(rule.final(ended)) <= float(rule.bound(prefix))
