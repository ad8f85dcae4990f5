"""The fenced code blocks of the docs (README.md and docs/*.md), each with what the docs say of it.

A block is marked not run by an HTML comment on the line just before its opening fence,
``<!-- not run: REASON -->``; every other block is run or compared by a test (tests/docs for the main
environment, tests/eole and tests/vllm for the blocks of their pages). ``commands`` splits a shell block into
its commands as bash reads them (a trailing backslash continues a line; comments and blank lines dropped).
What the three tiers share to run a block: ``committed_file`` (the config a block shows), ``examples`` (a
folder holding the files the docs name as a user's, the repository's folders linked in), ``run_shell``,
``run_python``, ``serving`` and ``run_clients`` (a server block, or a client block and the server above it).
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers.http_server import free_port

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<lang>[^`\s]*)\s*$")
NOT_RUN = re.compile(r"^\s*<!--\s*not run:(?P<reason>.*?)-->\s*$")
HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*$")


@dataclass(frozen=True)
class Block:
    path: str  # the page, relative to the repository's root
    line: int  # the opening fence's line, from 1
    lang: str  # the fence's info string ("" for none)
    text: str  # the block's lines, the fence's indentation removed
    not_run: str | None  # the reason given by a `<!-- not run: REASON -->` just above, else None
    section: str  # the title of the nearest heading above

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"


def committed_file(block: Block, root: Path = ROOT) -> Path | None:
    """The committed file of ``configs/`` whose text is the block's, if any."""
    text = block.text.strip()
    for path in sorted((root / "configs").rglob("*")):
        if path.is_file() and path.read_text(encoding="utf-8", errors="replace").strip() == text:
            return path
    return None


def examples(folder: Path, model: Path, lines: tuple[str, str]) -> Path:
    """``folder`` with the repository's entries linked in (its environments too; ``models/`` a folder of links to
    each model, so that a model a block makes lands here) and the files the docs name as a user's: ``model.pt``
    (a link to ``model``), ``test.src``, ``dev.src``, ``corpus.src`` (the source ``lines[0]``), ``dev.ref``,
    ``dev.ref0``, ``dev.ref1`` (the references ``lines[1]``), ``translate.yaml`` (``model: model.pt``)."""
    for entry in ROOT.iterdir():
        if entry.name not in (".git", "models", "work", "build", "dist"):
            (folder / entry.name).symlink_to(entry)
    (folder / "models").mkdir()
    for entry in (ROOT / "models").iterdir():
        (folder / "models" / entry.name).symlink_to(entry)
    (folder / "model.pt").symlink_to(model)
    for name in ("test.src", "dev.src", "corpus.src"):
        (folder / name).write_text(lines[0])
    for name in ("dev.ref", "dev.ref0", "dev.ref1"):
        (folder / name).write_text(lines[1])
    (folder / "translate.yaml").write_text("model: model.pt\nbeam_size: 5\nmax_length: 30\n")
    return folder


#: what a shell block that runs as written may call: the toolkits' commands, make, and the shell's plain tools
#: (never pip, which would change the environment, nor a make target that sets up, tests or removes one)
RUNNABLE = {"onmt_translate", "onmt_server", "eole", "python", "python3", "make", "printf", "cat", "echo", "curl",
            "kill", "sleep", "until", "head", "diff"}
NOT_MADE = re.compile(r"^(setup|test|clean-venv|reproduce|bench|golden)")


def runnable(block: Block) -> bool:
    """A shell block of ``RUNNABLE`` commands (or ``scripts/``, or a variable set), making no ``NOT_MADE`` target."""
    cmds = commands(block.text) if block.lang in ("bash", "sh") else []
    for words in cmds:
        first = words[0]
        if not (first in RUNNABLE or first.startswith("scripts/") or re.match(r"^\w+=", first)):
            return False
        if first == "make" and any(NOT_MADE.match(w) for w in words[1:] if not w.startswith("-")):
            return False
    return bool(cmds)


def _make_without_setup(script: str) -> str:
    """``make`` told not to remake the set-up targets (``-o``): the block runs in an environment set up already,
    which a changed Makefile would otherwise rebuild."""
    setups = sorted(set(re.findall(r"^(setup[\w-]*):", (ROOT / "Makefile").read_text(), re.M)))
    return re.sub(r"(^|[;&|(]\s*)make ", lambda m: m[1] + "make " + "".join(f"-o {t} " for t in setups), script,
                  flags=re.M)


def environment(python: str) -> dict:
    """The environment a block runs in: ``python``'s folder first on PATH (its ``python``, its toolkit's commands),
    warnings off as in the tests."""
    bin_dir = str(Path(python).parent)
    return dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", PYTHONWARNINGS="ignore")


