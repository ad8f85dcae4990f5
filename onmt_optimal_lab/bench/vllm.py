"""The vLLM benchmark: ``optimal_beam_search`` beside vLLM's own ``LLM.beam_search`` on one engine.

Model: ``hf.bench``'s GPT-2 (two layers, 128 wide, four heads of 32: vLLM's CPU attention takes no narrower),
trained here on the synthetic task (source letters ``a..p``, each mapped to one upper-case letter, or two for
``i..p``) and saved in transformers' format; vLLM serves it with ``dtype="float32"`` in eager mode.

Per beam width and ``length_penalty``, over the same prompts, rounds alternating the order:

* ``vllm``: ``llm.beam_search(prompts, params)``;
* ``optimal``: ``optimal_beam_search(llm, prompts, params, stopping="optimal")``;

each timed on the wall clock (vLLM's engine runs in another process, so the caller's CPU time would miss it);
the best round counts. Reported: prompts per second, steps per prompt (vLLM's: the steps until the prompt had no
live beam or reached ``max_tokens``, which is what ``stopping="exhaustive"`` records; ours: the step the
certificate held), the engine calls (steps of the batch), and whether the answers are vLLM's.
"""
from __future__ import annotations

import json
import statistics
import time

from onmt_optimal_lab.bench.hf import saved_gpt2, sources
from onmt_optimal.vllm.beam_search import optimal_beam_search


def _answers(outputs) -> list:
    return [[(s.tokens, s.cum_logprob) for s in out.sequences] for out in outputs]


def run(prompts_n: int = 16, beams=(4, 8), length_penalties=(0.0, 1.0), rounds: int = 2, max_tokens: int = 32,
        train_steps: int = 300, log=print) -> dict:
    import vllm
    from vllm import LLM
    from vllm.sampling_params import BeamSearchParams

    model, folder = saved_gpt2(train_steps, "bench-vllm-", log)
    log("starting the engine")
    llm = LLM(model=str(folder), dtype="float32", enforce_eager=True, max_model_len=128, gpu_memory_utilization=0.1)
    prompts = [{"prompt_token_ids": model.tokenizer(f"{line} =").input_ids} for line in sources(prompts_n, seed=7)]
    results = {"prompts": prompts_n, "rounds": rounds, "max_tokens": max_tokens, "train_steps": train_steps,
               "vllm": vllm.__version__, "clock": "wall (perf_counter)", "rows": []}
    variants = {"vllm": lambda p: llm.beam_search(prompts, p),
                "optimal": lambda p: optimal_beam_search(llm, prompts, p, stopping="optimal")}
    for lp in length_penalties:
        for beam in beams:
            params = BeamSearchParams(beam_width=beam, max_tokens=max_tokens, length_penalty=lp)
            exhaustive = optimal_beam_search(llm, prompts, params, stopping="exhaustive")
            times = {v: [] for v in variants}
            out = {}
            for r in range(rounds):
                for variant in (list(variants) if r % 2 == 0 else list(reversed(variants))):
                    start = time.perf_counter()
                    out[variant] = variants[variant](params)
                    times[variant].append(time.perf_counter() - start)
            steps_vllm = [o.record.steps for o in exhaustive]
            steps_opt = [o.record.steps for o in out["optimal"]]
            row = {"length_penalty": lp, "beam": beam,
                   "vllm_prompts_per_s": prompts_n / min(times["vllm"]),
                   "optimal_prompts_per_s": prompts_n / min(times["optimal"]),
                   "vllm_steps": statistics.mean(steps_vllm), "optimal_steps": statistics.mean(steps_opt),
                   "vllm_engine_calls": max(steps_vllm), "optimal_engine_calls": max(steps_opt),
                   "certified": sum(o.record.stop_reason == "certificate" for o in out["optimal"]),
                   "same_answers": _answers(out["optimal"]) == _answers(out["vllm"]) == _answers(exhaustive)}
            row["speedup"] = row["optimal_prompts_per_s"] / row["vllm_prompts_per_s"]
            log(json.dumps(row))
            results["rows"].append(row)
    llm.llm_engine.engine_core.shutdown()
    return results


def render(results: dict) -> str:
    lines = [
        "# optimal_beam_search beside vLLM's beam search (CPU)",
        "",
        f"vLLM {results['vllm']} (CPU build), one engine, float32, eager; {results['prompts']} prompts of the "
        f"synthetic task in one call, max_tokens {results['max_tokens']}, best of {results['rounds']} rounds on "
        f"the wall clock, alternating. GPT-2 trained {results['train_steps']} steps (onmt_optimal_lab/bench/vllm.py). "
        "Measured on a shared 2-core machine with other jobs running: the ratios, taken in the same process "
        "with alternating rounds, are the figures to read, the absolute rates are not. `vllm`: "
        "`llm.beam_search`; `optimal`: `optimal_beam_search(..., stopping='optimal')`; lp: vLLM's "
        "length_penalty. Steps: per prompt (vLLM's: until no beam was live or max_tokens); engine calls: the "
        "batch's steps. `certified`: prompts stopped by the certificate; `same`: the answers are vLLM's.",
        "",
        "| lp | beam | vllm prompts/s | optimal prompts/s | optimal/vllm | steps vllm | steps optimal | "
        "engine calls vllm | engine calls optimal | certified | same |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["rows"]:
        lines.append(f"| {r['length_penalty']:g} | {r['beam']} | {r['vllm_prompts_per_s']:.2f} | "
                     f"{r['optimal_prompts_per_s']:.2f} | {r['speedup']:.2f} | {r['vllm_steps']:.1f} | "
                     f"{r['optimal_steps']:.1f} | {r['vllm_engine_calls']} | {r['optimal_engine_calls']} | "
                     f"{r['certified']} / {results['prompts']} | {r['same_answers']} |")
    return "\n".join(lines) + "\n"

