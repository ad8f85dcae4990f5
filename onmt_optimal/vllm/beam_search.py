"""``optimal_beam_search``: vLLM's ``LLM.beam_search`` that stops each prompt once the certificate holds.

The loop is vLLM 0.32's ``BeamSearchOfflineMixin.beam_search`` (``vllm/entrypoints/generate/beam_search/
offline.py``; its internals through ``internals``), statement for statement: the same prelude (watermarking
resolved, the tokenizer's end token, ``create_sort_beams_key_function``, the prompts through ``_preprocess_cmpl``,
the LoRA requests, the
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
from onmt_optimal.vllm import internals, options
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
    search = options.search(llm, params, stopping, length_reward, length_ratio, bp_norm)
    if concurrency_limit is not None and (isinstance(concurrency_limit, bool)
                                          or not isinstance(concurrency_limit, int) or concurrency_limit < 1):
        raise ValueError(f"concurrency_limit must be a positive int or None, got {concurrency_limit!r}")
    tokenizer, instances = _instances(llm, prompts, params, lora_request)
    if use_tqdm and concurrency_limit is not None:
        internals.offline_logger().warning("Progress bar is not supported when using concurrency_limit. "
                                           "Disabling progress bar.")
        use_tqdm = False
    limit = len(instances) if concurrency_limit is None else concurrency_limit
    answered = []
    for start in range(0, len(instances), limit):
        answered += _decode(llm, instances[start:start + limit], search, params, tokenizer, use_tqdm)
    outputs = []
    for answer in answered:
        for beam in answer.sequences:
            beam.text = tokenizer.decode(beam.tokens, skip_special_tokens=params.skip_special_tokens)
        outputs.append(OptimalBeamSearchOutput(sequences=answer.sequences, record=answer.record))
    return outputs


def _instances(llm, prompts, params, lora_request) -> tuple:
    """vLLM's prelude (``internals.offline_prelude``): its tokenizer and one ``BeamSearchInstance`` a prompt."""
    tokenizer, engine_inputs, lora_requests = internals.offline_prelude(llm, prompts, params, lora_request)
    instances = []
    for lora_req, prompt in zip(lora_requests, engine_inputs):
        if prompt["type"] == "embeds":
            raise ValueError("optimal_beam_search does not take embedding prompts (vLLM's beam search neither)")
        instances.append(internals.instance(prompt, lora_req))
    return tokenizer, instances


def _decode(llm, batch: list, search, params, tokenizer, use_tqdm: bool) -> list:
    """One chunk of prompts (``concurrency_limit``): vLLM's steps on the prompts still running, ``Prompts`` after
    each; the prompts' ``prompts.Answer``s."""
    from tqdm import tqdm
    from vllm import SamplingParams

    eos = tokenizer.eos_token_id
    key = internals.sort_key(eos, params.length_penalty)
    base = SamplingParams(logprobs=2 * params.beam_width, max_tokens=1, temperature=params.temperature,
                          watermarking=False, detokenize=False, skip_clone=True)
    T = params.max_tokens
    decode = Prompts(search, batch, [len(i.beams[0].tokens) for i in batch], T, eos, key)
    steps = tqdm(range(1, T + 1), desc="Beam search", unit="token", unit_scale=False) if use_tqdm \
        else range(1, T + 1)
    for t in steps:
        running = decode.running_hyps
        if not running:
            break
        internals.offline_step(llm, running, base, eos, params.ignore_eos, params.beam_width, key)
        if t == T:  # vLLM: ``instance.completed.extend(instance.beams)``
            for instance in running:
                instance.completed.extend(instance.beams)
        decode.after_step(t, t == T)
    return [p.answer for p in decode.prompts]
