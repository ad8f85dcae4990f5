"""transformers' own stopping rule (``early_stopping``), as a stopping rule of the search core's kind.

transformers' beam search keeps, per input, the ``num_beams`` best finished hypotheses under its length
normalization and stops an input (``_check_early_stop_heuristic``) once that store is full and the best
*running* item's possible score, ``running sum / L ** length_penalty``, is not above the worst stored score;
``L`` is the current length (``early_stopping=False``, the default: "this estimate may not always be correct")
or, with ``early_stopping="never"`` and ``length_penalty > 0``, the most tokens the input may still generate.
``early_stopping=True`` stops as soon as the store is full. Once an input is done, transformers offers it no
more finished hypotheses (its store is frozen) while the batch runs on: stopping it then is the same answer.

``TransformersRule`` is that decision on the search's bookkeeping, so its answer and the certificate's come from
one decode (``stopping=("optimal", "default")``). It reads the core's ``StopView``: ``best_running``, ``t``,
``max_length`` and its rule's store of ``num_beams`` hypotheses (``kept_score``: ``Kept`` with ``K = num_beams``).
"""
from __future__ import annotations

import torch

from onmt_optimal.search.stopping import StoppingRule, StopReason, StopView


class TransformersRule(StoppingRule):
    """transformers' ``early_stopping`` (``False``, ``True`` or ``"never"``) with its ``length_penalty``; the store
    it compares with is the rule's ``K = num_beams`` kept hypotheses (``kept_score``, sorted, ``-inf`` when
    empty). Not a certificate: with ``early_stopping=False`` and a length penalty its answer may be below the
    best the same beam would finish."""

    name = "default"
    reason = StopReason.EARLY_STOPPING
    needs_bound = False

    def __init__(self, early_stopping: bool | str = False, length_penalty: float = 1.0):
        self.early_stopping = early_stopping
        self.length_penalty = length_penalty

    def done(self, view: StopView) -> torch.Tensor:
        worst = view.kept_score[:, -1:]
        full = worst > float("-inf")
        if self.early_stopping is True:
            return full
        length = view.max_length if self.early_stopping == "never" and self.length_penalty > 0 else view.t
        possible = view.best_running / (length ** self.length_penalty)  # transformers' float32 operation
        return full & (possible <= worst)
