"""The checks of the files a run or a server writes, ``ONMT_OPTIMAL_DISABLE``'s values, a run stopped after its
outputs were in place, and each sentence's statistics in a server's answer: in this process, no toolkit started.

Before: a server's ``stats_file`` could be a FIFO (every request hung), ``newdir/``, ``5`` or a list (files named
so); a directory that refuses new files to root (``/sys``) passed ``os.access`` and the write failed after the
whole decode; ``ONMT_OPTIMAL_DISABLE=y`` left the plugin on without a word; a SIGTERM after the outputs were
renamed into place said they "were left as they were".
"""
from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pytest

from onmt_optimal import atomic, failures, file_checks, import_hook, options
from onmt_optimal import serving as served
from onmt_optimal.opennmt import option_reading, server_files
from onmt_optimal.search.record import STATS, Record, StopReason

REPO = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ a file a server appends to
@pytest.mark.parametrize("make, says", [
    (lambda d: (os.mkfifo(d / "fifo"), str(d / "fifo"))[1], "is not a regular file"),
    (lambda d: str(d), "is a directory, not a file"),
    (lambda d: f"{d}/newdir/", "ends with '/'"),
    (lambda d: 5, "must be a file name (a string), got 5"),
    (lambda d: ["a", "b"], "must be a file name (a string), got ['a', 'b']"),
    (lambda d: "", "is empty"),
    (lambda d: f"{d}/missing/stats.jsonl", "does not exist"),
    (lambda d: "/sys/onmt-optimal-stats.jsonl", "/sys"),
], ids=["fifo", "directory", "slash", "number", "list", "empty", "missing-dir", "sys"])
def test_a_file_a_server_cannot_append_to_is_refused(tmp_path, make, says):
    path = make(tmp_path)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(options.OptionError) as refused:
        file_checks.check_appended("-stats_file", path)
    assert says in str(refused.value) and len(str(refused.value).splitlines()) == 1
    assert sorted(os.listdir(tmp_path)) == before  # nothing made, not even the probe


def test_a_regular_file_or_a_new_one_is_taken_untouched(tmp_path):
    existing = tmp_path / "stats.jsonl"
    existing.write_text('{"line": 1}\n')
    file_checks.check_appended("-stats_file", str(existing))
    file_checks.check_appended("-stats_file", str(tmp_path / "new.jsonl"))
    file_checks.check_appended("-stats_file", os.devnull)
    assert existing.read_text() == '{"line": 1}\n' and sorted(os.listdir(tmp_path)) == ["stats.jsonl"]


def test_a_directory_that_takes_no_new_file_is_refused_before_the_run(tmp_path):
    with pytest.raises(options.OptionError, match="takes no new file|is not writable"):
        file_checks.check_writable("-stats_file", "/sys/onmt-optimal-stats.jsonl")
    file_checks.check_writable("-output", str(tmp_path / "out.txt"))
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------------ a server config's files
def test_the_shipped_server_configs_pass_their_check(monkeypatch):
    monkeypatch.chdir(REPO)
    for conf in sorted((REPO / "configs").glob("*/server.json")):
        server_files.check_config(str(conf.relative_to(REPO)))


def test_a_stats_file_that_is_another_models_checkpoint_is_refused(tmp_path):
    for name in ("a.pt", "b.pt"):
        (tmp_path / name).write_bytes(b"")
    conf = tmp_path / "conf.json"
    conf.write_text(json.dumps({"models_root": str(tmp_path), "models": [
        {"id": 1, "model": "a.pt", "opt": {"stats_file": "b.pt"}}, {"id": 2, "model": "b.pt", "opt": {}}]}))
    with pytest.raises(options.OptionError, match=r"^model 1: -stats_file .*/b.pt is model 2's -model file"):
        server_files.check_config(str(conf))


