"""The server's beam search with the certificate: vLLM's online loop, stopped by ``prompts.Prompts``.

The loop is vLLM 0.32's ``BeamSearchOnlineMixin.beam_search`` (``vllm/entrypoints/generate/beam_search/
online.py``), statement for statement: one request of ``max_tokens = 1`` and ``logprobs = 2 * beam_width`` a live
beam a step, sent together (``asyncio.gather``); an ``"error"`` result answers the error, an ``"abort"`` marks
the beams and ends the loop; the candidates are made in the order of the engine's logprobs, those that end in
the end token go to ``completed`` (its tokens keep it only with ``include_stop_str_in_output``), the others are
ranked by their ``cum_logprob`` with vLLM's own numpy selection (``argsort``/``argpartition``, whose order
among equal sums is numpy's) and ``beam_width`` kept. At ``max_tokens`` the live beams join ``completed``; the
answer is vLLM's ``RequestOutput``, its texts decoded as vLLM decodes them.

What differs is the stop: after each step the one prompt's beams and completed list go to ``Prompts.after_step``
(the search core's collect and decide, as offline), and the loop ends once the rule is done with it. Its
answer (``Prompts``: the ``beam_width`` best completed under the rule, best first) is the list vLLM's
``sorted(completed, key=sort_beams_key, reverse=True)[:beam_width]`` gives at ``max_tokens`` under vLLM's own
score. A client that disconnects cancels the request's task: the ``await`` on the step's requests raises
``CancelledError``, which cancels them in the engine, as in vLLM's loop.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from onmt_optimal.vllm.options import Search
from onmt_optimal.vllm.prompts import Answer, Prompts


@dataclass
class Hypotheses:
    """The one prompt's live ``beams`` and ``completed`` hypotheses (what ``Prompts`` reads after each step)."""

    beams: list
    completed: list = field(default_factory=list)


