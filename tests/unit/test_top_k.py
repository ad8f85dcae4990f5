"""``top_k`` is exactly a stable descending sort cut at k: values and indices, ties broken by the lower index
(small problems: ``torch.topk``, the same values, its own indices among exact ties)."""
from __future__ import annotations

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.tiers import examples

from onmt_optimal.search.top_k import TopK

SETTINGS = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def stable(scores, k):
    values, indices = torch.sort(scores, dim=1, descending=True, stable=True)
    return values[:, :k], indices[:, :k]


@st.composite
def score_rows(draw):
    k = draw(st.integers(1, 6))
    group = draw(st.integers(1, 5))
    B = draw(st.integers(1, 4))
    N = draw(st.integers(4 * k * group, 4 * k * group + 60))  # at least 4k groups: the two-pass path
    pool = draw(st.sampled_from(["distinct", "ties", "inf"]))
    if pool == "distinct":
        scores = torch.randn(B, N, generator=torch.Generator().manual_seed(draw(st.integers(0, 10**6))))
    else:
        values = [0.0, -1.0, -2.5, -65504.0] + ([float("-inf")] if pool == "inf" else [])
        scores = torch.tensor(draw(st.lists(st.lists(st.sampled_from(values), min_size=N, max_size=N),
                                            min_size=B, max_size=B)))
    return scores, k, group


@settings(SETTINGS)
@given(score_rows())
def test_two_pass_top_k_is_a_stable_sort_cut_at_k(case):
    scores, k, group = case
    values, indices = TopK(group, 0)(scores, k)
    ref_values, ref_indices = stable(scores, k)
    assert torch.equal(values, ref_values)
    assert torch.equal(indices, ref_indices)


@settings(SETTINGS)
@given(score_rows())
def test_small_problems_are_torch_topk(case):
    """Stock's op: the stable sort's values, and indices that hold them (its own order among exact ties)."""
    scores, k, group = case
    values, indices = TopK(group, 10**9)(scores, k)
    ref = torch.topk(scores, k, dim=1)
    assert torch.equal(values, ref.values) and torch.equal(indices, ref.indices)
    assert torch.equal(values, stable(scores, k)[0])


def test_ties_at_the_kth_place_go_to_the_lower_index():
    scores = torch.full((2, 400), -3.0)
    scores[0, [7, 150, 399]] = 1.0  # three tied maxima, k = 2: indices 7 and 150
    scores[1, 399] = 2.0
    values, indices = TopK(4, 0)(scores, 2)
    assert indices.tolist() == [[7, 150], [399, 0]]
    assert values.tolist() == [[1.0, 1.0], [2.0, -3.0]]


def test_large_rows_match_torch_topk_values():
    scores = torch.randn(8, 20000).log_softmax(-1) + torch.randn(8, 1)
    values, indices = TopK()(scores, 10)
    ref = torch.topk(scores, 10, dim=1)
    assert torch.equal(values, ref.values) and torch.equal(indices, ref.indices)
