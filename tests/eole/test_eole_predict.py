"""End to end with eole 0.6.4: tiny encoder-decoder and decoder-only models trained here with the real
``eole build_vocab``/``eole train``, decoded with eole's own ``eole predict`` main (which picks up the options
through the installed import hook), compared with stock eole run in another process without the plugin.

Where two decodes of the same sentences shrink their batches differently (a rule that stops earlier), texts are
compared exactly and scores within ``float32.score_tolerance``; decodes of the same batch composition byte for
byte.
"""
from __future__ import annotations

import functools
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import one_line, toy_eole
from helpers.float32 import score_tolerance
from helpers.one_line import partials
from helpers.rules import EXACT_RULES
from helpers.signals import as_from_a_terminal, signalled_once_ready

COMMON = ["-max_length_ratio", "0", "-max_length", "30"]


def run(worker, model, src, out, *args, check=True):
    done = worker.predict("-model_path", model, "-src", src, "-output", out, *args)
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


def lines(path) -> list[str]:
    return Path(path).read_text().splitlines()


def stats(path) -> list[dict]:
    return [json.loads(line) for line in lines(path)]


# ---------------------------------------------------------------- the options exist, in eole's style
def test_options_are_in_eole_predict_help(ours):
    done = ours.predict("-h")
    assert done.returncode == 0
    for flag in ("--stopping", "--length_reward", "--length_ratio", "--bp_norm", "--bound", "--stats_file"):
        assert flag in done.stdout


def test_yaml_config_takes_the_options(ours, encoder_decoder, src, tmp_path):
    config = tmp_path / "predict.yaml"
    config.write_text(f"model_path: {encoder_decoder}\nsrc: {src}\noutput: {tmp_path / 'out'}\nbeam_size: 4\n"
                      f"length_penalty: none\nstopping: optimal\nlength_reward: 0.5\nlength_ratio: 1.5\n"
                      f"stats_file: {tmp_path / 's'}\n")
    done = ours.predict("-config", config)
    assert done.returncode == 0, done.stderr[-3000:]
    records = stats(tmp_path / "s")
    assert len(records) == 40 == len(lines(tmp_path / "out"))
    assert all(r["target_length"] == pytest.approx(1.5 * r["src_length"]) for r in records)


# ---------------------------------------------------------------- without new options: stock eole, byte for byte
STOCK_ARGS = [
    [],
    ["-length_penalty", "none", "-beam_size", "3", "-n_best", "2", "-with_score"],
    ["-block_ngram_repeat", "2", "-min_length", "2", "-batch_size", "7"],
    ["-length_penalty", "wu", "-alpha", "0.6", "-beam_size", "8", "-batch_type", "tokens", "-batch_size", "50"],
    ["-top_k", "3", "-seed", "7", "-beam_size", "1"],
]


@pytest.mark.parametrize("args", STOCK_ARGS, ids=lambda a: " ".join(a) or "defaults")
def test_without_new_options_output_is_byte_identical_to_stock(ours, stock, model, src, tmp_path, args):
    run(stock, model, src, tmp_path / "stock", *COMMON, *args)
    run(ours, model, src, tmp_path / "ours", *COMMON, *args)
    assert (tmp_path / "ours").read_bytes() == (tmp_path / "stock").read_bytes()


@pytest.mark.parametrize("args", [[], ["-length_penalty", "none", "-n_best", "2", "-with_score"]],
                         ids=["defaults", "none n_best 2"])
def test_default_stopping_with_stats_file_is_still_stock_output(ours, stock, model, src, tmp_path, args):
    """Our bookkeeping, eole's rule: the same output. Batches of one prompt for the decoder-only model (stock
    eole forces the tail of a longer prompt of a batch as a target prefix; see ``onmt_optimal.eole.translator``)."""
    common = [*COMMON, *args, "-beam_size", "4", "-batch_size", "1"]
    run(stock, model, src, tmp_path / "stock", *common)
    run(ours, model, src, tmp_path / "ours", *common, "-stats_file", tmp_path / "s")
    assert lines(tmp_path / "ours") == lines(tmp_path / "stock")
    assert {r["stop_reason"] for r in stats(tmp_path / "s")} <= {"top_finished", "all_finished", "max_length"}


# ---------------------------------------------------------------- the certificate: every scoring rule


