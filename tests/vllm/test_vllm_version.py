"""A vLLM other than the tested release (``internals.VERSION``) is refused in one line, and stays stock.

Each check runs in a child process whose vLLM says it is 0.33.0 (``vllm.__version__`` set before the plugin or
``optimal_beam_search`` is loaded), against the real vLLM installed and, offline, the toy model:

* offline, ``optimal_beam_search`` raises ``UnsupportedVersion``, one line naming both versions, and leaves the
  ``LLM`` as it was: its ``beam_search`` then answers as vLLM's own does in this run;
* the server's plugin, loaded by vLLM's own loader (``load_general_plugins``), says so in one line of vLLM's log
  and patches nothing: vLLM's online beam search and serving methods stay vLLM's. The same child without the fake
  version patches them (the check can tell the two apart);
* vLLM's OpenAI-compatible server, started as the docs say in a process whose vLLM says 0.33.0, logs that one line
  and serves as stock: a beam request that asks for the search (even with a value the plugin would refuse) is
  answered as one that does not, without statistics.
"""
import json
import os
import subprocess
import sys
import textwrap

import vllm

from helpers import http_server, toy_vllm, vllm_server
from onmt_optimal.vllm import internals, serve

FAKE = "0.33.0"
LINE = f"onmt-optimal supports vLLM {internals.VERSION}; this is vLLM {FAKE}"
ENV = {**os.environ, "PYTHONWARNINGS": "ignore"}


def test_the_line_names_both_versions():
    assert internals.version_error() is None  # this environment's vLLM is the tested one
    assert LINE == "onmt-optimal supports vLLM 0.32; this is vLLM 0.33.0"


OFFLINE = textwrap.dedent("""\
    import json, sys
    import vllm
    vllm.__version__ = {fake!r}
    from vllm import LLM
    from vllm.sampling_params import BeamSearchParams
    from onmt_optimal.vllm import optimal_beam_search

    if __name__ == "__main__":
        llm = LLM(model={model!r}, dtype="float32", enforce_eager=True, max_model_len=64,
                  gpu_memory_utilization=0.1)
        prompts, params = {prompts!r}, BeamSearchParams(beam_width=3, max_tokens=10, length_penalty=0.0)
        try:
            optimal_beam_search(llm, prompts, params, stopping="optimal")
        except Exception as refused:
            print("REFUSED", type(refused).__name__, str(refused), flush=True)
        assert "_beam_search_step" not in vars(llm)
        stock = llm.beam_search(prompts, params)
        print("STOCK", json.dumps([[(s.tokens, repr(s.cum_logprob), s.text) for s in out.sequences]
                                   for out in stock]), flush=True)
        llm.llm_engine.engine_core.shutdown()
""")


def test_offline_refuses_another_vllm_and_leaves_it_stock(llm, toy, model_dir, tmp_path):
    prompts = toy_vllm.prompts(toy, 3, seed=11)
    script = tmp_path / "another_vllm.py"
    script.write_text(OFFLINE.format(fake=FAKE, model=str(model_dir), prompts=prompts))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=900,
                          cwd=tmp_path, env=ENV)
    assert done.returncode == 0, done.stderr[-3000:]
    refused = [line for line in done.stdout.splitlines() if line.startswith("REFUSED ")]
    assert refused == [f"REFUSED UnsupportedVersion {LINE}"], done.stdout[-3000:]
    (stock,) = [line[len("STOCK "):] for line in done.stdout.splitlines() if line.startswith("STOCK ")]
    from vllm.sampling_params import BeamSearchParams

    ours = llm.beam_search(prompts, BeamSearchParams(beam_width=3, max_tokens=10, length_penalty=0.0))
    assert json.loads(stock) == [[[s.tokens, repr(s.cum_logprob), s.text] for s in out.sequences] for out in ours]