def test_models_may_share_a_stats_file_but_not_a_log_file_with_it(tmp_path):
    (tmp_path / "a.pt").write_bytes(b"")
    conf = tmp_path / "conf.json"
    shared = {"stats_file": "s.jsonl"}
    conf.write_text(json.dumps({"models_root": str(tmp_path), "models": [
        {"id": 1, "model": "a.pt", "opt": shared}, {"id": 2, "model": "a.pt", "opt": shared}]}))
    server_files.check_config(str(conf))
    conf.write_text(json.dumps({"models_root": str(tmp_path), "models": [
        {"id": 1, "model": "a.pt", "opt": shared}, {"id": 2, "model": "a.pt", "opt": {"log_file": "s.jsonl"}}]}))
    with pytest.raises(options.OptionError, match="model 2: -log_file .* and model 1's -stats_file .* are the same"):
        server_files.check_config(str(conf))


@pytest.mark.parametrize("text, says", [("{", "not JSON"), ("[]", "not a server config")])
def test_a_config_that_is_not_one_is_one_line(tmp_path, text, says):
    conf = tmp_path / "conf.json"
    conf.write_text(text)
    with pytest.raises(options.OptionError, match=says):
        server_files.check_config(str(conf))


def test_the_docs_show_the_shipped_tvsub_config_as_it_is():
    usage = (REPO / "docs/usage.md").read_text()
    shipped = (REPO / "configs/tvsub-zh-en/server.json").read_text().strip()
    assert f"```json\n{shipped}\n```" in usage
    assert "onmt_server --ip 127.0.0.1 --port 5000 -m configs/tvsub-zh-en/server.json" in usage


# ------------------------------------------------------------------ the statistics in an answer
def _record(steps: int) -> Record:
    return Record(steps=steps, stop_reason=StopReason("certificate"), score=-1.5, log_prob=-1.5, length=2,
                  target_length=None, src_length=2, completed=3)


def test_each_input_gets_its_record_none_when_empty_a_list_when_split():
    request = served.Request()
    request.segments = [1, 1, 2, 1]
    request.empty = [False, True, False, False, False]
    request.records = [_record(4), _record(5), _record(6), _record(7)]
    stats = request.answer_stats()
    assert [s if s is None or isinstance(s, list) else s["steps"] for s in stats][:2] == [4, None]
    assert [r["steps"] for r in stats[2]] == [5, 6] and stats[3]["steps"] == 7
    assert [stats[0]["line"], stats[2][0]["line"], stats[3]["line"]] == [1, 2, 4]
    assert list(stats[0]) == ["line", *STATS]  # the record module's names, in its order
    request.records = request.records[:3]
    assert request.answer_stats() is None  # counts that disagree: no field rather than a wrong one


# ------------------------------------------------------------------ ONMT_OPTIMAL_DISABLE
@pytest.mark.parametrize("value, warns", [("garbage", True), ("2", True), ("y", True), ("disable", True),
                                          ("1", False), (" On ", False), ("no", False), ("", False)])
def test_a_disable_value_not_understood_is_one_warning(monkeypatch, capsys, value, warns):
    monkeypatch.setenv("ONMT_OPTIMAL_DISABLE", value)
    monkeypatch.setattr(import_hook, "_WARNED", False)
    import_hook._warn_unknown()
    import_hook._warn_unknown()
    err = capsys.readouterr().err
    assert err.count("\n") == (1 if warns else 0)
    if warns:
        assert err == (f"onmt-optimal: warning: ONMT_OPTIMAL_DISABLE={value!r} is not understood (1, true, yes or "
                       f"on turn the plugin off; 0, false, no, off or empty keep it on): the plugin stays on\n")
        assert not import_hook.disabled()


