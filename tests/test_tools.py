"""The package's tools and its installation: length ratio, sweep CLI, metadata."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import toy
from onmt_optimal.evaluate import corpus_score
from onmt_optimal.length_ratio import estimate

BIN = Path(sys.executable).parent
# a minimal environment; PYTHONPATH passes through (a checkout other than the editable install's is tested so)
ENV = {"PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1", "PATH": str(BIN),
       **{k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "ATEN_CPU_CAPABILITY")}}


def test_installing_never_asks_for_torch_or_opennmt():
    """OpenNMT-py 3.5.1 pins torch<2.3: depending on it (or on torch) would let pip downgrade torch."""
    requires = [r.split(";")[0].strip().lower() for r in metadata.requires("onmt-optimal") or []]
    assert not [r for r in requires if r.startswith(("torch", "opennmt"))], requires


def test_length_ratio_corpus_and_sentence_means():
    est = estimate([2, 4, 0], [[3, 4, 5], [3, 8, 9]])  # the empty source is left out
    assert est.sentences == 2
    assert est.corpus == pytest.approx((3 + 6) / 6)
    assert est.sentence == pytest.approx((3 / 2 + 6 / 4) / 2)
    with pytest.raises(ValueError):
        estimate([0], [[1]])


def test_corpus_score_uses_every_reference_and_checks_lengths():
    hyps = ["a b c d", "e f"]
    one = corpus_score(hyps, [["a b c d", "x y"]])
    two = corpus_score(hyps, [["a b c d", "x y"], ["w w w w", "e f"]])
    assert two.bleu > one.bleu and "nrefs:2" in two.signature and "case:lc" in two.signature
    with pytest.raises(ValueError):
        corpus_score(hyps, [["only one line"]])


def test_ratio_and_sweep_commands(toy_model, tmp_path):
    toy.write_corpus(tmp_path / "dev", 12, seed=9, max_len=8)
    ratio = subprocess.run([sys.executable, "-m", "onmt_optimal", "ratio", "--src", str(tmp_path / "dev.src"),
                            "--refs", str(tmp_path / "dev.tgt"), "--", "-model", str(toy_model)],
                           capture_output=True, text=True, env=ENV)
    assert ratio.returncode == 0, ratio.stderr[-2000:]
    src = (tmp_path / "dev.src").read_text().split()
    tgt = (tmp_path / "dev.tgt").read_text().split()
    assert f"corpus {len(tgt) / len(src):.4f}" in ratio.stdout  # the toy model has no transforms
    out = tmp_path / "sweep.json"
    sweep = subprocess.run([sys.executable, "-m", "onmt_optimal", "sweep", "--src", str(tmp_path / "dev.src"),
                            "--refs", str(tmp_path / "dev.tgt"), "--beams", "1-2", "--rewards", "0,1",
                            "--out", str(out), "--", "-model", str(toy_model), "-max_length_ratio", "0"],
                           capture_output=True, text=True, env=ENV)
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    rows = json.loads(out.read_text())["rows"]
    families = {r["family"] for r in rows}
    assert families == {"default", "default_avg", "optimal", "optimal_reward", "shrinking_norm", "shrinking_reward"}
    assert {r["beam"] for r in rows} == {1, 2}
    assert all(r["sentences"] == 12 for r in rows)


def test_variants_by_name():
    """The benchmark's one factory of search variants: every suffix means what its name says, in any tool."""
    from onmt_optimal.bench.variants import VARIANTS, search
    from onmt_optimal.search.beam import AUTO
    from onmt_optimal.search.scoring import BoundedWordReward

    assert search("stock").stock and not search("stock").rules
    plain = search("optimal")
    assert not plain.stock and plain.host == AUTO and plain.beam_of_one
    assert type(plain.stopping).__name__ == type(search("optimal-core").stopping).__name__
    reward = search("optimal+r", 1.2, 1.5).scoring
    assert isinstance(reward, BoundedWordReward) and "1.2" in reward.describe()
    assert search("optimal-host").host == "cpu" and search("optimal-device").host is None
    assert not search("optimal-core").beam_of_one and search("optimal-host-core").host == "cpu"
    assert [search(v).stock for v in VARIANTS] == [True, False, False, False]
    for bad in ("fastest", "optimal-gpu", "+r"):
        with pytest.raises(ValueError, match="unknown variant"):
            search(bad)


def test_bench_refuses_an_unknown_model_in_one_line():
    from argparse import Namespace

    from onmt_optimal.bench.models import UsageError, resolve_models

    with pytest.raises(UsageError, match="^--config nope: neither a model name"):
        resolve_models(Namespace(config="nope", src=None, refs=None, data="data", unescape_moses=None))


def test_count_lines(tmp_path):
    from onmt_optimal.progress import count_lines

    (tmp_path / "a").write_text("x\ny\n")
    (tmp_path / "b").write_text("x\ny")
    (tmp_path / "c").write_text("")
    assert [count_lines(tmp_path / n) for n in "abc"] == [2, 2, 0]
    assert count_lines(tmp_path / "missing") is None and count_lines(None) is None


SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.py")))
def test_scripts_are_thin_command_lines(script):
    """A script is a command line over package modules: no edit of ``sys.path``, nothing imported from tests/,
    well under 200 lines."""
    import ast

    text = (SCRIPTS / script).read_text()
    assert len(text.splitlines()) < 200, script
    helpers = {p.stem for p in Path(__file__).parent.glob("*.py")}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            assert (node.value.id, node.attr) != ("sys", "path"), f"{script}:{node.lineno} edits sys.path"
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            assert not {n.split(".")[0] for n in names} & helpers, f"{script}:{node.lineno} imports from tests/"
