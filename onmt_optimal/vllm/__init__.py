"""Optimal beam search for vLLM: ``LLM.beam_search`` that stops each prompt once its answers are certified.

    from onmt_optimal.vllm import optimal_beam_search
    outputs = optimal_beam_search(llm, prompts, BeamSearchParams(beam_width=4, max_tokens=64), stopping="optimal")
    outputs[0].sequences   # as llm.beam_search returns them
    outputs[0].record      # steps, stop_reason, score, ... (search.record.Record)

Read in this order: ``prompts`` (the certificate over vLLM's prompts on the search core: one implementation for
both loops), ``beam_search`` (vLLM's own offline loop, its step wrapped: ``prompts`` after each step), ``online``
(the server's loop, a copy of vLLM's: it has no step to wrap), ``serve`` (the server's plugin: a request asks
through ``vllm_xargs``), ``scoring`` (vLLM's ``length_penalty`` score as a rule with an admissible bound),
``options`` (the arguments: what is taken, what is refused), ``output`` (vLLM's result type with the record),
``internals`` (vLLM's internals, each named once; a vLLM other than the tested release is refused). Importing this
package changes nothing in vLLM; the plugin changes the server only where a request, or the server's default,
asks.
"""
from onmt_optimal.vllm.beam_search import optimal_beam_search

__all__ = ["optimal_beam_search"]
