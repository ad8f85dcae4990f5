"""The dead-beam benchmark: ``optimal_beam_search`` with and without ``prune_dead`` on one vLLM engine.

Model and prompts: the vLLM benchmark's (``bench.vllm``: ``hf.bench``'s GPT-2 trained here on the synthetic task,
served with ``dtype="float32"`` in eager mode). Per score (vLLM's ``length_penalty`` 0 and 1, the bounded length
reward) and beam width, over the same prompts, rounds alternating the order:

* ``off``: ``optimal_beam_search(llm, prompts, params, stopping="optimal", ...)``;
* ``on``: the same with ``prune_dead=True``;

each timed on the wall clock (the engine runs in another process), the best round counting. Reported: the
requests vLLM's step sends the engine per prompt (one a beam a step, counted at its call that sends them,
``_render_and_run_requests``), the beams skipped per prompt (the records' ``rows_skipped``), the engine calls
(steps of the batch), the completed hypotheses seen per prompt, and whether texts, tokens, ``cum_logprob``,
scores and steps are the same.
"""
from __future__ import annotations

import json
import statistics
import time

from onmt_optimal_lab.bench.hf import saved_gpt2, sources
from onmt_optimal.vllm.beam_search import optimal_beam_search

#: the scores measured: a name, vLLM's ``length_penalty``, the search's score options
SCORES = (("lp=0", 0.0, {}), ("lp=1", 1.0, {}), ("reward 0.4, ratio 1.5", 0.0,
                                                  {"length_reward": 0.4, "length_ratio": 1.5}))


def _same(a, b) -> bool:
    def key(outputs):
        return [([(s.text, s.tokens, s.cum_logprob) for s in o.sequences], o.record.steps, o.record.score)
                for o in outputs]
    return key(a) == key(b)


def _counted(llm, search):
    """``search()`` and the requests vLLM's offline step sent the engine meanwhile."""
    stock, sent = llm._render_and_run_requests, [0]

    def counted(*, params, **rest):
        sent[0] += len(params)
        return stock(params=params, **rest)
    llm._render_and_run_requests = counted
    try:
        return search(), sent[0]
    finally:
        del llm._render_and_run_requests


def run(prompts_n: int = 16, beams=(4, 8), rounds: int = 3, max_tokens: int = 32, train_steps: int = 300,
        log=print) -> dict:
    import vllm
    from vllm import LLM
    from vllm.sampling_params import BeamSearchParams

    model, folder = saved_gpt2(train_steps, "bench-vllm-dead-", log)
    log("starting the engine")
    llm = LLM(model=str(folder), dtype="float32", enforce_eager=True, max_model_len=128, gpu_memory_utilization=0.1)
    prompts = [{"prompt_token_ids": model.tokenizer(f"{line} =").input_ids} for line in sources(prompts_n, seed=7)]
    results = {"prompts": prompts_n, "rounds": rounds, "max_tokens": max_tokens, "train_steps": train_steps,
               "vllm": vllm.__version__, "clock": "wall (perf_counter)", "rows": []}
    for name, lp, score in SCORES:
        for beam in beams:
            params = BeamSearchParams(beam_width=beam, max_tokens=max_tokens, length_penalty=lp)
            variants = {"off": dict(score), "on": dict(score, prune_dead=True)}
            times, out, sent = {v: [] for v in variants}, {}, {}
            for r in range(rounds):
                for v in (list(variants) if r % 2 == 0 else list(reversed(variants))):
                    start = time.perf_counter()
                    out[v], sent[v] = _counted(llm, lambda: optimal_beam_search(llm, prompts, params, **variants[v]))
                    times[v].append(time.perf_counter() - start)
            row = {"score": name, "beam": beam,
                   "requests_off": sent["off"] / prompts_n, "requests_on": sent["on"] / prompts_n,
                   "skipped": statistics.mean(o.record.rows_skipped for o in out["on"]),
                   "pruned_prompts": sum(o.record.rows_skipped > 0 for o in out["on"]),
                   "seconds_off": min(times["off"]), "seconds_on": min(times["on"]),
                   "engine_calls": max(o.record.steps for o in out["off"]),
                   "completed_off": statistics.mean(o.record.completed for o in out["off"]),
                   "completed_on": statistics.mean(o.record.completed for o in out["on"]),
                   "same": _same(out["on"], out["off"])}
            log(json.dumps(row))
            results["rows"].append(row)
    llm.llm_engine.engine_core.shutdown()
    return results


def render(results: dict) -> str:
    lines = [
        "# Dead beams in vLLM: `prune_dead` off and on (CPU)",
        "",
        f"vLLM {results['vllm']} (CPU build), one engine, float32, eager; {results['prompts']} prompts of the "
        f"synthetic task in one call, max_tokens {results['max_tokens']}, `stopping='optimal'`, best of "
        f"{results['rounds']} rounds on the wall clock, alternating. GPT-2 trained {results['train_steps']} steps "
        "(onmt_optimal_lab/bench/vllm_dead.py). Measured on a shared 2-core machine with other jobs running: read "
        "the ratios, taken in the same process with alternating rounds, not the absolute times. Requests: what "
        "vLLM's step sent the engine per prompt (a beam a step); skipped: the records' `rows_skipped` per prompt; "
        "pruned: prompts that skipped any beam; engine calls: the batch's steps; completed: completed "
        "hypotheses seen per prompt; same: texts, tokens, cum_logprob, scores and steps equal.",
        "",
        f"Command: `.venv-vllm/bin/python scripts/bench_vllm_dead.py --prompts {results['prompts']} --beams "
        f"{','.join(str(b) for b in dict.fromkeys(r['beam'] for r in results['rows']))} --rounds "
        f"{results['rounds']} --max-tokens {results['max_tokens']} --train-steps {results['train_steps']}`",
        "",
        "| score | beam | requests off | requests on | on/off | skipped | pruned | seconds off | seconds on | "
        "on/off | engine calls | completed off | completed on | same |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["rows"]:
        lines.append(f"| {r['score']} | {r['beam']} | {r['requests_off']:.1f} | {r['requests_on']:.1f} | "
                     f"{r['requests_on'] / r['requests_off']:.3f} | {r['skipped']:.1f} | "
                     f"{r['pruned_prompts']} / {results['prompts']} | {r['seconds_off']:.2f} | "
                     f"{r['seconds_on']:.2f} | {r['seconds_on'] / r['seconds_off']:.3f} | {r['engine_calls']} | "
                     f"{r['completed_off']:.1f} | {r['completed_on']:.1f} | {r['same']} |")
    return "\n".join(lines) + "\n"
