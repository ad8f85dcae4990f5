"""``make eole-model``'s conversion (``scripts/eole_model.py``) of the shipped OpenNMT-py model, and the configs
that docs/eole.md runs on it: ``eole predict -config configs/tvsub-zh-en/eole-predict.yaml`` translates raw lines as
``onmt_translate -config configs/tvsub-zh-en/optimal.yaml`` does (the same translations, steps and stop reasons;
scores to within float32 rounding), and ``eole serve -config configs/tvsub-zh-en/eole-serve.yaml`` answers the
same. ``onmt_translate`` runs in the main environment (``.venv`` beside this one): without it that comparison is
skipped.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import http_server

ROOT = Path(__file__).resolve().parents[2]
ONMT_TRANSLATE = ROOT / ".venv" / "bin" / "onmt_translate"
#: raw lines as the model reads them (word-segmented Chinese), of different lengths
LINES = ["罗斯 , 谢谢", "好 呀 罗斯 太太", "我 不 知道", "你 在 干 什么 ?", "我们 为什么 住 在 一起 ?",
         "天 啊", "太 荒唐 了", "没有 人 知道 他 为什么 要 这么 做"]
ENV = {**http_server.env(), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A copy of the repository's parts the configs name (they are relative to the repository root), with the
    eole model made as ``make eole-model`` makes it."""
    root = tmp_path_factory.mktemp("repo")
    shutil.copytree(ROOT / "configs" / "tvsub-zh-en", root / "configs" / "tvsub-zh-en")
    (root / "models").mkdir()
    (root / "models" / "tvsub-zh-en").symlink_to(ROOT / "models" / "tvsub-zh-en")
    done = subprocess.run([sys.executable, "-W", "ignore", str(ROOT / "scripts" / "eole_model.py"),
                           "models/tvsub-zh-en", "models/tvsub-zh-en-eole"], cwd=root, env=ENV,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (root / "raw.zh").write_text("\n".join(LINES) + "\n")
    return root


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def same_search(ours: list[dict], theirs: list[dict]) -> None:
    """Records equal but for the scores, which may differ by float32 rounding."""
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert {k: v for k, v in a.items() if k not in ("score", "log_prob")} == \
            {k: v for k, v in b.items() if k not in ("score", "log_prob")}
        assert a["score"] == pytest.approx(b["score"], abs=1e-4) and \
            a["log_prob"] == pytest.approx(b["log_prob"], abs=1e-4)


def test_the_converted_model_holds_eoles_files(site):
    model = site / "models" / "tvsub-zh-en-eole"
    assert sorted(os.listdir(model)) == ["config.json", "model.00.safetensors", "src.spm.model", "tgt.spm.model",
                                         "vocab.json"]
    assert json.loads((model / "config.json").read_text())["model"]["embeddings"]["position_encoding_type"] is None


@pytest.fixture(scope="module")
def predicted(site) -> tuple[list[str], list[dict]]:
    done = subprocess.run([str(Path(sys.executable).parent / "eole"), "predict", "-config",
                           "configs/tvsub-zh-en/eole-predict.yaml", "-src", "raw.zh", "-output", "eole.en",
                           "-stats_file", "eole.stats.jsonl"], cwd=site, env=ENV, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return (site / "eole.en").read_text().splitlines(), records(site / "eole.stats.jsonl")


@pytest.mark.skipif(not ONMT_TRANSLATE.exists(), reason="no main environment (.venv) with onmt_translate beside")
def test_eole_predict_translates_as_onmt_translate(site, predicted):
    done = subprocess.run([str(ONMT_TRANSLATE), "-config", str(ROOT / "configs" / "tvsub-zh-en" / "optimal.yaml"),
                           "-src", "raw.zh", "-output", "onmt.en", "-stats_file", "onmt.stats.jsonl"],
                          cwd=site, env={**ENV, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    texts, stats = predicted
    assert texts == (site / "onmt.en").read_text().splitlines()
    same_search(stats, records(site / "onmt.stats.jsonl"))


def test_eole_serve_answers_as_eole_predict(site, predicted):
    conf = yaml.safe_load((site / "configs" / "tvsub-zh-en" / "eole-serve.yaml").read_text())
    settings = {k: conf["models"][0]["config"][k] for k in ("beam_size", "max_length", "length_penalty",
                                                             "max_length_ratio")}
    port = http_server.free_port()
    server = http_server.Server([Path(sys.executable).parent / "eole", "serve", "-config",
                                 "configs/tvsub-zh-en/eole-serve.yaml", "--host", http_server.HOST, "--port", port],
                                port, "/health", site.with_name(site.name + ".serve.log"), env=ENV, cwd=site)
    try:
        answer = server.post("/infer", {"model": "tvsub-zh-en", "inputs": LINES, **settings})
    finally:
        server.stop()
    assert answer.status == 200, answer.body
    texts, stats = predicted
    assert [best[0] for best in answer.body["predictions"]] == texts
    assert answer.body["onmt_optimal"] == stats
