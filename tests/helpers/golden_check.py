"""The golden check: decode the same jobs with two source trees of the project and compare every file.

Each side imports ``onmt_optimal`` from its own tree (``PYTHONPATH=<tree>``, which comes before the editable
install in site-packages, so the import hook is that tree's too; checked before any decode): the working tree
and a revision unpacked with ``git archive REV onmt_optimal`` (``base_tree``). Everything else is shared: the
harness (this module and the workers, from the working tree), the models and inputs (``golden_models``), the
jobs (``golden_jobs``). Per toolkit, one long-lived worker a side runs that side's jobs in order
(``translate_worker``, ``predict_worker``, ``generate_worker``, ``vllm_worker``), each run with its own stdout,
stderr and exit status; the two sides run at once, one thread each, one torch thread per worker.

Per job a side keeps, under its run folder: what the run wrote (``.out``, ``.stats.jsonl``), its exit status
(``.exit``) and its stdout then stderr (``.log``), in which exactly this is normalised (``normalise``):

* the logger's time stamp ``[YYYY-MM-DD HH:MM:SS,mmm LEVEL]`` -> ``[<time> LEVEL]``;
* the number after a timing label (OpenNMT-py's ``Time w/o python interpreter load/terminate:``, ``Total
  translation time (s):``, ``Average translation time (ms):``, ``Tokens per second:``; eole's ``Build and loading
  model took``) -> ``<t>``;
* a progress bar's times and rate (tqdm's ``[00:00<00:00, 4932.61it/s]``, transformers' ``Loading weights``)
  -> ``[<t>]``;
* the side's package folder ``<tree>/onmt_optimal`` (in a traceback's file names) -> ``<tree>/onmt_optimal``, and
  the line number of a traceback frame in that folder -> ``line <n>`` (a toolkit's own traceback that passes
  through a patched function names the function's line, which any edit above it moves; the file, the function
  and the source line shown stay compared).

Outputs and statistics files are compared byte for byte, unnormalised. Warnings are off in the workers
(``PYTHONWARNINGS=ignore``), as in the tests: they name source lines, which a refactor moves.

``check`` returns the differing files; ``main`` is the command line, ``make golden BASE=<rev>``:

    PYTHONPATH=tests:. .venv/bin/python -m helpers.golden_check --base main

(a command over the tests' helpers, so it lives beside them: ``scripts/`` import the package alone).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from helpers import generate_worker, golden_jobs, golden_models, predict_worker, translate_worker, vllm_worker

ROOT = Path(__file__).resolve().parents[2]
WORKERS = {"opennmt": translate_worker.Worker, "eole": predict_worker.Worker, "hf": generate_worker.Worker,
           "vllm": vllm_worker.Worker}
TOOLKITS = tuple(WORKERS)

_STAMP = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ", re.M)
_TIMING = re.compile(r"((?:Time w/o python interpreter load/terminate|Total translation time \(s\)"
                     r"|Average translation time \(ms\)|Tokens per second|Build and loading model took)"
                     r"[:=]?\s*)[-+0-9.e]+")
_PROGRESS = re.compile(r"\[\d+:\d\d<[^\]\n]*\]")  # a tqdm bar's [elapsed<left, rate]
_OUR_FRAME = re.compile(r'(File "<tree>/onmt_optimal/[^"]+", line )\d+')


def normalise(text: str, tree: Path) -> str:
    """``text`` with time stamps, timings and ``tree`` replaced (the module docstring lists exactly what)."""
    text = _STAMP.sub("[<time> ", text)
    text = _TIMING.sub(lambda m: m.group(1) + "<t>", text)
    text = _PROGRESS.sub("[<t>]", text)
    package = tree / "onmt_optimal"
    text = text.replace(str(package), "<tree>/onmt_optimal")
    return _OUR_FRAME.sub(r"\1<n>", text)


@dataclass
class Result:
    differ: list[str]
    compared: int

    def line(self) -> str:
        return f"golden-check: {len(self.differ)} files differ (of {self.compared} compared)"


def base_tree(root: Path, rev: str, dest: Path) -> Path:
    """``dest`` holding ``rev``'s ``onmt_optimal`` package (``git archive``), for ``PYTHONPATH``."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", rev, "onmt_optimal"],
                             capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def is_revision(root: Path, rev: str) -> bool:
    return subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                          capture_output=True).returncode == 0


def _env(tree: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore",
               PYTHONHASHSEED="0")
    env.pop("ONMT_OPTIMAL_DISABLE", None)
    return env


