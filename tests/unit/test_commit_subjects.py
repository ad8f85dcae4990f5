"""Commit subjects are at most 72 characters, so that `git log --oneline` reads as a list of changes.

The rule holds from the first commit after SINCE (earlier subjects carried their checks in the subject line);
`.githooks/commit-msg` refuses a longer one at commit time (`git config core.hooksPath .githooks`). Skipped
where the repository's history is absent (an unpacked sdist, a shallow clone without SINCE).
"""
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs git and the hook

ROOT = Path(__file__).resolve().parents[2]
SINCE = "ba89b54"
LIMIT = 72


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)


def test_subjects_at_most_72_characters():
    if shutil.which("git") is None or _git("cat-file", "-e", f"{SINCE}^{{commit}}").returncode != 0:
        pytest.skip(f"no git history with {SINCE} here")
    subjects = _git("log", "--format=%h %s", f"{SINCE}..HEAD").stdout.splitlines()
    long = [line for line in subjects if len(line.split(" ", 1)[1]) > LIMIT]
    assert not long, f"{len(long)} commit subjects over {LIMIT} characters:\n" + "\n".join(long)


def test_the_hook_refuses_a_long_subject(tmp_path):
    hook = ROOT / ".githooks" / "commit-msg"
    message = tmp_path / "MSG"
    message.write_text("x" * 73 + "\n\nbody\n")
    refused = subprocess.run([str(hook), str(message)], capture_output=True, text=True)
    assert refused.returncode == 1 and "73 characters" in refused.stderr
    message.write_text("x" * 72 + "\n")
    assert subprocess.run([str(hook), str(message)]).returncode == 0
