"""Hugging Face's length normalization as a scoring rule with an admissible bound.

transformers scores a finished beam hypothesis ``sum log p / t ** length_penalty`` (``_update_finished_beams``),
where ``t`` counts the tokens generated after the decoder prompt, its end token included, and ``sum log p`` is
the running sum of the (processed) log-probabilities: the same number as ``StepView.t`` and
``StepView.log_prob`` of the search core at the step the hypothesis ends (``|y| = t - 1`` words after an end
token, ``t`` when cut at ``max_length``: either way the penalty's length is ``t``). ``final`` computes it with the
same operation as transformers (a float32 tensor divided by the Python number ``t ** length_penalty``), so
``sequences_scores`` are transformers' own numbers for the same hypothesis.

Bound (``exact``). Let an item have the float32 sum ``s`` at step ``t < T`` (``T``: the last step,
``max_length`` less the prompt). A descendant ends at some ``t'`` in ``t+1 .. T`` with sum ``s'`` and scores
``s' / d(t')``, ``d(t') = t' ** lp > 0``. Every step adds a processed log-probability ``<= 0`` (the processors
this package accepts only lower scores or set them to 0 or ``-inf``: ``hf.options``), so ``s' <= s <= 0``
(a float32 sum ``fl(s + x)`` with ``x <= 0`` is ``<= s``: rounding is monotone). Let
``D = max(d(t+1), d(T))``: ``t ** lp`` is monotone in ``t`` (increasing for ``lp > 0``, decreasing for
``lp < 0``, constant for ``lp = 0``), so ``d(t') <= D`` for every ``t'`` in ``t+1 .. T``. Then
``s' / d(t') <= s / d(t') <= s / D``: the first step divides the smaller numerator by the same positive number,
the second divides the same non-positive number by a larger positive one, which moves it towards 0. The device
converts each divisor to float32 (a monotone rounding, so ``d(t') <= D`` survives it) and rounds each quotient
correctly (monotone too; a CUDA device multiplies by the float32 reciprocal instead, which is decreasing in
the divisor, and the same argument applies to ``s' * (1/d(t')) <= s * (1/D)``). So ``s / D``, computed with the
same operation as ``final``, is never below the final score of any descendant: admissible
(``tests/hf/test_hf_scoring.py`` walks whole trees). For ``lp > 0`` it is transformers' own
``early_stopping="never"`` estimate (``s / T ** lp``), for ``lp = 0`` the sum itself (the paper's Section 3).

``predicted`` (Yang, Huang & Ma, 2018) assumes no continuation outgrows the target length ``l`` (in words, so
its end token is token ``l + 1``): it looks only as far as ``clamp(ceil(l) + 1, t + 1, T)``; a heuristic, as in
``search.scoring``.
"""
from __future__ import annotations

import torch

from onmt_optimal.search.scoring import BOUNDS, StepView, _Targeted


class LengthPenalty(_Targeted):
    """transformers' ``sum log p / t ** length_penalty`` (see the module docstring for the bound's proof)."""

    name = "length_penalty"

    def __init__(self, length_penalty: float = 1.0, bound: str = "exact", ratio: float | None = None):
        if bound not in BOUNDS:
            raise ValueError(f"bound must be one of {BOUNDS}")
        if bound == "predicted" and ratio is None:
            raise ValueError("a predicted bound needs a length ratio")
        self.length_penalty = length_penalty
        self.bound_mode = bound if length_penalty != 0 else "exact"
        self.bound_is_proof = self.bound_mode == "exact"
        self.ratio = ratio

    def describe(self) -> str:
        return f"log p(y|x) / t ** {self.length_penalty}, t = generated tokens with the end token"

    def final(self, view: StepView) -> torch.Tensor:
        if self.length_penalty == 0:  # x / 1.0 is x, bit for bit: the sum itself (Kept then stores it once)
            return view.log_prob
        # transformers' float32 operation: a tensor divided by the Python number t ** lp
        return view.log_prob / (view.t ** self.length_penalty)

    def bound(self, view: StepView) -> torch.Tensor:
        lp, t, T = self.length_penalty, view.t, view.max_length
        if lp == 0:
            return view.log_prob
        if self.bound_mode == "exact":
            return view.log_prob / max((t + 1) ** lp, T ** lp)
        last = (self._target(view).ceil() + 1).clamp(min=t + 1, max=T).long()  # (B, 1)
        table = view.once((id(self), "table"), lambda: torch.tensor(
            [float(n) ** lp for n in range(T + 1)], dtype=torch.float64, device=view.log_prob.device))
        largest = torch.maximum(table[min(t + 1, T)], table[last])
        return view.log_prob / largest.to(view.log_prob.dtype)
