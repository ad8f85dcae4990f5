"""The server's beam search with the certificate: vLLM's online loop, stopped by ``prompts.Prompts``.

vLLM 0.32's ``BeamSearchOnlineMixin.beam_search`` (``internals``) runs, a step: one engine request of
``max_tokens = 1`` and ``logprobs = 2 * beam_width`` a live beam, sent together (``internals.engine_step``); an
``"error"`` result answers the error, an ``"abort"`` marks the beams and ends the loop; then its step proper
(written inside its loop, so ``_grow`` is its code): the candidates in the order of the engine's logprobs, those
that end in the end token to ``completed`` (its tokens keep it only with ``include_stop_str_in_output``), the
others ranked by their ``cum_logprob`` with vLLM's numpy selection (``argsort``/``argpartition``, whose order among
equal sums is numpy's) and ``beam_width`` kept. At ``max_tokens`` the live beams join ``completed``; the answer
is vLLM's ``RequestOutput``, its texts decoded as vLLM decodes them (``_output``). Here the prompt's beams and
completed list are a ``BeamSearchInstance``, as offline.

What differs is the stop: after each step the one prompt's beams and completed list go to ``Prompts.after_step``
(the search core's collect and decide, as offline), and the loop ends once the rule is done with it. Its answer
(``Prompts``: the ``beam_width`` best completed under the rule, best first) is the list vLLM's ``sorted(completed,
key=sort_beams_key, reverse=True)[:beam_width]`` gives at ``max_tokens`` under vLLM's own score.

Cancelled: a client that disconnects cancels the request's task; the wait on the step's requests raises
``CancelledError`` there and then, which cancels them in the engine (vLLM aborts them), and the search ends with
no further step, as vLLM's loop does. An engine that aborts a beam's request (``"abort"``) ends the search at
that step too: the live beams join ``completed``, marked ``"abort"``, and the answer is the rule's best of them.
An engine client that stops (the server's shutdown) ends the step with vLLM's ``EngineDeadError``, where vLLM's
loop would wait on (``internals.engine_step``).

Every live beam is sent at every step, ``prune_dead`` or not (``dead_beams``: numpy's order among equal sums
depends on the whole array, so a step sent fewer beams could order them otherwise); a search that asks for it
says it skipped none (``rows_skipped`` 0).
"""
from __future__ import annotations

from dataclasses import replace

from onmt_optimal.vllm import internals
from onmt_optimal.vllm.options import Search
from onmt_optimal.vllm.prompts import Answer, Prompts


async def beam_search(serving, prompt, request_id, params, lora_request=None, trace_headers=None,
                      session_id=None, *, search: Search, answered: list):
    """``serving.beam_search(...)`` (vLLM's arguments) with ``search``'s rules (module docstring); yields vLLM's
    ``RequestOutput`` once, and appends the statistics of its choices (``Answer.stats``, a list with one entry a
    choice: None for an error's) to ``answered`` before it does."""
    from vllm import SamplingParams

    tokenizer = internals.online_tokenizer(serving, params)
    eos, T = tokenizer.eos_token_id, params.max_tokens
    if prompt["type"] == "embeds":
        raise NotImplementedError("Embedding prompt not supported for beam search")  # vLLM's words
    hyps = internals.instance(prompt, lora_request, cum_logprob=0)
    P = len(hyps.beams[0].tokens)
    decode = Prompts(search, [hyps], [P], T, eos, internals.sort_key(eos, params.length_penalty))
    sampling_params = SamplingParams(logprobs=2 * params.beam_width, max_tokens=1, temperature=params.temperature,
                                     watermarking=False, detokenize=False)
    for t in range(1, T + 1):
        output = await internals.engine_step(serving, hyps.beams, sampling_params, request_id, trace_headers,
                                             session_id)
        if any(result.outputs[0].finish_reason == "error" for result in output):
            answered.append([None])
            yield _output(request_id, prompt, None, tokenizer, params)
            return
        if any(result.outputs[0].finish_reason == "abort" for result in output):
            for beam in hyps.beams:
                beam.finish_reason = "abort"
            hyps.completed.extend(hyps.beams)  # vLLM: after its loop
            decode.after_step(t, True)
            break
        hyps.beams = _grow(hyps, output, prompt, eos, params)
        if t == T:
            hyps.completed.extend(hyps.beams)  # vLLM: after its loop
        decode.after_step(t, t == T)
        if not decode.running:
            break
    answer = decode.prompts[0].answer
    if search.prune_dead:  # asked for, never applied here (module docstring): nothing skipped
        answer.record = replace(answer.record, rows_skipped=0)
    answered.append([answer.stats(i) for i in range(len(answer.sequences))])
    yield _output(request_id, prompt, answer, tokenizer, params)


