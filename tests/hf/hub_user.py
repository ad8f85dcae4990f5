"""What a transformers user runs with the Hub folder (``make hub``) and nothing else installed: this
file runs in ``python -S`` with the environment's site-packages alone on ``PYTHONPATH`` (no ``.pth`` file is read,
so neither the package's editable path nor its import hook), from a folder that holds no package:

    python -S hub_user.py JOB.json

``JOB.json``: ``model`` (a saved model), ``kind`` (``encoder_decoder`` or ``decoder_only``), ``inputs``
(``torch.save``d model inputs), ``methods`` and ``repos`` (name -> a local folder or a Hub id: method
repositories, copies of the folder, and model repositories, the model's files with the folder's
``custom_generate/`` beside them), ``runs`` (a list of ``[settings, never]``: ``generate``'s keyword arguments,
and whether transformers' ``early_stopping="never"`` decodes the same settings too), ``out``. transformers' modules
cache is the environment's ``HF_MODULES_CACHE``.

It writes to ``out`` (``torch.save``) what it saw, for the test to judge: whether ``onmt_optimal`` can be imported;
the number of exit handlers (``atexit``) registered before the folder was first loaded and at the end; per method
repository, the refusal without ``trust_remote_code`` and the modules cache's files after it; per model
repository, whether ``from_pretrained`` without ``trust_remote_code`` left transformers' ``generate`` in place, and
the modules cache's files after it; per run, the answers of each repository and of ``early_stopping="never"``; the
modules cache's files at the end.
"""
from __future__ import annotations

import atexit
import importlib.util
import json
import os
import sys
from pathlib import Path


def files(folder: str) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in Path(folder).rglob("*") if p.is_file())


def answers(out) -> dict:
    """The output's tensors, and its statistics as plain values (they are: JSON keeps every float exactly, and
    checks that they are)."""
    stats = {key: getattr(out, key, None) for key in ("search_stats", "rule_results")}
    return {"sequences": out.sequences, "sequences_scores": out.sequences_scores, **json.loads(json.dumps(stats))}


def main(job_file: str) -> None:
    job = json.loads(Path(job_file).read_text())
    seen = {"onmt_optimal": importlib.util.find_spec("onmt_optimal") is not None}
    cache = os.environ["HF_MODULES_CACHE"]

    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    auto = AutoModelForSeq2SeqLM if job["kind"] == "encoder_decoder" else AutoModelForCausalLM
    inputs = torch.load(job["inputs"])
    plain = auto.from_pretrained(job["model"])
    seen["atexit"] = [atexit._ncallbacks()]  # (CPython's count of registered exit handlers)

    # without trust_remote_code (not passed: transformers asks on stdin, which is empty; or False)
    first = job["runs"][0][0]
    seen["refusals"] = {}
    for name, where in job["methods"].items():
        for trust in ({}, {"trust_remote_code": False}):
            try:
                plain.generate(**inputs, custom_generate=where, **trust, **first)
                refusal = None
            except ValueError as e:
                refusal = str(e)
            seen["refusals"][name, bool(trust)] = refusal, files(cache)
    seen["untrusted"] = {}
    for name, where in job["repos"].items():
        untrusted = auto.from_pretrained(where)
        seen["untrusted"][name] = "generate" not in vars(untrusted), files(cache)

    trusted = {name: auto.from_pretrained(where, trust_remote_code=True) for name, where in job["repos"].items()}
    seen["runs"] = []
    for settings, never in job["runs"]:
        run = {name: answers(plain.generate(**inputs, custom_generate=where, trust_remote_code=True, **settings))
               for name, where in job["methods"].items()}
        for name, model in trusted.items():
            run[name] = answers(model.generate(**inputs, **settings))
        if never:
            stock = {k: v for k, v in settings.items() if k != "stopping"}
            run["never"] = answers(plain.generate(**inputs, early_stopping="never", output_scores=True, **stock))
        seen["runs"].append(run)
    seen["cache"] = files(cache)
    seen["atexit"].append(atexit._ncallbacks())
    torch.save(seen, job["out"])


if __name__ == "__main__":
    main(sys.argv[1])
