"""``optimal_beam_search``: vLLM's ``LLM.beam_search`` that stops each prompt once the certificate holds.

The loop is vLLM 0.32's ``BeamSearchOfflineMixin.beam_search`` (``vllm/entrypoints/generate/beam_search/
offline.py``), statement for statement: the same prelude (watermarking resolved, the tokenizer's end token,
``create_sort_beams_key_function``, the prompts through ``_preprocess_cmpl``, the LoRA requests, the
``concurrency_limit`` chunks, the progress bar, the base ``SamplingParams`` with ``logprobs = 2 * beam_width``
and ``max_tokens = 1``, one ``BeamSearchInstance`` a prompt), and each step is vLLM's own
``LLM._beam_search_step``, called on the instances still running: it sends every live beam to the engine,
forms each beam's candidates in the order of the engine's logprobs, moves those that end in the end token to
``instance.completed``, sorts the rest by vLLM's score (a stable sort) and keeps ``beam_width``. So every
beam and every completed hypothesis is the one vLLM holds at that step.

What differs is when a prompt stops and what it answers: after each step the instances go to ``prompts.Prompts``
(the search core's collect and decide, shared with the server's loop, ``online``), and a prompt that is done
leaves the batch: later steps send only the others' beams. At ``max_tokens`` the live beams join the completed
list, as in vLLM. The answers are the ``beam_width`` best completed hypotheses under the rule, decoded as vLLM
decodes them.
"""
from __future__ import annotations

from onmt_optimal.option_table import VLLM, taken_by
from onmt_optimal.vllm import options
from onmt_optimal.vllm.output import OptimalBeamSearchOutput
from onmt_optimal.vllm.prompts import Prompts

#: the search's keyword arguments and their defaults (``option_table``)
_DEFAULTS = {o.name: o.default_for(VLLM) for o in taken_by(VLLM)}


def optimal_beam_search(llm, prompts, params, lora_request=None, use_tqdm=False, concurrency_limit=None, *,
                        stopping=_DEFAULTS["stopping"], length_reward=_DEFAULTS["length_reward"],
                        length_ratio=_DEFAULTS["length_ratio"], bp_norm=_DEFAULTS["bp_norm"]):
    """``llm.beam_search(prompts, params, lora_request, use_tqdm, concurrency_limit)`` with the certificate (module
    docstring): ``LLM.beam_search``'s arguments in its order, then the search's, keyword-only.

    ``stopping``: ``"optimal"`` (default: stop a prompt once its answers are certified) or ``"exhaustive"``
    (run as vLLM does). The score: vLLM's ``cum_logprob / len ** length_penalty`` (``params``), unless
    ``length_reward=R`` replaces it (``log p + R * min(length_ratio * |x|, |y|)``; without ``length_ratio``,
    ``log p + R * |y|``) or ``bp_norm=True`` (BP-norm, with ``length_ratio``); ``|x|`` is the prompt's length
    in tokens, ``|y|`` the generated tokens without the end token.

    Returns what ``LLM.beam_search`` returns, a list with one ``BeamSearchOutput`` a prompt (its ``sequences``:
    the ``beam_width`` best, best first, tokens with the prompt's, ``text`` decoded as vLLM does), each an
    ``OptimalBeamSearchOutput`` that also carries ``record``, the search core's ``Record`` (``steps``,
    ``stop_reason``, ``score``, ``log_prob``, ``length``, ``target_length``, ``src_length``, ``completed``,
    ``tokens``). Bad arguments raise one-line ``TypeError``/``ValueError``.
    """
    from tqdm import tqdm
    from vllm import SamplingParams
    from vllm.entrypoints.generate.beam_search.offline import logger
    from vllm.entrypoints.generate.beam_search.utils import BeamSearchInstance, create_sort_beams_key_function

    search = options.search(llm, params, stopping, length_reward, length_ratio, bp_norm)
    if concurrency_limit is not None and (isinstance(concurrency_limit, bool)
                                          or not isinstance(concurrency_limit, int) or concurrency_limit < 1):
        raise ValueError(f"concurrency_limit must be a positive int or None, got {concurrency_limit!r}")
    # vLLM's prelude (offline.py, ``beam_search``)
    beam_width, max_tokens, ignore_eos = params.beam_width, params.max_tokens, params.ignore_eos
    llm.llm_engine.input_processor.resolve_watermarking(params)
    tokenizer = llm.renderer.get_tokenizer()
    eos_token_id = tokenizer.eos_token_id
    sort_beams_key = create_sort_beams_key_function(eos_token_id, params.length_penalty)
    engine_inputs = llm._preprocess_cmpl(prompts)
    lora_requests = llm._lora_request_to_seq(lora_request, len(engine_inputs))
    if use_tqdm and concurrency_limit is not None:
        logger.warning("Progress bar is not supported when using concurrency_limit. Disabling progress bar.")
        use_tqdm = False
    if concurrency_limit is None:
        concurrency_limit = len(engine_inputs)
    base_sampling_params = SamplingParams(logprobs=2 * beam_width, max_tokens=1, temperature=params.temperature,
                                          watermarking=False, detokenize=False, skip_clone=True)
    instances = []
    for lora_req, prompt in zip(lora_requests, engine_inputs):
        if prompt["type"] == "embeds":
            raise ValueError("optimal_beam_search does not take embedding prompts (vLLM's beam search neither)")
        instances.append(BeamSearchInstance(prompt, lora_request=lora_req, logprobs=None))

    answered = []
    for start in range(0, len(instances), concurrency_limit):
        batch = instances[start:start + concurrency_limit]
        decode = Prompts(search, batch, [len(i.beams[0].tokens) for i in batch], max_tokens, eos_token_id,
                         sort_beams_key)
        steps = range(1, max_tokens + 1)
        if use_tqdm:
            steps = tqdm(steps, desc="Beam search", unit="token", unit_scale=False)
        for t in steps:
            running = decode.running_hyps
            if not running:
                break
            llm._beam_search_step(instances_batch=running, base_sampling_params=base_sampling_params,
                                  eos_token_id=eos_token_id, ignore_eos=ignore_eos, beam_width=beam_width,
                                  sort_beams_key=sort_beams_key, structured_output_backend=None,
                                  structured_output_key=None, structured_output_bitmask=None)
            if t == max_tokens:  # vLLM: ``instance.completed.extend(instance.beams)``
                for instance in running:
                    instance.completed.extend(instance.beams)
            decode.after_step(t, t == max_tokens)
        answered += [p.answer for p in decode.prompts]
    outputs = []
    for answer in answered:
        for beam in answer.sequences:
            beam.text = tokenizer.decode(beam.tokens, skip_special_tokens=params.skip_special_tokens)
        outputs.append(OptimalBeamSearchOutput(sequences=answer.sequences, record=answer.record))
    return outputs