def assert_same_answers(a, b, records, n_best=1):
    """``-with_score`` outputs (``text\\tscore\\testim``) with the same texts, scores within float32 bounds."""
    ours, theirs = lines(a), lines(b)
    assert len(ours) == len(theirs) == n_best * len(records)
    assert [line.split("\t")[0] for line in ours] == [line.split("\t")[0] for line in theirs]
    for i, record in enumerate(records):
        x, y = float(ours[i * n_best].split("\t")[1]), float(theirs[i * n_best].split("\t")[1])
        assert abs(x - y) <= score_tolerance(record["length"] + 1, record["log_prob"], record["score"]), (i, x, y)


@pytest.mark.parametrize("rule", EXACT_RULES, ids=" ".join)
def test_every_exact_rule_equals_the_exhaustive_beam(ours, model, src, tmp_path, rule):
    common = [*COMMON, *rule, "-beam_size", "4", "-n_best", "2", "-with_score"]
    run(ours, model, src, tmp_path / "opt", *common, "-stopping", "optimal", "-stats_file", tmp_path / "o")
    run(ours, model, src, tmp_path / "exh", *common, "-stopping", "exhaustive", "-stats_file", tmp_path / "e")
    opt, exh = stats(tmp_path / "o"), stats(tmp_path / "e")
    assert_same_answers(tmp_path / "opt", tmp_path / "exh", opt, n_best=2)
    assert all(o["steps"] <= e["steps"] for o, e in zip(opt, exh, strict=True))
    assert all(o["length"] == e["length"] and o["completed"] <= e["completed"] for o, e in zip(opt, exh))


def test_the_certificate_stops_early(ours, model, src, tmp_path):
    """So that the test above compares two different runs: under raw log-probability most sentences stop by
    the certificate, in fewer steps than the exhaustive run."""
    common = [*COMMON, "-length_penalty", "none", "-beam_size", "4"]
    run(ours, model, src, tmp_path / "opt", *common, "-stopping", "optimal", "-stats_file", tmp_path / "o")
    run(ours, model, src, tmp_path / "exh", *common, "-stopping", "exhaustive", "-stats_file", tmp_path / "e")
    opt, exh = stats(tmp_path / "o"), stats(tmp_path / "e")
    assert sum(r["stop_reason"] == "certificate" for r in opt) >= 20
    assert sum(o["steps"] < e["steps"] for o, e in zip(opt, exh)) >= 20


def test_the_comparison_sees_a_rule_that_stops_too_early(ours, model, src, tmp_path):
    """The test above can fail: eole's own rule under avg normalization with n_best 2 stops before its answers
    are certain, and the same comparison finds lines where the exhaustive run of the beam answers otherwise."""
    common = [*COMMON, "-length_penalty", "avg", "-beam_size", "4", "-n_best", "2", "-with_score"]
    run(ours, model, src, tmp_path / "def", *common, "-stopping", "default", "-stats_file", tmp_path / "d")
    run(ours, model, src, tmp_path / "exh", *common, "-stopping", "exhaustive", "-stats_file", tmp_path / "e")
    texts = [[line.split("\t")[0] for line in lines(tmp_path / name)] for name in ("def", "exh")]
    assert texts[0] != texts[1]


@pytest.mark.parametrize("rule", [EXACT_RULES[0], EXACT_RULES[1], EXACT_RULES[3]], ids=" ".join)
def test_one_best_does_not_depend_on_n_best(ours, model, src, tmp_path, rule):
    common = [*COMMON, *rule, "-beam_size", "5", "-stopping", "optimal", "-with_score"]
    run(ours, model, src, tmp_path / "n1", *common, "-n_best", "1", "-stats_file", tmp_path / "s1")
    run(ours, model, src, tmp_path / "n3", *common, "-n_best", "3")
    one, three = lines(tmp_path / "n1"), lines(tmp_path / "n3")
    assert [line.split("\t")[0] for line in one] == [line.split("\t")[0] for line in three[::3]]


def test_optimal_log_prob_gives_stock_answers_in_no_more_steps(ours, stock, model, src, tmp_path):
    """The paper's Theorem 2 on eole: raw log-probability, n_best 1: the same translations as eole's rule."""
    common = [*COMMON, "-length_penalty", "none", "-beam_size", "5", "-batch_size", "1"]
    run(stock, model, src, tmp_path / "stock", *common)
    run(ours, model, src, tmp_path / "opt", *common, "-stopping", "optimal", "-stats_file", tmp_path / "o")
    run(ours, model, src, tmp_path / "def", *common, "-stats_file", tmp_path / "d")
    assert lines(tmp_path / "opt") == lines(tmp_path / "stock")
    assert all(o["steps"] <= d["steps"] for o, d in zip(stats(tmp_path / "o"), stats(tmp_path / "d"), strict=True))


