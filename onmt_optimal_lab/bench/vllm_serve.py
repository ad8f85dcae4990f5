"""The vLLM server benchmark: beam requests to vLLM's OpenAI-compatible server, stock and with the certificate.

Model: ``hf.bench``'s GPT-2 (as ``bench.vllm``), trained here and saved in transformers' format; one server
(``python -m vllm.entrypoints.openai.api_server``, float32, eager, on 127.0.0.1 at a free port) with the plugin
installed (the ``vllm.general_plugins`` entry point) serves every request.

Per ``length_penalty``, beam width (``n``) and number of concurrent clients, the same prompts, one
``/v1/completions`` request each (``use_beam_search``, ``temperature`` 0, ``max_tokens``), sent by ``clients``
threads:

* ``stock``: no ``vllm_xargs`` (vLLM's own beam search);
* ``certificate``: ``vllm_xargs: {"stopping": "optimal"}``;

after one untimed round (the server's first requests), rounds alternate the order of the two; per variant the
round with the shortest wall time counts. Reported: the
wall time of all the prompts' requests, requests per second, the mean and the 90th-percentile latency of a
request, the ratios (stock's wall time and latency over the certificate's, from the same round order), the mean
steps (``stopping: "exhaustive"``'s, which are vLLM's, and the certificate's, from the statistics in each
choice), and whether every answer is the stock one (the JSON but ``id``, ``created`` and the statistics).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from onmt_optimal_lab.bench.hf import saved_gpt2, sources
from onmt_optimal.vllm.serve import FIELD

VARIANTS = {"stock": None, "certificate": {"stopping": "optimal"}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(folder: Path, log) -> tuple[subprocess.Popen, str]:
    import httpx

    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(folder), "--host", "127.0.0.1",
         "--port", str(port), "--dtype", "float32", "--max-model-len", "128", "--enforce-eager",
         "--gpu-memory-utilization", "0.1"],
        stdout=open(folder / "server.log", "wb"), stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited: see {folder / 'server.log'}")
        try:
            if httpx.get(base + "/health", timeout=2).status_code == 200:
                return process, base
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("the server did not start in 600 s")
        time.sleep(1)


def _stop(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _answer(body: dict) -> tuple[dict, list]:
    body = dict(body)
    body.pop("id", None), body.pop("created", None)
    choices = [dict(c) for c in body["choices"]]
    stats = [c.pop(FIELD, None) for c in choices]
    return {**body, "choices": choices}, stats


def _round(base: str, model: str, prompts: list[str], settings: dict, xargs: dict | None, clients: int):
    """All the prompts' requests by ``clients`` threads: (wall time, latencies, answers, statistics)."""
    import httpx

    def ask(prompt):
        body = {"model": model, "prompt": prompt, **settings, **({"vllm_xargs": xargs} if xargs else {})}
        start = time.perf_counter()
        response = httpx.post(base + "/v1/completions", json=body, timeout=600)
        latency = time.perf_counter() - start
        response.raise_for_status()
        return latency, _answer(response.json())

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        done = list(pool.map(ask, prompts))
    wall = time.perf_counter() - start
    return wall, [d[0] for d in done], [d[1][0] for d in done], [d[1][1] for d in done]


