"""What a command that failed or was interrupted must leave behind: one error line and no traceback on stderr, no
``.partial`` file beside its outputs. Shared by the OpenNMT-py and eole tiers."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path


def partials(*directories: Path) -> list[str]:
    """The ``.partial`` files (``atomic``'s outputs being written) left in ``directories``, sorted."""
    return sorted(p.name for d in directories if d.exists() for p in d.iterdir() if p.name.endswith(".partial"))


def error_lines(stderr: str, prog: str = "onmt_translate") -> list[str]:
    return [line for line in stderr.splitlines() if f"{prog}: error:" in line]


def one_error_line(returncode, stderr, status, prog: str = "onmt_translate") -> str:
    """The one ``PROG: error:`` line of a command that ended with ``status`` and printed no traceback."""
    assert returncode == status, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    errors = error_lines(stderr, prog)
    assert len(errors) == 1, stderr[-3000:]
    return errors[0]


def earlier_file(path: Path, text: str) -> Path:
    """``path``, written with ``text`` before the command: a file it must leave as it was."""
    path.write_text(text)
    return path


def naming(line: str, *mentions: str) -> str:
    """``line``, once it is checked to name every one of ``mentions``."""
    for mention in mentions:
        assert mention in line, line
    return line


def wait_for_torch(proc: subprocess.Popen, timeout: float = 120) -> None:
    """Until the process has loaded torch's library: its modules are importing (an earlier SIGINT would find an
    interpreter that has not yet installed its handler, and end it silently)."""
    deadline = time.time() + timeout
    while proc.poll() is None and time.time() < deadline:
        try:
            if "libtorch" in Path(f"/proc/{proc.pid}/maps").read_text():
                return
        except OSError:
            pass
        time.sleep(0.01)
    raise AssertionError("the process never loaded torch")
