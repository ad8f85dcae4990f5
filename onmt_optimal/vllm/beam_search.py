"""``optimal_beam_search``: vLLM's ``LLM.beam_search`` that stops each prompt once the certificate holds.

The loop is vLLM 0.32's ``BeamSearchOfflineMixin.beam_search`` (``vllm/entrypoints/generate/beam_search/
offline.py``), statement for statement: the same prelude (watermarking resolved, the tokenizer's end token,
``create_sort_beams_key_function``, the prompts through ``_preprocess_cmpl``, the LoRA requests, the
``concurrency_limit`` chunks, the base ``SamplingParams`` with ``logprobs = 2 * beam_width`` and
``max_tokens = 1``, one ``BeamSearchInstance`` a prompt), and each step is vLLM's own
``LLM._beam_search_step``, called on the instances still running: it sends every live beam to the engine,
forms each beam's candidates in the order of the engine's logprobs, moves those that end in the end token to
``instance.completed``, sorts the rest by vLLM's score (a stable sort) and keeps ``beam_width``. So every
beam and every completed hypothesis is the one vLLM holds at that step.

What differs is when a prompt stops and what it answers. After each step the search core scores the
hypotheses just completed (``ScoringRule.final``), keeps each prompt's ``beam_width`` best scores, bounds its
live beams (``ScoringRule.bound``) and asks the stopping rule (``StopView``): under ``"optimal"`` (the
certificate) a prompt stops once its ``beam_width``-th best completed score is at least the best bound of a live
beam, so no later hypothesis can enter its answer list (a tie keeps the earlier, as the stable sort does) and
the list is what vLLM would return at ``max_tokens``; under ``"exhaustive"`` it runs until no beam is live, as
vLLM does. A prompt that stops leaves the batch: later steps send only the others' beams. At ``max_tokens`` the
live beams join the completed list, as in vLLM. The answers are the ``beam_width`` best completed hypotheses
under the rule (Python's stable sort, vLLM's final ``sorted(..., reverse=True)``), decoded as vLLM decodes them.

The per-step bookkeeping is batched over the running prompts: their completed scores, live sums and bounds
are ``(N, k)`` float64 tensors (vLLM's sums are Python floats), one rule call each a step.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import torch

from onmt_optimal.option_table import VLLM, taken_by
from onmt_optimal.search.step import best_bound as best_bound_of
from onmt_optimal.search.constants import NEG_INF
from onmt_optimal.search.record import Record
from onmt_optimal.search.scoring import StepView
from onmt_optimal.search.stopping import StopReason, StopView
from onmt_optimal.vllm import options
from onmt_optimal.vllm.output import OptimalBeamSearchOutput

#: the search's keyword arguments and their defaults (``option_table``)
_DEFAULTS = {o.name: o.default_for(VLLM) for o in taken_by(VLLM)}


@dataclass
class Prompt:
    """One prompt's search: vLLM's instance and what the rules have seen of it."""

    instance: object  # vllm's BeamSearchInstance
    src_len: int  # P: the (decoder) prompt's tokens
    seen: int = 0  # hypotheses of ``instance.completed`` already scored
    scores: list = field(default_factory=list)  # the rule's score of each of ``instance.completed``, in order
    best: list = field(default_factory=list)  # the n_best best scores so far, ascending (for the k-th)
    steps: int = 0  # the step the prompt stopped at (0 while it runs)
    reason: StopReason | None = None


def optimal_beam_search(llm, prompts, params, stopping=_DEFAULTS["stopping"],
                        length_reward=_DEFAULTS["length_reward"], length_ratio=_DEFAULTS["length_ratio"],
                        bp_norm=_DEFAULTS["bp_norm"], lora_request=None, concurrency_limit=None):
    """``llm.beam_search(prompts, params)`` with the certificate (module docstring).

    ``llm``, ``prompts``, ``params``, ``lora_request``, ``concurrency_limit``: as ``LLM.beam_search`` takes them.
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
    from vllm import SamplingParams
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
    if concurrency_limit is None:
        concurrency_limit = len(engine_inputs)
    base_sampling_params = SamplingParams(logprobs=2 * beam_width, max_tokens=1, temperature=params.temperature,
                                          watermarking=False, detokenize=False, skip_clone=True)
    searches: list[Prompt] = []
    for lora_req, prompt in zip(lora_requests, engine_inputs):
        if prompt["type"] == "embeds":
            raise ValueError("optimal_beam_search does not take embedding prompts (vLLM's beam search neither)")
        instance = BeamSearchInstance(prompt, lora_request=lora_req, logprobs=None)
        searches.append(Prompt(instance, len(instance.beams[0].tokens)))

    def step(batch: list[Prompt]) -> None:  # vLLM's own step on the prompts still running
        llm._beam_search_step(instances_batch=[p.instance for p in batch],
                              base_sampling_params=base_sampling_params, eos_token_id=eos_token_id,
                              ignore_eos=ignore_eos, beam_width=beam_width, sort_beams_key=sort_beams_key,
                              structured_output_backend=None, structured_output_key=None,
                              structured_output_bitmask=None)

    for start in range(0, len(searches), concurrency_limit):
        _decode(searches[start:start + concurrency_limit], step, search, max_tokens, eos_token_id)
    return [_answer(p, search, tokenizer, params, eos_token_id) for p in searches]