def run_shell(script: str, folder: Path, python: str, placeholders: dict[str, str] | None = None,
              timeout: float = 600) -> subprocess.CompletedProcess:
    """``script`` run by bash (``-e -o pipefail``) in ``folder``, each word of ``placeholders`` replaced, a port
    it serves on (``--port N``) replaced by a free one everywhere, ``make`` without its set-up targets."""
    for name, value in (placeholders or {}).items():
        script = re.sub(rf"\b{name}\b", value, script)
    served = SERVER_PORT.search(script)
    if served:
        script = on_port(script, served[1], free_port())
    script = _make_without_setup(script)
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=folder, env=environment(python),
                          capture_output=True, text=True, timeout=timeout)


def run_python(block: Block, preamble: str, python: str, folder: Path, timeout: float = 600):
    """The block run as a script (``preamble`` first) by ``python`` in ``folder``."""
    script = folder / f"block_{Path(block.path).stem}_{block.line}.py"
    script.write_text(preamble + block.text)
    return subprocess.run([python, str(script)], cwd=folder, env=environment(python), capture_output=True,
                          text=True, timeout=timeout)


def pages(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def blocks(root: Path = ROOT) -> list[Block]:
    """Every fenced block of every page, in page order."""
    return [block for page in pages(root) for block in page_blocks(page, root)]


def page_blocks(page: Path, root: Path = ROOT) -> list[Block]:
    lines = page.read_text(encoding="utf-8").split("\n")
    found, section, i = [], "", 0
    while i < len(lines):
        heading, opening = HEADING.match(lines[i]), FENCE.match(lines[i])
        if heading:
            section = heading["title"]
        if not opening:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(fence)
                    and not lines[j].strip()[len(fence):].strip()), None)
        if end is None:
            raise ValueError(f"{page.relative_to(root)}:{i + 1}: a fence that is never closed")
        body = [line[len(indent):] if line.startswith(indent) else line.lstrip() for line in lines[i + 1:end]]
        mark = NOT_RUN.match(lines[i - 1]) if i else None
        found.append(Block(str(page.relative_to(root)), i + 1, opening["lang"], "\n".join(body) + "\n",
                           mark["reason"].strip() if mark else None, section))
        i = end + 1
    return found


def commands(text: str) -> list[list[str]]:
    """The commands of a shell block as the shell splits them into words: a trailing backslash continues a
    line, a quote left open continues on the next, comments and blank lines are dropped."""
    out, pending = [], ""
    for line in text.replace("\\\n", " ").split("\n"):
        pending = f"{pending}\n{line}" if pending else line
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:  # a quote still open
            continue
        if words:
            out.append(words)
        pending = ""
    if pending.strip():
        raise ValueError(f"a quote is never closed: {pending!r}")
    return out


SERVER_PORT = re.compile(r"--port[ =](\d+)")
CLIENT_PORT = re.compile(r"(?:localhost|127\.0\.0\.1):(\d+)")


def is_server_block(block: Block) -> bool:
    """A shell block whose first command starts a server on a port, its other commands ``curl`` clients of it."""
    cmds = commands(block.text)
    return bool(cmds) and bool(SERVER_PORT.search(" ".join(cmds[0]))) and all(
        words[0] == "curl" for words in cmds[1:])


def server_for(block: Block, page_blocks_: list[Block]) -> Block | None:
    """For a block that asks a server at ``localhost:PORT`` (a ``curl`` block, a python client): the last server
    block above it on its page listening on that port."""
    asked = CLIENT_PORT.search(block.text)
    if not asked or is_server_block(block):
        return None
    above = [b for b in page_blocks_ if b.path == block.path and b.line < block.line and is_server_block(b)
             and SERVER_PORT.search(b.text)[1] == asked[1]]
    return above[-1] if above else None


def kind(block: Block, page_blocks_: list[Block], shells: bool = True) -> str:
    """How a page's block is checked, the one classification every tier's page test starts from: ``not run``
    (marked, with its reason), ``committed file`` (a config's text), ``server`` (a server block, or a client of
    one above it: ``server_for``), ``shell`` (a ``runnable`` shell block, run as written), ``output`` (a JSON
    block just below a ``shell`` one: its last JSON), ``python`` (run as a script) or ``unchecked`` (neither run
    nor marked: the test fails). A tier that runs no shell blocks (``shells=False``) has neither ``shell`` nor
    ``output``: such blocks are ``unchecked`` there."""
    if block.not_run is not None:
        return "not run"
    if committed_file(block):
        return "committed file"
    shell = block.lang in ("bash", "sh")
    if (shell and is_server_block(block)) or server_for(block, page_blocks_):
        return "server"
    if shells and shell and runnable(block):
        return "shell"
    above = [b for b in page_blocks_ if b.path == block.path and b.line < block.line]
    if shells and block.lang == "json" and above and kind(above[-1], page_blocks_, shells) == "shell":
        return "output"
    if block.lang == "python":
        return "python"
    return "unchecked"


