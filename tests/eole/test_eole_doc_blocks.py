"""docs/eole.md's blocks, checked in eole's environment by the rules of tests/docs (``tests/docs/test_doc_blocks.py``).

A block marked ``<!-- not run: REASON -->`` is skipped with its reason; a committed file's text (a config of
``configs/``) is compared with it; a server block (``eole serve ... --port N`` and ``curl`` clients), or a client
block below one, runs as written on a free port, each answer JSON and no error; a shell block of ``eole`` and
``python`` commands runs as written by bash and must succeed; a python block runs as a script. Each runs in a
folder holding the files the docs name as a user's (``helpers.doc_blocks.examples``, on the toy
encoder-decoder eole model trained in the run, linked as ``model`` and ``model.pt``) with the repository's
folders linked in. Any other block fails: neither run nor marked.
"""
from __future__ import annotations

import sys

import pytest

from helpers import doc_blocks
from helpers.doc_blocks import Block

PAGE = "docs/eole.md"
BLOCKS = [b for b in doc_blocks.blocks() if b.path == PAGE]
RUNNABLE = {"eole", "python", "python3"}


def how(block: Block) -> str:
    if block.not_run is not None:
        return "not run"
    if doc_blocks.committed_file(block):
        return "committed file"
    if block.lang in ("bash", "sh") and (doc_blocks.is_server_block(block) or doc_blocks.server_for(block, BLOCKS)):
        return "server"
    cmds = doc_blocks.commands(block.text) if block.lang in ("bash", "sh") else []
    if cmds and all(words[0] in RUNNABLE for words in cmds):
        return "shell"
    if block.lang == "python":
        return "python"
    return "unchecked"


@pytest.fixture(scope="module")
def examples(tmp_path_factory, encoder_decoder, src):
    folder = doc_blocks.examples(tmp_path_factory.mktemp("examples"), encoder_decoder,
                                 (src.read_text(), src.read_text()))
    (folder / "model").symlink_to(encoder_decoder)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_block(block, request, tmp_path):
    kind = how(block)
    if kind == "not run":
        assert block.not_run, f"{block.id}: `<!-- not run: REASON -->` needs its reason"
        pytest.skip(f"not run: {block.not_run}")
    assert kind != "unchecked", (f"{block.id} ({block.lang or 'no language'}): neither run nor marked; mark it "
                                 "`<!-- not run: REASON -->` on the line before its fence, or give it a check here")
    if kind == "committed file":
        return
    folder, env = request.getfixturevalue("examples"), doc_blocks.environment(sys.executable)
    if kind == "server":
        server = block if doc_blocks.is_server_block(block) else doc_blocks.server_for(block, BLOCKS)
        with doc_blocks.serving(server, folder, env, tmp_path / "server.log") as (named, port):
            answers = doc_blocks.run_clients(block, named, port, folder, env, skip_first=block is server)
        doc_blocks.no_error(block, answers)
        return
    run = (doc_blocks.run_shell(block.text, folder, sys.executable) if kind == "shell"
           else doc_blocks.run_python(block, "", sys.executable, folder))
    assert run.returncode == 0, f"{block.id}: exit {run.returncode}\n{run.stderr[-3000:]}"
