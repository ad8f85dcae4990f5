"""transformers' length normalization as a scoring rule (``onmt_optimal.hf.scoring.LengthPenalty``): its final
score is transformers' own number, and its bound is admissible on every expansion of whole search trees."""
from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from onmt_optimal.hf.scoring import LengthPenalty
from onmt_optimal.search.scoring import StepView
from helpers.synthetic import BOS, EOS, PAD, SyntheticModel
from helpers.tiers import examples


def view(log_prob: float, t: int, T: int, eos: bool, src_len: int = 3) -> StepView:
    return StepView(log_prob=torch.tensor([[log_prob]], dtype=torch.float32), eos=torch.tensor([[eos]]),
                    src_len=torch.tensor([float(src_len)]), t=t, max_length=T)


def walk(model, rule, prefix, log_prob, T, ancestors, checked):
    """Expand ``prefix`` (live at step len(prefix)) with every token; every completion's final score must not
    exceed any ancestor's bound. Sums are float32, as transformers accumulates them."""
    dist = model.log_probs(0, prefix)
    t = len(prefix) + 1
    for tok in range(model.vocab_size):
        if tok in (PAD, BOS):
            continue
        s = float(torch.tensor(log_prob, dtype=torch.float32) + dist[tok])
        if tok == EOS or t == T:
            final = float(rule.final(view(s, t, T, tok == EOS)))
            assert all(final <= bound for bound in ancestors), (prefix + (tok,), final, ancestors)
            checked.append(final)
        else:
            bound = float(rule.bound(view(s, t, T, False)))
            walk(model, rule, prefix + (tok,), s, T, ancestors + [bound], checked)


@settings(max_examples=examples(120), deadline=None)
@given(seed=st.integers(0, 10**6), sharpness=st.sampled_from([0.3, 2.0, 8.0]), eos_bias=st.floats(-3, 3),
       T=st.integers(1, 5), lp=st.sampled_from([-1.0, -0.5, 0.0, 0.3, 1.0, 2.0, 1]))
def test_no_completion_scores_above_any_ancestor_bound(seed, sharpness, eos_bias, T, lp):
    checked: list = []
    walk(SyntheticModel(6, seed, eos_bias, sharpness), LengthPenalty(lp), (), 0.0, T, [], checked)
    assert checked


def test_a_looser_denominator_is_caught():
    """The walk can fail: a bound that divides by the current length's penalty (transformers' default
    estimate) is not admissible for ``length_penalty > 0``."""
    class CurrentLength(LengthPenalty):
        def bound(self, view):
            return view.log_prob / ((view.t + 1) ** self.length_penalty)

    failures = 0
    for seed in range(20):
        try:
            walk(SyntheticModel(6, seed, 0.0, 2.0), CurrentLength(1.0), (), 0.0, 4, [], [])
        except AssertionError:
            failures += 1
    assert failures > 0


def test_final_is_transformers_number():
    """``sum / t ** lp`` with transformers' operation (a float32 tensor over a Python number), the end token
    counted in ``t``."""
    sums = torch.tensor([[-3.7, -0.2]], dtype=torch.float32)
    for lp in (0.0, 0.6, 1.0, 2.0):
        v = StepView(log_prob=sums, eos=torch.tensor([[True, False]]), src_len=torch.tensor([2.0]), t=4,
                     max_length=9)
        assert torch.equal(LengthPenalty(lp).final(v), sums / (4 ** lp))