def skip_or_refuse(block: Block, kind_: str) -> None:
    """A page test's first word on a block of ``kind_``: a block marked not run is skipped with its reason (which
    it must give), an unchecked one fails, naming how to mark it."""
    if kind_ == "not run":
        assert block.not_run, f"{block.id}: `<!-- not run: REASON -->` needs its reason"
        pytest.skip(f"not run: {block.not_run}")
    assert kind_ != "unchecked", (f"{block.id} ({block.lang or 'no language'}): neither run nor marked; mark it "
                                  "`<!-- not run: REASON -->` on the line before its fence, or give it a check here")


def on_port(text: str, named: str, port: int) -> str:
    """``text`` with the port ``named`` replaced by ``port`` where it stands as one (a word, after ``:``, ``=``)."""
    return re.sub(rf"(?<![\w.-]){named}(?!\d)", str(port), text)


@contextlib.contextmanager
def serving(block: Block, cwd: Path, env: dict, log: Path, extra: tuple = (), timeout: float = 300):
    """The server block's first command (``extra`` words added) run in the background on a free port (the one
    the docs name may be taken) until that port answers; yields (the port the docs name, the free port).
    SIGTERM at the end."""
    named, port = SERVER_PORT.search(block.text)[1], free_port()
    argv = [on_port(w, named, port) for w in commands(block.text)[0]] + list(extra)
    server_env = dict(env)
    while argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
        name, value = argv.pop(0).split("=", 1)
        server_env[name] = value
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=server_env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"{block.id}: the server ended with {proc.returncode}:\n"
                                     f"{log.read_text()[-3000:]}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise AssertionError(f"{block.id}: the server did not listen in {timeout} s")
            time.sleep(0.5)
        yield named, port
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_clients(block: Block, named: str, port: int, cwd: Path, env: dict, skip_first: bool,
                timeout: float = 300) -> list[str]:
    """Each ``curl`` command of ``block`` (after its first, the server's, where ``skip_first``) on ``port``; each
    must succeed; their outputs in order."""
    outputs = []
    for words in commands(block.text)[1 if skip_first else 0:]:
        argv = [on_port(w, named, port) for w in words]
        run = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        assert run.returncode == 0, f"{block.id}: {words[0]} exit {run.returncode}: {run.stderr[-2000:]}"
        outputs.append(run.stdout)
    return outputs


def same_values(documented, produced, rel: float = 1e-5) -> bool:
    """``produced`` is what the page shows: the same keys, strings, integers and flags, and each float equal to
    ``rel`` (a model's float32 log-probabilities differ in their last digits from one CPU's vector instructions
    to another's, so a page's figures are compared as figures, not as bits)."""
    if isinstance(documented, float) or isinstance(produced, float):
        return (isinstance(documented, (int, float)) and isinstance(produced, (int, float))
                and not isinstance(documented, bool) and not isinstance(produced, bool)
                and abs(documented - produced) <= rel * max(1.0, abs(documented), abs(produced)))
    if isinstance(documented, dict):
        return (isinstance(produced, dict) and list(documented) == list(produced)
                and all(same_values(documented[k], produced[k], rel) for k in documented))
    if isinstance(documented, list):
        return (isinstance(produced, list) and len(documented) == len(produced)
                and all(same_values(d, p, rel) for d, p in zip(documented, produced)))
    return type(documented) is type(produced) and documented == produced


def last_json(output: str):
    """The last JSON document that starts a line of ``output`` (a server run in the background shares the
    standard output with the clients, so its log lines surround their answers)."""
    decoder, found = json.JSONDecoder(), None
    for start in [0] + [m.end() for m in re.finditer(r"\n", output)]:
        if output[start:start + 1] in ("{", "["):
            try:
                found = decoder.raw_decode(output, start)[0]
            except ValueError:
                continue
    assert found is not None, f"no JSON in {output[-2000:]!r}"
    return found


def no_error(block: Block, answers: list[str]) -> None:
    """Each answer is JSON and no error answer (OpenNMT-py's ``status: error``, an ``error`` or ``detail`` key)."""
    for answer in answers:
        body = json.loads(answer)
        assert not (isinstance(body, dict) and (body.get("status") == "error" or {"error", "detail"} & set(body))), \
            f"{block.id}: {answer[:2000]}"
