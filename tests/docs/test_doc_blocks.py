"""Every fenced block of README.md and docs/*.md is run, compared, or marked not run with a reason.

How a block is checked (``how``, first rule that applies; ``tests/helpers/doc_blocks.py`` reads the blocks):

* marked ``<!-- not run: REASON -->`` on the line before its fence: skipped, the reason shown (none: fails);
* a block of docs/eole.md or docs/vllm.md: checked in that toolkit's environment, by these rules, by
  ``tests/eole/test_eole_doc_blocks.py`` or ``tests/vllm/test_vllm_doc_blocks.py`` (skipped here, naming the module);
* a block whose text is a committed file's (a config of ``configs/``): compared with that file (fast);
* a JSON block just below a block that is run and asks a server with ``curl``: that ``curl``'s answer (slow);
* a server's statistics record (``request``, ``model``, then the statistics): its keys are those, in order,
  ``search.record.STATS`` among them (fast);
* a statistics record said to come from ``make run``: equal to the first record ``make run``'s command writes
  on the test set's first batch of 32 lines (slow; skipped where the data directory is absent);
* a tree of the repository's folders (README's layout, development.md's ``tests/``): every folder it names
  exists (fast);
* development.md's golden-check line: the form ``helpers.golden_check`` prints (fast);
* a shell block of ``make`` targets and ``pytest`` runs: every target is the Makefile's and every path a pytest
  run names exists (fast; running them takes minutes to hours, and ``make setup`` would rebuild environments);
* a shell block that starts a server on a port (``--port N``) and then asks it with ``curl``, or a ``curl``
  block below such a block: the server run as written but on a free port (``doc_blocks.serving``), in the
  folder of examples below, then the clients; every ``curl`` must succeed and get JSON that is no error (slow);
* a shell block of the commands ``doc_blocks.RUNNABLE`` names (``onmt_translate``, ``python``, ``scripts/``,
  ``make`` but no set-up, test or long target, ``curl`` and the shell's plain tools; never ``pip``): run as
  written by bash (``doc_blocks.run_shell``: a port it serves on made a free one, ``make`` without re-running
  the set-up) in a folder where the files the docs name as examples exist (``PLACEHOLDERS``: ``model.pt`` is the toy
  model trained in the run, ``test.src``/``dev.src`` its lines, ``translate.yaml`` a config of it) and the
  repository's folders are linked; every command must succeed and each ``-output`` hold a line per source line
  (slow). README's YAML is written as ``optimal.yaml``, run by the command the README gives with it, and must
  write the same files as the README's command line;
* a python block of another page: run as a script by this environment's Python in the folder of examples, with
  the names the page leaves to the reader (``path``, ``src``, ``inputs``, ``model``, ``tok``) bound to the toy
  transformers encoder-decoder trained in the run (slow);
* anything else fails: a block neither run nor marked.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import doc_blocks, toy
from helpers.doc_blocks import ROOT, Block

BLOCKS = doc_blocks.blocks()
BIN = Path(sys.executable).parent
OTHER_TIERS = {"docs/eole.md": "tests/eole/test_eole_doc_blocks.py (.venv-eole)",
               "docs/vllm.md": "tests/vllm/test_vllm_doc_blocks.py (.venv-vllm)"}
SHELL = {"bash", "sh", "shell", "console"}
# what a shell block's example names stand for in the folder it runs in (the reason each is there: the docs
# name a user's files; the run gives them the toy model's)
PLACEHOLDERS = {"ARGS": "-model model.pt -src test.src -output stock.hyp"}
MAKE_OR_PYTEST = re.compile(r"(^|/)python3?$")
DATA = Path(os.environ.get("ONMT_OPTIMAL_DATA", ROOT.parent / "shared" / "data"))


def _first_line(block: Block) -> str:
    return next((line.strip() for line in block.text.splitlines() if line.strip()), "")


def _is_make_or_pytest(block: Block) -> bool:
    cmds = doc_blocks.commands(block.text)
    return bool(cmds) and all(_make_or_pytest_parts(words) for words in cmds)


def _make_or_pytest_parts(words: list[str]) -> list[list[str]] | None:
    """The command's parts (split at ``&&``), each a make run or a pytest run, or None."""
    parts, part = [], []
    for word in words + ["&&"]:
        if word == "&&":
            part = [w for w in part if not re.match(r"^[A-Z_]+=", w)]
            pytest_run = len(part) > 2 and MAKE_OR_PYTEST.search(part[0]) and part[1:3] == ["-m", "pytest"]
            if not (part[:1] == ["make"] or pytest_run):
                return None
            parts.append(part)
            part = []
        else:
            part.append(word)
    return parts


