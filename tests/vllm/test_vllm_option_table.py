"""vLLM's ``optimal_beam_search`` takes ``LLM.beam_search``'s arguments and, beside them, exactly the options
the table (``option_table``) gives vLLM, with their defaults, and ``prune_dead`` (offline only: the server's loop
does not prune, ``vllm.dead_beams``) last where the table does not give it to vLLM."""
import inspect

from onmt_optimal.option_table import BY_NAME, VLLM, taken_by


def options() -> list:
    """The options ``optimal_beam_search`` takes, in order."""
    table = list(taken_by(VLLM))
    return table if BY_NAME["prune_dead"] in table else [*table, BY_NAME["prune_dead"]]


def test_keyword_arguments_are_the_table():
    from vllm import LLM

    from onmt_optimal.vllm.beam_search import optimal_beam_search

    usual = {*inspect.signature(LLM.beam_search).parameters, "llm"}  # beam_search's self
    ours = {name: p.default for name, p in inspect.signature(optimal_beam_search).parameters.items()
            if name not in usual}
    assert ours == {o.name: o.default_for(VLLM) for o in options()}


def test_a_strict_drop_in_for_llm_beam_search():
    """``LLM.beam_search``'s parameters, in its order, with its kinds and defaults (``self`` is ``llm``), then the
    table's options, keyword-only."""
    from vllm import LLM

    from onmt_optimal.vllm.beam_search import optimal_beam_search

    theirs = list(inspect.signature(LLM.beam_search).parameters.values())[1:]
    ours = list(inspect.signature(optimal_beam_search).parameters.values())
    assert ours[0].name == "llm"
    assert [(p.name, p.kind, p.default) for p in ours[1:1 + len(theirs)]] == [
        (p.name, p.kind, p.default) for p in theirs]
    rest = ours[1 + len(theirs):]
    assert [p.name for p in rest] == [o.name for o in options()]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in rest)
