"""eole's inference server, ``eole serve``, with the plugin's options in a model's ``config``.

One real server (``eole serve`` on 127.0.0.1 at a free port, started and stopped here) serves the session's two
toy models with our options and a ``stats_file`` relative to its working directory, and the encoder-decoder once
more with none. Its ``/infer`` answers are compared with ``eole predict``'s on the same options, its statistics
file with ``eole predict``'s. eole's ``/infer`` applies every decoding setting of a request, its defaults
included (``beam_size`` 5, ``n_best`` 1, ``max_length`` 250), over the model's config: the requests here send the
config's.
A refused value ends ``eole serve`` at start-up with one line; the other checks of a model's config run in this
process (``Server.start`` on a config whose models are not preloaded).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import http_server, server_stats
from helpers.one_line import one_error_line
from helpers.server_stats import flags, records, size

INPUTS = ["a b c", "p o", "k e i d", "m a n g o", "h", "b i b i b"]
SHARED = {"beam_size": 3, "max_length": 30, "n_best": 2}  # the models' config, and what each request sends
OURS = {"length_penalty": "none", "stopping": "optimal", "length_reward": 1.0, "length_ratio": 1.5}
KINDS = ("encoder_decoder", "decoder_only")


def _eole() -> str:
    return str(Path(sys.executable).parent / "eole")


def server_config(root: Path, models: list, name: str = "server.yaml") -> Path:
    path = root / name
    path.write_text(yaml.safe_dump({"models_root": str(root), "models": models}))
    return path


@pytest.fixture(scope="module")
def cwd(tmp_path_factory) -> Path:
    """The server's working directory: a relative stats_file lands there, as eole's log_file does."""
    return tmp_path_factory.mktemp("serve")


@pytest.fixture(scope="module")
def server(cwd, encoder_decoder, decoder_only):
    models = [{"id": kind, "path": str(path), "preload": True,
               "config": {**SHARED, **OURS, "stats_file": "stats.jsonl"}}
              for kind, path in (("encoder_decoder", encoder_decoder), ("decoder_only", decoder_only))]
    models.append({"id": "stock", "path": str(encoder_decoder), "preload": True, "config": dict(SHARED)})
    conf = server_config(cwd, models)
    port = http_server.free_port()
    served = http_server.Server([_eole(), "serve", "-config", conf, "--host", http_server.HOST, "--port", port],
                                port, "/health", cwd / "output.log", env=http_server.env(), cwd=cwd)
    yield served
    served.stop()


def infer(server, model: str, inputs, headers=None):
    answer = server.post("/infer", {"model": model, "inputs": inputs, **SHARED}, headers=headers)
    assert answer.status == 200, answer.body
    return answer


def predicted(worker, model: Path, tmp_path: Path, opt: dict, stats: bool):
    """``eole predict`` on INPUTS with ``opt``: each line's n-best (text, score), and its statistics records."""
    src, out, stats_file = tmp_path / "src.txt", tmp_path / "out.txt", tmp_path / "stats.jsonl"
    src.write_text("\n".join(INPUTS) + "\n")
    done = worker.predict("-model_path", model, "-src", src, "-output", out, "-with_score", *flags(opt),
                          *(("-stats_file", stats_file) if stats else ()))
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    n_best = opt["n_best"]
    answers = [[(text, float(score)) for text, score, *_ in rows[i * n_best:(i + 1) * n_best]]
               for i in range(len(INPUTS))]
    return answers, records(stats_file)


@pytest.mark.parametrize("kind", KINDS)
def test_answers_and_statistics_are_eole_predicts(server, cwd, ours, kind, request, tmp_path):
    before = len(records(cwd / "stats.jsonl"))
    answer = infer(server, kind, INPUTS)
    expected, expected_stats = predicted(ours, request.getfixturevalue(kind), tmp_path, {**SHARED, **OURS}, True)
    got = [list(zip(texts, scores)) for texts, scores in zip(answer.body["predictions"], answer.body["scores"])]
    assert got == expected  # texts, and scores as the same floats
    served = [r for r in records(cwd / "stats.jsonl")[before:] if r["model"] == kind]
    assert [r.pop("request") for r in served] == [answer.headers["x-request-id"]] * len(INPUTS)
    assert [r.pop("model") for r in served] == [kind] * len(INPUTS)
    assert served == expected_stats
    assert {r["stop_reason"] for r in served} & {"certificate", "all_finished"}


def ask(server):
    """``server_stats``'s request: the encoder-decoder with our options (its statistics to ``stats.jsonl``)."""
    return lambda inputs, headers: infer(server, "encoder_decoder", inputs, headers=headers)


def test_statistics_are_appended_per_request_under_its_id(server, cwd):
    server_stats.check_appended_per_request(cwd / "stats.jsonl", ask(server), INPUTS)


def test_concurrent_requests_append_their_records_whole(server, cwd):
    server_stats.check_concurrent_records_whole(cwd / "stats.jsonl", ask(server), INPUTS)


