"""``python -m onmt_optimal sweep --vllm MODEL``: docs/vllm.md's command, run as written on the toy GPT-2 trained in
the run (``MODEL`` its folder; the CPU build's flags its comment names, where torch sees no CUDA device), on a dev
set of its task: the table is the JSON's rows, vLLM's own beam search gives the baseline rows (the BLEU of
``llm.beam_search``), the best row has the highest BLEU, and the call ``--kwargs`` writes decodes the dev set to
that row's BLEU on the ``llm`` engine (the same settings as the command's). A missing folder is one line."""
from __future__ import annotations

import ast
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from vllm.sampling_params import BeamSearchParams

from helpers import toy as toy_task, toy_hf
from onmt_optimal.tools.evaluate import corpus_score
from onmt_optimal.tools.length_ratio import estimate_with_tokenizer
from onmt_optimal.vllm import optimal_beam_search

DOC = Path(__file__).resolve().parents[2] / "docs" / "vllm.md"
CPU_FLAGS = re.compile(r"#\s*on the CPU build:\s*(.+)$", re.M)


def documented_command() -> tuple[list[str], list[str]]:
    """The doc's sweep block: its command's words (the same as docs/usage.md's copy's), and the flags it names for
    the CPU build."""
    def found(page: Path) -> list[str]:
        return [b for b in re.findall(r"```bash\n(.*?)```", page.read_text(), re.S) if "sweep --vllm" in b]

    blocks, copies = found(DOC), found(DOC.parent / "usage.md")
    assert len(blocks) == 1 and len(copies) == 1, (blocks, copies)
    command = shlex.split(blocks[0].replace("\\\n", " "), comments=True)
    assert shlex.split(copies[0].replace("\\\n", " "), comments=True) == command
    return command, CPU_FLAGS.search(blocks[0])[1].split()


def _value(words: list[str], flag: str) -> str:
    return words[words.index(flag) + 1]


def _table(stdout: str) -> list[list[str]]:
    """The table's rows (vLLM's log shares the standard output: the table starts at its header)."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split() == ["decoder", "b", "r", "BLEU", "len", "ratio",
                                                                        "steps"])
    end = next(i for i, line in enumerate(lines) if line.startswith("best: "))
    return [line.split() for line in lines[start + 1:end]]


def _texts(llm, outputs, src: list[str]) -> list[str]:
    """The 1-best's generated tokens of each output, decoded as the sweep decodes them."""
    tok = llm.get_tokenizer()
    return [tok.decode(out.sequences[0].tokens[len(tok.encode(line)):], skip_special_tokens=True).strip()
            for out, line in zip(outputs, src)]


def _call(line: str):
    """The ``--kwargs`` file's call, checked to name only what it may, as an expression to evaluate."""
    tree = ast.parse(line, mode="eval")
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert names <= {"llm", "prompts", "BeamSearchParams", "optimal_beam_search"}, line
    return compile(tree, "best.txt", "eval")


@pytest.mark.slow
def test_the_documented_sweep_runs_and_its_best_call_reproduces_its_bleu(toy, model_dir, llm, tmp_path):
    import torch

    command, cpu = documented_command()
    assert command[:4] == ["python", "-m", "onmt_optimal", "sweep"]
    letters = toy_hf.sources(8, seed=5)
    src = [f"{line} =" for line in letters]
    ref = [" ".join(toy_task.target_of(line.split())) for line in letters]
    (tmp_path / "dev.src").write_text("".join(line + "\n" for line in src))
    (tmp_path / "dev.ref").write_text("".join(line + "\n" for line in ref))
    argv = [sys.executable] + [str(model_dir) if w == "MODEL" else w for w in command[1:]]
    argv += [] if torch.cuda.is_available() else cpu
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    beams = [int(b) for b in _value(command, "--beams").split(",")]
    rewards = [float(r) for r in _value(command, "--rewards").split(",")]
    max_tokens = int(_value(command, "--max-tokens"))
    result = json.loads((tmp_path / "sweep.json").read_text())
    rows = result["rows"]

    # the baseline row and a row per reward at every beam size, in that order; the table shows each
    assert [(r["family"], r["beam"], r["reward"]) for r in rows] == [
        (family, b, r) for b in beams for family, r in [("default", None)] + [("optimal_reward", x) for x in rewards]]
    table = _table(done.stdout)
    assert len(table) == len(rows)
    for cells, row in zip(table, rows):
        assert cells == [row["family"], str(row["beam"]), "-" if row["reward"] is None else f"{row['reward']:g}",
                         f"{row['bleu']:.2f}", f"{row['length_ratio']:.3f}", f"{row['mean_steps']:.2f}"]
        assert row["sentences"] == len(src) and sum(row["stop_reasons"].values()) == len(src)
        assert 1 <= row["mean_steps"] <= max_tokens
    certified = [r for r in rows if r["family"] == "optimal_reward"]
    assert all(set(r["stop_reasons"]) <= {"certificate", "all_finished", "max_length"} for r in certified)
    assert any("certificate" in r["stop_reasons"] for r in certified)
    assert result["meta"]["ratio"] == estimate_with_tokenizer(str(model_dir), src, [ref]).corpus

    # the baseline rows are vLLM's own beam search, stock
    for row in rows:
        if row["family"] == "default":
            stock = llm.beam_search(src, BeamSearchParams(beam_width=row["beam"], max_tokens=max_tokens))
            assert round(corpus_score(_texts(llm, stock, src), [ref]).bleu, 4) == row["bleu"]

    # the best row has the highest BLEU; the file's call decodes the dev set to it, its request says the same
    best = rows[result["best"]["row"]]
    assert best["bleu"] == max(r["bleu"] for r in rows)
    lines = (tmp_path / "best.txt").read_text().splitlines()
    assert len(lines) == 4 and lines[0].startswith("# best on the sweep's dev set: ") and lines[2].startswith("# ")
    assert lines[1] in done.stdout
    settings = result["best"]["settings"]
    assert settings["params"]["beam_width"] == best["beam"] and settings["params"]["max_tokens"] == max_tokens
    if best["family"] == "optimal_reward":
        assert settings["search"] == {"stopping": "optimal", "length_reward": best["reward"],
                                      "length_ratio": round(result["meta"]["ratio"], 4)}
    outputs = eval(_call(lines[1]), {"__builtins__": {}}, {"llm": llm, "prompts": src,  # noqa: S307
                                                           "BeamSearchParams": BeamSearchParams,
                                                           "optimal_beam_search": optimal_beam_search})
    assert round(corpus_score(_texts(llm, outputs, src), [ref]).bleu, 4) == pytest.approx(best["bleu"], abs=0.02)
    request = json.loads(lines[3])
    assert request["n"] == best["beam"] and request["max_tokens"] == max_tokens and request["use_beam_search"]
    assert request.get("vllm_xargs", {}) == settings["search"]
    assert (tmp_path / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_missing_model_folder_is_one_line(tmp_path):
    (tmp_path / "dev.src").write_text("a b =\n")
    (tmp_path / "dev.ref").write_text("A B\n")
    done = subprocess.run([sys.executable, "-m", "onmt_optimal", "sweep", "--vllm", tmp_path / "missing", "--src",
                           tmp_path / "dev.src", "--refs", tmp_path / "dev.ref", "--out", tmp_path / "sweep.json"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.strip() == (
        f"onmt-optimal sweep: error: --vllm {tmp_path / 'missing'}: no such folder; give the checkpoint's folder")
    assert not (tmp_path / "sweep.json").exists()
