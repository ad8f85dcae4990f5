"""eole's ``compute_dtype`` with the new options, on both trained toy models: in fp16 and bf16 (both run on the
CPU) ``-stopping optimal`` returns exactly what ``-stopping exhaustive`` returns, for every exact scoring rule
with n-best, and without the new options the output is stock eole's, byte for byte.

eole sums the half-precision log-probabilities into float32 running sums (``log_probs + topk_log_probs`` is
not in place, and ``topk_log_probs`` starts as float32), so scores and bounds are float32 numbers; the rewards
are float32 too (``search.scoring.wide``). Each sentence is its own batch: both stopping rules see the same
tensors at every step, and their outputs compare byte for byte. ``compute_dtype: int8`` fails in eole 0.6.4's
own config check; it is one line. The CUDA cases run where CUDA is (``helpers.precision``).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers import precision
from helpers.rules import EXACT_RULES

COMMON = ["-max_length_ratio", "0", "-max_length", "30", "-beam_size", "4", "-n_best", "2", "-batch_size", "1"]
CASES = precision.cases(cpu=["bf16", "fp16"], cuda=["bf16", "fp16"])
#: every rule in bf16 on the CPU (fp16 there only against stock: the same float32 scores, from another type)
RULE_CASES = precision.cases(cpu=["bf16"], cuda=["bf16", "fp16"])


def device_args(device: str, dtype: str) -> list[str]:
    return ["-compute_dtype", dtype, *(["-gpu_ranks", "0", "-world_size", "1"] if device == "cuda" else [])]


def run(worker, model, src, out, *args) -> bytes:
    done = worker.predict("-model_path", model, "-src", src, "-output", out, *map(str, args))
    assert done.returncode == 0, done.stderr[-3000:]
    return Path(out).read_bytes()


@pytest.fixture(scope="module")
def short_src(src, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("precision") / "short.src"
    path.write_text("".join(Path(src).read_text().splitlines(keepends=True)[:16]))
    return path


@pytest.mark.parametrize("device, dtype", RULE_CASES)
def test_every_exact_rule_equals_the_exhaustive_beam(ours, model, short_src, tmp_path, device, dtype):
    for i, rule in enumerate(EXACT_RULES):
        args = [*COMMON, *device_args(device, dtype), *rule, "-with_score"]
        optimal = run(ours, model, short_src, tmp_path / f"opt{i}", *args, "-stopping", "optimal")
        exhaustive = run(ours, model, short_src, tmp_path / f"exh{i}", *args, "-stopping", "exhaustive")
        assert optimal == exhaustive, rule


@pytest.mark.parametrize("device, dtype", CASES)
def test_without_new_options_output_is_stock_s(ours, stock, model, src, tmp_path, device, dtype):
    args = [*device_args(device, dtype), "-max_length_ratio", "0", "-max_length", "30", "-beam_size", "5",
            "-n_best", "2", "-with_score"]
    assert run(ours, model, src, tmp_path / "ours", *args) == run(stock, model, src, tmp_path / "stock", *args)


@pytest.mark.parametrize("args", [[], ["-stopping", "optimal"]], ids=["stock options", "new options"])
def test_int8_is_one_line(ours, encoder_decoder, src, tmp_path, args):
    done = ours.predict("-model_path", encoder_decoder, "-src", src, "-output", tmp_path / "out", "-compute_dtype",
                        "int8", *args)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("eole predict: error: -compute_dtype int8:")
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()