# ------------------------------------------------------------------ a run stopped after its outputs
@pytest.mark.parametrize("commit", [False, True], ids=["before", "after"])
def test_a_signal_after_the_outputs_are_in_place_says_they_are_complete(tmp_path, capsys, commit):
    target = tmp_path / "out.txt"
    target.write_text("earlier\n")

    def main():
        outputs = atomic.Outputs()
        with outputs.open("-output", str(target)) as f:
            f.write(b"new\n")
        if commit:
            outputs.commit()
        raise failures.Terminated(signal.SIGTERM)

    with pytest.raises(SystemExit) as ended:
        failures.run("onmt_translate", main)
    assert ended.value.code == 143
    line = capsys.readouterr().err.strip()
    if commit:
        assert line.endswith("the outputs had been written and renamed into place: they are complete")
        assert target.read_text() == "new\n"
    else:
        assert line.endswith("output files were left as they were") and target.read_text() == "earlier\n"
    assert not [p for p in os.listdir(tmp_path) if re.search(r"\.partial$", p)]


def test_a_stats_file_that_is_a_pyonmttok_model_is_refused(tmp_path):
    for name in ("a.pt", "bpe.model"):
        (tmp_path / name).write_bytes(b"")
    conf = tmp_path / "conf.json"
    conf.write_text(json.dumps({"models_root": str(tmp_path), "models": [
        {"id": 1, "model": "a.pt", "opt": {"log_file": "bpe.model"},
         "tokenizer": {"type": "pyonmttok", "mode": "conservative", "params": {"bpe_model_path": "bpe.model"}}}]}))
    with pytest.raises(options.OptionError, match=r"^model 1: -log_file .*/bpe.model is the tokenizer's "
                                                  r"bpe_model_path"):
        server_files.check_config(str(conf))


# ------------------------------------------------------------------ a model's "opt" read as the parser reads it
@pytest.mark.parametrize("key, dest, explicit", [
    ("stats_file", "stats_file", None), ("-stats_file", "stats_file", None), ("stats_fil", "stats_file", None),
    ("stats_file=/a/b", "stats_file", "/a/b"), ("-stats_file=/a/b", "stats_file", "/a/b"),
    ("-stats_fil=/a/b", "stats_file", "/a/b"), ("config=/a/b", "config", "/a/b"), ("h", "help", None),
    ("hx", "help", "x"), ("model", "models", None), ("models", "models", None), ("stats_fil=/a", None, None),
    ("--beam_size", None, None), ("beam_size /x", None, None),
])
def test_a_key_is_read_as_the_parser_reads_it(key, dest, explicit):
    got = server_files.read_key(key)
    assert (got[0], got[2]) == (dest, explicit)


def test_the_client_allow_list_is_the_decoding_options_and_the_tables_search_options():
    from onmt_optimal.option_table import OPENNMT, SEARCH, taken_by

    allowed = server_files.CLIENT_OPTIONS
    assert {"beam_size", "n_best", "max_length", "stopping", "length_reward", "bound"} <= set(allowed)
    assert not {"stats_file", "log_file", "config", "save_config", "output", "models", "gpu", "help", "progress",
                "ray_workers", "dump_beam", "src", "transforms", "prune_dead"} & set(allowed)
    assert [o.name for o in taken_by(OPENNMT, SEARCH) if o.client] == list(allowed[-5:])
    actions = option_reading.parser()._option_string_actions
    assert all(actions[f"-{name}"].dest == name for name in allowed)  # each an option of the server's parser


def test_the_docs_list_the_client_allow_list():
    usage = " ".join((REPO / "docs/usage.md").read_text().split())
    at = usage.index("A client's `\"opt\"` sets decoding options only")
    listed = re.findall(r"`(\w+)`", usage[at:usage.index("(the list is", at)])
    assert listed == list(server_files.CLIENT_OPTIONS)


