"""Values that pass "is a number" but break float32 scores (``search.limits``), the tools' arguments
(``tool_args``), YAML configs (``yaml_guard``), strict JSON statistics, SIGHUP (``failures.run``) and the one-line
Ctrl-C of the toolkits' commands (``import_hook``): in-process, no model."""
from __future__ import annotations

import json
import math
import os
import signal
import sys
import time

import pytest
import torch
import yaml

from onmt_optimal import failures, file_checks, import_hook
from onmt_optimal.tools import args as tool_args
from onmt_optimal.adapter import yaml_guard
from onmt_optimal.options import OptionError
from onmt_optimal.search import limits
from onmt_optimal.search.record import Record, StopReason

F32 = torch.finfo(torch.float32)


def strict_json(text: str):
    """``json.loads`` that refuses NaN and the infinities, as a strict JSON parser does."""
    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_float32_max_is_torchs():
    assert limits.FLOAT32_MAX == F32.max


@pytest.mark.parametrize("T", [1, 250, 10_000])
def test_the_largest_reward_keeps_two_reward_terms_finite_in_float32(T):
    r = limits.largest_reward(T)
    assert limits.reward_error("-length_reward", r, T) is None
    term = torch.tensor(r, dtype=torch.float32) * T
    assert torch.isfinite(term + term)
    assert limits.reward_error("-length_reward", r * 4, T) is not None


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, -1.0, 1e39, "1", None, True])
def test_a_reward_that_breaks_float32_scores_is_refused(value):
    problem = limits.reward_error("-length_reward", value, 250)
    assert problem is not None and problem.startswith("-length_reward") and "\n" not in problem


@pytest.mark.parametrize("kind", ["avg", "wu"])
@pytest.mark.parametrize("T", [2, 250, 4096])
def test_the_largest_exponent_keeps_the_penalty_and_its_inverse_finite(kind, T):
    alpha = limits.largest_exponent(kind, T)
    for a in (alpha, -alpha):
        assert limits.exponent_error("-alpha", a, kind, T) is None
        lp = torch.tensor(limits.PENALTY_BASES[kind](T), dtype=torch.float64) ** a
        assert math.isfinite(float(lp.float())) and math.isfinite(float((1 / lp).float()))
    assert limits.exponent_error("-alpha", alpha * 1.01, kind, T) is not None
    assert limits.exponent_error("-alpha", -alpha * 1.01, kind, T) is not None


@pytest.mark.parametrize("value", [math.nan, math.inf, 0.0, -1.0, 1e38, 1e-300, 1e-39])
def test_a_ratio_that_breaks_float32_lengths_is_refused(value):
    """(1e-300, 1e-39 before: accepted, l = 0)"""
    assert limits.ratio_error("-length_ratio", value) is not None


def test_the_largest_ratio_keeps_every_exactly_counted_length_finite():
    largest = limits.FLOAT32_MAX / limits.FLOAT32_EXACT_INTEGERS
    assert limits.ratio_error("-length_ratio", largest) is None
    assert torch.isfinite(torch.tensor(largest, dtype=torch.float32) * float(2**24))


@pytest.mark.parametrize("spec,beams", [("1-3", [1, 2, 3]), ("1,5,10", [1, 5, 10]), ("1-2,7", [1, 2, 7])])
def test_beams_parse(spec, beams):
    assert tool_args.parse_beams(spec) == beams


@pytest.mark.parametrize("spec", ["5-1", "0", "abc", "1,1", "", "1-", "-3", "2-x", "1-1001", "1-100000000",
                                  "1-500,600-1100"])
def test_bad_beams_are_one_option_error_line(spec):
    """(1-1001 before: accepted, 1001 decodes of --src; 1-100000000: over ten minutes of a quadratic membership
    test before any other check)"""
    with pytest.raises(OptionError) as err:
        tool_args.parse_beams(spec)
    assert "\n" not in str(err.value) and err.value.status == 2


