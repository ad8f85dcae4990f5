"""The fenced code blocks of the docs (README.md and docs/*.md), each with what the docs say of it.

A block is marked not run by an HTML comment on the line just before its opening fence,
``<!-- not run: REASON -->``; every other block is run or compared by a test (tests/docs for the main
environment, tests/eole and tests/vllm for the blocks of their pages). ``commands`` splits a shell block into
its commands as bash reads them (a trailing backslash continues a line; comments and blank lines dropped).
"""
from __future__ import annotations

import re
import shlex
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

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


def is_server_block(block: Block) -> bool:
    """A shell block whose first command starts a server on a port, its other commands clients of it."""
    cmds = commands(block.text)
    return bool(cmds) and bool(SERVER_PORT.search(" ".join(cmds[0]))) and all(
        words[0] == "curl" for words in cmds[1:])


def run_server_block(block: Block, cwd: Path, env: dict, log: Path, timeout: float = 300) -> list[str]:
    """Run a server block as written but on a free port (the one it names may be taken): its first command in
    the background until the port answers, then each client command (which must succeed); the clients' outputs,
    in order. The server is stopped (SIGTERM) at the end."""
    named, new = SERVER_PORT.search(block.text)[1], str(free_port())
    port = re.compile(rf"(?<![\d.]){named}(?!\d)")
    cmds = [[port.sub(new, w) for w in words] for words in commands(block.text)]
    server_env = dict(env)
    while cmds[0] and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", cmds[0][0]):
        name, value = cmds[0].pop(0).split("=", 1)
        server_env[name] = value
    with open(log, "w") as out:
        proc = subprocess.Popen(cmds[0], cwd=cwd, env=server_env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"{block.id}: the server ended with {proc.returncode}:\n{log.read_text()[-3000:]}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", int(new))) == 0:
                    break
            if time.monotonic() > deadline:
                raise AssertionError(f"{block.id}: the server did not listen in {timeout} s")
            time.sleep(0.5)
        outputs = []
        for words in cmds[1:]:
            run = subprocess.run(words, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
            assert run.returncode == 0, f"{block.id}: {words[0]} exit {run.returncode}: {run.stderr[-2000:]}"
            outputs.append(run.stdout)
        return outputs
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
