"""End to end: a tiny model trained here with the real onmt_build_vocab/onmt_train, decoded with OpenNMT-py's
own ``onmt_translate`` main (which picks up the flags through the installed import hook), with a YAML config
and with ``python -m onmt_optimal translate``; compared byte for byte with stock OpenNMT-py.

The decodes run in two long-lived processes, one a side (``translate_worker``: ours with the hook, stock with
``ONMT_OPTIMAL_DISABLE=1``), instead of one interpreter per decode; ``test_worker_runs_equal_separate_processes``
checks that a run there writes what a fresh ``onmt_translate`` process writes. Where two decodes of the same
sentences shrink their batches differently, translations are compared exactly and scores within
``float32.score_tolerance``; decodes of the same batch composition are compared byte for byte.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import toy
from helpers.float32 import assert_same_answers
from helpers.rules import EXACT_RULES

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
STOCK_TRANSLATE = Path(__file__).resolve().parents[1] / "helpers" / "stock_translate.py"


@pytest.fixture(scope="session")
def model(toy_model) -> Path:
    return toy_model


@pytest.fixture(scope="session")
def src(tmp_path_factory) -> Path:
    return toy.source_file(tmp_path_factory.mktemp("data"), "test", 40, seed=3, max_len=14)


def _runner(worker):
    def run(model, src, out, *args, cmd=None, check=True):
        argv = [str(a) for a in ("-model", model, "-src", src, "-output", out, *args)]
        if cmd is None:
            proc = worker.run(*argv)
        else:  # another entry point: its own process
            proc = subprocess.run([*cmd, *argv], env=ENV, capture_output=True, text=True)
        if check:
            assert proc.returncode == 0, proc.stderr[-3000:]
        return proc
    return run


@pytest.fixture(scope="session")
def translate(our_worker):
    """``translate(model, src, out, *args)``: ``onmt_translate`` with the plugin (see ``translate_worker``)."""
    return _runner(our_worker)


@pytest.fixture(scope="session")
def stock(stock_worker):
    """``stock(model, src, out, *args)``: stock OpenNMT-py 3.5.1's ``onmt_translate``."""
    return _runner(stock_worker)