def run(prompts_n: int = 16, beams=(4, 8), length_penalties=(0.0, 1.0), clients=(1, 8), rounds: int = 3,
        max_tokens: int = 32, train_steps: int = 300, log=print) -> dict:
    import httpx
    import vllm

    model, folder = saved_gpt2(train_steps, "bench-vllm-serve-", log)
    log("starting the server")
    process, base = _start(folder, log)
    try:
        name = httpx.get(base + "/v1/models").json()["data"][0]["id"]
        prompts = [f"{line} =" for line in sources(prompts_n, seed=7)]
        results = {"prompts": prompts_n, "rounds": rounds, "max_tokens": max_tokens, "train_steps": train_steps,
                   "vllm": vllm.__version__, "clock": "wall (perf_counter)", "rows": []}
        warm = {"use_beam_search": True, "n": max(beams), "max_tokens": max_tokens, "temperature": 0}
        _round(base, name, prompts, warm, None, 8)  # the server's first requests, untimed
        for lp in length_penalties:
            for beam in beams:
                settings = {"use_beam_search": True, "n": beam, "max_tokens": max_tokens, "temperature": 0,
                            "length_penalty": lp}
                _, _, _, full = _round(base, name, prompts, settings, {"stopping": "exhaustive"}, 8)
                for c in clients:
                    best: dict = {}
                    for r in range(rounds):
                        for variant in (list(VARIANTS) if r % 2 == 0 else list(reversed(VARIANTS))):
                            out = _round(base, name, prompts, settings, VARIANTS[variant], c)
                            if variant not in best or out[0] < best[variant][0]:
                                best[variant] = out
                    (ws, ls, answers_s, _), (wc, lc, answers_c, stats) = best["stock"], best["certificate"]
                    row = {"length_penalty": lp, "beam": beam, "clients": c,
                           "stock_wall_s": ws, "certificate_wall_s": wc,
                           "stock_requests_per_s": prompts_n / ws, "certificate_requests_per_s": prompts_n / wc,
                           "stock_latency_mean_s": statistics.mean(ls), "certificate_latency_mean_s":
                               statistics.mean(lc),
                           "stock_latency_p90_s": _p90(ls), "certificate_latency_p90_s": _p90(lc),
                           "speedup": ws / wc, "latency_ratio": statistics.mean(ls) / statistics.mean(lc),
                           "stock_steps": statistics.mean(s[0]["steps"] for s in full),
                           "certificate_steps": statistics.mean(s[0]["steps"] for s in stats),
                           "certified": sum(s[0]["stop_reason"] == "certificate" for s in stats),
                           "same_answers": answers_c == answers_s}
                    log(json.dumps(row))
                    results["rows"].append(row)
    finally:
        _stop(process)
    return results


def _p90(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=10, method="inclusive")[-1] if len(xs) > 1 else xs[0]


def render(results: dict) -> str:
    lines = [
        "# Beam requests to vLLM's OpenAI-compatible server: stock and with the certificate (CPU)",
        "",
        f"vLLM {results['vllm']} (CPU build), one server (`python -m vllm.entrypoints.openai.api_server`, float32, "
        f"eager) with onmt-optimal installed; {results['prompts']} prompts of the synthetic task, one "
        f"`/v1/completions` request each (`use_beam_search`, `n` = beam, temperature 0, max_tokens "
        f"{results['max_tokens']}), sent by 1 or 8 concurrent clients; best of {results['rounds']} rounds on the "
        f"wall clock, alternating, after an untimed round. GPT-2 trained {results['train_steps']} steps (onmt_optimal_lab/bench/vllm_serve.py). "
        "`stock`: no `vllm_xargs`; `certificate`: `vllm_xargs: {\"stopping\": \"optimal\"}`. Measured on a shared "
        "2-core machine with other jobs running: the ratios, taken in one run with alternating rounds, are the "
        "figures to read, the absolute rates are not (run `make bench-vllm-serve`, i.e. `.venv-vllm/bin/python "
        "scripts/bench_vllm_serve.py`, with the plugin installed by `make setup-vllm`). Speed-up: stock's wall time over the certificate's; "
        "latency ratio: stock's mean latency over the certificate's. Steps: a request's mean (stock: "
        "`stopping: \"exhaustive\"`'s, which are vLLM's). `certified`: requests stopped by the certificate; "
        "`same`: every answer is the stock one.",
        "",
        "| lp | beam | clients | stock wall s | cert. wall s | stock req/s | cert. req/s | speed-up | stock latency "
        "mean / p90 s | cert. latency mean / p90 s | latency ratio | steps stock | steps cert. | certified | same |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["rows"]:
        lines.append(
            f"| {r['length_penalty']:g} | {r['beam']} | {r['clients']} | {r['stock_wall_s']:.2f} | "
            f"{r['certificate_wall_s']:.2f} | {r['stock_requests_per_s']:.2f} | {r['certificate_requests_per_s']:.2f} | "
            f"{r['speedup']:.2f} | {r['stock_latency_mean_s']:.3f} / {r['stock_latency_p90_s']:.3f} | "
            f"{r['certificate_latency_mean_s']:.3f} / {r['certificate_latency_p90_s']:.3f} | "
            f"{r['latency_ratio']:.2f} | {r['stock_steps']:.1f} | {r['certificate_steps']:.1f} | "
            f"{r['certified']} / {results['prompts']} | {r['same_answers']} |")
    return "\n".join(lines) + "\n"

