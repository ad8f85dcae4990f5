"""vLLM's server stopped (SIGTERM, as an operator's ``kill``) with beam requests in flight.

On SIGTERM vLLM stops its engine client, then waits for the HTTP requests in flight to end. The search's requests
end at once (``internals.engine_step`` sees the stopped engine client): every client gets an answer, none waits
for its timeout, and the server exits long before the clients' timeouts. vLLM's own beam requests (no
``vllm_xargs``) are measured the same way and printed, not asserted, where ``ONMT_OPTIMAL_MEASURE_STOCK=1``
asks for it (skipped otherwise: what they do is vLLM's, and on a fast machine they may end before the signal).
"""
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from helpers import vllm_server

CLIENT_TIMEOUT_S = 120


STOCK = pytest.param(None, id="stock", marks=pytest.mark.skipif(
    os.environ.get("ONMT_OPTIMAL_MEASURE_STOCK") != "1", reason="vLLM's own search, measured on request: "
    "ONMT_OPTIMAL_MEASURE_STOCK=1"))


@pytest.mark.parametrize("xargs", [pytest.param({"stopping": "exhaustive"}, id="search"), STOCK])
def test_sigterm_with_beam_requests_in_flight(toy, model_dir, tmp_path, xargs):
    server = vllm_server.start(model_dir, tmp_path)
    try:
        name = httpx.get(server.base + "/v1/models").json()["data"][0]["id"]
        body = {"model": name, "prompt": ["a b =", "c d e ="], "use_beam_search": True, "n": 8, "max_tokens": 56,
                "ignore_eos": True, "temperature": 0, **({"vllm_xargs": xargs} if xargs else {})}

        def ask():
            try:
                return httpx.post(server.base + "/v1/completions", json=body, timeout=CLIENT_TIMEOUT_S).status_code
            except httpx.TimeoutException:
                return "timeout"
            except httpx.TransportError as error:
                return type(error).__name__

        with ThreadPoolExecutor(6) as pool:
            asked = [pool.submit(ask) for _ in range(6)]
            time.sleep(5)
            if any(a.done() for a in asked):  # nothing left in flight to stop: the machine was too fast
                pytest.skip(f"requests ended before the signal: {[a.result() for a in asked if a.done()]}")
            server.proc.send_signal(signal.SIGTERM)  # the API server, as ``kill PID``
            start = time.monotonic()
            answers = [a.result() for a in asked]
            answered = time.monotonic() - start
            server.proc.wait(timeout=CLIENT_TIMEOUT_S)
            took = time.monotonic() - start
    finally:
        server.stop()
    print(f"{'search' if xargs else 'stock'}: the clients got {answers} within {answered:.1f} s of SIGTERM, "
          f"with {CLIENT_TIMEOUT_S} s timeouts; the server exited after {took:.1f} s")
    if xargs:
        assert "timeout" not in answers