def test_decoder_only_batches_answer_as_prompts_alone(ours, decoder_only, src, tmp_path):
    """Prompts of different lengths share a batch: each answer is the one its prompt gets alone."""
    common = [*COMMON, "-length_penalty", "none", "-beam_size", "4", "-stopping", "optimal", "-with_score"]
    run(ours, decoder_only, src, tmp_path / "batched", *common, "-batch_size", "16", "-stats_file", tmp_path / "s")
    run(ours, decoder_only, src, tmp_path / "alone", *common, "-batch_size", "1")
    assert_same_answers(tmp_path / "batched", tmp_path / "alone", stats(tmp_path / "s"))
    prompts = [len(line.split()) + 1 for line in lines(src)]  # with the decoder start token
    assert [r["src_length"] for r in stats(tmp_path / "s")] == prompts


# ---------------------------------------------------------------- statistics, empty lines, bad input
def test_statistics_are_consistent(ours, model, src, tmp_path):
    run(ours, model, src, tmp_path / "out", *COMMON, "-length_penalty", "none", "-beam_size", "4",
        "-stopping", "optimal", "-length_reward", "0.8", "-length_ratio", "1.5", "-stats_file", tmp_path / "s",
        "-with_score")
    out, records = lines(tmp_path / "out"), stats(tmp_path / "s")
    assert [r["line"] for r in records] == list(range(1, 41))
    for line, r in zip(out, records):
        text, score = line.split("\t")[:2]
        assert len(text.split()) == r["length"]
        assert float(score) == pytest.approx(r["score"], abs=1e-5)
        assert r["score"] == pytest.approx(r["log_prob"] + 0.8 * min(r["target_length"], r["length"]), abs=1e-4)
        assert r["stop_reason"] in ("certificate", "all_finished", "max_length")


@pytest.mark.parametrize("args", [["-stopping", "optimal"], ["-stopping", "default", "-n_best", "2"],
                                  ["-stopping", "optimal", "-beam_size", "1"]],
                         ids=["optimal", "default n_best 2", "optimal b=1 (eole's own search)"])
def test_empty_lines_are_answered_in_place(ours, model, src, tmp_path, args):
    real = lines(src)[:5]
    text = ["", real[0], "   ", real[1], real[2], "", real[3], real[4], ""]
    noisy, clean = tmp_path / "noisy.src", tmp_path / "clean.src"
    noisy.write_text("\n".join(text) + "\n")
    clean.write_text("\n".join(real) + "\n")
    # batches of one: eole 0.6.4's RNN encoder reads a sentence's padding, so its translation depends on the
    # batch it shares (stock: 35 of these 40 lines change between -batch_size 1 and 30)
    common = [*COMMON, "-length_penalty", "none", "-beam_size", "3", "-batch_size", "1", *args]
    run(ours, model, noisy, tmp_path / "noisy.out", *common, "-stats_file", tmp_path / "s")
    run(ours, model, clean, tmp_path / "clean.out", *common, "-stats_file", tmp_path / "c")
    n = 2 if "-n_best" in args else 1
    out = lines(tmp_path / "noisy.out")
    assert len(out) == n * len(text)
    per_line = [out[i * n:(i + 1) * n] for i in range(len(text))]
    assert all(answer == [""] * n for answer, s in zip(per_line, text) if not s.strip())
    got = [line for answer, s in zip(per_line, text) if s.strip() for line in answer]
    assert got == lines(tmp_path / "clean.out")
    reasons = [r["stop_reason"] for r in stats(tmp_path / "s")]
    assert [i for i, r in enumerate(reasons) if r == "empty_source"] == [0, 2, 5, 8]


BAD = [
    (["-stopping", "sometimes"], "-stopping must be one of"),
    (["-length_reward", "-1"], "-length_reward must be"),
    (["-length_penalty", "avg", "-length_reward", "1"], "length_penalty none"),
    (["-length_penalty", "none", "-bp_norm"], "-bp_norm needs -length_ratio"),
    (["-stopping", "optimal", "-top_k", "3"], "random sampling"),
    (["-stopping", "optimal", "-stats_file", "/nonexistent/dir/s"], "does not exist"),
    (["-length_ratio", "abc"], "-length_ratio"),
]