@pytest.mark.parametrize("opt, says", [
    ({"stats_file": "/x"}, '"stats_file" is not an option a client may set'),
    ({"stats_file=/x": True}, '"stats_file=/x" is not an option a client may set'),
    ({"prune_dead": True}, '"prune_dead" is not an option a client may set'),  # the operator's (a model's "opt")
    ({"-beam_size": 3}, '"-beam_size" (the parser reads it as --beam_size) is not an option a client may set'),
    ({"beam": 3}, '"beam" (the parser reads it as -beam_size) is not an option'),
    ({"s": 3}, "could abbreviate several options' names"),
    ({"bp_norm": "yes"}, '"bp_norm" is a switch: true or false (got a string)'),
    ({"beam_size": [3]}, '"beam_size" takes a word or a number (got a list)'),
    ({"beam_size": "-stats_file=/x"}, 'would be read as the option -stats_file'),
])
def test_a_client_key_off_the_allow_list_is_one_line(opt, says):
    problem = server_files.client_problem(opt)
    assert problem is not None and says in problem and len(problem.splitlines()) == 1, problem


def test_decoding_options_by_their_names_are_a_clients():
    assert server_files.client_problem({"beam_size": 3, "n_best": 2, "stopping": "optimal", "bp_norm": False,
                                        "length_ratio": "1.2", "alpha": -0.5}) is None


@pytest.mark.parametrize("spelling", ["/proc/self/root{root}/tok.model", "{root}/../{name}/tok.model", "hard",
                                      "/proc/self/root{root}/b.pt"])
def test_any_models_written_file_is_compared_with_every_models_reads_by_identity(tmp_path, spelling):
    for name in ("a.pt", "b.pt", "tok.model"):
        (tmp_path / name).write_bytes(b"")
    os.link(tmp_path / "tok.model", tmp_path / "hard")
    path = spelling.format(root=tmp_path, name=tmp_path.name)
    conf = tmp_path / "conf.json"
    conf.write_text(json.dumps({"models_root": str(tmp_path), "models": [
        {"id": 1, "model": "a.pt", "opt": {}},
        {"id": 2, "model": "b.pt", "opt": {}, "tokenizer": {"type": "sentencepiece", "model": "tok.model"}},
        {"id": 3, "model": "a.pt", "opt": {"stats_file": path}}]}))
    with pytest.raises(options.OptionError, match=r"^model 3: -stats_file .* is model 2's"):
        server_files.check_config(str(conf))


def test_a_file_a_models_yaml_config_names_is_checked_with_the_others(tmp_path):
    """The "config" YAML of a model names files as its "opt" does: a stats_file there that is the server's config,
    a log_file that is its phrase table, a path that is no string are refused at start-up."""
    (tmp_path / "a.pt").write_bytes(b"")
    (tmp_path / "phrases.txt").write_text("a|||A\n")
    conf, yaml_file = tmp_path / "conf.json", tmp_path / "model.yaml"
    conf.write_text(json.dumps({"models_root": str(tmp_path), "models": [
        {"id": 1, "model": "a.pt", "opt": {"config": str(yaml_file)}}]}))
    for text, says in [("stats_file: conf.json", r"-stats_file .*/conf.json is the server's config file"),
                       (f"log_file: {tmp_path}/phrases.txt\nphrase_table: {tmp_path}/phrases.txt",
                        r"-log_file .*/phrases.txt is the -phrase_table file"),
                       ("stats_file: true", r"-stats_file \(in -config .*\) must be a file name \(a string\), got True"),
                       ("transforms: [sentencepiece]", ".transforms. in a model.s .opt. is ignored")]:
        yaml_file.write_text(text + "\n")
        with pytest.raises(options.OptionError, match=f"^model 1: {says}"):
            server_files.check_config(str(conf))


def test_a_models_parsed_written_files_are_checked_against_the_servers_reads(tmp_path, monkeypatch):
    """Whatever named them, the files a model's parsed options write are none the server reads (by identity)."""
    conf = tmp_path / "conf.json"
    conf.write_text("{}")
    monkeypatch.setattr(server_files, "SERVER_READS", [(None, "the server's config file (-m)", str(conf))])
    with pytest.raises(options.OptionError, match=r"^-stats_file /proc/self/root.*conf.json is the server's config"):
        server_files.check_written([("-stats_file", f"/proc/self/root{conf}")])
    server_files.check_written([("-stats_file", str(tmp_path / "stats.jsonl")), ("-dump_beam", None)])
