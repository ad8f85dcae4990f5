"""The package's ``ratio`` and ``sweep`` commands (``python -m onmt_optimal``) on the trained toy model."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import toy

BIN = Path(sys.executable).parent
# a minimal environment; PYTHONPATH passes through (a checkout other than the editable install's is tested so)
ENV = {"PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1", "PATH": str(BIN),
       **{k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "ATEN_CPU_CAPABILITY")}}


def test_ratio_and_sweep_commands(toy_model, tmp_path):
    toy.write_corpus(tmp_path / "dev", 12, seed=9, max_len=8)
    ratio = subprocess.run([sys.executable, "-m", "onmt_optimal", "ratio", "--src", str(tmp_path / "dev.src"),
                            "--refs", str(tmp_path / "dev.tgt"), "--", "-model", str(toy_model)],
                           capture_output=True, text=True, env=ENV)
    assert ratio.returncode == 0, ratio.stderr[-2000:]
    src = (tmp_path / "dev.src").read_text().split()
    tgt = (tmp_path / "dev.tgt").read_text().split()
    # one line, the option and its one number first (the toy model has no transforms), and no warning
    assert ratio.stdout.splitlines()[0].startswith(f"-length_ratio {len(tgt) / len(src):.4f}  ")
    assert len(ratio.stdout.splitlines()) == 1 and "warning" not in ratio.stderr
    out = tmp_path / "sweep.json"
    sweep = subprocess.run([sys.executable, "-m", "onmt_optimal", "sweep", "--src", str(tmp_path / "dev.src"),
                            "--refs", str(tmp_path / "dev.tgt"), "--beams", "1-2", "--rewards", "0,1",
                            "--out", str(out), "--", "-model", str(toy_model), "-max_length_ratio", "0"],
                           capture_output=True, text=True, env=ENV)
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    rows = json.loads(out.read_text())["rows"]
    families = {r["family"] for r in rows}
    assert families == {"default", "opennmt2017", "default_avg", "optimal", "optimal_reward", "shrinking_norm", "shrinking_reward"}
    assert {r["beam"] for r in rows} == {1, 2}
    assert all(r["sentences"] == 12 for r in rows)


def test_ratio_warns_once_when_the_references_look_moses_escaped(toy_model, tmp_path):
    """TVsub's raw dev.en carries Moses escapes: read as it is, its ratio was 1.5532, not the 1.3059 of the text
    the model was trained on, and nothing said so. Now one warning line says to add --unescape-moses."""
    toy.write_corpus(tmp_path / "dev", 12, seed=9, max_len=8)
    refs = (tmp_path / "dev.tgt").read_text().splitlines()
    refs[3] = refs[3] + " @-@ x &apos;s"
    (tmp_path / "dev.tgt").write_text("".join(line + "\n" for line in refs))

    def ratio(*flags):
        done = subprocess.run([sys.executable, "-m", "onmt_optimal", "ratio", *flags, "--src",
                               str(tmp_path / "dev.src"), "--refs", str(tmp_path / "dev.tgt"), "--", "-model",
                               str(toy_model)], capture_output=True, text=True, env=ENV)
        assert done.returncode == 0, done.stderr[-2000:]
        return done

    escaped = ratio()
    warnings = [line for line in escaped.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1, escaped.stderr[-2000:]
    assert warnings[0].startswith("onmt-optimal ratio: warning: --refs ") and "1 of 12 lines" in warnings[0]
    assert "@-@ &apos;" in warnings[0] and "add --unescape-moses" in warnings[0]
    clean = ratio("--unescape-moses")
    assert "warning" not in clean.stderr
    assert escaped.stdout.split()[1] != clean.stdout.split()[1]  # escaped, 3 tokens more on line 4


def test_sweep_checks_its_files_before_the_model_and_keeps_an_earlier_output(toy_model, tmp_path):
    """A missing, non-UTF-8 or misaligned file is one line and exit 1 (before the model loads), and ``--out``
    from an earlier run stays as it was."""
    toy.write_corpus(tmp_path / "dev", 4, seed=3, max_len=6)
    (tmp_path / "bad.src").write_bytes(b"a b\n\xff c\n")
    (tmp_path / "short.tgt").write_text("A\n")
    out = tmp_path / "sweep.json"
    out.write_text('{"earlier": true}\n')
    cases = [(tmp_path / "missing.src", tmp_path / "dev.tgt", "cannot read it"),
             (tmp_path / "bad.src", tmp_path / "dev.tgt", "line 2 (byte offset 4) is not UTF-8"),
             (tmp_path / "dev.src", tmp_path / "short.tgt", "one reference a source line")]
    for src, ref, says in cases:
        run = subprocess.run([sys.executable, "-m", "onmt_optimal", "sweep", "--src", str(src), "--refs", str(ref),
                              "--out", str(out), "--", "-model", str(toy_model)],
                             capture_output=True, text=True, env=ENV)
        assert run.returncode == 1, run.stderr[-2000:]
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("onmt-optimal sweep: error: ") and says in lines[0], lines
        assert out.read_text() == '{"earlier": true}\n'


def test_sweep_prints_its_table_and_best_and_writes_yaml_and_png(toy_model, tmp_path):
    """The sweep prints a row a decoder, b and r (the paper's baseline opennmt2017 included), names the row of
    highest BLEU, and writes its options as YAML and a figure as a PNG."""
    import yaml

    toy.write_corpus(tmp_path / "dev", 12, seed=9, max_len=8)
    out, snippet, png = tmp_path / "sweep.json", tmp_path / "best.yaml", tmp_path / "sweep.png"
    sweep = subprocess.run([sys.executable, "-m", "onmt_optimal", "sweep", "--src", str(tmp_path / "dev.src"),
                            "--refs", str(tmp_path / "dev.tgt"), "--beams", "1,3", "--rewards", "0,0.5,1",
                            "--out", str(out), "--yaml", str(snippet), "--plot", str(png), "--", "-model",
                            str(toy_model), "-max_length_ratio", "0"], capture_output=True, text=True, env=ENV)
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    result = json.loads(out.read_text())
    rows = result["rows"]
    assert "opennmt2017" in {r["family"] for r in rows}
    lines = sweep.stdout.splitlines()
    assert lines[0].split() == ["decoder", "b", "r", "BLEU", "len", "ratio", "steps"]
    table = [line.split() for line in lines[1:1 + len(rows)]]
    assert [(t[0], int(t[1]), t[2]) for t in table] == [
        (r["family"], r["beam"], "-" if r["reward"] is None else f"{r['reward']:g}") for r in rows]
    assert [float(t[3]) for t in table] == [round(r["bleu"], 2) for r in rows]
    top = max(rows, key=lambda r: r["bleu"])
    assert rows[result["best"]["row"]] == top
    assert lines[1 + len(rows)].startswith(f"best: {top['family']} b={top['beam']}")
    options = yaml.safe_load(snippet.read_text())
    assert options["beam_size"] == top["beam"] and options == result["best"]["settings"]
    assert options.get("length_reward") == top["reward"]
    assert options["stopping"] in ("default", "opennmt2017", "optimal", "shrinking")
    if top["family"] == "optimal_reward":
        assert options["length_ratio"] == round(result["meta"]["ratio"], 4)
    assert snippet.read_text() in sweep.stdout  # the same YAML printed
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 1000


def test_sweep_rewards_help_shows_format_and_default():
    done = subprocess.run([sys.executable, "-m", "onmt_optimal", "sweep", "--help"], capture_output=True, text=True,
                          env=ENV)
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "comma-separated" in text and "default: 0,0.5,1,1.1,1.2,1.3,1.4,1.5" in text
    assert "--plot" in text and "--yaml" in text