@pytest.mark.parametrize("spec", ["nan", "-1", "abc", "inf", "1,1", "0,", "1e39"])
def test_bad_rewards_are_one_option_error_line(spec):
    with pytest.raises(OptionError) as err:
        tool_args.parse_rewards(spec, max_length=250)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("ratio", [0.0, -1.0, math.nan, math.inf])
def test_bad_ratios_are_refused(ratio):
    with pytest.raises(OptionError):
        tool_args.check_ratio(ratio)


@pytest.mark.parametrize("how", ["--src", "--refs", "symbolic link to --src", "hard link to --refs", "-model"])
def test_out_is_never_a_file_the_sweep_reads(tmp_path, how):
    src, ref, model = tmp_path / "src", tmp_path / "ref", tmp_path / "model.pt"
    for path in (src, ref, model):
        path.write_text("keep\n")
    out = {"--src": src, "--refs": ref, "-model": model}.get(how)
    if how.startswith("symbolic"):
        out = tmp_path / "link"
        out.symlink_to(src)
    elif how.startswith("hard"):
        out = tmp_path / "hard"
        os.link(ref, out)
    with pytest.raises(OptionError) as err:
        tool_args.check_out(str(out), str(src), [str(ref)], ["--", "-model", str(model)])
    assert "writing it would destroy it" in str(err.value)
    tool_args.check_out(str(tmp_path / "new.json"), str(src), [str(ref)], ["-model", str(model)])


BOMB = "\n".join([
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
    *[f"{n}: &{n} [{','.join(['*' + p] * 9)}]" for p, n in zip("abcdefgh", "bcdefghi")],
]) + "\n"


def test_an_alias_bomb_is_counted_without_expanding_it(tmp_path):
    assert len(BOMB) < 400
    node = yaml.compose(BOMB, Loader=yaml.SafeLoader)
    assert yaml_guard.expanded_size(node, yaml_guard.MAX_VALUES) > yaml_guard.MAX_VALUES
    config = tmp_path / "bomb.yaml"
    config.write_text(BOMB)
    with pytest.raises(OptionError) as err:
        yaml_guard.check("-config", str(config))
    assert "aliases expand" in str(err.value) and len(str(err.value)) < 300


@pytest.mark.parametrize("head", [b"\xff\xfe", b"PK\x03\x04\x80"])
def test_a_config_that_is_not_utf8_text_is_one_line(tmp_path, head):
    """Before: a UnicodeDecodeError traceback (a UTF-16 file, a model file given as -config)."""
    config = tmp_path / "c.yaml"
    config.write_bytes(head + b"model: m.pt\n")
    with pytest.raises(OptionError) as err:
        yaml_guard.check("-config", str(config))
    assert "is not a YAML config" in str(err.value) and "not UTF-8" in str(err.value), err.value


@pytest.mark.parametrize("path,says", [("keep.txt/", "ends with '/'"), ("new/", "ends with '/'"),
                                       ("", "is empty")])
