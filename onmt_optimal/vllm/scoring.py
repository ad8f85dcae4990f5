"""vLLM's beam-search score as a scoring rule with an admissible bound.

vLLM 0.32 ranks beams and answers by ``get_beam_search_score`` (``vllm/entrypoints/generate/beam_search/
utils.py``): ``cum_logprob / max(L, 1) ** length_penalty``, where ``cum_logprob`` is the Python (float64) sum of
the float32 log-probabilities of the generated tokens and ``L = len(tokens)``, the *prompt's tokens included*,
less one when the last token is the end token. In the search core's terms, for a hypothesis of step ``t``
(``StepView.t``: tokens generated, its end token included) and a prompt of ``P`` tokens
(``StepView.src_len``), ``L = P + |y|`` with ``|y| = StepView.out_len`` (``t - 1`` after an end token, ``t``
for one cut at ``max_tokens`` without one).

``final`` is vLLM's own key where the loop hands it (``StepView.stock_score``: ``prompts.Prompts`` does, so
that a hypothesis whose tokens vLLM counts otherwise, the server's empty answer to a prompt that ends in the end
token, scores as vLLM scores it); else it computes vLLM's number with vLLM's operations: the divisor
``float(max(L, 1) ** length_penalty)`` is Python's own power (a table of Python floats, made once per decode),
the quotient is a float64 division, which is IEEE's correctly rounded one in Python and in torch alike; so the
scores equal vLLM's bit for bit.

Bound (``exact``). Let a live item have the sum ``s`` at step ``t < T`` (``T = max_tokens``), prompt length
``P``. A descendant ends at some step ``t'`` in ``t+1 .. T`` with the sum ``s'`` and the length
``L' = P + t' - 1`` (after an end token) or ``L' = P + T`` (cut at ``T``; ``P + T - 1`` if its last token is the
end token, as under ``ignore_eos``): in every case ``P + t <= L' <= P + T``. Its score is ``s' / d(L')``,
``d(L) = fl(max(L, 1) ** lp) > 0``. Each step adds a log-probability ``x <= 0`` (vLLM's are float32
``log_softmax`` values: ``x - max - log(sum exp(x - max))`` with a sum ``>= 1``), and ``fl(s + x) <= s`` since
rounding is monotone, so ``s' <= s <= 0``. Let ``D = max(d(L) for L in P+t .. P+T)``, the largest divisor *as
computed* (no assumption that Python's ``pow`` is monotone). Then ``fl(s' / d(L')) <= fl(s / d(L'))`` (a
correctly rounded quotient is monotone in the numerator for a positive divisor) ``<= fl(s / D)`` (and, for a
numerator ``<= 0``, non-decreasing in a positive divisor, with ``d(L') <= D``). So ``fl(s / D)`` is never below
the final score of any descendant: admissible (``tests/vllm/test_vllm_scoring.py`` checks it on every pair of
lengths and on random sums). For ``lp > 0`` it is ``s / d(P + T)``, for ``lp < 0`` ``s / d(P + t)``, for
``lp = 0`` the sum itself (the paper's Section 3).

The premise ``x <= 0`` holds for the engine's log-probabilities (vLLM's ``Sampler.compute_logprobs``,
``logits.log_softmax(dim=-1, dtype=torch.float32)``, under ``logprobs_mode`` ``raw_logprobs`` or
``processed_logprobs``); an engine that returns logits instead is refused (``options``).
"""
from __future__ import annotations

import torch

from onmt_optimal.search.scoring import ScoringRule, StepView


def divisors(length_penalty: float, longest: int) -> torch.Tensor:
    """(longest + 1,) float64: ``d(L) = max(L, 1) ** length_penalty`` for ``L = 0 .. longest``, each Python's own
    power, as ``get_beam_search_score`` computes it."""
    return torch.tensor([float(max(n, 1) ** length_penalty) for n in range(longest + 1)], dtype=torch.float64)


class VLLMLengthPenalty(ScoringRule):
    """vLLM's ``cum_logprob / max(P + |y|, 1) ** length_penalty`` (module docstring: the bound's proof)."""

    name = "length_penalty"

    def __init__(self, length_penalty: float = 1.0):
        self.length_penalty = float(length_penalty)

    def describe(self) -> str:
        return f"log p(y|x) / (|x| + |y|) ** {self.length_penalty}, |x| = prompt tokens"

    def _table(self, view: StepView) -> torch.Tensor:
        """``d(L)`` for every length a hypothesis of this decode can have, made once per batch."""
        longest = int(view.src_len.max()) + view.max_length
        return view.once((id(self), "d"), lambda: divisors(self.length_penalty, longest).to(view.log_prob.device))

    def final(self, view: StepView) -> torch.Tensor:
        if view.stock_score is not None:  # vLLM's own key of each item, where the loop hands it
            return view.stock_score
        if self.length_penalty == 0:  # x / 1.0 is x, bit for bit
            return view.log_prob
        length = view.src_len.long().unsqueeze(1) + view.out_len  # (B, beam) L = P + |y|
        return view.log_prob / self._table(view)[length]

    def bound(self, view: StepView) -> torch.Tensor:
        if self.length_penalty == 0:
            return view.log_prob
        largest = view.once((id(self), "D"), lambda: self._suffix_max(view))  # (B, T + 1)
        return view.log_prob / largest[:, view.t:view.t + 1]

    def _suffix_max(self, view: StepView) -> torch.Tensor:
        """(B, T + 1): at column ``t``, ``max(d(L) for L in P + t .. P + T)`` of each prompt."""
        table, T = self._table(view), view.max_length
        P = view.src_len.long().unsqueeze(1)  # (B, 1)
        window = table[P + torch.arange(T + 1, device=P.device)]  # (B, T + 1): d(P + t)
        return window.flip(1).cummax(dim=1).values.flip(1)
