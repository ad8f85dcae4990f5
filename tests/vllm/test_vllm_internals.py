"""The vLLM internals the adapter uses (``onmt_optimal.vllm.internals``) are where that module says, in the vLLM
installed: its version is ``internals.VERSION``'s, and each class and method it names exists. A vLLM that moved
them fails here, by name, before any decode."""
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
