"""Every vLLM internal the adapter uses, named once, for vLLM 0.32 (``VERSION``); another release is refused.

vLLM's beam searches are not a public API: the offline loop is ``BeamSearchOfflineMixin.beam_search``
(``vllm/entrypoints/generate/beam_search/offline.py``, mixed into ``LLM``), which calls its step,
``_beam_search_step``, once a step with keyword arguments: that call is the seam the offline search takes
(``offline_search``: vLLM's own ``LLM.beam_search`` runs, its step wrapped for that call). The server's is
``BeamSearchOnlineMixin.beam_search`` (``online.py``), whose step is written inside the loop (no function of
vLLM's to call or wrap: ``online._grow`` is that step's code); both use ``utils.py``'s ``BeamSearchSequence``,
``BeamSearchInstance``, ``BeamSearchOutput`` and ``create_sort_beams_key_function``. The server's plugin replaces
``BeamSearchOnlineMixin.beam_search`` and the two serving methods ``COMPLETION``'s
``OpenAIServingCompletion.create_completion`` and ``CHAT``'s ``OpenAIServingChat.create_chat_completion``, and
answers a refused request with the serving class's ``create_error_response``. The other modules of this package
reach vLLM's internals only through this one.

These internals change between releases (0.33 scores a hypothesis by its generated tokens alone, takes several
end tokens and passes them to the step under another name: ``docs/vllm.md``), so a vLLM whose major.minor is not
``VERSION``'s is refused (``version_error``): offline, the call that asks for the search raises
``UnsupportedVersion``; the server's plugin logs the line and leaves the server stock (``serve.register``).
"""
from __future__ import annotations

import asyncio

#: the vLLM release whose internals these are (major.minor): another is refused (``version_error``)
VERSION = "0.32"
#: vLLM's beam-search package (``offline``, ``online``, ``utils``)
BEAM_SEARCH = "vllm.entrypoints.generate.beam_search"
#: the modules of the serving classes the plugin patches
COMPLETION = "vllm.entrypoints.openai.completion.serving"
CHAT = "vllm.entrypoints.openai.chat_completion.serving"
#: how often a step in flight looks whether the server's engine client stopped (``engine_step``)
STOPPED_POLL_S = 0.5


class UnsupportedVersion(RuntimeError):
    """The installed vLLM is not the release ``VERSION`` names (``version_error``'s line)."""


def installed_version() -> str:
    """The installed vLLM's version, as it says it (``vllm.__version__``)."""
    import vllm

    return str(getattr(vllm, "__version__", "unknown"))


def version_error() -> str | None:
    """One line refusing the installed vLLM, or None where its major.minor is ``VERSION``'s (the tested release:
    its internals are the ones named here)."""
    version = installed_version()
    if version.split(".")[:2] == VERSION.split("."):
        return None
    return f"onmt-optimal supports vLLM {VERSION}; this is vLLM {version}"


def check_version() -> None:
    """``UnsupportedVersion`` (one line, both versions) unless the installed vLLM is the tested release."""
    line = version_error()
    if line is not None:
        raise UnsupportedVersion(line)


def online_mixin():
    """``BeamSearchOnlineMixin``: the server's beam search is its method ``beam_search``."""
    from vllm.entrypoints.generate.beam_search.online import BeamSearchOnlineMixin

    return BeamSearchOnlineMixin


def completion_serving():
    from vllm.entrypoints.openai.completion.serving import OpenAIServingCompletion

    return OpenAIServingCompletion


def chat_serving():
    from vllm.entrypoints.openai.chat_completion.serving import OpenAIServingChat

    return OpenAIServingChat


def error_response(serving, message: str):
    """The serving class's own error answer (HTTP 400) with ``message``."""
    return serving.create_error_response(message)


def sort_key(eos_token_id: int, length_penalty: float):
    """vLLM's score of a hypothesis, ``sort_beams_key`` (``utils.create_sort_beams_key_function``)."""
    from vllm.entrypoints.generate.beam_search.utils import create_sort_beams_key_function

    return create_sort_beams_key_function(eos_token_id, length_penalty)


def sequence(**fields):
    """A ``BeamSearchSequence`` (``utils``) of ``fields``."""
    from vllm.entrypoints.generate.beam_search.utils import BeamSearchSequence

    return BeamSearchSequence(**fields)


