"""docs/vllm.md's blocks, checked in vLLM's environment by the rules of tests/docs (``tests/docs/test_doc_blocks.py``).

A block marked ``<!-- not run: REASON -->`` is skipped with its reason; a server block (the OpenAI-compatible
server started ``--port N``, with or without ``curl`` clients) runs as written on a free port, and a client block
below one (``curl``, or a python client of ``localhost:N``) runs against it, each answer JSON and no error; a
python block runs as a script. A server block's server starts once a run and serves the client blocks below it
(vLLM's engine takes most of a minute to start). The names the page leaves to the reader are bound to the toy
GPT-2 trained in the run (``helpers.toy_vllm``): ``MODEL`` in a shell block, and ``path``, ``"MODEL"`` and
``"path/to/model"`` in a python block name its folder; ``prompts`` are three of its prompts. Where torch sees no CUDA device, a server command takes the
flags its block names for the CPU build (a comment ``# on the CPU build: FLAGS``). Any other block fails:
neither run nor marked.
"""
from __future__ import annotations

import contextlib
import dataclasses
import re
import sys

import pytest

from helpers import doc_blocks
from helpers.doc_blocks import Block

PAGE = "docs/vllm.md"
BLOCKS = [b for b in doc_blocks.blocks() if b.path == PAGE]


def how(block: Block) -> str:
    return doc_blocks.kind(block, BLOCKS, shells=False)


@pytest.fixture(scope="module")
def examples(tmp_path_factory, toy, model_dir):
    from helpers import toy_vllm

    folder = tmp_path_factory.mktemp("examples")
    return folder, str(model_dir), toy_vllm.prompts(toy, 3, seed=4)


@pytest.fixture(scope="module")
def servers(examples, tmp_path_factory):
    """``start(block)``: the server block's server, started on first use and stopped at the module's end."""
    folder, model, _ = examples
    env, running = doc_blocks.environment(sys.executable), {}
    with contextlib.ExitStack() as stack:
        def start(block: Block):
            if block.id not in running:
                log = tmp_path_factory.mktemp("server") / "server.log"
                running[block.id] = stack.enter_context(doc_blocks.serving(_with_model(block, model), folder, env,
                                                                           log, extra=_cpu_flags(block)))
            return running[block.id]

        yield start


CPU_FLAGS = re.compile(r"#\s*on the CPU build:\s*((?:--[\w-]+(?:[ =][^-\s(][^\s(]*)?\s*)+)")


def _with_model(block: Block, model: str) -> Block:
    """The block with its model named by ``model``: the word ``MODEL`` in a shell block, the strings ``"MODEL"``
    and ``"path/to/model"`` in a python block."""
    if block.lang == "python":
        text = re.sub(r"""(["'])(MODEL|path/to/model)\1""", lambda _: repr(model), block.text)
    else:
        text = re.sub(r"\bMODEL\b", model, block.text)
    return dataclasses.replace(block, text=text)


def _cpu_flags(block: Block) -> tuple:
    """The flags the block names for the CPU build, where torch sees no CUDA device; else none."""
    import torch

    flags = CPU_FLAGS.search(block.text)
    return () if torch.cuda.is_available() or not flags else tuple(flags[1].split())


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_block(block, request):
    kind = how(block)
    doc_blocks.skip_or_refuse(block, kind)
    if kind == "committed file":
        return
    folder, model, prompts = request.getfixturevalue("examples")
    env = doc_blocks.environment(sys.executable)
    preamble = f"path, prompts = {model!r}, {prompts!r}\n"
    if kind == "python":
        run = doc_blocks.run_python(_with_model(block, model), preamble, sys.executable, folder)
        assert run.returncode == 0, f"{block.id}: exit {run.returncode}\n{run.stderr[-3000:]}"
        return
    server = block if doc_blocks.is_server_block(block) else doc_blocks.server_for(block, BLOCKS)
    named, port = request.getfixturevalue("servers")(server)
    client = _with_model(block, model)
    if block.lang == "python":
        client = dataclasses.replace(client, text=doc_blocks.on_port(client.text, named, port))
        run = doc_blocks.run_python(client, preamble, sys.executable, folder)
        assert run.returncode == 0, f"{block.id}: exit {run.returncode}\n{run.stderr[-3000:]}"
        return
    doc_blocks.no_error(block, doc_blocks.run_clients(client, named, port, folder, env, skip_first=block is server))
