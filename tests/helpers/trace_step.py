"""How directly a decoding step reaches the search core: the package's files one step runs through, traced.

``python -m helpers.trace_step`` (``PYTHONPATH=tests:.``) decodes toy source lines with beam 5, batches of 4 and
``stopping optimal`` through each toolkit's real entry point (``onmt_translate``'s ``main``, ``eole predict``'s
``main`` in eole's environment, transformers' ``generate(custom_generate=optimal_beam_search)``), on the tests'
toy models (``toy``, ``toy_eole``, ``toy_hf``'s encoder-decoders, trained once into ``--models`` and kept), with
``sys.setprofile`` on, and prints per toolkit

    <toolkit>: <steps> steps, <files> files per step, <changes> changes of file per step

A step begins where the decode loop calls the beam's ``advance`` (a package function of that name that takes
``log_probs``, not inside another one) and runs until the next such call or until the loop's frame returns.
At every call and return of a Python function the trace notes the innermost frame on the stack that belongs to
the package (its file, relative to the package); *files per step* counts the distinct files a step notes,
*changes of file* how often the noted file differs from the one noted before it within the step. Both are
averaged over the steps. ``--path`` also prints the files of the step with the most changes, each with the
functions entered in it, in the order the step reaches them, for the most common path of a step and
for the longest one.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOLKITS = ("opennmt", "eole", "hf")
BEAM, BATCH, LINES = 5, 4, 20


class Tracer:
    """The ``sys.setprofile`` function: per step, the sequence of innermost package files and their functions."""

    def __init__(self, package: Path):
        self.package = str(package) + os.sep
        self.cache: dict = {}
        self.steps: list[list[tuple[str, str]]] = []  # per step, (file, function entered or "") per event
        self.loop = None  # the decode loop's frame of the current step

    def _file(self, filename: str):
        rel = self.cache.get(filename, False)
        if rel is False:
            rel = self.cache[filename] = filename[len(self.package):] if filename.startswith(self.package) else None
        return rel

    def _innermost(self, frame):
        while frame is not None:
            rel = self._file(frame.f_code.co_filename)
            if rel is not None:
                return rel, frame
            frame = frame.f_back
        return None, None

    def _is_entry(self, frame) -> bool:
        code = frame.f_code
        if code.co_name != "advance" or "log_probs" not in code.co_varnames[:code.co_argcount]:
            return False
        if self._file(code.co_filename) is None:
            return False
        caller = frame.f_back
        while caller is not None:  # not inside another step's advance (a subclass's calling its base's)
            if caller.f_code.co_name == "advance" and self._file(caller.f_code.co_filename) is not None:
                return False
            caller = caller.f_back
        return True

    def __call__(self, frame, event, arg):
        if event == "call":
            if self._is_entry(frame):
                self.loop = frame.f_back
                self.steps.append([])
            if self.loop is None:
                return
            rel, inner = self._innermost(frame)
            if rel is not None:
                self.steps[-1].append((rel, frame.f_code.co_name if inner is frame else ""))
        elif event == "return":
            if self.loop is None:
                return
            if frame is self.loop:
                self.loop = None
                return
            rel, _ = self._innermost(frame.f_back)
            if rel is not None:
                self.steps[-1].append((rel, ""))

    def figures(self) -> dict:
        files = [len({rel for rel, _ in step}) for step in self.steps]
        changes = [_changes(step) for step in self.steps]
        paths = [_path(step) for step in self.steps]
        kinds = Counter(json.dumps(path) for path in paths)
        return {"steps": len(self.steps), "files": sum(files) / max(len(files), 1),
                "changes": sum(changes) / max(len(changes), 1), "most": max(changes, default=0),
                "path": json.loads(kinds.most_common(1)[0][0]) if kinds else [],
                "longest": max(paths, key=len) if paths else []}


def _changes(step: list) -> int:
    return sum(1 for (a, _), (b, _) in zip(step, step[1:]) if a != b)


def _path(step: list) -> list[list]:
    """The step's files in the order it reaches them, each with the functions entered there."""
    out: list[list] = []
    for rel, function in step:
        if not out or out[-1][0] != rel:
            out.append([rel, []])
        if function and function not in out[-1][1]:
            out[-1][1].append(function)
    return out


# ------------------------------------------------------------------------------------------ one toolkit, traced
def _traced(run) -> dict:
    import onmt_optimal

    tracer = Tracer(Path(onmt_optimal.__file__).resolve().parent)
    sys.setprofile(tracer)
    try:
        run()
    finally:
        sys.setprofile(None)
    return tracer.figures()