def instance(prompt, lora_request=None, **fields):
    """A ``BeamSearchInstance`` (``utils``): one beam of ``prompt``'s tokens (``fields``: the beam's other
    fields), no completed hypothesis."""
    from vllm.entrypoints.generate.beam_search.utils import BeamSearchInstance

    return BeamSearchInstance(prompt, lora_request=lora_request, logprobs=None, **fields)


def output_class():
    """``BeamSearchOutput`` (``utils``), what ``LLM.beam_search`` returns a prompt."""
    from vllm.entrypoints.generate.beam_search.utils import BeamSearchOutput

    return BeamSearchOutput


def model_config(owner):
    """The engine's ``ModelConfig`` of an ``LLM`` or a serving class, or None."""
    return getattr(owner, "model_config", None)


# the offline loop (``offline.py``, ``BeamSearchOfflineMixin.beam_search`` on an ``LLM``)

#: the step's name: ``BeamSearchOfflineMixin.beam_search`` calls ``self._beam_search_step(...)`` once a step
STEP = "_beam_search_step"


def offline_search(llm, prompts, params, lora_request, use_tqdm, concurrency_limit, step):
    """vLLM's own ``llm.beam_search(prompts, params, lora_request, use_tqdm, concurrency_limit)``, its step
    (``STEP``) replaced for this call alone by ``step(stock, **arguments)``: ``stock`` is vLLM's step of this
    ``llm``, ``arguments`` what vLLM's loop passes it (keywords: ``instances_batch``, ``base_sampling_params``,
    ``eos_token_id``, ``ignore_eos``, ``beam_width``, ``sort_beams_key`` and the structured outputs'), and the loop
    stops a chunk of prompts when ``step`` returns True. The replacement is an attribute of this ``llm`` object,
    removed when the call ends, however it ends: ``LLM`` itself is never changed."""
    if STEP in vars(llm):
        raise RuntimeError("optimal_beam_search is already running on this LLM (one search at a time)")
    stock = getattr(llm, STEP)

    def wrapped(**arguments):
        return step(stock, **arguments)

    setattr(llm, STEP, wrapped)
    try:
        return llm.beam_search(prompts, params, lora_request, use_tqdm, concurrency_limit)
    finally:
        delattr(llm, STEP)


# the server's loop (``online.py``, ``BeamSearchOnlineMixin.beam_search`` on a serving class)

def online_tokenizer(serving, params):
    """What the server's beam search does first: watermarking resolved; its tokenizer."""
    serving.engine_client.input_processor.resolve_watermarking(params)
    return serving.renderer.get_tokenizer()


async def engine_step(serving, beams, sampling_params, request_id, trace_headers, session_id) -> list:
    """One step of the server's loop: every beam a request of ``sampling_params`` to the engine, sent together
    (``asyncio.gather``), named ``{request_id}-{uuid}-beam-{i}``; their ``RequestOutput``s in the beams' order.

    Cancelling the caller's task (a client that disconnects) cancels the requests, which the engine then aborts.
    An engine client that stops meanwhile (the server's shutdown: vLLM stops its output handler, and a request
    in flight would wait for an answer that never comes) raises vLLM's ``EngineDeadError``
    (``engine_client.dead_error``), checked every ``STOPPED_POLL_S``."""
    from vllm.utils import random_uuid
    from vllm.utils.async_utils import collect_from_async_generator

    batch = f"{request_id}-{random_uuid()}"
    tasks = [asyncio.create_task(collect_from_async_generator(serving.engine_client.generate(
        beam.get_prompt(), sampling_params, f"{batch}-beam-{i}", lora_request=beam.lora_request,
        trace_headers=trace_headers, session_id=session_id))) for i, beam in enumerate(beams)]
    gathered = asyncio.gather(*tasks)
    try:
        while not (await asyncio.wait({gathered}, timeout=STOPPED_POLL_S))[0]:
            if serving.engine_client.errored:
                raise serving.engine_client.dead_error
    except BaseException:  # cancelled (the client left) or stopped: the step's requests with it
        gathered.cancel()
        raise
    return [x[0] for x in gathered.result()]
