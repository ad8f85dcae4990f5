"""OpenNMT-py's translation server, ``onmt_server``, with the plugin's options in a model's ``"opt"``.

One real server (``onmt_server`` on 127.0.0.1 at a free port, started and stopped here) serves the session's toy
model twice: model 7 with our options and a relative ``stats_file``, model 8 with none. Its answers are compared
with ``onmt_translate``'s on the same options; its statistics file with ``onmt_translate``'s. A refused value
ends ``onmt_server`` at start-up with one line. The checks of a model's ``"opt"`` run in this process too
(``TranslationServer.start`` on a config whose models are not loaded: no process, no model).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import http_server, onmt_server, server_stats
from helpers.one_line import one_error_line
from helpers.onmt_server import INPUTS, OURS, ROOT, SHARED
from helpers.server_stats import flags, records, size


@pytest.fixture(scope="module")
def root(toy_model, tmp_path_factory) -> Path:
    """The server's models_root: the toy model (a link to it) and, once served, its statistics and log."""
    path = tmp_path_factory.mktemp("served")
    (path / "model.pt").symlink_to(toy_model)
    return path


@pytest.fixture(scope="module")
def server(root, tmp_path_factory):
    cwd = tmp_path_factory.mktemp("cwd")  # where a stats_file relative to the working directory would land
    served = onmt_server.serve_ours_and_stock(root, cwd, cwd / "output.log")
    yield served
    served.stop()


def translate(server, model_id: int, lines: list, headers=None):
    answer = server.post(f"{ROOT}/translate", [{"id": model_id, "src": line} for line in lines], headers=headers)
    assert answer.status == 200 and isinstance(answer.body, list), answer.body
    return answer


def test_answers_and_statistics_are_onmt_translates(server, root, our_worker, toy_model, tmp_path):
    before = len(records(root / "stats.jsonl"))
    answer = translate(server, 7, INPUTS)
    src, out, stats = tmp_path / "src.txt", tmp_path / "out.txt", tmp_path / "stats.jsonl"
    src.write_text("\n".join(INPUTS) + "\n")
    done = our_worker.run("-model", toy_model, "-src", src, "-output", out, "-stats_file", stats,
                          *flags({**SHARED, **OURS}))
    assert done.returncode == 0, done.stderr[-3000:]
    expected = out.read_text().splitlines()
    n_best = SHARED["n_best"]
    assert len(answer.body) == n_best
    got = [answer.body[rank][i]["tgt"] for i in range(len(INPUTS)) for rank in range(n_best)]
    assert got == expected
    served = records(root / "stats.jsonl")[before:]
    request = answer.headers["x-request-id"]
    assert [r.pop("request") for r in served] == [request] * len(INPUTS)
    assert [r.pop("model") for r in served] == [7] * len(INPUTS)
    assert served == records(stats)  # steps, stop reasons, scores, lengths: the same floats
    assert [answer.body[0][i]["pred_score"] for i in range(len(INPUTS))] == [r["score"] for r in served]
    assert {r["stop_reason"] for r in served} & {"certificate", "all_finished"}


def ask(server):
    """``server_stats``'s request: model 7 (our options, its statistics to ``stats.jsonl``)."""
    return lambda lines, headers: translate(server, 7, lines, headers=headers)


def test_statistics_are_appended_per_request_under_its_id(server, root):
    server_stats.check_appended_per_request(root / "stats.jsonl", ask(server), INPUTS)
    assert (root / "server.log").exists()  # log_file and stats_file both relative to models_root
    assert not (server.cwd / "stats.jsonl").exists()


def test_concurrent_requests_append_their_records_whole(server, root):
    server_stats.check_concurrent_records_whole(root / "stats.jsonl", ask(server), INPUTS)


def test_a_model_without_our_options_is_served_as_stock(server, root, stock_worker, toy_model, tmp_path):
    before = size(root / "stats.jsonl")
    answer = translate(server, 8, INPUTS)
    assert "x-request-id" not in answer.headers
    src, out = tmp_path / "src.txt", tmp_path / "out.txt"
    src.write_text("\n".join(INPUTS) + "\n")
    done = stock_worker.run("-model", toy_model, "-src", src, "-output", out, *flags(SHARED))
    assert done.returncode == 0, done.stderr[-3000:]
    n_best = SHARED["n_best"]
    assert [answer.body[rank][i]["tgt"] for i in range(len(INPUTS)) for rank in range(n_best)] == \
        out.read_text().splitlines()
    assert size(root / "stats.jsonl") == before


