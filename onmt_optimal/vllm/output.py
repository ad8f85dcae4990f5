"""The answer of one prompt: vLLM's own ``BeamSearchOutput`` with the search core's ``Record`` beside it.

``OptimalBeamSearchOutput`` subclasses vLLM's dataclass, so code written for ``LLM.beam_search``'s result reads
``sequences`` as before (``isinstance`` checks hold); ``record`` is the prompt's statistics, as the other
toolkits' adapters give them (``search.record``).
"""
from __future__ import annotations

from dataclasses import dataclass

from onmt_optimal.search.record import Record
from onmt_optimal.vllm import internals


@dataclass
class OptimalBeamSearchOutput(internals.output_class()):
    """``sequences``: the ``beam_width`` best hypotheses, best first (vLLM's ``BeamSearchSequence``);
    ``record``: the prompt's ``Record`` (``steps``, ``stop_reason``, ``score``, ... and the 1-best's ``tokens``)."""

    record: Record | None = None