def _decode(batch: list[Prompt], step, search: options.Search, T: int, eos: int) -> None:
    """Run ``batch`` until the rule is done with every prompt, or ``T`` steps."""
    running = list(batch)
    memo: dict = {}
    for t in range(1, T + 1):
        if not running:
            break
        step(running)
        at_max = t == T
        src_len = torch.tensor([float(p.src_len) for p in running], dtype=torch.float64)
        if at_max:  # vLLM: ``instance.completed.extend(instance.beams)`` for every instance
            for p in running:
                p.instance.completed.extend(p.instance.beams)
        _score_completed(running, search, src_len, t, T, eos, memo)
        if at_max:
            done = [True] * len(running)
            live = [bool(p.instance.beams) for p in running]
        else:
            done, live = _done(running, search, src_len, t, T, memo)
        leaving = [n for n, d in enumerate(done) if d]
        for n in leaving:
            p = running[n]
            p.steps = t
            p.reason = (StopReason.MAX_LENGTH if at_max else search.stop.reason if live[n]
                        else StopReason.ALL_FINISHED)
        if leaving:
            running = [p for p, d in zip(running, done) if not d]
            memo = {}  # the rules' per-batch constants hold one row a running prompt


def _score_completed(running: list[Prompt], search: options.Search, src_len, t: int, T: int, eos: int,
                     memo: dict) -> None:
    """Score the hypotheses each prompt completed at step ``t`` under the rule, in one call for the batch."""
    new = [p.instance.completed[p.seen:] for p in running]
    width = max((len(n) for n in new), default=0)
    if width == 0:
        return
    log_prob = torch.full((len(running), width), NEG_INF, dtype=torch.float64)
    ended = torch.ones((len(running), width), dtype=torch.bool)
    for n, hyps in enumerate(new):
        if hyps:
            log_prob[n, :len(hyps)] = torch.tensor([h.cum_logprob for h in hyps], dtype=torch.float64)
            ended[n, :len(hyps)] = torch.tensor([h.tokens[-1] == eos for h in hyps])
    view = StepView(log_prob=log_prob, eos=ended, src_len=src_len, step=t, max_length=T, memo=memo)
    final = search.score.final(view).tolist()
    for n, (p, hyps) in enumerate(zip(running, new)):
        for score in final[n][:len(hyps)]:
            p.scores.append(score)
            if len(p.best) < search.n_best or score > p.best[0]:
                bisect.insort(p.best, score)
                del p.best[:-search.n_best]
        p.seen += len(hyps)


def _done(running: list[Prompt], search: options.Search, src_len, t: int, T: int, memo: dict):
    """Which prompts the stopping rule is done with after step ``t``, and which of them have live beams."""
    N, b = len(running), search.n_best
    sums = torch.full((N, b), NEG_INF, dtype=torch.float64)
    live = torch.zeros((N, b), dtype=torch.bool)
    kept = torch.full((N, b), NEG_INF, dtype=torch.float64)
    for n, p in enumerate(running):
        beams = p.instance.beams
        if beams:
            sums[n, :len(beams)] = torch.tensor([beam.cum_logprob for beam in beams], dtype=torch.float64)
            live[n, :len(beams)] = True
        if p.best:
            kept[n, :len(p.best)] = torch.tensor(p.best[::-1], dtype=torch.float64)
    best_bound = None
    if search.stop.needs_bound:
        view = StepView(log_prob=sums, eos=torch.zeros_like(live), src_len=src_len, step=t, max_length=T,
                        memo=memo)
        best_bound = best_bound_of(search.score, view, live)
    view = StopView(completed=torch.zeros_like(live), completions=torch.zeros((N, 1), dtype=torch.long),
                    kept_score=kept, best_bound=best_bound, width=None, n_best=b)
    return search.stop.done(view).view(-1).tolist(), live.any(dim=1).tolist()


def _answer(p: Prompt, search: options.Search, tokenizer, params, eos: int) -> OptimalBeamSearchOutput:
    """vLLM's answer under the rule: the ``beam_width`` best completed hypotheses (a stable sort, best first),
    decoded as vLLM decodes them, with the prompt's ``Record``."""
    completed = p.instance.completed
    order = sorted(range(len(completed)), key=lambda i: p.scores[i], reverse=True)[:params.beam_width]
    best_beams = [completed[i] for i in order]
    for beam in best_beams:
        beam.text = tokenizer.decode(beam.tokens, skip_special_tokens=params.skip_special_tokens)
    target = search.score.target_length(torch.tensor([float(p.src_len)], dtype=torch.float64))
    if best_beams:
        top = best_beams[0]
        tokens = list(top.tokens[p.src_len:])
        if tokens and tokens[-1] == eos:
            tokens = tokens[:-1]
        score, log_prob = p.scores[order[0]], top.cum_logprob
    else:  # nothing completed (an aborted request)
        tokens, score, log_prob = [], NEG_INF, NEG_INF
    record = Record(steps=p.steps, stop_reason=p.reason or StopReason.ALL_FINISHED, score=score,
                    log_prob=log_prob, length=len(tokens), target_length=None if target is None else float(target[0]),
                    src_length=p.src_len, completed=len(completed), tokens=tokens)
    return OptimalBeamSearchOutput(sequences=best_beams, record=record)