def test_a_refused_option_of_a_clone_is_an_error_answer(server):
    answer = server.post(f"{ROOT}/clone_model/7", {"opt": {**SHARED, **OURS, "length_reward": -1}})
    assert answer.status == 200 and answer.body["status"] == "error", answer.body
    assert "-length_reward must be a finite number >= 0 (got -1.0)" in answer.body["error"]
    assert translate(server, 7, INPUTS[:1]).body[0][0]["tgt"]  # still serving


@pytest.mark.slow
def test_a_refused_value_ends_the_server_at_start_up_in_one_line(root):
    conf = onmt_server.write_config(root, onmt_server.entry(7, {**SHARED, **OURS, "length_reward": -1}),
                                    name="bad.json")
    proc = subprocess.run(onmt_server.command(conf, http_server.free_port()), env=http_server.env(),
                          capture_output=True, text=True, timeout=300)
    line = one_error_line(proc.returncode, proc.stderr, 2, prog="onmt_server")
    assert line == f"onmt_server: error: {conf}: model 7: -length_reward must be a finite number >= 0 (got -1.0)"


# ------------------------------------------------------------------ a model's "opt", checked in this process
@pytest.fixture
def unloaded(tmp_path) -> Path:
    """A models_root with a placeholder model file: the models below are never loaded (``"load": false``)."""
    (tmp_path / "model.pt").write_bytes(b"")
    return tmp_path


def start(root: Path, opt: dict):
    from onmt.translate.translation_server import TranslationServer

    server = TranslationServer()
    server.start(str(onmt_server.write_config(root, onmt_server.entry(3, opt, load=False))))
    return server.models[3]


@pytest.mark.parametrize("opt, says", [
    ({"stopping": "soon"}, "-stopping must be one of default, optimal, exhaustive, shrinking, opennmt2017 "
                           "(got 'soon')"),
    ({"length_reward": 1.0}, "-length_reward replaces length normalization: add -length_penalty none "
                             "(got -length_penalty avg)"),
    ({"bp_norm": True, "length_penalty": "none"}, "-bp_norm needs -length_ratio RHO (> 0)"),
    ({"bp_norm": "yes"}, "-bp_norm must be true or false (got 'yes')"),
    ({"length_reward": "abc"}, "argument --length_reward/-length_reward: invalid float value: 'abc'"),
    ({"length_rewad": 1.0}, "unrecognized arguments: -length_rewad 1.0"),
    ({"ray_workers": 2}, "-ray_workers is onmt_translate's"),
    ({"stats_file": "missing/stats.jsonl"}, "-stats_file {root}/missing/stats.jsonl: directory {root}/missing does "
                                            "not exist"),
    ({"stats_file": "same.log", "log_file": "same.log"}, "-log_file {root}/same.log and -stats_file "
                                                         "{root}/same.log are the same file"),
    ({"stats_file": "model.pt"}, "-stats_file {root}/model.pt is the -model file"),
], ids=["stopping", "normalized", "bp_norm-ratio", "switch", "type", "unknown", "ray", "stats-dir", "stats-log",
        "stats-model"])
def test_a_refused_option_names_the_model(unloaded, opt, says):
    from onmt_optimal.options import OptionError

    argv = list(sys.argv)
    with pytest.raises(OptionError) as refused:
        start(unloaded, opt)
    message = str(refused.value)
    assert message.startswith("model 3: ") and says.format(root=unloaded) in message, message
    assert len(message.splitlines()) == 1
    assert sys.argv == argv  # stock's parse_opt leaves its command line in sys.argv when parsing fails


def test_our_switches_are_true_or_false(unloaded):
    assert start(unloaded, {"bp_norm": False}).opt.bp_norm is False  # stock passed -bp_norm for false
    on = {"bp_norm": True, "length_penalty": "none", "length_ratio": 1.2}
    assert start(unloaded, on).opt.bp_norm is True


def test_a_relative_stats_file_is_joined_to_the_models_root(unloaded):
    assert start(unloaded, {"stats_file": "stats.jsonl"}).opt.stats_file == os.path.join(unloaded, "stats.jsonl")
    absolute = unloaded / "elsewhere.jsonl"
    assert start(unloaded, {"stats_file": str(absolute)}).opt.stats_file == str(absolute)