async def beam_search(serving, prompt, request_id, params, lora_request=None, trace_headers=None,
                      session_id=None, *, search: Search, answered: list):
    """``serving.beam_search(...)`` (vLLM's arguments) with ``search``'s rules (module docstring); yields vLLM's
    ``RequestOutput``, and appends the prompt's ``prompts.Answer`` to ``answered`` before it does."""
    import numpy as np
    from vllm import CompletionOutput, RequestOutput
    from vllm.entrypoints.generate.beam_search.utils import BeamSearchSequence, create_sort_beams_key_function
    from vllm.sampling_params import SamplingParams
    from vllm.utils import random_uuid
    from vllm.utils.async_utils import collect_from_async_generator

    beam_width = params.beam_width
    max_tokens = params.max_tokens
    ignore_eos = params.ignore_eos
    temperature = params.temperature
    length_penalty = params.length_penalty
    include_stop_str_in_output = params.include_stop_str_in_output
    serving.engine_client.input_processor.resolve_watermarking(params)

    tokenizer = serving.renderer.get_tokenizer()
    eos_token_id = tokenizer.eos_token_id
    sort_beams_key = create_sort_beams_key_function(eos_token_id, length_penalty)  # vLLM's answer order: Prompts'

    if prompt["type"] == "embeds":
        raise NotImplementedError("Embedding prompt not supported for beam search")

    decoder_prompt = prompt if prompt["type"] != "enc_dec" else prompt["decoder_prompt"]
    prompt_text = decoder_prompt.get("prompt")
    prompt_token_ids = decoder_prompt["prompt_token_ids"]
    tokenized_length = len(prompt_token_ids)

    sampling_params = SamplingParams(logprobs=2 * beam_width, max_tokens=1, temperature=temperature,
                                     watermarking=False, detokenize=False)
    hyps = Hypotheses(beams=[BeamSearchSequence(orig_prompt=prompt, tokens=prompt_token_ids, cum_logprob=0,
                                                logprobs=[], lora_request=lora_request)])
    completed = hyps.completed
    decode = Prompts(search, [hyps], [tokenized_length], max_tokens, eos_token_id, sort_beams_key)

    for t in range(1, max_tokens + 1):
        all_beams = hyps.beams
        tasks = []
        request_id_batch = f"{request_id}-{random_uuid()}"
        for i, beam in enumerate(all_beams):
            task = asyncio.create_task(collect_from_async_generator(serving.engine_client.generate(
                beam.get_prompt(), sampling_params, f"{request_id_batch}-beam-{i}", lora_request=beam.lora_request,
                trace_headers=trace_headers, session_id=session_id)))
            tasks.append(task)
        output = [x[0] for x in await asyncio.gather(*tasks)]

        for result in output:
            if result.outputs[0].finish_reason == "error":
                answered.append(Answer(sequences=[]))
                yield RequestOutput(request_id=request_id, prompt=prompt_text, outputs=[CompletionOutput(
                    index=0, text="", token_ids=[], cumulative_logprob=None, logprobs=None, finish_reason="error")],
                    finished=True, prompt_token_ids=prompt_token_ids, prompt_logprobs=None)
                return

        if any(result.outputs[0].finish_reason == "abort" for result in output):
            for beam in all_beams:
                beam.finish_reason = "abort"
            completed.extend(all_beams)  # vLLM: after its loop
            decode.after_step(t, True)
            break

        candidates = []
        for i, result in enumerate(output):
            current_beam = all_beams[i]
            if result.outputs[0].logprobs is not None:
                logprobs = result.outputs[0].logprobs[0]
                for token_id, logprob_obj in logprobs.items():
                    candidate_logprob = current_beam.cum_logprob + logprob_obj.logprob
                    if token_id == eos_token_id and not ignore_eos:
                        completed.append(BeamSearchSequence(
                            orig_prompt=prompt,
                            tokens=current_beam.tokens + [eos_token_id] if include_stop_str_in_output
                            else current_beam.tokens,
                            logprobs=current_beam.logprobs + [logprobs], cum_logprob=candidate_logprob,
                            finish_reason="stop", stop_reason=eos_token_id))
                    else:
                        candidates.append((candidate_logprob, int(token_id), current_beam, logprobs))

        candidate_logprobs = np.fromiter((candidate[0] for candidate in candidates), dtype=np.float64,
                                         count=len(candidates))
        if len(candidates) <= beam_width:
            topn_idx = np.argsort(-candidate_logprobs)
        else:
            topn_idx = np.argpartition(-candidate_logprobs, beam_width - 1)[:beam_width]
            topn_idx = topn_idx[np.argsort(-candidate_logprobs[topn_idx])]

        new_beams = []
        for idx in topn_idx:
            cum_logprob, token_id, current_beam, logprobs = candidates[int(idx)]
            new_beams.append(BeamSearchSequence(orig_prompt=prompt, tokens=current_beam.tokens + [token_id],
                                                logprobs=current_beam.logprobs + [logprobs],
                                                lora_request=current_beam.lora_request, cum_logprob=cum_logprob))
        hyps.beams = new_beams
        if t == max_tokens:
            completed.extend(new_beams)  # vLLM: after its loop
        decode.after_step(t, t == max_tokens)
        if not decode.running:
            break

    answer = decode.prompts[0].answer
    answered.append(answer)
    best_beams = answer.sequences
    for beam in best_beams:
        if beam.tokens[-1] == eos_token_id and not ignore_eos:
            tokens = beam.tokens[tokenized_length:-1]  # vLLM: skip the eos token in the text
        else:
            tokens = beam.tokens[tokenized_length:]
        beam.text = tokenizer.decode(tokens, skip_special_tokens=params.skip_special_tokens)

    yield RequestOutput(
        request_id=request_id, prompt=prompt_text,
        outputs=[CompletionOutput(text=beam.text, cumulative_logprob=beam.cum_logprob,
                                  token_ids=beam.tokens[tokenized_length:], index=i, logprobs=beam.logprobs,
                                  finish_reason=beam.finish_reason if beam.finish_reason is not None else "length",
                                  stop_reason=beam.stop_reason)
                 for (i, beam) in enumerate(best_beams)],
        finished=True, prompt_token_ids=prompt_token_ids, prompt_logprobs=None)