@pytest.mark.parametrize("args,mentions", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_options_give_one_line_and_exit_2(ours, encoder_decoder, src, tmp_path, args, mentions):
    (tmp_path / "out").write_text("earlier output\n")
    done = run(ours, encoder_decoder, src, tmp_path / "out", *args, check=False)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("eole predict: error: "), done.stderr
    assert mentions in done.stderr
    assert (tmp_path / "out").read_text() == "earlier output\n"


# ---------------------------------------------------------------- nothing lost, one line for every fault
EOLE = str(Path(sys.executable).parent / "eole")
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
ENV.pop("ONMT_OPTIMAL_DISABLE", None)
OURS = ["-length_penalty", "none", "-stopping", "optimal"]
one_error_line = functools.partial(one_line.one_error_line, prog="eole predict")
EARLIER, EARLIER_STATS = "earlier output\n", '{"earlier": "statistics"}\n'


def earlier_files(directory: Path) -> tuple[Path, Path]:
    out, stats_file = directory / "out.txt", directory / "stats.jsonl"
    out.write_text(EARLIER)
    stats_file.write_text(EARLIER_STATS)
    return out, stats_file


@pytest.fixture(scope="module")
def large_src(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("large")
    toy_eole.write_pairs(d / "large", 5000, seed=4, kind="encoder_decoder", max_len=12)
    return d / "large.src"


@pytest.mark.parametrize("how", ["same path", "hard link"])
def test_stats_file_equal_to_output_is_refused_and_both_are_kept(ours, encoder_decoder, src, tmp_path, how):
    """Stock (with the plugin before this fix) wrote the statistics, then the output over them, exit 0."""
    out = tmp_path / "out.txt"
    out.write_text(EARLIER)
    stats_file = out if how == "same path" else tmp_path / "hard.txt"
    if how == "hard link":
        os.link(out, stats_file)
    done = run(ours, encoder_decoder, src, out, *OURS, "-stats_file", stats_file, check=False)
    line = one_error_line(done.returncode, done.stderr, 2)
    assert "same file" in line and out.read_text() == EARLIER


def test_a_source_that_is_not_utf8_is_one_line_saying_where(ours, encoder_decoder, tmp_path):
    bad = tmp_path / "bad.src"
    bad.write_bytes(b"a b\nc \xff d\n")
    out = tmp_path / "out.txt"
    out.write_text(EARLIER)
    done = run(ours, encoder_decoder, bad, out, check=False)
    line = one_error_line(done.returncode, done.stderr, 1)
    assert "line 2 is not UTF-8" in line and "byte offset 6" in line, line
    assert out.read_text() == EARLIER and partials(tmp_path) == []


@pytest.mark.parametrize("args,mentions", [
    (["-beam_size", "0"], "-beam_size must be at least 1"),
    (["-beam_size", "-1"], "-beam_size must be at least 1"),
    (["-n_best", "0"], "-n_best must be at least 1"),
    (["-n_best", "0", *OURS], "-n_best must be at least 1"),
    (["-max_length", "0", *OURS], "-max_length must be at least 1"),
    (["-model_path", "/nonexistent/model"], "no such directory"),
], ids=lambda a: " ".join(a) if isinstance(a, list) else "")
def test_sizes_and_paths_that_crashed_are_one_line(ours, encoder_decoder, src, tmp_path, args, mentions):
    out = tmp_path / "out.txt"
    out.write_text(EARLIER)
    done = ours.predict("-model_path", encoder_decoder, "-src", src, "-output", out, *args)
    line = one_error_line(done.returncode, done.stderr, 2)
    assert mentions in line and out.read_text() == EARLIER


def test_max_length_zero_without_new_options_stays_stock(ours, stock, encoder_decoder, src, tmp_path):
    """Stock eole answers -max_length 0 with empty lines (exit 0); only our search refuses it."""
    run(stock, encoder_decoder, src, tmp_path / "stock", "-max_length", "0")
    run(ours, encoder_decoder, src, tmp_path / "ours", "-max_length", "0")
    assert (tmp_path / "ours").read_bytes() == (tmp_path / "stock").read_bytes()


def test_n_best_above_the_beam_is_padded_as_in_opennmt(ours, encoder_decoder, src, tmp_path):
    """eole 0.6.4 keeps at most beam_size answers a line and then failed with an IndexError."""
    common = [*COMMON, *OURS, "-beam_size", "2"]
    run(ours, encoder_decoder, src, tmp_path / "one", *common)
    run(ours, encoder_decoder, src, tmp_path / "five", *common, "-n_best", "5")
    one, five = lines(tmp_path / "one"), lines(tmp_path / "five")
    assert len(five) == 5 * len(one) == 200
    assert [five[5 * i] for i in range(len(one))] == one


@pytest.mark.parametrize("text,mentions", [
    ("beam_siz: 3\n", "unknown option 'beam_siz'"),
    ("beam_size: three\n", "-beam_size"),
    ("beam_size: [3\n", "not valid YAML (line"),
])
def test_a_bad_config_is_one_line(ours, encoder_decoder, src, tmp_path, text, mentions):
    config = tmp_path / "c.yaml"
    config.write_text(f"model_path: {encoder_decoder}\nsrc: {src}\noutput: {tmp_path / 'out'}\n\n{text}")
    done = ours.predict("-config", config)
    line = one_error_line(done.returncode, done.stderr, 2)
    assert mentions in line, line
    assert len(done.stderr.splitlines()) == 1, done.stderr


def test_a_missing_config_is_one_line(ours, tmp_path):
    done = ours.predict("-config", tmp_path / "nonexistent.yaml")
    line = one_error_line(done.returncode, done.stderr, 2)
    assert "nonexistent.yaml" in line and "No such file" in line


def _file_size_limit(limit: int):
    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG, as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limited


@pytest.mark.parametrize("which,limit", [("-output", 256), ("-stats_file", 2048)])
def test_a_full_disk_is_one_line_and_loses_nothing(encoder_decoder, src, tmp_path, which, limit):
    """The 40 lines' output is past 256 bytes but within 2 KB, their statistics past 2 KB (so the output alone
    is written by stock eole's search, the statistics with ours). Stock eole emptied the earlier output and
    failed with a traceback; with the statistics, the earlier ones were lost."""
    out, stats_file = earlier_files(tmp_path)
    ours = ["-stats_file", stats_file, *OURS] if which == "-stats_file" else []
    done = subprocess.run([EOLE, "predict", "-model_path", encoder_decoder, "-src", src, "-output", out, *ours],
                          env=ENV, capture_output=True, text=True, preexec_fn=_file_size_limit(limit))
    line = one_error_line(done.returncode, done.stderr, 1)
    assert line.startswith(f"eole predict: error: {which} ") and "File too large" in line, line
    assert out.read_text() == EARLIER and stats_file.read_text() == EARLIER_STATS and partials(tmp_path) == []


@pytest.mark.parametrize("signum,status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_a_decode_is_one_line_and_loses_nothing(encoder_decoder, large_src, tmp_path, signum,
                                                               status):
    out, stats_file = earlier_files(tmp_path)
    argv = [EOLE, "predict", "-model_path", encoder_decoder, "-src", large_src, "-output", out, "-stats_file",
            stats_file, *OURS]
    # "Inference extensions": eole logs this line just before it decodes
    returncode, stderr = signalled_once_ready(argv, ENV, signum, as_from_a_terminal, "Inference extensions")
    line = one_error_line(returncode, stderr, status)
    assert ("interrupted" if signum == signal.SIGINT else "terminated") in line
    assert out.read_text() == EARLIER and stats_file.read_text() == EARLIER_STATS and partials(tmp_path) == []


@pytest.mark.parametrize("flags", [[], OURS], ids=["stock options", "ours"])
def test_output_to_a_pipe_gets_every_line(encoder_decoder, src, flags):
    """Stock eole's codecs.open(path, "w+") cannot open a pipe: -output /dev/stdout | ... was a traceback. Stdout
    holds one line per input and nothing else (eole 0.6.4 prints no closing line; -profile's table would go to
    stderr with our options: adapter.closing)."""
    done = subprocess.run([EOLE, "predict", "-model_path", encoder_decoder, "-src", src, "-output", "/dev/stdout",
                           *flags], env=ENV, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(done.stdout.splitlines()) == 40
