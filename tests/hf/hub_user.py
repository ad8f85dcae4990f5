"""What a transformers user runs with the Hub folder ``hub/optimal-beam-search`` and nothing else installed: this
file runs in ``python -S`` with the environment's site-packages alone on ``PYTHONPATH`` (no ``.pth`` file is read,
so neither the package's editable path nor its import hook), from a folder that holds no package:

    python -S hub_user.py JOB.json

``JOB.json``: ``model`` (a saved model), ``repo`` (the same model's files with the folder's ``custom_generate/``
beside them: a model repository), ``method`` (a copy of the folder: a method repository), ``kind``
(``encoder_decoder`` or ``decoder_only``), ``inputs`` (``torch.save``d model inputs), ``runs`` (a list of
``[settings, never]``: ``generate`` keyword arguments, and whether transformers' ``early_stopping="never"``
decodes the same settings too), ``out``. transformers' modules cache is ``HF_MODULES_CACHE`` of the environment.

It writes to ``out`` (``torch.save``) what it saw, for the test to judge: whether ``onmt_optimal`` can be imported,
the refusals without ``trust_remote_code`` and the files of the modules cache after each, the files transformers
copied, and per run the answers of both layouts and of ``early_stopping="never"``.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path


def files(folder: str) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*") if p.is_file())


def answers(out) -> dict:
    """The output's tensors, and its statistics as plain values (their names of stop reasons are the copy's
    ``StopReason``, a ``str``; JSON keeps every float exactly)."""
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

    # without trust_remote_code: the method repository is refused, the model repository loads as stock
    first = job["runs"][0][0]
    try:
        plain.generate(**inputs, custom_generate=job["method"], **first)
        seen["method_refusal"] = None
    except ValueError as e:
        seen["method_refusal"] = str(e)
    seen["cache_after_method_refusal"] = files(cache)
    untrusted = auto.from_pretrained(job["repo"])
    seen["untrusted_generate_is_stock"] = "generate" not in vars(untrusted)
    seen["cache_after_untrusted_repo"] = files(cache)

    trusted = auto.from_pretrained(job["repo"], trust_remote_code=True)
    seen["runs"] = []
    for settings, never in job["runs"]:
        run = {"method": answers(plain.generate(**inputs, custom_generate=job["method"], trust_remote_code=True,
                                                **settings)),
               "repo": answers(trusted.generate(**inputs, **settings))}
        if never:
            stock = {k: v for k, v in settings.items() if k != "stopping"}
            run["never"] = answers(plain.generate(**inputs, early_stopping="never", output_scores=True, **stock))
        seen["runs"].append(run)
    seen["cache"] = files(cache)
    seen["modules"] = sorted(name for name in sys.modules if name.startswith("transformers_modules"))
    torch.save(seen, job["out"])


if __name__ == "__main__":
    main(sys.argv[1])
