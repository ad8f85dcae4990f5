"""``optimal_beam_search``: vLLM's ``LLM.beam_search`` that stops each prompt once the certificate holds.

vLLM's own ``LLM.beam_search`` runs (``BeamSearchOfflineMixin.beam_search``, ``vllm/entrypoints/generate/
beam_search/offline.py``): its prelude (watermarking resolved, the tokenizer's end token,
``create_sort_beams_key_function``, the prompts through ``_preprocess_cmpl``, the LoRA requests, the base
``SamplingParams`` with ``logprobs = 2 * beam_width`` and ``max_tokens = 1``, one ``BeamSearchInstance`` a
prompt), its ``concurrency_limit`` chunks, its progress bar and its steps. Its loop calls its step,
``LLM._beam_search_step``, once a step; that call is the seam (``internals.offline_search``): for this call alone
the step is ``_Steps.step``, which runs vLLM's own step on the prompts still running (it sends every live beam to
the engine, forms each beam's candidates in the order of the engine's logprobs, moves those that end in the end
token to ``instance.completed``, sorts the rest by vLLM's score, a stable sort, and keeps ``beam_width``), with the
end token, the sort key and every other argument vLLM's loop passes it. So every beam and every completed
hypothesis is the one vLLM holds at that step, and vLLM's options are applied by vLLM.

Ours are the stop and the collection: after each step the instances go to ``prompts.Prompts`` (the search core's
collect and decide, shared with the server's loop, ``online``); a prompt that is done leaves the batch (later
steps send only the others' beams), and the step tells vLLM's loop to stop once no prompt of the chunk runs. At
``max_tokens`` the live beams join the completed list, as vLLM's loop does after its last step. The answers are
the ``beam_width`` best completed hypotheses under the rule: a prompt that is done hands vLLM's loop exactly those
(its ``completed`` list, no live beam), which vLLM then decodes as it decodes its own; the outputs are in the
rule's order.

With ``prune_dead=True``, a step sends the engine only the beams of a prompt that are still needed: the others
(``dead_beams``: no descendant of theirs can enter the answer) are left out of the ``instance.beams`` vLLM's step
reads, so the engine never computes them and vLLM's step never makes their children. The answers and the steps
are the same (``dead_beams``' proof); the record says how many beams each prompt's decode did not send
(``rows_skipped``) and its ``completed`` may be smaller.
"""
from __future__ import annotations

from dataclasses import replace

from onmt_optimal.option_table import BY_NAME, VLLM, taken_by
from onmt_optimal.vllm import dead_beams, internals, options
from onmt_optimal.vllm.output import OptimalBeamSearchOutput
from onmt_optimal.vllm.prompts import Prompts

#: the search's keyword arguments and their defaults (``option_table``)
_DEFAULTS = {o.name: o.default_for(VLLM) for o in (*taken_by(VLLM), BY_NAME["prune_dead"])}


