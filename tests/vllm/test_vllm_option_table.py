"""vLLM's ``optimal_beam_search`` takes ``LLM.beam_search``'s arguments and, beside them, exactly the options
the table (``option_table``) gives vLLM, with their defaults."""
import inspect

from onmt_optimal.option_table import VLLM, taken_by


def test_keyword_arguments_are_the_table():
    from vllm import LLM

    from onmt_optimal.vllm.beam_search import optimal_beam_search

    usual = {*inspect.signature(LLM.beam_search).parameters, "llm"}  # beam_search's self
    ours = {name: p.default for name, p in inspect.signature(optimal_beam_search).parameters.items()
            if name not in usual}
    assert ours == {o.name: o.default_for(VLLM) for o in taken_by(VLLM)}
