"""``python -m onmt_optimal sweep --tokenizer MODEL_DIR``: the b x r sweep of a transformers checkpoint, run on the
toy models saved to a folder (a tiny Marian and a tiny GPT-2, ``toy_hf``): the table is the JSON's rows, the best
row has the highest BLEU, the keyword arguments written decode the dev set to that row's BLEU, the figure is a
PNG, and a missing folder is one line with status 2."""
from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys

import pytest
import torch

from helpers import toy, toy_hf
from onmt_optimal.hf import optimal_beam_search
from onmt_optimal.tools.evaluate import corpus_score

# every test starts a process
pytestmark = pytest.mark.slow

BEAMS, REWARDS, MAX_NEW = [1, 3], [0.0, 1.0], 24


def _dev(tmp_path, kind: str) -> tuple[list[str], list[str]]:
    letters = toy_hf.sources(8, seed=5)
    src = [f"{line} =" for line in letters] if kind == "decoder_only" else letters
    ref = [" ".join(toy.target_of(line.split())) for line in letters]
    (tmp_path / "dev.src").write_text("".join(line + "\n" for line in src))
    (tmp_path / "dev.ref").write_text("".join(line + "\n" for line in ref))
    return src, ref


def _table_rows(stdout: str) -> list[list[str]]:
    lines = stdout.splitlines()
    assert lines[0].split() == ["decoder", "b", "r", "BLEU", "len", "ratio", "steps"], stdout
    end = next(i for i, line in enumerate(lines) if line.startswith("best: "))
    return [line.split() for line in lines[1:end]]


def test_sweep_of_a_transformers_checkpoint(trained, tmp_path):
    kind = trained.kind
    trained.model.save_pretrained(tmp_path / "model")
    trained.tokenizer.save_pretrained(tmp_path / "model")
    src, ref = _dev(tmp_path, kind)
    plot = importlib.util.find_spec("matplotlib") is not None
    command = [sys.executable, "-m", "onmt_optimal", "sweep", "--tokenizer", tmp_path / "model",
               "--src", tmp_path / "dev.src", "--refs", tmp_path / "dev.ref", "--beams", ",".join(map(str, BEAMS)),
               "--rewards", ",".join(map(str, REWARDS)), "--max-new-tokens", str(MAX_NEW),
               "--out", tmp_path / "sweep.json", "--kwargs", tmp_path / "best.txt"]
    if plot:
        command += ["--plot", tmp_path / "sweep.png"]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "sweep.json").read_text())
    rows = result["rows"]

    # a baseline row and a row per reward at every beam size, in that order; the table shows each
    assert [(r["family"], r["beam"], r["reward"]) for r in rows] == [
        (family, b, r) for b in BEAMS for family, r in [("default", None)] + [("optimal_reward", x) for x in REWARDS]]
    table = _table_rows(done.stdout)
    assert len(table) == len(rows)
    for cells, row in zip(table, rows):
        assert cells == [row["family"], str(row["beam"]), "-" if row["reward"] is None else f"{row['reward']:g}",
                         f"{row['bleu']:.2f}", f"{row['length_ratio']:.3f}", f"{row['mean_steps']:.2f}"]
        assert row["sentences"] == len(src) and sum(row["stop_reasons"].values()) == len(src)
    certified = [r for r in rows if r["family"] == "optimal_reward"]
    assert all(set(r["stop_reasons"]) <= {"certificate", "all_finished", "max_length"} for r in certified)

    # the best row has the highest BLEU; the ratio was estimated as ``ratio --tokenizer`` does
    best = rows[result["best"]["row"]]
    assert best["bleu"] == max(r["bleu"] for r in rows)
    ratio = subprocess.run([sys.executable, "-m", "onmt_optimal", "ratio", "--src", tmp_path / "dev.src", "--refs",
                            tmp_path / "dev.ref", "--tokenizer", tmp_path / "model"], capture_output=True, text=True)
    assert ratio.stdout.startswith(f"length_ratio={result['meta']['ratio']:.4f}  ")

    # the keyword arguments line parses, names the best row, and decodes the dev set to its BLEU
    lines = (tmp_path / "best.txt").read_text().splitlines()
    assert lines[0].startswith("# best on the sweep's dev set: ") and len(lines) == 2
    assert lines[1] in done.stdout
    call = ast.parse(f"f({lines[1]})", mode="eval").body
    kwargs = {k.arg: (k.value.id if isinstance(k.value, ast.Name) else ast.literal_eval(k.value))
              for k in call.keywords}
    assert kwargs == result["best"]["settings"] and kwargs["num_beams"] == best["beam"]
    settings = dict(kwargs)
    assert settings.pop("custom_generate") == "optimal_beam_search"
    assert settings["max_new_tokens"] == MAX_NEW
    if best["family"] == "default":
        assert settings["stopping"] == "default"
    else:
        assert settings["stopping"] == "optimal" and settings["length_reward"] == best["reward"]
        assert settings["length_ratio"] == round(result["meta"]["ratio"], 4)
    tok = trained.tokenizer
    with torch.no_grad():
        out = trained.model.generate(**trained.tokenizer(src, return_tensors="pt", padding=True),
                                     custom_generate=optimal_beam_search, return_dict_in_generate=True, **settings)
    hyps = [h.strip() for h in tok.batch_decode([s["tokens"] for s in out.search_stats], skip_special_tokens=True)]
    assert round(corpus_score(hyps, [ref]).bleu, 4) == pytest.approx(best["bleu"], abs=0.02)

    if plot:
        assert (tmp_path / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sweep_refusals_are_one_line(tmp_path):
    (tmp_path / "dev.src").write_text("a b\n")
    (tmp_path / "dev.ref").write_text("A B\n")
    base = [sys.executable, "-m", "onmt_optimal", "sweep", "--src", tmp_path / "dev.src", "--refs",
            tmp_path / "dev.ref", "--out", tmp_path / "sweep.json", "--tokenizer"]
    done = subprocess.run(base + [tmp_path / "missing"], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.strip() == (
        f"onmt-optimal sweep: error: --tokenizer {tmp_path / 'missing'}: no such folder; give the checkpoint's "
        "folder"), done.stderr[-3000:]
    (tmp_path / "empty").mkdir()
    done = subprocess.run(base + [tmp_path / "empty"], capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr[-3000:]
    assert done.stderr.startswith(f"onmt-optimal sweep: error: --tokenizer {tmp_path / 'empty'}: no model loads ")
    done = subprocess.run(base + [tmp_path / "empty", "--beams", "0"], capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr[-3000:]
    assert not (tmp_path / "sweep.json").exists()
