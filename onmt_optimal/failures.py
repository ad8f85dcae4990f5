"""How a command ends on a fault: one line on stderr and a non-zero exit status, never a traceback.

``run(prog, main, describe)`` calls ``main()`` with SIGTERM and SIGHUP (the terminal or SSH session that ran it
closed) turned into an exception (``Terminated``), and a log file that cannot be written (``-log_file`` on a full
disk) into a ``Fault`` (``LogFileError``, where logging printed a traceback per record and went on), so that a
run stopped by Ctrl-C (SIGINT, ``KeyboardInterrupt``), SIGTERM or SIGHUP unwinds as one that failed: the outputs
not yet committed are removed (``atomic``), every earlier file stays as it was. Then it ends the command:

* a ``Fault`` (bad options, an unreadable input, a file that is no model) or an ``atomic.OutputError`` (a failed
  write): ``PROG: error: ...`` and the fault's ``status`` (2 for options, as argparse, 1 otherwise);
* anything ``describe(err)`` puts in words (a toolkit's own errors): that line, status 1;
* ``KeyboardInterrupt``: ``PROG: error: interrupted``, status 130 (128 + SIGINT, what a shell reports);
* ``Terminated``: ``PROG: error: terminated (SIGTERM)``, status 143 (128 + SIGTERM), or for SIGHUP
  ``PROG: error: hung up (SIGHUP)``, status 129 (128 + SIGHUP).

Any other exception is a bug and keeps its traceback. The previous handlers are restored when ``main`` returns
(the test workers run many commands in one process). Nothing here imports a toolkit.
"""
from __future__ import annotations

import logging
import os
import signal
import sys
import threading

from onmt_optimal import atomic, import_hook
from onmt_optimal.errors import Fault  # the base of the faults a user can act on


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived (a ``BaseException``, as ``KeyboardInterrupt``: no ``except Exception`` swallows
    it); ``signum``: which."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(signum)
        self.signum = signum


#: the signals ``run`` turns into ``Terminated``: what the command says, its exit status (128 + the signal)
TERMINATING = {signal.SIGTERM: "terminated (SIGTERM)", signal.SIGHUP: "hung up (SIGHUP: its terminal closed)"}


def _on_signal(signum, frame):
    raise Terminated(signum)


def fail(prog: str, message: str, status: int) -> None:
    """End the command: ``PROG: error: MESSAGE`` (first line only) on stderr, exit ``status``."""
    _quiet_stdout()
    sys.stderr.write(f"{prog}: error: {str(message).splitlines()[0] if message else 'failed'}\n")
    sys.stderr.flush()
    raise SystemExit(status)


def run(prog: str, main, describe=None):
    """``main()`` ended as the module docstring says. ``describe(err) -> str | None``: the line for other
    exceptions the caller knows (None: not one of them)."""
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {signum: signal.signal(signum, _on_signal) for signum in TERMINATING
                    if signal.getsignal(signum) is not signal.SIG_IGN}  # nohup's SIGHUP stays ignored
    stock_handle_error = logging.FileHandler.handleError
    logging.FileHandler.handleError = _failed_log_write
    commits = atomic.commits()
    try:
        if import_hook.swallowed_interrupt():  # a Ctrl-C while the command's modules imported, lost by one of them
            raise KeyboardInterrupt
        return main()
    except (Fault, atomic.OutputError) as err:
        atomic.abort_all()
        fail(prog, str(err), getattr(err, "status", 1))
    except KeyboardInterrupt:
        atomic.abort_all()
        fail(prog, f"interrupted (Ctrl-C); {_outputs_now(commits)}", 130)
    except Terminated as err:
        atomic.abort_all()
        fail(prog, f"{TERMINATING[err.signum]}; {_outputs_now(commits)}", 128 + err.signum)
    except Exception as err:
        atomic.abort_all()
        message = describe(err) if describe is not None else None
        if message is None:
            raise
        fail(prog, message, 1)
    finally:
        logging.FileHandler.handleError = stock_handle_error
        for signum, handler in previous.items():
            if handler is not None:  # (None: a handler not installed from Python, which cannot be put back)
                signal.signal(signum, handler)


def _outputs_now(commits: int) -> str:
    """What a stopped run left: its outputs as they were, or, stopped once they were renamed into place (``commits``:
    ``atomic.commits()`` as the run began), its new outputs, complete."""
    if atomic.commits() > commits:
        return "the outputs had been written and renamed into place: they are complete"
    return "output files were left as they were"


class LogFileError(Fault):
    """The log file (``-log_file``) could not be written."""


def _failed_log_write(handler, record) -> None:
    """``logging.FileHandler.handleError`` while a command runs: a log file that cannot be written (a full disk,
    ``/dev/full``) ends the run as a failed write does, in one line, where logging printed a traceback for each
    record and let the run end with status 0."""
    err = sys.exc_info()[1]
    if not isinstance(err, OSError):
        return logging.Handler.handleError(handler, record)
    raise LogFileError(f"the log file {handler.baseFilename} cannot be written ({err.strerror or type(err).__name__})")


def _quiet_stdout() -> None:
    """Standard output flushed now, or, when that fails (its reader went away), pointed at /dev/null so that the
    interpreter's own flush at exit has nothing to complain about."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass
