"""Signals as a user's terminal delivers them, for a test's child process (``preexec_fn``, before exec).

A test run started in the background without job control (``nohup make test &``, a CI job) hands its children
SIGINT ignored, and ``nohup`` hands them SIGHUP ignored; a program keeps an ignored signal ignored (Python then
installs no KeyboardInterrupt handler), so a test of Ctrl-C or of a closing terminal would send a signal that
is lost. ``from_a_terminal`` gives the child each signal's default action back, as a terminal's foreground
command has it.
"""
from __future__ import annotations

import signal
import subprocess


def as_from_a_terminal() -> None:
    """SIGINT's default action: a terminal's Ctrl-C finds the child."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def as_from_a_session() -> None:
    """SIGHUP's default action: a closing terminal's hang-up finds the child."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def signalled_once_ready(argv: list, env: dict, signum: int, preexec_fn, ready: str) -> tuple[int, str]:
    """``argv`` run (stdout dropped) until its stderr shows a line with ``ready``, then sent ``signum``: its exit
    status and all its stderr. ``preexec_fn``: ``as_from_a_terminal`` or ``as_from_a_session``, so the signal
    finds it."""
    proc = subprocess.Popen([str(a) for a in argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, preexec_fn=preexec_fn)
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if ready in line:
            break
    proc.send_signal(signum)
    seen.append(proc.stderr.read())
    proc.wait(timeout=120)
    return proc.returncode, "".join(seen)
