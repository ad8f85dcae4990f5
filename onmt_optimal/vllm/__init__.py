"""Optimal beam search for vLLM: ``LLM.beam_search`` that stops each prompt once its answers are certified.

    from onmt_optimal.vllm import optimal_beam_search
    outputs = optimal_beam_search(llm, prompts, BeamSearchParams(beam_width=4, max_tokens=64), stopping="optimal")
    outputs[0].sequences   # as llm.beam_search returns them
    outputs[0].record      # steps, stop_reason, score, ... (search.record.Record)

Read in this order: ``beam_search`` (vLLM's loop, its own step, the certificate after each step), ``scoring``
(vLLM's ``length_penalty`` score as a rule with an admissible bound), ``options`` (the arguments: what is taken,
what is refused), ``output`` (vLLM's result type with the record). Importing this package changes nothing in
vLLM.
"""
from onmt_optimal.vllm.beam_search import optimal_beam_search

__all__ = ["optimal_beam_search"]
