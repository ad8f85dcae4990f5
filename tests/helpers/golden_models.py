"""The models and inputs the golden check decodes, prepared once and shared by both sides.

* the shipped OpenNMT-py models (``models/<name>``), each on a slice of its dev set read from the data folder
  (``golden_jobs.slice_of``: 28 dev lines, an empty line, the longest dev line);
* the tests' toy models, trained here with the working tree's helpers and the toolkits' own training commands
  (deterministic: fixed seeds, one thread): OpenNMT-py's (``toy``), eole's encoder-decoder and decoder-only
  (``toy_eole``, in eole's environment) and transformers' Marian and GPT-2 (``toy_hf``, saved with
  ``save_pretrained``), each on a slice of 40 toy sources made the same way; and vLLM's GPT-2 (``toy_vllm``,
  in vLLM's environment) on the first lines of that slice (``vllm_source``).

``python -m helpers.golden_models eole|hf|vllm KIND DIR`` trains one eole, transformers or vLLM toy model into
``DIR`` (the check starts it in the matching environment).
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from helpers import golden_jobs, toy

TOY_KINDS = ("encoder_decoder", "decoder_only")


def toy_source(folder: Path) -> Path:
    """``folder/toy.src``: 30 toy source lines (letters ``a..p``): 28 drawn lines, an empty line, the longest
    drawn line."""
    toy.write_corpus(folder / "drawn", 40, seed=3, max_len=14)
    return golden_jobs.slice_of(folder / "drawn.src", folder / "toy.src")


def vllm_source(src: Path, folder: Path) -> Path:
    """``folder/vllm.src``: the toy slice cut to ``golden_jobs.VLLM_PROMPTS`` lines the same way (its first
    lines, an empty line, its longest line)."""
    return golden_jobs.slice_of(src, folder / "vllm.src", golden_jobs.VLLM_PROMPTS)


def train_opennmt_toy(workdir: Path) -> Path:
    return toy.train_toy_model(workdir, steps=300)


def _train_in(python: str, what: str, kind: str, workdir: Path, root: Path) -> Path:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root / "tests"), str(root)]), OMP_NUM_THREADS="1",
               PYTHONWARNINGS="ignore", PYTHONHASHSEED="0")
    env.pop("ONMT_OPTIMAL_DISABLE", None)
    done = subprocess.run([python, "-m", "helpers.golden_models", what, kind, str(workdir)], env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"training the {what} {kind} toy model failed: {done.stderr.strip()[-2000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def train_eole_toy(python: str, kind: str, workdir: Path, root: Path) -> Path:
    return _train_in(python, "eole", kind, workdir, root)


def train_hf_toy(python: str, kind: str, workdir: Path, root: Path) -> Path:
    return _train_in(python, "hf", kind, workdir, root)


def train_vllm_toy(python: str, workdir: Path, root: Path) -> Path:
    return _train_in(python, "vllm", "decoder_only", workdir, root)


def train_all(root: Path, toolkits: list[str], pythons: dict, models: Path) -> dict:
    """Every toy model of ``toolkits`` into ``models``, in two lanes at once (OpenNMT-py's then eole's;
    transformers' then vLLM's): ``"opennmt"`` -> its checkpoint, ``("eole", kind)``, ``("hf", kind)`` and
    ``"vllm"`` -> a model folder."""
    trained: dict = {}

    def first_lane():
        if "opennmt" in toolkits:
            trained["opennmt"] = train_opennmt_toy(models / "opennmt-toy")
        if "eole" in toolkits:
            for kind in TOY_KINDS:
                trained["eole", kind] = train_eole_toy(pythons["eole"], kind, models / f"eole-{kind}", root)

    def second_lane():
        if "hf" in toolkits:
            for kind in TOY_KINDS:
                trained["hf", kind] = train_hf_toy(pythons["hf"], kind, models / f"hf-{kind}", root)
        if "vllm" in toolkits:
            trained["vllm"] = train_vllm_toy(pythons["vllm"], models / "vllm", root)

    errors: list = []

    def guarded(lane):
        try:
            lane()
        except BaseException as exc:  # noqa: BLE001 - raised again in the calling thread
            errors.append(exc)

    lanes = [threading.Thread(target=guarded, args=(lane,), daemon=True) for lane in (first_lane, second_lane)]
    for lane in lanes:
        lane.start()
    for lane in lanes:
        while lane.is_alive():  # a short join, so that Ctrl-C reaches the calling thread
            lane.join(0.5)
    if errors:
        raise errors[0]
    return trained


def _main(what: str, kind: str, workdir: Path) -> None:
    if what == "eole":
        from helpers import toy_eole

        print(toy_eole.train(workdir, kind))
    elif what == "vllm":
        import torch

        from helpers import toy_vllm

        torch.set_num_threads(1)
        toy_vllm.train(workdir)
        print(workdir)
    else:
        import torch

        from helpers import toy_hf

        torch.set_num_threads(1)
        trained = toy_hf.train(kind)
        trained.model.save_pretrained(workdir)
        trained.tokenizer.save_pretrained(workdir)
        print(workdir)


if __name__ == "__main__":
    _main(sys.argv[1], sys.argv[2], Path(sys.argv[3]))