def _is_runnable_shell(block: Block) -> bool:
    return doc_blocks.runnable(block)


def _is_stats_record(block: Block) -> bool:
    try:
        record = json.loads(block.text)
    except ValueError:
        return False
    return isinstance(record, dict) and "stop_reason" in record and "request" not in record


def _is_server_record(block: Block) -> bool:
    try:
        record = json.loads(block.text)
    except ValueError:
        return False
    return isinstance(record, dict) and {"stop_reason", "request", "model"} <= set(record)


def _server_above(block: Block) -> Block | None:
    """The block just above on the page, where it is run and asks a server with ``curl`` (a server block, or a
    shell block that starts one itself): this block is the answer."""
    above = [b for b in BLOCKS if b.path == block.path and b.line < block.line]
    if not above or above[-1].not_run is not None or above[-1].lang not in SHELL:
        return None
    asks = any(words[0] == "curl" for words in doc_blocks.commands(above[-1].text))
    return above[-1] if asks and (doc_blocks.is_server_block(above[-1]) or _is_runnable_shell(above[-1])) else None


def _is_tree(block: Block) -> bool:
    return block.lang in ("", "text") and bool(re.match(r"^[\w./-]+/\s", block.text))


def how(block: Block) -> tuple[str, str]:
    """(tier, how): the tier is ``not run``, ``other tier``, ``fast``, ``slow`` or ``unchecked``; the kinds this
    page test adds come first, then the one classification of every tier (``doc_blocks.kind``)."""
    if block.not_run is not None:
        return "not run", block.not_run
    if block.path in OTHER_TIERS:
        return "other tier", OTHER_TIERS[block.path]
    if doc_blocks.committed_file(block):
        return "fast", "same as a committed file"
    if block.lang == "json" and _is_server_record(block):
        return "fast", "a server's record's keys"
    if block.lang == "json" and _server_above(block):
        return "slow", "the answer of the server block above"
    if block.lang == "json" and _is_stats_record(block):
        return "slow", "make run's first record"
    if _is_tree(block):
        return "fast", "folders that exist"
    if block.lang == "text" and block.text.startswith("golden-check:"):
        return "fast", "golden_check's line"
    if block.lang in SHELL and _is_make_or_pytest(block):
        return "fast", "make targets and pytest paths"
    if block.lang == "yaml" and block.path == "README.md":
        return "slow", "README's YAML run as optimal.yaml"
    return SHARED[doc_blocks.kind(block, BLOCKS)]


#: ``doc_blocks.kind``'s kinds as this test's (tier, how)
SHARED = {"committed file": ("fast", "same as a committed file"), "server": ("slow", "a server and its clients"),
          "shell": ("slow", "run in a folder of examples"), "output": ("slow", "the answer of the server block above"),
          "python": ("slow", "python script"), "unchecked": ("unchecked", "neither run nor marked")}


def _param(block: Block):
    tier, _ = how(block)
    marks = [pytest.mark.slow] if tier == "slow" else []
    return pytest.param(block, id=block.id, marks=marks)


@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS])
def test_block(block, request):
    tier, reason = how(block)
    if tier == "not run":
        assert reason, f"{block.id}: `<!-- not run: REASON -->` needs its reason"
        pytest.skip(f"not run: {reason}")
    if tier == "other tier":
        pytest.skip(f"run by {reason}")
    assert tier != "unchecked", (f"{block.id} ({block.lang or 'no language'}, {_first_line(block)!r}): neither run "
                                 "nor marked; mark it `<!-- not run: REASON -->` on the line before its fence, or "
                                 "give it a check in tests/docs")
    CHECKS[reason](block, request)


# ------------------------------------------------------------------------------------------------- fast checks

def check_committed_file(block: Block, request) -> None:
    assert doc_blocks.committed_file(block) is not None


def check_make_and_pytest(block: Block, request) -> None:
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))
    for words in doc_blocks.commands(block.text):
        for part in _make_or_pytest_parts(words):
            if part[0] == "make":
                named = [w for w in part[1:] if not w.startswith("-") and "=" not in w]
                assert set(named) <= targets, f"{block.id}: no such make target: {set(named) - targets}"
            else:
                paths = [w for w in part[3:] if not w.startswith("-") and "/" in w and "=" not in w]
                for path in paths:
                    assert (ROOT / path.split("::")[0]).exists(), f"{block.id}: {path} does not exist"