def _cli(main, argv: list[str]):
    def run():
        sys.argv = argv
        try:
            main()
        except SystemExit as exc:
            if exc.code:
                raise
    return run


def child(toolkit: str, model: str, src: str, out: str) -> None:
    import torch

    torch.set_num_threads(1)
    work = tempfile.mkdtemp(prefix="trace-step-")
    flags = ["-beam_size", str(BEAM), "-batch_size", str(BATCH), "-stopping", "optimal"]
    if toolkit == "opennmt":
        from onmt.bin.translate import main

        run = _cli(main, ["onmt_translate", "-model", model, "-src", src, "-output", f"{work}/out.txt", *flags])
    elif toolkit == "eole":
        from eole.bin.main import main

        run = _cli(main, ["eole", "predict", "-model_path", model, "-src", src, "-output", f"{work}/out.txt",
                          "-max_length", "30", *flags])
    else:
        from transformers import AutoModelForSeq2SeqLM, PreTrainedTokenizerFast

        from onmt_optimal.hf import optimal_beam_search

        tokenizer = PreTrainedTokenizerFast.from_pretrained(model)
        loaded = AutoModelForSeq2SeqLM.from_pretrained(model).eval()
        lines = Path(src).read_text().splitlines()

        def run():
            with torch.no_grad():
                for start in range(0, len(lines), BATCH):
                    inputs = dict(tokenizer(lines[start:start + BATCH], return_tensors="pt", padding=True))
                    loaded.generate(**inputs, num_beams=BEAM, max_new_tokens=30, stopping="optimal",
                                    custom_generate=optimal_beam_search)
    Path(out).write_text(json.dumps(_traced(run)))


# ------------------------------------------------------------------------------------------ the command
def _model(toolkit: str, models: Path, pythons: dict) -> Path:
    """The toolkit's toy encoder-decoder, trained into ``models`` unless it is there from an earlier run."""
    from helpers import golden_models, toy

    if toolkit == "opennmt":
        done = models / "opennmt" / "model_step_300.pt"
        return done if done.is_file() else toy.train_toy_model(models / "opennmt", steps=300)
    folder = models / toolkit
    done = folder / "model" if toolkit == "eole" else folder
    if (done / "config.json").is_file():
        return done
    train = golden_models.train_eole_toy if toolkit == "eole" else golden_models.train_hf_toy
    return train(pythons[toolkit], "encoder_decoder", folder, ROOT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.trace_step", description=__doc__.split("\n\n")[0])
    parser.add_argument("--toolkits", default=",".join(TOOLKITS), help="a subset of opennmt,eole,hf")
    parser.add_argument("--models", default=str(Path(tempfile.gettempdir()) / "onmt-optimal-trace-models"),
                        help="where the toy models are trained and kept")
    parser.add_argument("--eole-python", default=str(ROOT / ".venv-eole" / "bin" / "python"))
    parser.add_argument("--path", action="store_true", help="print the most common and the longest path of a step")
    parser.add_argument("--child", nargs=4, metavar=("TOOLKIT", "MODEL", "SRC", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    from helpers import toy

    pythons = {"opennmt": sys.executable, "hf": sys.executable, "eole": args.eole_python}
    models = Path(args.models)
    models.mkdir(parents=True, exist_ok=True)
    toy.write_corpus(models / "trace", 40, seed=3, max_len=12)
    src = models / "trace.lines"
    src.write_text("".join(open(f"{models}/trace.src").readlines()[:LINES]))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), str(ROOT)]), OMP_NUM_THREADS="1",
               PYTHONWARNINGS="ignore")
    env.pop("ONMT_OPTIMAL_DISABLE", None)
    for toolkit in args.toolkits.split(","):
        model = _model(toolkit, models, pythons)
        out = models / f"{toolkit}.trace.json"
        done = subprocess.run([pythons[toolkit], "-m", "helpers.trace_step", "--child", toolkit, str(model),
                               str(src), str(out)], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{toolkit}: the traced decode failed: {done.stderr.strip()[-2000:]}", file=sys.stderr)
            return 1
        figures = json.loads(out.read_text())
        print(f"{toolkit}: {figures['steps']} steps, {figures['files']:.1f} files per step, "
              f"{figures['changes']:.1f} changes of file per step (at most {figures['most']})")
        if args.path:
            for name in ("path", "longest"):
                print(f"  the {'most common' if name == 'path' else 'longest'} path:")
                for rel, functions in figures[name]:
                    print(f"    {rel}: {', '.join(functions)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