def optimal_beam_search(llm, prompts, params, lora_request=None, use_tqdm=False, concurrency_limit=None, *,
                        stopping=_DEFAULTS["stopping"], length_reward=_DEFAULTS["length_reward"],
                        length_ratio=_DEFAULTS["length_ratio"], bp_norm=_DEFAULTS["bp_norm"],
                        prune_dead=_DEFAULTS["prune_dead"]):
    """``llm.beam_search(prompts, params, lora_request, use_tqdm, concurrency_limit)`` with the certificate (module
    docstring): ``LLM.beam_search``'s arguments in its order, then the search's, keyword-only.

    ``stopping``: ``"optimal"`` (default: stop a prompt once its answers are certified) or ``"exhaustive"``
    (run as vLLM does). The score: vLLM's ``cum_logprob / len ** length_penalty`` (``params``), unless
    ``length_reward=R`` replaces it (``log p + R * min(length_ratio * |x|, |y|)``; without ``length_ratio``,
    ``log p + R * |y|``) or ``bp_norm=True`` (BP-norm, with ``length_ratio``); ``|x|`` is the prompt's length
    in tokens, ``|y|`` the generated tokens without the end token. ``prune_dead=True``: do not send the engine
    the beams that cannot reach the answer (module docstring; where ``dead_beams.applies``), the same answers.

    Returns what ``LLM.beam_search`` returns, a list with one ``BeamSearchOutput`` a prompt (its ``sequences``:
    the ``beam_width`` best, best first, tokens with the prompt's, ``text`` decoded by vLLM), each an
    ``OptimalBeamSearchOutput`` that also carries ``record``, the search core's ``Record`` (``steps``,
    ``stop_reason`` as a plain string, ``score``, ``log_prob``, ``length``, ``target_length``, ``src_length``,
    ``completed``, ``tokens``; with ``prune_dead=True``, ``rows_skipped``: the beams not sent, 0 where pruning
    does not apply). Bad arguments raise one-line ``TypeError``/``ValueError``; a vLLM other than the
    tested release, one-line ``internals.UnsupportedVersion``.
    """
    internals.check_version()
    search = options.search(llm, params, stopping=stopping, length_reward=length_reward, length_ratio=length_ratio,
                            bp_norm=bp_norm, prune_dead=prune_dead)
    if concurrency_limit is not None and (isinstance(concurrency_limit, bool)
                                          or not isinstance(concurrency_limit, int) or concurrency_limit < 1):
        raise ValueError(f"concurrency_limit must be a positive int or None, got {concurrency_limit!r}")
    steps = _Steps(search, params.max_tokens, params.length_penalty if dead_beams.applies(search, params) else None)
    outputs = internals.offline_search(llm, prompts, params, lora_request, use_tqdm, concurrency_limit, steps.step)
    answered = [p.answer for decode in steps.chunks for p in decode.prompts]
    if len(answered) != len(outputs) or any(answer is None for answer in answered):
        raise RuntimeError(f"vLLM's beam search answered {len(outputs)} prompts, the search "
                           f"{sum(answer is not None for answer in answered)}")
    skipped = [steps.skipped.get(id(p.hyps), 0) if prune_dead else None for decode in steps.chunks
               for p in decode.prompts]
    return [OptimalBeamSearchOutput(sequences=answer.sequences,
                                    record=replace(answer.record, stop_reason=str(answer.record.stop_reason),
                                                   rows_skipped=n))
            for answer, n in zip(answered, skipped)]


class _Steps:
    """vLLM's step, wrapped (module docstring): one ``Prompts`` a chunk of prompts (``concurrency_limit``: vLLM's
    loop runs its steps over again for each chunk), in vLLM's order. ``prune``: vLLM's ``length_penalty``
    where the dead beams are left out (``dead_beams``), else None; ``skipped``: the beams left out, by the
    ``id`` of their prompt's instance."""

    def __init__(self, search: options.Search, max_tokens: int, prune: float | None = None):
        self.search, self.T, self.prune = search, max_tokens, prune
        self.chunks: list[Prompts] = []
        self.t = 0
        self.skipped: dict[int, int] = {}

    def step(self, stock, *, instances_batch: list, eos_token_id, sort_beams_key, **arguments) -> bool:
        """Step ``t`` of the chunk ``instances_batch``: vLLM's ``stock`` step on its prompts still running, then
        ``Prompts.after_step``; True (vLLM's loop stops the chunk) once none runs."""
        if not self.chunks or instances_batch[0] is not self.chunks[-1].prompts[0].hyps:  # a new chunk
            self.chunks.append(Prompts(self.search, instances_batch,
                                       [len(instance.beams[0].tokens) for instance in instances_batch], self.T,
                                       eos_token_id, sort_beams_key))
            self.t = 0
        decode = self.chunks[-1]
        self.t += 1
        if self.prune is not None and self.t > 1:
            self._leave_out_dead(decode)
        running = decode.running_hyps
        stock(instances_batch=running, eos_token_id=eos_token_id, sort_beams_key=sort_beams_key, **arguments)
        at_max = self.t == self.T
        if at_max:  # vLLM: ``instance.completed.extend(instance.beams)`` after its last step
            for instance in running:
                instance.completed.extend(instance.beams)
                instance.beams = []
        left = {id(instance) for instance in decode.after_step(self.t, at_max)}
        for p in decode.prompts:
            if id(p.hyps) in left:  # vLLM's loop answers, sorted by its key, and decodes exactly these
                p.hyps.completed, p.hyps.beams = list(p.answer.sequences), []
        return not decode.running

    def _leave_out_dead(self, decode: Prompts) -> None:
        """Before step ``t``: each running prompt's beams that step ``t`` needs (``dead_beams.needed``) stay in
        its ``instance.beams``, in their order; the others leave. A prompt none of whose beams is needed has been
        certified and left (``Prompts``); were one to stay, it would keep every beam."""
        for p, keep in zip(decode.running, dead_beams.needed(decode, self.t - 1, self.prune)):
            if all(keep) or not any(keep):
                continue
            p.hyps.beams = [beam for beam, k in zip(p.hyps.beams, keep) if k]
            self.skipped[id(p.hyps)] = self.skipped.get(id(p.hyps), 0) + len(keep) - len(p.hyps.beams)