def assert_imports_from(python: str, tree: Path) -> None:
    """Fails unless ``python`` with the side's environment imports ``onmt_optimal`` from ``tree``."""
    done = subprocess.run([python, "-c", "import onmt_optimal; print(onmt_optimal.__file__)"], env=_env(tree),
                          capture_output=True, text=True)
    where = Path(done.stdout.strip()).resolve() if done.returncode == 0 else None
    if where != (tree / "onmt_optimal" / "__init__.py").resolve():
        raise SystemExit(f"golden-check: {python} imports onmt_optimal from {where}, not from {tree}")


def _worker(toolkit: str, python: str, tree: Path, cwd: Path, logs: Path):
    class SideWorker(WORKERS[toolkit]):
        def _start(self):
            self.proc = subprocess.Popen([python, str(self.script), "--ours"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, env=self.env, text=True, cwd=cwd,
                                         stderr=open(self.workdir / "worker.log", "a"))

    return SideWorker(logs, stock=False, env=_env(tree))


class _Side(threading.Thread):
    """One side: its jobs in order, one worker per toolkit; ``stop`` ends it between runs."""

    def __init__(self, name: str, tree: Path, jobs: dict, pythons: dict, run_dir: Path, stop: threading.Event):
        super().__init__(name=f"golden-{name}", daemon=True)
        self.tree, self.jobs, self.pythons, self.stop = tree, jobs, pythons, stop
        self.out, self.logs = run_dir / name, run_dir / "workers" / name
        self.worker = None
        self.error: BaseException | None = None

    def run(self):
        try:
            for toolkit, jobs in self.jobs.items():
                self.worker = _worker(toolkit, self.pythons[toolkit], self.tree, self.out, self.logs / toolkit)
                try:
                    for job in jobs:
                        if self.stop.is_set():
                            return
                        self._run(job)
                finally:
                    self.worker.close()
        except BaseException as exc:  # noqa: BLE001 - reported by check() in the main thread
            self.error = exc

    def _run(self, job: golden_jobs.Job):
        target = self.out / job.key
        target.parent.mkdir(parents=True, exist_ok=True)
        done = self.worker.run(*job.args())
        log = f"stdout:\n{done.stdout}stderr:\n{done.stderr}"
        Path(f"{target}.log").write_text(normalise(log, self.tree))
        Path(f"{target}.exit").write_text(f"{done.returncode}\n")

    def kill(self):
        worker = self.worker
        if worker is not None and worker.proc is not None and worker.proc.poll() is None:
            worker.proc.kill()


def compare(a: Path, b: Path) -> Result:
    """Every file under ``a`` or ``b``, compared byte for byte; a file on one side only differs."""
    files = sorted({p.relative_to(a) for p in a.rglob("*") if p.is_file()}
                   | {p.relative_to(b) for p in b.rglob("*") if p.is_file()})
    differ = [str(f) for f in files
              if not ((a / f).is_file() and (b / f).is_file() and (a / f).read_bytes() == (b / f).read_bytes())]
    return Result(differ, len(files))


def check(base: Path, tree: Path, jobs: dict, pythons: dict, run_dir: Path) -> Result:
    """Run ``jobs`` (toolkit -> list of ``Job``) with ``base``'s and ``tree``'s package, at once; compare."""
    for side in (base, tree):
        for python in {pythons[toolkit] for toolkit in jobs}:
            assert_imports_from(python, side)
    stop = threading.Event()
    sides = [_Side("base", base, jobs, pythons, run_dir, stop), _Side("tree", tree, jobs, pythons, run_dir, stop)]
    try:
        for side in sides:
            side.start()
        for side in sides:
            while side.is_alive():
                side.join(0.5)
    finally:
        stop.set()
        for side in sides:
            side.kill()
            side.join()
    for side in sides:
        if side.error is not None:
            raise side.error
    return compare(run_dir / "base", run_dir / "tree")


def _say(message: str) -> None:
    print(f"golden-check: {message}", file=sys.stderr, flush=True)


def prepare(root: Path, data: Path, toolkits: list[str], pythons: dict, models: Path) -> dict:
    """The jobs of the full check: the shipped models and every toy model, trained into ``models``."""
    missing = [str(data / golden_jobs.DEV[m]) for m in golden_jobs.SHIPPED
               if not (data / golden_jobs.DEV[m]).is_file()]
    if "opennmt" in toolkits and missing:
        raise SystemExit(f"golden-check: no dev data: {', '.join(missing)} (set DATA=...)")
    models.mkdir(parents=True)
    src = golden_models.toy_source(models)
    trained = golden_models.train_all(root, toolkits, pythons, models)
    jobs: dict = {}
    if "opennmt" in toolkits:
        jobs["opennmt"] = []
        for name in golden_jobs.SHIPPED:
            dev = golden_jobs.slice_of(data / golden_jobs.DEV[name], models / f"{name}.src")
            config = golden_jobs.shipped_config(root, name, models / f"{name}.yaml")
            jobs["opennmt"] += golden_jobs.opennmt_jobs(config, name, dev)
        jobs["opennmt"] += golden_jobs.toy_opennmt_jobs(trained["opennmt"], src)
    if "eole" in toolkits:
        jobs["eole"] = [job for kind in golden_models.TOY_KINDS
                        for job in golden_jobs.eole_jobs(trained["eole", kind], f"toy-{kind}", src)]
    if "hf" in toolkits:
        jobs["hf"] = [job for kind in golden_models.TOY_KINDS
                      for job in golden_jobs.hf_jobs(trained["hf", kind], f"toy-{kind}", kind, src)]
    if "vllm" in toolkits:
        jobs["vllm"] = golden_jobs.vllm_jobs(trained["vllm"], "toy", golden_models.vllm_source(src, models))
    return jobs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.golden_check",
        description="Decode the shipped and toy models with the working tree and with BASE under every flag "
                    "set; compare outputs, statistics, logs and exit statuses; exit 1 if any file differs.")
    parser.add_argument("--base", default="HEAD", help="the git revision to compare the working tree with")
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the data folder")
    parser.add_argument("--toolkits", default=",".join(TOOLKITS), help="a subset of opennmt,eole,hf,vllm")
    parser.add_argument("--eole-python", default=str(ROOT / ".venv-eole" / "bin" / "python"),
                        help="the Python of eole's environment")
    parser.add_argument("--vllm-python", default=str(ROOT / ".venv-vllm" / "bin" / "python"),
                        help="the Python of vLLM's environment (vLLM is skipped when it is absent)")
    parser.add_argument("--keep", metavar="DIR", help="keep the run (both sides' files) in DIR, a new folder")
    args = parser.parse_args(argv)
    toolkits = [t for t in args.toolkits.split(",") if t]
    unknown = sorted(set(toolkits) - set(TOOLKITS))
    if unknown or not toolkits:
        parser.error(f"--toolkits: unknown {', '.join(unknown) or '(none given)'}; choose from {', '.join(TOOLKITS)}")
    # absolute (the workers run in the sides' folders), not resolved (a venv's python is a link into it)
    pythons = {"opennmt": sys.executable, "hf": sys.executable, "eole": os.path.abspath(args.eole_python),
               "vllm": os.path.abspath(args.vllm_python)}
    if "eole" in toolkits and not Path(args.eole_python).is_file():
        parser.error(f"--eole-python: no {args.eole_python} (make setup-eole, or --toolkits opennmt,hf)")
    if "vllm" in toolkits and not Path(args.vllm_python).is_file():
        _say(f"vllm skipped: no {args.vllm_python} (make setup-vllm, or --vllm-python)")
        toolkits.remove("vllm")
        if not toolkits:
            parser.error("--toolkits: only vllm, whose Python is absent")
    if not is_revision(ROOT, args.base):
        parser.error(f"--base: {args.base!r} is not a git revision of {ROOT}")
    if args.keep and Path(args.keep).exists():
        parser.error(f"--keep: {args.keep} exists")
    started = time.monotonic()
    run_dir = Path(args.keep).resolve() if args.keep else Path(tempfile.mkdtemp(prefix="golden-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        base = base_tree(ROOT, args.base, run_dir / "base-src")
        _say(f"base {args.base} against the working tree {ROOT}; preparing the models")
        jobs = prepare(ROOT, Path(os.path.abspath(args.data)), toolkits, pythons, run_dir / "models")
        count = sum(len(j) for j in jobs.values())
        _say(f"models ready after {time.monotonic() - started:.0f} s; {count} runs a side")
        result = check(base, ROOT, {t: jobs[t] for t in toolkits}, pythons, run_dir)
    except KeyboardInterrupt:
        _say("interrupted")
        return 130
    except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:  # a training or set-up failure
        _say(f"error: {exc}")
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(run_dir, ignore_errors=True)
    print(result.line())
    for name in result.differ:
        print(f"  {name}")
    _say(f"{time.monotonic() - started:.0f} s" + (f"; the runs are in {run_dir}" if args.keep else ""))
    return 1 if result.differ else 0


if __name__ == "__main__":
    sys.exit(main())