def read_stats(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


STOCK_ARGS = [
    [],
    ["-length_penalty", "none", "-beam_size", "3", "-n_best", "2"],
    ["-block_ngram_repeat", "2", "-min_length", "2", "-batch_size", "7"],
    ["-length_penalty", "wu", "-alpha", "0.6", "-beam_size", "8", "-batch_type", "tokens", "-batch_size", "50"],
    ["-max_length", "4", "-beam_size", "1", "-max_length_ratio", "0"],
    ["-random_sampling_topk", "3", "-seed", "7", "-beam_size", "1"],
]
# stock 3.5.1 crashes on these with an RNN model (attention comes back time-first; see translator.py)
ATTENTION_ARGS = [
    ["-replace_unk"],
    # batch 1: on padded batches stock coverage_wu takes log(0) at pad positions and every score is -inf
    ["-coverage_penalty", "wu", "-beta", "0.2", "-length_penalty", "wu", "-alpha", "0.6", "-batch_size", "1"],
    ["-attn_debug", "-beam_size", "2"],
]


@pytest.mark.parametrize("args", STOCK_ARGS, ids=lambda a: " ".join(a) or "defaults")
def test_without_new_flags_output_is_byte_identical_to_stock(translate, stock, model, src, tmp_path, args):
    translate(model, src, tmp_path / "ours", *args)
    stock(model, src, tmp_path / "stock", *args)
    assert (tmp_path / "ours").read_bytes() == (tmp_path / "stock").read_bytes()


@pytest.mark.parametrize("args", ATTENTION_ARGS, ids=" ".join)
def test_options_that_need_attention_work_where_stock_crashes(translate, stock, model, src, tmp_path, args):
    assert stock(model, src, tmp_path / "stock", *args, check=False).returncode != 0
    translate(model, src, tmp_path / "ours", *args)
    translate(model, src, tmp_path / "stats", *args, "-stats_file", str(tmp_path / "s"))
    assert len((tmp_path / "ours").read_text().splitlines()) == 40
    assert (tmp_path / "ours").read_bytes() == (tmp_path / "stats").read_bytes()


def attention_matrices(stderr: str) -> list[tuple[list[str], list[list[str]]]]:
    """The ``-attn_debug`` matrices in a run's log: (source tokens, rows of [target token, weights...])."""
    records = re.split(r"\[\d{4}-\d\d-\d\d [\d:,]+ INFO\] ", stderr)
    matrices = []
    for record in records:
        if re.search(r"\d\.\d{7} \n", record):
            header, *rows = record.strip("\n").split("\n")
            matrices.append((header.split(), [row.split() for row in rows]))
    return matrices


@pytest.mark.parametrize("args", [["-replace_unk"], ["-attn_debug"],
                                  ["-attn_debug", "-replace_unk", "-beam_size", "3", "-n_best", "2"]], ids=" ".join)
def test_new_search_carries_attention_like_the_stock_path(translate, model, src, tmp_path, args):
    """The new beam keeps each completed hypothesis's attention. With OpenNMT-py's stopping rule it gives the
    stock path's output and ``-attn_debug`` weights, one per source token: stock cuts each matrix at the length
    of another example (``src_len[i]`` of the beam-tiled lengths, beam_search.py), so its rows can lack the
    last columns. Log-probability optimal stopping (same 1-best) prints the very same matrices as ours."""
    plain = translate(model, src, tmp_path / "plain", *args)
    ours = translate(model, src, tmp_path / "ours", *args, "-stopping", "default", "-stats_file", str(tmp_path / "s"))
    assert (tmp_path / "plain").read_bytes() == (tmp_path / "ours").read_bytes()
    stock_matrices, our_matrices = attention_matrices(plain.stderr), attention_matrices(ours.stderr)
    assert len(our_matrices) == (40 if "-attn_debug" in args else 0)
    cut = 0
    for (stock_src, stock_rows), (our_src, our_rows) in zip(stock_matrices, our_matrices, strict=True):
        assert stock_src == our_src and len(stock_rows) == len(our_rows)
        for stock_row, our_row in zip(stock_rows, our_rows):
            assert len(our_row) == 1 + len(our_src) and our_row[: len(stock_row)] == stock_row
            cut += len(stock_row) < len(our_row)
    if "-attn_debug" in args:
        assert cut > 0, "the toy data no longer shows stock's truncation: pick other sentences"

    common = [*args, "-length_penalty", "none"]
    ours = translate(model, src, tmp_path / "ours", *common, "-stopping", "default", "-stats_file", str(tmp_path / "s"))
    opt = translate(model, src, tmp_path / "optimal", *common, "-stopping", "optimal")
    n_best = int(args[args.index("-n_best") + 1]) if "-n_best" in args else 1
    one_best = lambda path: path.read_text().splitlines()[::n_best]  # noqa: E731
    assert one_best(tmp_path / "optimal") == one_best(tmp_path / "ours")
    assert_same_matrices(attention_matrices(opt.stderr), attention_matrices(ours.stderr))


# attention weights lie in [0, 1]: two decodes whose batches shrink differently may compute one a few float32
# ulps apart (2^-20 = 8 ulps of 1.0), and each side prints it rounded to 7 decimals (5e-8)
ATTENTION_TOLERANCE = 2.0 ** -20 + 1e-7


def assert_same_matrices(ours, theirs):
    """The same ``-attn_debug`` matrices: tokens exactly, weights within ``ATTENTION_TOLERANCE``."""
    assert len(ours) == len(theirs)
    for (our_src, our_rows), (their_src, their_rows) in zip(ours, theirs):
        assert our_src == their_src and [r[0] for r in our_rows] == [r[0] for r in their_rows]
        for our_row, their_row in zip(our_rows, their_rows):
            assert len(our_row) == len(their_row)
            assert all(abs(float(a) - float(b)) <= ATTENTION_TOLERANCE for a, b in zip(our_row[1:], their_row[1:]))


@pytest.mark.parametrize("args", STOCK_ARGS[:4], ids=lambda a: " ".join(a) or "defaults")
def test_default_stopping_with_stats_file_is_still_stock_output(translate, stock, model, src, tmp_path, args):
    """OpenNMT-py's stopping rule through our beam gives stock's output, but where stock is wrong: stock does not
    re-index its blocked n-grams (``forbidden_tokens``) when examples leave the batch, ours does. Under
    ``-block_ngram_repeat`` the comparison with stock is therefore one sentence a batch (nothing leaves before
    it ends), and our batched output must equal our one-sentence-a-batch output."""
    stats = tmp_path / "stats.jsonl"
    translate(model, src, tmp_path / "ours", *args, "-stopping", "default", "-stats_file", str(stats))
    if "-block_ngram_repeat" in args:
        alone = [*args, "-batch_size", "1"]  # the last -batch_size wins
        translate(model, src, tmp_path / "ours1", *alone, "-stopping", "default", "-stats_file", tmp_path / "s1")
        stock(model, src, tmp_path / "stock", *alone)
        assert (tmp_path / "ours1").read_bytes() == (tmp_path / "stock").read_bytes()
        assert (tmp_path / "ours").read_bytes() == (tmp_path / "ours1").read_bytes()
    else:
        stock(model, src, tmp_path / "stock", *args)
        assert (tmp_path / "ours").read_bytes() == (tmp_path / "stock").read_bytes()
    records = read_stats(stats)
    assert [r["line"] for r in records] == list(range(1, 41))
    assert {r["stop_reason"] for r in records} <= {"top_finished", "max_length", "all_finished"}


def one_batch_and_batched(translate, model, src, out, *args, stats=None):
    """Decode ``src`` twice: one sentence a batch (``out.b1``; every step's tensors are the same whatever the
    stopping rule, so two rules print the same bytes) and in batches of 30 (``out``; rules that stop sentences
    at other steps shrink the batch differently: same translations, scores within ``float32.score_tolerance``)."""
    extra = ["-stats_file", str(stats)] if stats else []
    translate(model, src, f"{out}.b1", *args, "-batch_size", "1", *(["-stats_file", f"{stats}.b1"] if stats else []))
    translate(model, src, out, *args, *extra)


def assert_same_decodes(a: Path, b: Path, stats: Path, n_best: int = 1):
    """``a`` and ``b`` from ``one_batch_and_batched``: byte-identical one sentence a batch, the same translations
    and scores within the float32 bound in batches (``stats``: ``a``'s -stats_file)."""
    assert Path(f"{a}.b1").read_bytes() == Path(f"{b}.b1").read_bytes()
    assert_same_answers(a.read_text().splitlines(), b.read_text().splitlines(), read_stats(stats), n_best)


def optimal_beside(translate, model, src, tmp_path: Path, common: list, other: str, n_best: int = 1) -> list:
    """``-stopping optimal`` and ``-stopping other`` on ``common``, each ``one_batch_and_batched`` into
    ``tmp_path`` (outputs ``opt``, ``other``; statistics ``o``, ``x``), checked by ``assert_same_decodes``; returns
    the two statistics (optimal's, other's) in batches, then one sentence a batch."""
    one_batch_and_batched(translate, model, src, tmp_path / "opt", *common, "-stopping", "optimal",
                          stats=tmp_path / "o")
    one_batch_and_batched(translate, model, src, tmp_path / other, *common, "-stopping", other,
                          stats=tmp_path / "x")
    assert_same_decodes(tmp_path / "opt", tmp_path / other, tmp_path / "o", n_best=n_best)
    return [(read_stats(f"{tmp_path / 'o'}{suffix}"), read_stats(f"{tmp_path / 'x'}{suffix}"))
            for suffix in ("", ".b1")]


@pytest.mark.parametrize("args", [
    ["-length_penalty", "none", "-min_length", "2", "-max_length", "8", "-max_length_ratio", "0", "-with_score"],
    ["-length_penalty", "wu", "-alpha", "0.6", "-with_score"],
    ["-block_ngram_repeat", "1", "-min_length", "3", "-max_length", "6", "-max_length_ratio", "0", "-replace_unk"],
], ids=" ".join)
def test_beam_of_one(translate, model, src, tmp_path, args):
    """A beam of one item: OpenNMT-py's stopping rule gives stock's output byte for byte, optimal stopping the
    same translations (its scores carry the exact log-probability, within the float32 bound of stock's, which
    drifts under a length penalty: ``float32.score_tolerance``). The first case is OpenNMT-py's own search of one,
    scored afterwards (``search.beam_of_one``); under a length penalty, n-gram blocking or attention the core
    decodes (``adapter.batch_search.beam_of_one``). Stock itself crashes on ``-with_score`` and ``-replace_unk`` here, so the
    stock path is ours without new flags."""
    one_batch_and_batched(translate, model, src, tmp_path / "stock", "-beam_size", "1", *args)
    for stopping in ("default", "optimal"):
        one_batch_and_batched(translate, model, src, tmp_path / stopping, "-beam_size", "1", *args, "-stopping",
                              stopping, stats=tmp_path / f"{stopping}.jsonl")
        for stats in (tmp_path / f"{stopping}.jsonl", tmp_path / f"{stopping}.jsonl.b1"):
            assert {r["stop_reason"] for r in read_stats(stats)} <= {"all_finished", "max_length"}
    assert (tmp_path / "default").read_bytes() == (tmp_path / "stock").read_bytes()
    assert (tmp_path / "default.b1").read_bytes() == (tmp_path / "stock.b1").read_bytes()
    if "-with_score" in args:  # stock's beam recovers log p as score * penalty each step: a few ulps of drift
        for suffix in ("", ".b1"):
            assert_same_answers(Path(f"{tmp_path / 'optimal'}{suffix}").read_text().splitlines(),
                                Path(f"{tmp_path / 'stock'}{suffix}").read_text().splitlines(),
                                read_stats(f"{tmp_path / 'optimal.jsonl'}{suffix}"))
    else:
        assert (tmp_path / "optimal").read_bytes() == (tmp_path / "stock").read_bytes()
        assert (tmp_path / "optimal.b1").read_bytes() == (tmp_path / "stock.b1").read_bytes()


def test_optimal_with_log_prob_returns_default_answers_in_no_more_steps(translate, model, src, tmp_path):
    common = ["-length_penalty", "none", "-beam_size", "5", "-with_score"]
    for opt, dflt in optimal_beside(translate, model, src, tmp_path, common, "default"):
        assert all(o["steps"] <= d["steps"] for o, d in zip(opt, dflt, strict=True))
        assert sum(o["steps"] for o in opt) < sum(d["steps"] for d in dflt)
        assert {o["stop_reason"] for o in opt} <= {"certificate", "all_finished", "max_length"}


def test_bounded_reward_equals_exhaustive_beam_and_stats_are_consistent(translate, model, src, tmp_path):
    common = ["-length_penalty", "none", "-beam_size", "4", "-with_score", "-length_reward", "1.0",
              "-length_ratio", "1.5", "-n_best", "2"]
    decodes = optimal_beside(translate, model, src, tmp_path, common, "exhaustive", n_best=2)
    for suffix, (opt, exh) in zip(("", ".b1"), decodes):
        lines = Path(f"{tmp_path / 'opt'}{suffix}").read_text().splitlines()[::2]  # the 1-best of each pair
        for record, other, line in zip(opt, exh, lines, strict=True):
            text, score = line.rsplit("\t", 1)
            assert record["score"] == pytest.approx(float(score), abs=1e-6)  # the same decode: print rounding
            assert record["steps"] <= other["steps"] and record["length"] == other["length"]
            if suffix:  # the same batch composition: the same bits
                assert record["score"] == other["score"] and record["log_prob"] == other["log_prob"]
            assert record["length"] == len(text.split())
            assert record["target_length"] == pytest.approx(1.5 * record["src_length"])
            reward = 1.0 * min(record["target_length"], record["length"])
            assert record["score"] == pytest.approx(record["log_prob"] + reward, abs=1e-4)


def test_transformer_checkpoint(translate, stock, tmp_path_factory, src, tmp_path):
    """Any OpenNMT-py text-to-text checkpoint: the same guarantees on a transformer."""
    model = toy.train_toy_model(tmp_path_factory.mktemp("transformer"), steps=200, arch="transformer")
    common = ["-length_penalty", "none", "-beam_size", "5", "-with_score"]
    translate(model, src, tmp_path / "opt", *common, "-stopping", "optimal", "-stats_file", str(tmp_path / "o"))
    stock(model, src, tmp_path / "stock", "-length_penalty", "none", "-beam_size", "5")
    translate(model, src, tmp_path / "def", *common, "-stopping", "default", "-stats_file", str(tmp_path / "d"))
    assert_same_answers((tmp_path / "opt").read_text().splitlines(), (tmp_path / "def").read_text().splitlines(),
                        read_stats(tmp_path / "o"))
    assert [line.rsplit("\t", 1)[0] for line in (tmp_path / "opt").read_text().splitlines()] == \
        (tmp_path / "stock").read_text().splitlines()
    opt, dflt = read_stats(tmp_path / "o"), read_stats(tmp_path / "d")
    assert sum(o["steps"] for o in opt) <= sum(d["steps"] for d in dflt)
    reward = ["-length_penalty", "none", "-beam_size", "4", "-with_score", "-length_reward", "1", "-length_ratio", "1.5"]
    one_batch_and_batched(translate, model, src, tmp_path / "r_opt", *reward, "-stopping", "optimal",
                          stats=tmp_path / "ro")
    one_batch_and_batched(translate, model, src, tmp_path / "r_exh", *reward, "-stopping", "exhaustive")
    assert_same_decodes(tmp_path / "r_opt", tmp_path / "r_exh", tmp_path / "ro")


def test_yaml_config_and_module_entry_point(translate, our_worker, model, src, tmp_path):
    config = tmp_path / "translate.yaml"
    stats = tmp_path / "stats.jsonl"
    config.write_text(
        f"model: {model}\nsrc: {src}\noutput: {tmp_path / 'yaml.out'}\nbeam_size: 5\nlength_penalty: none\n"
        f"stopping: optimal\nlength_reward: 0.5\nlength_ratio: 1.4\nstats_file: {stats}\n"
    )
    proc = our_worker.run("-config", config)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(read_stats(stats)) == 40
    translate(model, src, tmp_path / "cli.out", "-beam_size", "5", "-length_penalty", "none", "-stopping",
              "optimal", "-length_reward", "0.5", "-length_ratio", "1.4",
              cmd=[sys.executable, "-m", "onmt_optimal", "translate"])
    assert (tmp_path / "yaml.out").read_bytes() == (tmp_path / "cli.out").read_bytes()


def test_with_score_works_where_stock_crashes(translate, stock, model, src, tmp_path):
    proc = stock(model, src, tmp_path / "stock", "-with_score", check=False)
    assert proc.returncode != 0  # upstream #2583: 'float' object has no attribute 'item'
    translate(model, src, tmp_path / "ours", "-with_score")
    lines = (tmp_path / "ours").read_text().splitlines()
    assert len(lines) == 40 and all(len(line.split("\t")) == 2 for line in lines)


# every scoring rule: exact ones must agree with the exhaustive run of the same beam
@pytest.mark.parametrize("rule", EXACT_RULES, ids=" ".join)
def test_every_exact_rule_equals_the_exhaustive_beam(translate, model, src, tmp_path, rule):
    common = [*rule, "-beam_size", "4", "-with_score", "-max_length_ratio", "0", "-max_length", "30"]
    for opt, exh in optimal_beside(translate, model, src, tmp_path, common, "exhaustive"):
        assert all(o["steps"] <= e["steps"] for o, e in zip(opt, exh, strict=True))


@pytest.mark.parametrize("rule", [["-length_penalty", "avg"], ["-length_penalty", "none", "-length_reward", "0.5"]],
                         ids=" ".join)
def test_shrinking_beam_differs_from_default_and_reports_its_stops(translate, model, src, tmp_path, rule):
    translate(model, src, tmp_path / "shr", *rule, "-beam_size", "5", "-stopping", "shrinking",
              "-stats_file", str(tmp_path / "s"))
    translate(model, src, tmp_path / "def", *rule, "-beam_size", "5")
    shrunk = (tmp_path / "shr").read_text().splitlines()
    assert len(shrunk) == 40 and all(line.strip() for line in shrunk)
    assert {r["stop_reason"] for r in read_stats(tmp_path / "s")} <= {"all_finished", "max_length"}


def test_predicted_bound_stops_are_labelled(translate, model, src, tmp_path):
    translate(model, src, tmp_path / "out", "-length_penalty", "avg", "-stopping", "optimal", "-bound",
              "predicted", "-length_ratio", "1.5", "-stats_file", str(tmp_path / "s"))
    reasons = {r["stop_reason"] for r in read_stats(tmp_path / "s")}
    assert "certificate" not in reasons and "predicted_bound" in reasons


# ---------------------------------------------------------------- bad input
def test_empty_lines_are_answered_in_place(translate, model, src, tmp_path):
    real = src.read_text().splitlines()[:5]
    lines = ["", real[0], "   ", real[1], real[2], "", real[3], real[4], ""]
    noisy = tmp_path / "noisy.src"
    noisy.write_text("\n".join(lines) + "\n")
    clean = tmp_path / "clean.src"
    clean.write_text("\n".join(real) + "\n")
    for args in ([], ["-stopping", "optimal", "-length_penalty", "none"]):
        translate(model, noisy, tmp_path / "noisy.out", *args, "-max_length_ratio", "0", "-stats_file",
                  str(tmp_path / "s"))
        translate(model, clean, tmp_path / "clean.out", *args, "-max_length_ratio", "0")
        out = (tmp_path / "noisy.out").read_text().splitlines()
        assert len(out) == len(lines)
        assert [o for o, s in zip(out, lines) if not s.strip()] == ["", "", "", ""]
        assert [o for o, s in zip(out, lines) if s.strip()] == (tmp_path / "clean.out").read_text().splitlines()
    reasons = [r["stop_reason"] for r in read_stats(tmp_path / "s")]
    assert reasons[0] == reasons[2] == reasons[5] == reasons[8] == "empty_source"
    assert len(reasons) == len(lines)


@pytest.mark.parametrize("args", [[], ["-stopping", "optimal"]], ids=["stock path", "optimal"])
def test_empty_lines_with_attention_and_verbose_output(translate, model, tmp_path, args):
    """``-attn_debug`` / ``-replace_unk`` / ``-verbose`` read each answer's attention: an empty line has none."""
    source = tmp_path / "mixed.src"
    source.write_text("a b\n\nc d e\n")
    proc = translate(model, source, tmp_path / "out", *args, "-attn_debug", "-replace_unk", "-verbose",
                     "-n_best", "2", "-beam_size", "3")
    out = (tmp_path / "out").read_text().splitlines()
    assert len(out) == 6 and out[2:4] == ["", ""]
    assert len(attention_matrices(proc.stderr)) == 3


def test_a_file_of_empty_lines(translate, model, tmp_path):
    empty = tmp_path / "empty.src"
    empty.write_text("\n\n\n")
    translate(model, empty, tmp_path / "out", "-stopping", "optimal", "-length_penalty", "none")
    assert (tmp_path / "out").read_text() == "\n\n\n"


def test_overlong_line_and_unknown_tokens(translate, model, tmp_path):
    source = tmp_path / "odd.src"
    source.write_text(" ".join("abcdefghijklmnop" * 3) + "\nzz yy a b\nb\n")
    stats = tmp_path / "stats"
    translate(model, source, tmp_path / "out", "-stopping", "optimal", "-length_penalty", "none",
              "-max_length", "10", "-stats_file", str(stats))
    out = (tmp_path / "out").read_text().splitlines()
    assert len(out) == 3 and len(out[0].split()) <= 10 and out[2]
    records = read_stats(stats)
    assert records[0]["stop_reason"] == "max_length" and records[0]["steps"] == 10


BAD_FLAGS = [
    (["-length_reward", "-1", "-length_ratio", "1.2"], "-length_reward"),
    (["-length_reward", "1", "-length_ratio", "0", "-length_penalty", "none"], "-length_ratio"),
    (["-length_reward", "1", "-length_ratio", "-2", "-length_penalty", "none"], "-length_ratio"),
    (["-bp_norm"], "-length_penalty none"),
    (["-bp_norm", "-length_penalty", "none"], "-length_ratio"),
    (["-stopping", "optimal", "-bound", "predicted", "-length_penalty", "none"], "normalized"),
    (["-stopping", "optimal", "-bound", "predicted", "-length_penalty", "avg"], "-length_ratio"),
    (["-stopping", "optimal", "-bound", "loose"], "-bound"),
    (["-stopping", "optimal", "-ratio", "0.5"], "-ratio"),
    (["-stopping", "sometimes"], "-stopping"),
    (["-length_reward", "1", "-length_ratio", "1.2"], "-length_penalty none"),
    (["-stopping", "optimal", "-coverage_penalty", "wu", "-beta", "0.2"], "coverage"),
    (["-stopping", "optimal", "-random_sampling_topk", "5"], "sampling"),
]


@pytest.mark.parametrize("args,mentions", BAD_FLAGS, ids=lambda a: " ".join(a) if isinstance(a, list) else "")
def test_bad_flags_give_one_line_and_exit_2(translate, model, src, tmp_path, args, mentions):
    proc = translate(model, src, tmp_path / "out", *args, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("onmt_translate: error:") and mentions in lines[0]


@pytest.mark.parametrize("kind", ["text", "torch-dict", "missing"])
def test_a_file_that_is_not_a_checkpoint(translate, src, tmp_path, kind):
    path = tmp_path / "model.pt"
    if kind == "text":
        path.write_text("hello\n")
    elif kind == "torch-dict":
        import torch

        torch.save({"weights": torch.zeros(2)}, path)
    proc = translate(path, src, tmp_path / "out", check=False)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and str(path) in errors[0]


# ---------------------------------------------------------------- the worker processes themselves
WORKER_CASES = [
    ("ours", []),
    ("ours", ["-stopping", "optimal", "-length_penalty", "none", "-with_score", "-n_best", "2", "-stats_file"]),
    ("ours", ["-random_sampling_topk", "3", "-seed", "7", "-beam_size", "1"]),
    ("ours", ["-attn_debug", "-beam_size", "2", "-stopping", "optimal"]),
    ("stock", ["-length_penalty", "wu", "-alpha", "0.6", "-beam_size", "8", "-batch_size", "7"]),
    ("stock", ["-random_sampling_topk", "3", "-seed", "7", "-beam_size", "1"]),
]


@pytest.mark.parametrize("side,args", WORKER_CASES, ids=lambda a: " ".join(a) if isinstance(a, list) else a)
def test_worker_runs_equal_separate_processes(translate, stock, model, src, tmp_path, side, args):
    """A run in the shared worker (which has run many before it: this test comes last) writes the same output,
    statistics and attention matrices as a fresh ``onmt_translate`` process: nothing leaks between runs."""
    if args[-1:] == ["-stats_file"]:
        args = args[:-1]
        worker_args, fresh_args = [*args, "-stats_file", tmp_path / "w.jsonl"], [*args, "-stats_file", tmp_path / "f.jsonl"]
    else:
        worker_args = fresh_args = args
    if side == "ours":
        in_worker = translate(model, src, tmp_path / "worker", *worker_args)
        fresh = translate(model, src, tmp_path / "fresh", *fresh_args, cmd=[str(BIN / "onmt_translate")])
    else:
        in_worker = stock(model, src, tmp_path / "worker", *worker_args)
        fresh = subprocess.run([sys.executable, str(STOCK_TRANSLATE), "-model",
                                str(model), "-src", str(src), "-output", str(tmp_path / "fresh"), *fresh_args],
                               env=dict(ENV, ONMT_OPTIMAL_DISABLE="1"), capture_output=True, text=True)
        assert fresh.returncode == 0, fresh.stderr[-3000:]
    assert (tmp_path / "worker").read_bytes() == (tmp_path / "fresh").read_bytes()
    if "-stats_file" in worker_args:
        assert (tmp_path / "w.jsonl").read_bytes() == (tmp_path / "f.jsonl").read_bytes()
    assert attention_matrices(in_worker.stderr) == attention_matrices(fresh.stderr)
    assert len(attention_matrices(in_worker.stderr)) == (40 if "-attn_debug" in args else 0)