SERVER = textwrap.dedent("""\
    import sys
    import vllm
    if sys.argv[1] != "real":
        vllm.__version__ = sys.argv[1]
    import logging
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s %(message)s")  # the server's log level
    from vllm.plugins import load_general_plugins
    load_general_plugins()  # vLLM's own loader: the entry points of vllm.general_plugins
    from vllm.entrypoints.generate.beam_search.online import BeamSearchOnlineMixin
    from vllm.entrypoints.openai.chat_completion.serving import OpenAIServingChat
    from vllm.entrypoints.openai.completion.serving import OpenAIServingCompletion
    from onmt_optimal.import_hook import ours
    print("PATCHED", [ours(m) for m in (BeamSearchOnlineMixin.beam_search, OpenAIServingCompletion.create_completion,
                                        OpenAIServingChat.create_chat_completion)], flush=True)
""")


def plugin_loaded(version: str) -> tuple[list, list]:
    """What vLLM's plugin loader did in a child whose vLLM says ``version`` (``real``: as installed): whether each
    of the three methods is ours, and the lines of its output that name onmt-optimal."""
    done = subprocess.run([sys.executable, "-c", SERVER, version], capture_output=True, text=True, timeout=600,
                          env=ENV)
    assert done.returncode == 0, done.stderr[-3000:]
    output = done.stdout + done.stderr
    (patched,) = [line for line in done.stdout.splitlines() if line.startswith("PATCHED ")]
    return json.loads(patched[len("PATCHED "):].lower()), [line for line in output.splitlines()
                                                           if "onmt-optimal" in line]


def test_the_server_plugin_refuses_another_vllm_in_one_line_and_patches_nothing():
    assert vllm_server.plugin_installed(), "the vllm.general_plugins entry point is not installed: make setup-vllm"
    patched, lines = plugin_loaded(FAKE)
    assert patched == [False, False, False]
    assert len(lines) == 1 and lines[0].endswith(f"{LINE}: the plugin is not installed, the server is vLLM's "
                                                 "own"), lines
    patched, lines = plugin_loaded("real")
    assert patched == [True, True, True]
    assert len(lines) == 1 and "run the optimal beam search" in lines[0], lines


#: vLLM's server (``python -m vllm.entrypoints.openai.api_server``) in a process whose vLLM says ``argv[1]``
API_SERVER = ("import runpy, sys, vllm; vllm.__version__ = sys.argv.pop(1); "
              "runpy.run_module('vllm.entrypoints.openai.api_server', run_name='__main__', alter_sys=True)")


def test_the_server_on_another_vllm_says_so_once_and_serves_as_stock(toy, model_dir, tmp_path):
    port = vllm_server.free_port()
    argv = [sys.executable, "-c", API_SERVER, FAKE, *vllm_server.command(model_dir, port)[3:]]
    with http_server.Server(argv, port, "/health", tmp_path / "server.log", env=http_server.env(), timeout=300,
                            group=True, stop_s=60) as server:
        name = server.get("/v1/models").body["data"][0]["id"]

        def ask(**xargs):
            body = {"model": name, "prompt": ["a b c =", "p q ="], "use_beam_search": True, "n": 3,
                    "max_tokens": 12, "temperature": 0, "length_penalty": 0.0,
                    **({"vllm_xargs": xargs} if xargs else {})}
            answer = server.post("/v1/completions", body)
            assert answer.status == 200, answer.body
            assert all(serve.FIELD not in choice for choice in answer.body["choices"])
            return [(c["text"], c["finish_reason"]) for c in answer.body["choices"]], answer.body["usage"]

        stock = ask()
        assert ask(stopping="optimal") == stock
        assert ask(stopping="optimal", length_reward=-1) == stock  # the plugin would answer 400: not installed
        lines = [line for line in server.output().splitlines() if "onmt-optimal" in line]
    assert len(lines) == 1 and lines[0].endswith(f"{LINE}: the plugin is not installed, the server is vLLM's "
                                                 "own"), lines
