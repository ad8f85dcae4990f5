"""docs/eole.md's blocks, checked in eole's environment by the rules of tests/docs (``tests/docs/test_doc_blocks.py``).

A block marked ``<!-- not run: REASON -->`` is skipped with its reason; a committed file's text (a config of
``configs/``) is compared with it; a server block (``eole serve ... --port N`` and ``curl`` clients), or a client
block below one, runs as written on a free port, each answer JSON and no error; a shell block of the commands
``doc_blocks.RUNNABLE`` names (``eole``, ``make``, ``curl``, the shell's plain tools; never ``pip``) runs as
written by bash (``doc_blocks.run_shell``: a port it serves on made a free one, ``make`` without re-running the
set-up) and must succeed, and a JSON block just below such a block is its output; a python block runs as a
script. Each runs in a folder holding the files the docs name as a user's (``helpers.doc_blocks.examples``, on
the toy encoder-decoder eole model trained in the run, linked as ``model`` and ``model.pt``) with the
repository's folders linked in (``models/`` a folder of links: a model a block makes lands in the test's
folder). Any other block fails: neither run nor marked.
"""
from __future__ import annotations

import json
import sys

import pytest

from helpers import doc_blocks
from helpers.doc_blocks import Block

PAGE = "docs/eole.md"
BLOCKS = [b for b in doc_blocks.blocks() if b.path == PAGE]


def _above(block: Block) -> Block | None:
    above = [b for b in BLOCKS if b.line < block.line]
    return above[-1] if above else None


def how(block: Block) -> str:
    return doc_blocks.kind(block, BLOCKS)


@pytest.fixture(scope="module")
def examples(tmp_path_factory, encoder_decoder, src):
    folder = doc_blocks.examples(tmp_path_factory.mktemp("examples"), encoder_decoder,
                                 (src.read_text(), src.read_text()))
    (folder / "model").symlink_to(encoder_decoder)
    return folder


@pytest.fixture(scope="module")
def outputs(examples):
    """``run(block)``: a shell block run once in the examples folder; its completed process."""
    done = {}

    def run(block: Block):
        if block.id not in done:
            done[block.id] = doc_blocks.run_shell(block.text, examples, sys.executable)
        return done[block.id]

    return run


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_block(block, request, tmp_path):
    kind = how(block)
    doc_blocks.skip_or_refuse(block, kind)
    if kind == "committed file":
        return
    folder, env = request.getfixturevalue("examples"), doc_blocks.environment(sys.executable)
    if kind == "server":
        server = block if doc_blocks.is_server_block(block) else doc_blocks.server_for(block, BLOCKS)
        with doc_blocks.serving(server, folder, env, tmp_path / "server.log") as (named, port):
            answers = doc_blocks.run_clients(block, named, port, folder, env, skip_first=block is server)
        doc_blocks.no_error(block, answers)
        return
    if kind in ("shell", "output"):
        run = request.getfixturevalue("outputs")(block if kind == "shell" else _above(block))
        assert run.returncode == 0, f"{block.id}: exit {run.returncode}\n{run.stderr[-3000:]}"
        if kind == "output":
            assert doc_blocks.same_values(json.loads(block.text), doc_blocks.last_json(run.stdout))
        return
    run = doc_blocks.run_python(block, "", sys.executable, folder)
    assert run.returncode == 0, f"{block.id}: exit {run.returncode}\n{run.stderr[-3000:]}"
