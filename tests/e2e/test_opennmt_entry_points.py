"""OpenNMT-py's entry points other than ``onmt_translate`` work with the plugin installed and none of its flags
as they do without it: its translation server, and the translator that ``onmt_train -valid_metrics`` builds.

Both call ``ArgumentParser.validate_translate_opts`` with placeholder files (``-src dummy_src``, ``-src dummy``):
the checks of ``onmt_translate``'s own files must not run there. Each side is its own process (the hook on, or
``ONMT_OPTIMAL_DISABLE=1``), on the session's toy model.
"""
from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import toy

pytestmark = pytest.mark.slow

INPUTS = ["a b c", "p o", "", "k e i d"]

# the translation server, started from a config as ``onmt_server`` starts it, translating INPUTS; stock
# OpenNMT-py 3.5.1 needs argparse.Namespace allowed to torch's unpickler on torch >= 2.6 (the plugin does it too)
SERVER = """
import argparse, json, sys, torch
torch.serialization.add_safe_globals([argparse.Namespace])
from onmt.translate.translation_server import TranslationServer

server = TranslationServer()
server.start(sys.argv[1])
results, scores, n_best, _, _, _ = server.run([{"id": 7, "src": line} for line in json.loads(sys.argv[2])])
print(json.dumps({"results": results, "scores": scores, "n_best": n_best}))
"""


def env(hook: bool) -> dict:
    out = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    out.pop("ONMT_OPTIMAL_DISABLE", None)
    if not hook:
        out["ONMT_OPTIMAL_DISABLE"] = "1"
    return out


def serve(config: Path, hook: bool) -> dict:
    proc = subprocess.run([sys.executable, "-c", SERVER, str(config), json.dumps(INPUTS)], env=env(hook),
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_the_translation_server_translates_as_stock(toy_model, tmp_path):
    config = tmp_path / "server.json"
    config.write_text(json.dumps({"models_root": str(toy_model.parent), "models": [
        {"id": 7, "model": toy_model.name, "timeout": -1, "on_timeout": "to_cpu", "load": True,
         "opt": {"beam_size": 3, "n_best": 2, "max_length": 30}}]}))
    ours = serve(config, hook=True)
    stock = serve(config, hook=False)
    assert ours == stock  # translations exactly, scores as the same floats
    assert ours["n_best"] == 2 and len(ours["results"]) == 2 * len(INPUTS)
    assert any(result.strip() for result in ours["results"])


def test_training_with_bleu_validation_runs(toy_model, tmp_path):
    """``-valid_metrics BLEU`` builds a translator from ``translate_opts`` parsed with ``-src dummy`` at each
    validation; with the plugin it must run as stock does."""
    data = toy_model.parent
    config = tmp_path / "train.yaml"
    text = toy.TRAIN_YAML.format(d=data, steps=4).replace("valid_steps: 10000", "valid_steps: 4")
    text = text.replace(f"save_model: {data}/model", f"save_model: {tmp_path}/model")
    text = text.replace(f"save_data: {data}/run", f"save_data: {tmp_path}/run").replace("overwrite: true\n", "")
    config.write_text(text + "valid_metrics: [BLEU]\nreport_every: 2\n")
    proc = subprocess.run([str(Path(sys.executable).parent / "onmt_train"), "-config", str(config)], env=env(True),
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "valid BLEU" in proc.stderr or "BLEU" in proc.stderr, proc.stderr[-3000:]
    assert (tmp_path / "model_step_4.pt").exists()


def test_multi_gpu_translation_builds_ours():
    """``onmt.utils.distributed.spawned_infer`` (the multi-GPU translation's worker process; it needs CUDA) calls
    its module's from-import copy of ``build_translator``: after the patch that copy is ours, the one
    ``onmt_translate`` calls, so those processes decode with the certificate too."""
    import onmt.translate.translator
    import onmt.utils.distributed

    from onmt_optimal.import_hook import ours
    from onmt_optimal.opennmt import patch

    patch.apply()
    assert ours(onmt.utils.distributed.build_translator)
    assert onmt.utils.distributed.build_translator is onmt.translate.translator.build_translator
    assert "build_translator(" in inspect.getsource(onmt.utils.distributed.spawned_infer)