def _grow(hyps, output, prompt, eos: int, params) -> list:
    """vLLM's step proper (module docstring) on the engine's ``output`` for ``hyps.beams``: the candidates that
    end in ``eos`` go to ``hyps.completed``; returns the new beams."""
    import numpy as np

    candidates = []
    for current_beam, result in zip(hyps.beams, output):
        if result.outputs[0].logprobs is None:
            continue
        logprobs = result.outputs[0].logprobs[0]
        for token_id, logprob_obj in logprobs.items():
            candidate_logprob = current_beam.cum_logprob + logprob_obj.logprob
            if token_id == eos and not params.ignore_eos:
                hyps.completed.append(internals.sequence(
                    orig_prompt=prompt, tokens=current_beam.tokens + [eos] if params.include_stop_str_in_output
                    else current_beam.tokens, logprobs=current_beam.logprobs + [logprobs],
                    cum_logprob=candidate_logprob, finish_reason="stop", stop_reason=eos))
            else:
                candidates.append((candidate_logprob, int(token_id), current_beam, logprobs))
    candidate_logprobs = np.fromiter((c[0] for c in candidates), dtype=np.float64, count=len(candidates))
    if len(candidates) <= params.beam_width:
        topn_idx = np.argsort(-candidate_logprobs)
    else:
        topn_idx = np.argpartition(-candidate_logprobs, params.beam_width - 1)[:params.beam_width]
        topn_idx = topn_idx[np.argsort(-candidate_logprobs[topn_idx])]
    new_beams = []
    for idx in topn_idx:
        cum_logprob, token_id, current_beam, logprobs = candidates[int(idx)]
        new_beams.append(internals.sequence(orig_prompt=prompt, tokens=current_beam.tokens + [token_id],
                                            logprobs=current_beam.logprobs + [logprobs],
                                            lora_request=current_beam.lora_request, cum_logprob=cum_logprob))
    return new_beams


def _output(request_id, prompt, answer: Answer | None, tokenizer, params):
    """vLLM's ``RequestOutput`` of the prompt: ``answer``'s sequences, texts decoded as vLLM decodes them (the
    end token left out of the text), or, for ``None``, vLLM's answer to an engine error."""
    from vllm import CompletionOutput, RequestOutput

    decoder = prompt if prompt["type"] != "enc_dec" else prompt["decoder_prompt"]
    P = len(decoder["prompt_token_ids"])
    if answer is None:
        outputs = [CompletionOutput(index=0, text="", token_ids=[], cumulative_logprob=None, logprobs=None,
                                    finish_reason="error")]
    else:
        outputs = []
        for i, beam in enumerate(answer.sequences):
            ends = beam.tokens[-1] == tokenizer.eos_token_id and not params.ignore_eos
            beam.text = tokenizer.decode(beam.tokens[P:-1] if ends else beam.tokens[P:],
                                         skip_special_tokens=params.skip_special_tokens)
            outputs.append(CompletionOutput(text=beam.text, cumulative_logprob=beam.cum_logprob,
                                            token_ids=beam.tokens[P:], index=i, logprobs=beam.logprobs,
                                            finish_reason=beam.finish_reason if beam.finish_reason is not None
                                            else "length", stop_reason=beam.stop_reason))
    return RequestOutput(request_id=request_id, prompt=decoder.get("prompt"), outputs=outputs, finished=True,
                         prompt_token_ids=decoder["prompt_token_ids"], prompt_logprobs=None)