def test_a_written_path_that_names_no_file_is_refused(tmp_path, monkeypatch, path, says):
    """Before: -output keep.txt/ replaced keep.txt, -output new/ made a file named new (the rename onto the
    target drops the slash), -output "" was refused only after the whole decode."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("keep\n")
    with pytest.raises(OptionError) as err:
        file_checks.check_writable("-output", path)
    assert says in str(err.value), err.value


def test_a_config_with_a_few_aliases_passes(tmp_path):
    config = tmp_path / "ok.yaml"
    config.write_text("common: &c {beam_size: 5}\nsrc: a.txt\ntransforms: [sentencepiece]\nother: *c\n")
    yaml_guard.check("-config", str(config))
    yaml_guard.scalar_values("-config", str(config), {"src": "a.txt", "transforms": ["sentencepiece"]})


@pytest.mark.parametrize("value", [{"a": 1}, [["a"]], [{"a": 1}]])
def test_a_mapping_as_a_flags_value_is_refused(value):
    with pytest.raises(OptionError) as err:
        yaml_guard.scalar_values("-config", "c.yaml", {"stats_file": value})
    assert "stats_file" in str(err.value)


def test_a_statistics_line_is_strict_json_even_for_a_degenerate_answer():
    record = Record(steps=1, stop_reason=StopReason("all_finished"), score=-math.inf, log_prob=-math.inf,
                    length=0, target_length=None, src_length=1, completed=0)
    assert strict_json(record.json(1))["score"] is None


def test_json_values_are_plain_as_transformers_search_stats_give_them():
    """``Record.json_stats`` (transformers' ``search_stats``): a ``str`` stop reason, None for -inf."""
    record = Record(steps=1, stop_reason=StopReason("all_finished"), score=-math.inf, log_prob=-2.5,
                    length=0, target_length=None, src_length=1, completed=0)
    values = {"stopping": "optimal", **record.json_stats(), "tokens": [4]}
    assert type(values["stop_reason"]) is str and values["stop_reason"] == "all_finished"
    assert values["score"] is None and values["log_prob"] == -2.5 and values["tokens"] == [4]
    assert json.loads(json.dumps(values, allow_nan=False)) == values


def test_sighup_ends_a_run_as_one_line_with_status_129(capsys):
    def main():
        os.kill(os.getpid(), signal.SIGHUP)  # the handler runs before the next line
        raise AssertionError("SIGHUP did not stop the run")

    before = signal.signal(signal.SIGHUP, signal.SIG_DFL)  # as from a terminal (nohup would ignore it)
    try:
        with pytest.raises(SystemExit) as done:
            failures.run("prog", main)
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, before)
    assert done.value.code == 129
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("prog: error: hung up (SIGHUP")


def test_an_ignored_sighup_stays_ignored():
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        assert failures.run("prog", lambda: signal.getsignal(signal.SIGHUP)) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, before)


@pytest.mark.parametrize("argv,prog", [
    (["/venv/bin/onmt_translate", "-model", "m.pt"], "onmt_translate"),
    (["/venv/bin/eole", "predict", "-c", "x.yaml"], "eole predict"),
    (["/venv/bin/onmt-optimal", "sweep"], "onmt-optimal sweep"),
    (["-c"], None), (["/usr/bin/pytest"], None), ([], None),
])
def test_only_the_toolkits_commands_get_the_one_line_ctrl_c(monkeypatch, argv, prog):
    monkeypatch.setattr(sys, "argv", argv)
    assert import_hook._command() == prog


@pytest.mark.parametrize("orig,prog", [(["python", "-m", "onmt_optimal", "sweep"], "onmt-optimal sweep"),
                                       (["python", "-m", "pytest"], None)])
def test_python_m_onmt_optimal_gets_the_one_line_ctrl_c(monkeypatch, orig, prog):
    monkeypatch.setattr(sys, "argv", ["-m", *orig[3:]])
    monkeypatch.setattr(sys, "orig_argv", orig)
    assert import_hook._command() == prog


def test_the_one_line_ctrl_c_hook_passes_other_exceptions_on(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(sys, "excepthook", lambda *args: seen.append(args[0]))
    import_hook._one_line_interrupt("onmt_translate")
    sys.excepthook(KeyboardInterrupt, KeyboardInterrupt(), None)
    sys.excepthook(ValueError, ValueError("x"), None)
    assert capsys.readouterr().err == "onmt_translate: error: interrupted (Ctrl-C)\n"
    assert seen == [ValueError]


def test_a_ctrl_c_that_an_import_swallowed_still_ends_the_command(capsys):
    """Before: torch, importing, caught the KeyboardInterrupt of a Ctrl-C (2 runs in 16) and the command decoded
    on. The command's handler remembers the signal; the run raises it again before it starts."""
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        import_hook._remember_interrupts()
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except KeyboardInterrupt:
            pass  # what torch's import did
        with pytest.raises(SystemExit) as done:
            failures.run("prog", lambda: print("decoded"))
    finally:
        signal.signal(signal.SIGINT, before)
        import_hook._INTERRUPTS.clear()
    assert done.value.code == 130
    captured = capsys.readouterr()
    assert "decoded" not in captured.out and captured.err.startswith("prog: error: interrupted"), captured
    assert failures.run("prog", lambda: "ran") == "ran"  # asked once: a later run is not interrupted
