"""The vLLM internals the adapter uses (``onmt_optimal.vllm.internals``) are where that module says, in the vLLM
installed: its version is ``internals.VERSION``'s, and each class and method it names exists. A vLLM that moved
them fails here, by name, before any decode. The offline step is wrapped for a call alone."""
import vllm
from vllm import LLM

from onmt_optimal.vllm import internals


def test_the_installed_vllm_is_the_one_named():
    assert vllm.__version__.split(".")[:2] == internals.VERSION.split(".")
    assert internals.version_error() is None
    internals.check_version()


def test_every_internal_named_exists():
    for name in (internals.STEP, "beam_search"):
        assert callable(getattr(LLM, name, None)), name
    assert callable(internals.online_mixin().beam_search)
    assert callable(internals.completion_serving().create_completion)
    assert callable(internals.completion_serving().create_error_response)
    assert callable(internals.chat_serving().create_chat_completion)
    assert internals.output_class() is not None
    assert callable(internals.sort_key(0, 1.0))
    assert internals.sequence(orig_prompt={"type": "token", "prompt_token_ids": [1]}, tokens=[1],
                              logprobs=[]).cum_logprob == 0.0


def test_the_offline_step_is_wrapped_for_the_call_alone(llm, toy):
    """``internals.offline_search`` wraps ``LLM._beam_search_step`` on the ``LLM`` object while the call runs:
    afterwards, whether the call answered or vLLM raised inside it, the object and its class are vLLM's."""
    from vllm.entrypoints.generate.beam_search.offline import BeamSearchOfflineMixin
    from vllm.sampling_params import BeamSearchParams

    from helpers import toy_vllm
    from onmt_optimal.vllm import optimal_beam_search

    stock = BeamSearchOfflineMixin.__dict__[internals.STEP]
    params = BeamSearchParams(beam_width=2, max_tokens=6, length_penalty=0.0)
    prompts = toy_vllm.prompts(toy, 2, seed=3)
    assert len(optimal_beam_search(llm, prompts, params)) == 2
    assert internals.STEP not in vars(llm) and getattr(LLM, internals.STEP) is stock
    try:
        optimal_beam_search(llm, [{"prompt_token_ids": []}], params)  # vLLM refuses an empty prompt
    except Exception as refused:
        assert "\n" not in str(refused).strip(), str(refused)
    assert internals.STEP not in vars(llm) and getattr(LLM, internals.STEP) is stock

    def answers(outputs):
        return [[(s.tokens, s.cum_logprob, s.text) for s in out.sequences] for out in outputs]

    assert answers(optimal_beam_search(llm, prompts, params)) == answers(llm.beam_search(prompts, params))