def test_a_model_without_our_options_is_served_as_stock(server, cwd, stock, encoder_decoder, tmp_path):
    before = size(cwd / "stats.jsonl")
    answer = infer(server, "stock", INPUTS)
    assert "x-request-id" not in answer.headers
    expected, _ = predicted(stock, encoder_decoder, tmp_path, dict(SHARED), False)
    assert [list(zip(texts, scores)) for texts, scores in zip(answer.body["predictions"], answer.body["scores"])] \
        == expected
    assert size(cwd / "stats.jsonl") == before


def test_a_model_without_our_options_answers_as_stock_eole_serve(server, encoder_decoder, tmp_path):
    """The same model and settings served by stock eole (``ONMT_OPTIMAL_DISABLE=1``): the same answer, and the same
    headers but the date."""
    conf = server_config(tmp_path, [{"id": "stock", "path": str(encoder_decoder), "preload": True,
                                     "config": dict(SHARED)}])
    port = http_server.free_port()
    stock = http_server.Server([_eole(), "serve", "-config", conf, "--host", http_server.HOST, "--port", port],
                               port, "/health", tmp_path / "output.log", env=http_server.env(ONMT_OPTIMAL_DISABLE="1"),
                               cwd=tmp_path)
    try:
        theirs = infer(stock, "stock", INPUTS)
    finally:
        stock.stop()
    ours = infer(server, "stock", INPUTS)
    assert ours.body == theirs.body
    assert {k: v for k, v in ours.headers.items() if k != "date"} == \
        {k: v for k, v in theirs.headers.items() if k != "date"}


def test_a_request_setting_our_options_refuse_is_answered_400_in_one_line(server):
    answer = server.post("/infer", {"model": "encoder_decoder", "inputs": INPUTS[:1], **SHARED, "ratio": 0.5})
    assert answer.status == 400, answer.body
    assert answer.body == {"detail": "model encoder_decoder: eole's -ratio stopping rule cannot be combined with "
                                     "onmt-optimal's options (-stopping, -length_reward, -bp_norm, -stats_file); "
                                     "drop -ratio"}
    assert infer(server, "encoder_decoder", INPUTS[:1]).body["predictions"][0][0]  # still serving


def test_a_refused_value_ends_the_server_at_start_up_in_one_line(encoder_decoder, tmp_path):
    conf = server_config(tmp_path, [{"id": "toy", "path": str(encoder_decoder),
                                     "config": {**SHARED, **OURS, "length_reward": -1}}])
    port = http_server.free_port()
    proc = subprocess.run([_eole(), "serve", "-config", str(conf), "--host", http_server.HOST, "--port", str(port)],
                          env=http_server.env(), capture_output=True, text=True, timeout=300, cwd=tmp_path)
    line = one_error_line(proc.returncode, proc.stderr, 2, prog="eole serve")
    assert line == f"eole serve: error: {conf}: model toy: -length_reward must be a finite number >= 0 (got -1.0)"


# ------------------------------------------------------------------ a model's config, checked in this process
def start(root: Path, model: Path, config: dict):
    from eole.server.model import Server

    server = Server()
    server.start(str(server_config(root, [{"id": "toy", "path": str(model), "config": config}])))
    return server.models["toy"]


@pytest.mark.parametrize("config, says", [
    ({"stopping": "soon"}, "-stopping must be one of default, optimal, exhaustive, shrinking, opennmt2017 "
                           "(got 'soon')"),
    ({"length_reward": 1.0}, "-length_reward replaces length normalization: add -length_penalty none "
                             "(got -length_penalty avg)"),
    ({"length_reward": "abc"}, "-length_reward: Input should be a valid number, unable to parse string as a "
                               "number (got 'abc')"),
    ({"stopping": "optimal", "length_rewad": 1.0}, "unknown option 'length_rewad' in its config"),
    ({"stats_file": "missing/stats.jsonl"}, "-stats_file {root}/missing/stats.jsonl: directory {root}/missing does "
                                            "not exist"),
    ({"stats_file": "same.log", "log_file": "same.log"}, "are the same file"),
    ({"stats_file": "{model}/config.json"}, "-stats_file {model}/config.json is the file config.json of the "
                                            "-model_path model"),
], ids=["stopping", "normalized", "type", "unknown", "stats-dir", "stats-log", "stats-model"])
def test_a_refused_option_names_the_model(encoder_decoder, tmp_path, monkeypatch, config, says):
    from onmt_optimal.options import OptionError

    monkeypatch.chdir(tmp_path)
    config = {k: v.format(model=encoder_decoder) if isinstance(v, str) else v for k, v in config.items()}
    with pytest.raises(OptionError) as refused:
        start(tmp_path, encoder_decoder, config)
    message = str(refused.value)
    assert message.startswith("model toy: ") and says.format(root=tmp_path, model=encoder_decoder) in message, \
        message
    assert len(message.splitlines()) == 1


def test_a_relative_stats_file_is_the_working_directorys(encoder_decoder, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = start(tmp_path, encoder_decoder, {**OURS, "stats_file": "stats.jsonl"})
    assert model.config.stats_file == str(tmp_path / "stats.jsonl")
