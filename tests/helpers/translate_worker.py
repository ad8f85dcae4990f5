"""Many ``onmt_translate`` runs in one Python process, so the end-to-end tests start one interpreter per side.

``Worker(stock=False)`` starts ``python translate_worker.py`` once; each ``Worker.run(args)`` sends it one
argument list, and the worker calls OpenNMT-py's own ``onmt.bin.translate.main`` with ``sys.argv`` set to
``["onmt_translate", *args]``, exactly what the ``onmt_translate`` console script does. Our side has the
import hook active (OpenNMT-py is patched on import, as for the console script); the stock side runs with
``ONMT_OPTIMAL_DISABLE=1`` and only the torch >= 2.6 checkpoint-loading fix of ``stock_translate.py``.

Invariants, per run:
- file descriptors 1 and 2 point to that run's own files while it runs (OpenNMT-py's logger, ``print``,
  warnings and C-level writes all land there), and are restored afterwards;
- the exit status is what the process would have exited with: ``SystemExit``'s code (``None`` -> 0, a message
  -> printed to stderr and 1), any other exception -> its traceback on stderr and 1;
- nothing a run leaves behind reaches the next one: ``init_logger`` replaces the ``onmt`` logger's handlers
  on every run, the translator and its output file are collected after each run, and a seed is set by each
  run that asks for one. ``test_end_to_end.test_worker_runs_equal_separate_processes`` checks outputs against
  fresh processes.

Protocol: the client writes one JSON object a line to the worker's stdin (``argv``, ``stdout``, ``stderr``:
paths); the worker answers ``{"returncode": n}`` a line on a duplicate of its original stdout, which no run
can write to.

The other toolkits' workers (``predict_worker``, ``generate_worker``, ``vllm_worker``) subclass ``Worker`` and
serve with ``run_jobs``: the client, the per-run redirection of file descriptors 1 and 2 and the exit-status
rules (``_run_one``) are these, for every toolkit.
"""
from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve()


@dataclass
class Done:
    """What ``subprocess.run(..., capture_output=True, text=True)`` would have given for the run."""
    args: list
    returncode: int
    stdout: str
    stderr: str


class Worker:
    """One long-lived worker process; ``run`` is synchronous. Restarted if it dies (the failing run reports).
    ``script``: the program the process runs (a subclass for another toolkit names its own)."""

    script = HERE

    def __init__(self, workdir: Path, stock: bool = False, env: dict | None = None):
        self.workdir, self.stock = Path(workdir), stock
        self.env = dict(env if env is not None else os.environ)
        self.env.setdefault("OMP_NUM_THREADS", "1")
        self.env.setdefault("PYTHONWARNINGS", "ignore")
        if stock:
            self.env["ONMT_OPTIMAL_DISABLE"] = "1"
        else:
            self.env.pop("ONMT_OPTIMAL_DISABLE", None)
        self.proc: subprocess.Popen | None = None
        self.count = 0
        self.workdir.mkdir(parents=True, exist_ok=True)

    def _start(self):
        self.proc = subprocess.Popen([sys.executable, str(self.script), "--stock" if self.stock else "--ours"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self.env, text=True,
                                     stderr=open(self.workdir / "worker.log", "a"))

    def run(self, *args) -> Done:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.count += 1
        out, err = self.workdir / f"{self.count}.stdout", self.workdir / f"{self.count}.stderr"
        argv = [str(a) for a in args]
        self.proc.stdin.write(json.dumps({"argv": argv, "stdout": str(out), "stderr": str(err)}) + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:  # the worker died mid-run (os._exit, a crash): report it as that run's failure
            code = self.proc.wait()
            self.proc = None
            return Done(argv, code or 1, _read(out), _read(err) + f"\n[worker exited with {code}]")
        return Done(argv, json.loads(answer)["returncode"], _read(out), _read(err))

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    @classmethod
    def for_session(cls, tmp_path_factory, stock: bool):
        """A pytest session fixture's body: one worker of this kind, one torch thread, closed at the end."""
        worker = cls(tmp_path_factory.mktemp("stock_runs" if stock else "our_runs"), stock=stock,
                     env=dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore"))
        yield worker
        worker.close()

    @classmethod
    def session_fixtures(cls, ours: str, stock: str, command: str) -> tuple:
        """A tier's two session fixtures, named ``ours`` and ``stock``: one worker of this kind each for the whole
        run (``for_session``), running ``command`` with the plugin, and as stock (``ONMT_OPTIMAL_DISABLE=1``)."""
        import pytest

        def with_the_plugin(tmp_path_factory):
            yield from cls.for_session(tmp_path_factory, stock=False)

        def as_stock(tmp_path_factory):
            yield from cls.for_session(tmp_path_factory, stock=True)

        with_the_plugin.__doc__ = f"``{command} *args`` with the plugin, in one process shared by the whole run."
        as_stock.__doc__ = f"stock ``{command} *args`` (ONMT_OPTIMAL_DISABLE=1), in one process for the whole run."
        return (pytest.fixture(scope="session", name=ours)(with_the_plugin),
                pytest.fixture(scope="session", name=stock)(as_stock))


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


# ------------------------------------------------------------------------------------------ the worker side
def _run_one(main, argv: list[str], stdout: str, stderr: str) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    try:
        with open(stdout, "wb") as out, open(stderr, "wb") as err:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            sys.argv = ["onmt_translate", *argv]
            try:
                main()
                code = 0
            except SystemExit as exc:
                if exc.code is None or isinstance(exc.code, int):
                    code = exc.code or 0
                else:
                    print(exc.code, file=sys.stderr)
                    code = 1
            except Exception:  # noqa: BLE001 - what the interpreter would print before exiting with 1
                traceback.print_exc()
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
    gc.collect()  # the translator never closes its -output file: collecting it does
    return code


def answers_channel():
    """The client's channel, the worker's stdout as it started; from now on file descriptor 1 is the worker's
    stderr, so that between runs anything written to stdout goes to the worker's log, never into the answers."""
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    return answers


def run_jobs(main, answers, before=None) -> None:
    """Each job the client sends on stdin (one JSON line: ``argv``, ``stdout``, ``stderr``) run by ``_run_one``,
    its exit status answered on ``answers``; ``before(job)``, if given, runs first, outside the run's
    redirection."""
    for line in sys.stdin:
        job = json.loads(line)
        if before is not None:
            before(job)
        code = _run_one(main, job["argv"], job["stdout"], job["stderr"])
        answers.write(json.dumps({"returncode": code}) + "\n")
        answers.flush()


def serve(stock: bool) -> None:
    answers = answers_channel()
    if stock:
        import argparse

        import torch

        assert os.environ.get("ONMT_OPTIMAL_DISABLE"), "the stock side runs with ONMT_OPTIMAL_DISABLE=1"
        torch.serialization.add_safe_globals([argparse.Namespace])
    from onmt.bin.translate import main

    if stock:
        assert "onmt_optimal.opennmt.patch" not in sys.modules
    else:
        import onmt.translate.translator as t

        assert hasattr(t.build_translator, "__wrapped__"), "the import hook did not patch OpenNMT-py"
    run_jobs(main, answers)


if __name__ == "__main__":
    serve(stock=sys.argv[1:] == ["--stock"])