def check_tree(block: Block, request) -> None:
    """Each line's first word that ends with ``/`` is a folder: at the top level, or under the last top-level
    folder above it where indented; a second such word on a line is a folder beside the first or in it."""
    top = Path()
    for line in block.text.splitlines():
        m = re.match(r"^(\s*)([\w./-]+/)(?=\s|$)(?:\s+([\w.-]+/)(?=\s))?", line)
        if not m:
            continue
        first = ROOT / m[2] if not m[1] else ROOT / top / m[2]
        assert first.is_dir(), f"{block.id}: {first.relative_to(ROOT)} is not a folder"
        if m[3]:
            assert (first.parent / m[3]).is_dir() or (first / m[3]).is_dir(), f"{block.id}: {m[3]} is not a folder"
        if not m[1]:
            top = Path(m[2])


def check_golden_line(block: Block, request) -> None:
    from helpers.golden_check import Result

    form = re.escape(block.text.strip()).replace("N", r"\d+").replace("M", r"\d+")
    assert re.fullmatch(form, Result(["a", "b"], 7).line()), block.text


# ------------------------------------------------------------------------------------------------- slow checks

def check_make_run_record(block: Block, request) -> None:
    """The record is the first line of the statistics that ``make run``'s command writes (scripts/main_job.py:
    onmt_translate -config configs/tvsub-zh-en/optimal.yaml on the TVsub test set, cleaned as it cleans it),
    here on the set's first 32 lines: the config's batch of 32, with no batch-dependent length cap."""
    from onmt_optimal.tools.text import normalize

    test = DATA / "tvsub-zh-en" / "test.zh"
    if not test.is_file():
        pytest.skip(f"no TVsub test set at {test} (ONMT_OPTIMAL_DATA names the data directory)")
    work = request.getfixturevalue("tmp_path")
    src = work / "test.src"
    lines = test.read_text(encoding="utf-8").splitlines()[:32]
    src.write_text("".join(normalize(line, unescape=True) + "\n" for line in lines), encoding="utf-8")
    run = subprocess.run([str(BIN / "onmt_translate"), "-config", "configs/tvsub-zh-en/optimal.yaml", "-src",
                          str(src), "-output", str(work / "test.hyp"), "-stats_file", str(work / "stats.jsonl")],
                         cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert run.returncode == 0, run.stderr
    first = (work / "stats.jsonl").read_text().splitlines()[0]
    assert doc_blocks.same_values(json.loads(block.text), json.loads(first)), f"{block.text.strip()}\n!=\n{first}"


@pytest.fixture(scope="module")
def examples(tmp_path_factory, toy_model):
    """The folder of the files the docs' commands name as a user's (``doc_blocks.examples``), on the toy model."""
    folder = tmp_path_factory.mktemp("examples")
    toy.write_corpus(folder / "lines", n=6, seed=7)
    lines = ((folder / "lines.src").read_text(), (folder / "lines.tgt").read_text())
    return doc_blocks.examples(folder, toy_model, lines)


def _run_shell(script: str, folder: Path) -> subprocess.CompletedProcess:
    return doc_blocks.run_shell(script, folder, sys.executable, PLACEHOLDERS)


def _outputs_whole(block: Block, folder: Path) -> None:
    for words in doc_blocks.commands(block.text):
        flags = dict(zip(words, words[1:]))
        if "-output" in flags:
            src = folder / flags.get("-src", "test.src")
            out = folder / flags["-output"]
            assert len(out.read_text().splitlines()) == len(src.read_text().splitlines()), f"{block.id}: {out}"
        for flag in ("-stats_file", "--out"):
            if flag in flags:
                assert (folder / flags[flag]).is_file(), f"{block.id}: {flags[flag]} was not written"


def check_shell(block: Block, request) -> None:
    folder = request.getfixturevalue("examples")
    run = _run_shell(block.text, folder)
    assert run.returncode == 0, f"{block.id}: exit {run.returncode}\n{run.stderr[-3000:]}"
    _outputs_whole(block, folder)


def check_server(block: Block, request) -> None:
    """The server block's server, then its clients (its own ``curl`` commands, or a client block below it)."""
    folder, env = request.getfixturevalue("examples"), doc_blocks.environment(sys.executable)
    server = block if doc_blocks.is_server_block(block) else doc_blocks.server_for(block, BLOCKS)
    with doc_blocks.serving(server, folder, env, request.getfixturevalue("tmp_path") / "server.log") as (named, port):
        answers = doc_blocks.run_clients(block, named, port, folder, env, skip_first=block is server)
    doc_blocks.no_error(block, answers)


def check_server_answer(block: Block, request) -> None:
    """The block above run as written (its server on a free port): its last ``curl``'s answer, or its last JSON
    (a shell block that asks no server), is this block."""
    above = _server_above(block) or [b for b in BLOCKS if b.path == block.path and b.line < block.line][-1]
    folder = request.getfixturevalue("examples")
    if not doc_blocks.is_server_block(above):
        run = _run_shell(above.text, folder)
        assert run.returncode == 0, f"{above.id}: exit {run.returncode}\n{run.stderr[-3000:]}"
        assert doc_blocks.same_values(json.loads(block.text), doc_blocks.last_json(run.stdout))
        return
    env = doc_blocks.environment(sys.executable)
    with doc_blocks.serving(above, folder, env, request.getfixturevalue("tmp_path") / "server.log") as (named, port):
        answers = doc_blocks.run_clients(above, named, port, folder, env, skip_first=True)
    assert doc_blocks.same_values(json.loads(block.text), json.loads(answers[-1])), answers[-1]


def check_server_record(block: Block, request) -> None:
    """A server's statistics record: the request's and the model's ids, then the statistics file's keys."""
    from onmt_optimal.search.record import STATS

    assert list(json.loads(block.text)) == ["request", "model", "line", *STATS]


def check_readme_yaml(block: Block, request) -> None:
    """``onmt_translate -config optimal.yaml`` writes what README's command line with the same flags writes."""
    command = next(b for b in BLOCKS if b.path == "README.md" and b.lang in SHELL and _is_runnable_shell(b))
    folder = request.getfixturevalue("examples")
    files = ("test.hyp", "test.stats.jsonl")
    assert _run_shell(command.text, folder).returncode == 0
    by_flags = {name: (folder / name).read_bytes() for name in files}
    (folder / "optimal.yaml").write_text(block.text)
    mentioned = re.search(r"`(onmt_translate -config optimal\.yaml)`", (ROOT / "README.md").read_text())
    assert mentioned, "README no longer names the command that runs its YAML"
    run = _run_shell(mentioned[1], folder)
    assert run.returncode == 0, run.stderr[-3000:]
    assert {name: (folder / name).read_bytes() for name in files} == by_flags


@pytest.fixture(scope="module")
def hf_toy(tmp_path_factory):
    """The toy transformers encoder-decoder (helpers.toy_hf), saved as a model folder."""
    toy_hf = pytest.importorskip("helpers.toy_hf")
    trained = toy_hf.train("encoder_decoder")
    folder = tmp_path_factory.mktemp("hf_toy")
    trained.model.save_pretrained(folder)
    trained.tokenizer.save_pretrained(folder)
    return folder, toy_hf.sources(3, seed=5)


PYTHON_PREAMBLE = """\
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
path, src = {path!r}, {src!r}
tok = AutoTokenizer.from_pretrained(path)
model = AutoModelForSeq2SeqLM.from_pretrained(path)
inputs = tok(src, return_tensors="pt", padding=True)
"""


def check_python(block: Block, request) -> None:
    path, src = request.getfixturevalue("hf_toy")
    run = doc_blocks.run_python(block, PYTHON_PREAMBLE.format(path=str(path), src=src), sys.executable,
                                request.getfixturevalue("examples"))
    assert run.returncode == 0, f"{block.id}:\n{run.stderr[-3000:]}"


CHECKS = {"same as a committed file": check_committed_file, "make targets and pytest paths": check_make_and_pytest,
          "folders that exist": check_tree, "golden_check's line": check_golden_line,
          "make run's first record": check_make_run_record, "run in a folder of examples": check_shell,
          "a server and its clients": check_server, "README's YAML run as optimal.yaml": check_readme_yaml,
          "python script": check_python, "the answer of the server block above": check_server_answer,
          "a server's record's keys": check_server_record}


def test_every_block_is_checked_or_marked():
    """The census: no block is left unchecked (each is also its own test_block case, which says how to fix it)."""
    unchecked = [b.id for b in BLOCKS if how(b)[0] == "unchecked"]
    assert not unchecked, f"blocks neither run nor marked: {unchecked}"
