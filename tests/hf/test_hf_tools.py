"""``python -m onmt_optimal ratio --tokenizer MODEL_DIR``: the length ratio of a transformers or vLLM model, counted
with its checkpoint's tokenizer, printed as the one keyword those take (``length_ratio=RHO``)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import toy_hf


@pytest.mark.parametrize("kind", ["encoder_decoder", "decoder_only"])
def test_ratio_counts_with_the_checkpoint_s_tokenizer(kind, tmp_path):
    tok = toy_hf.tokenizer(kind)
    tok.save_pretrained(tmp_path / "model")
    src = toy_hf.sources(10, seed=3)
    ref = [line.upper() + " A" for line in src]
    (tmp_path / "dev.src").write_text("".join(line + "\n" for line in src))
    (tmp_path / "dev.ref").write_text("".join(line + "\n" for line in ref))
    done = subprocess.run([sys.executable, "-m", "onmt_optimal", "ratio", "--src", tmp_path / "dev.src", "--refs",
                           tmp_path / "dev.ref", "--tokenizer", tmp_path / "model"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    extra = 1 if kind == "encoder_decoder" else 0  # Marian's </s> is read by the encoder; the answer's is not |y|
    src_len = sum(len(line.split()) + extra for line in src)
    ref_len = sum(len(line.split()) for line in ref)
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"length_ratio={ref_len / src_len:.4f}  ")
    assert "warning" not in done.stderr

    escaped = tmp_path / "escaped.ref"
    escaped.write_text("".join(line + " &apos;s\n" for line in ref))
    done = subprocess.run([sys.executable, "-m", "onmt_optimal", "ratio", "--src", tmp_path / "dev.src", "--refs",
                           escaped, "--tokenizer", tmp_path / "model"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    warnings = done.stderr.strip().splitlines()
    assert len(warnings) == 1 and "--unescape-moses" in warnings[0] and "10 of 10 lines" in warnings[0]


def test_ratio_tokenizer_refusals_are_one_line(tmp_path):
    (tmp_path / "dev.src").write_text("a b\n")
    (tmp_path / "dev.ref").write_text("A B\n")
    base = [sys.executable, "-m", "onmt_optimal", "ratio", "--src", tmp_path / "dev.src", "--refs",
            tmp_path / "dev.ref", "--tokenizer"]
    done = subprocess.run(base + [tmp_path / "missing"], capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr[-3000:]
    assert done.stderr.strip() == f"onmt-optimal ratio: error: --tokenizer {tmp_path / 'missing'}: no such folder; " \
        "give the checkpoint's folder"
    (tmp_path / "empty").mkdir()
    done = subprocess.run(base + [tmp_path / "empty"], capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr[-3000:]
    assert done.stderr.startswith(f"onmt-optimal ratio: error: --tokenizer {tmp_path / 'empty'}: no tokenizer ")
    toy_hf.tokenizer("decoder_only").save_pretrained(tmp_path / "model")
    done = subprocess.run(base + [tmp_path / "model", "--", "-model", "x.pt"], capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr[-3000:]
