"""``eole serve`` tried as an attacker and as a careless operator would, against real servers on 127.0.0.1 with a
real HTTP client: every file's SHA-256 before and after.

Before: a ``stats_file`` naming the server's own YAML (directly, through a symbolic or a hard link) or a
tokenizer's model started the server, which appended records to it at the first request; a FIFO hung every request
and SIGTERM with it; ``newdir/`` made a file ``newdir`` (the model's own files, a directory, a missing directory,
the log file and values of the wrong type were refused already: the table keeps them). A request's ``phrase_table`` made the
server read any file a client named; an empty ``inputs`` list was a 500 with a traceback; our options in a
request, a 422 with pydantic's errors; ``/infer``'s answer had no statistics. SIGTERM or SIGINT with a decode in
flight waited for it to end (as long as it takes).
"""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from helpers import http_server
from helpers.one_line import one_error_line
from onmt_optimal.search.record import STATS

INPUTS = ["a b c", "p o", "k e i d"]
SHARED = {"beam_size": 3, "max_length": 30, "n_best": 1}
OURS = {"length_penalty": "none", "stopping": "optimal", "length_reward": 1.0, "length_ratio": 1.5}
FIELD = "onmt_optimal"  # the answer's field (docs/eole.md)


def _eole() -> str:
    return str(Path(sys.executable).parent / "eole")


def sums(*roots: Path) -> dict:
    """Every file under ``roots`` (links followed once): its SHA-256."""
    out = {}
    for root in roots:
        for path in sorted([root] if root.is_file() else root.rglob("*")):
            if path.is_file() and not path.is_fifo():
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def write_config(root: Path, models: list) -> Path:
    path = root / "server.yaml"
    path.write_text(yaml.safe_dump({"models_root": str(root), "models": models}))
    return path


def start(conf: Path, cwd: Path) -> http_server.Server:
    """``eole serve`` on ``conf`` in ``cwd``; its output beside ``cwd`` (not among the files checked)."""
    port = http_server.free_port()
    return http_server.Server([_eole(), "serve", "-config", conf, "--host", http_server.HOST, "--port", port],
                              port, "/health", cwd.with_name(cwd.name + ".log"), env=http_server.env(), cwd=cwd)


# ------------------------------------------------------------------------------------------------ one server
@pytest.fixture(scope="module")
def site(tmp_path_factory, encoder_decoder, decoder_only):
    """One server (its working directory, the server, a secret file a client should never read): model ``ours``
    with our options and a statistics file, ``plain`` with our options and none, ``stock`` with none, ``chat`` a
    language model with none, which streams (greedy: eole streams one hypothesis)."""
    cwd = tmp_path_factory.mktemp("site")
    secret = cwd / "secret.txt"
    secret.write_text("a\tSECRET\n")
    models = [{"id": "ours", "path": str(encoder_decoder), "preload": True,
               "config": {**SHARED, **OURS, "stats_file": "stats.jsonl"}},
              {"id": "plain", "path": str(encoder_decoder), "preload": True, "config": {**SHARED, **OURS}},
              {"id": "stock", "path": str(encoder_decoder), "preload": True, "config": dict(SHARED)},
              {"id": "chat", "path": str(decoder_only), "preload": True,  # (its chat endpoints: the last message)
               "config": {**SHARED, "beam_size": 1, "chat_template": "{{ messages[-1]['content'] }}"}}]
    conf = write_config(cwd, models)
    server = start(conf, cwd)
    yield cwd, server, secret
    server.stop()


def infer(server, model: str, inputs, headers=None, **settings):
    return server.post("/infer", {"model": model, "inputs": inputs, **SHARED, **settings}, headers=headers)


ATTACKS = {  # name: (model, the request's body beyond model and SHARED, what its one line says)
    "empty inputs": ("ours", {"inputs": []}, "the request has no input (an empty list)"),
    "empty inputs, stock model": ("stock", {"inputs": []}, "the request has no input (an empty list)"),
    "phrase_table": ("ours", {"phrase_table": "SECRET", "replace_unk": True}, "phrase_table names a file"),
    "phrase_table, stock model": ("stock", {"phrase_table": "SECRET", "replace_unk": True},
                                  "phrase_table names a file"),
    "dump_beam": ("ours", {"dump_beam": "NEW"}, "dump_beam names a file"),
    "stats_file": ("ours", {"stats_file": "NEW"}, "stats_file cannot be given in a request: it names a file"),
    "stats_file, stock model": ("stock", {"stats_file": "NEW"}, "stats_file cannot be given in a request"),
    "stopping": ("plain", {"stopping": "exhaustive"}, "stopping cannot be given in a request: it is a model's"),
    "length_reward": ("ours", {"length_reward": 2.0}, "length_reward cannot be given in a request"),
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_request_naming_a_file_or_no_input_is_400_in_one_line(site, encoder_decoder, name):
    cwd, server, secret = site
    model, body, says = ATTACKS[name]
    body = {k: {"SECRET": str(secret), "NEW": str(cwd / "new.txt")}.get(v, v) if isinstance(v, str) else v
            for k, v in body.items()}
    before = sums(cwd, encoder_decoder)
    answer = server.post("/infer", {"model": model, "inputs": INPUTS[:1], **SHARED, **body})
    assert answer.status == 400, answer.body
    assert list(answer.body) == ["detail"] and isinstance(answer.body["detail"], str), answer.body
    assert says in answer.body["detail"] and "\n" not in answer.body["detail"]
    assert sums(cwd, encoder_decoder) == before and not (cwd / "new.txt").exists()
    assert infer(server, model, INPUTS[:1]).status == 200  # serving on
    assert "Traceback" not in server.output()


def test_a_request_with_a_bad_value_of_eoles_own_is_stocks_422(site):
    _, server, _ = site
    answer = infer(server, "ours", INPUTS[:1], beam_size="many")
    assert answer.status == 422 and answer.body["detail"][0]["loc"][-1] == "beam_size"


#: the models' sizes: SHARED (beam 3, max_length 30, n_best 1) and eole's max_length_ratio, 2
TOO_LARGE = {  # name: (the request's settings beyond SHARED, what its one line says)
    "beam_size": ({"beam_size": 100000}, "beam_size 100000 is more than the model's 3 and the default 5"),
    "n_best": ({"n_best": 1000}, "n_best 1000 is more than the model's 1"),
    "max_length": ({"max_length": 10**9}, "max_length 1000000000 is more than the model's 30 and the default 250"),
    "max_length_ratio": ({"max_length_ratio": 1e6}, "max_length_ratio 1000000.0 is more than the model's 2.0"),
    "max_length_ratio 0": ({"max_length_ratio": 0}, "max_length_ratio 0.0 (no ratio cap) is more than the model's "
                                                    "2.0"),
}


@pytest.mark.parametrize("model", ["ours", "stock"])
@pytest.mark.parametrize("name", list(TOO_LARGE))
def test_a_request_asking_more_than_its_model_is_400_in_one_line(site, model, name):
    _, server, _ = site
    more, says = TOO_LARGE[name]
    body = {k: v for k, v in {"model": model, "inputs": INPUTS[:1], **SHARED, **more}.items() if v is not None}
    answer = server.post("/infer", body)
    assert answer.status == 400, answer.body
    assert answer.body == {"detail": f"model {model}: {says}: a client may lower a size, not raise it; the "
                                     f"operator sets the limit in the model's config in the server's YAML"}
    assert infer(server, model, INPUTS[:1]).status == 200  # serving on
    assert "Traceback" not in server.output()


STREAMED = {  # endpoint: a streamed request's body but max_tokens
    "/v1/chat/completions": {"model": "chat", "messages": [{"role": "user", "content": INPUTS[0]}], "stream": True},
    "/v1/messages": {"model": "chat", "messages": [{"role": "user", "content": INPUTS[0]}], "stream": True},
}


@pytest.mark.parametrize("endpoint", list(STREAMED))
def test_a_streamed_request_asking_more_than_its_model_is_400_in_one_line(site, endpoint):
    """Streamed answers decode through eole's ``inference_stream``, not ``/infer``'s path: their ``max_tokens`` (eole's
    ``max_length``) is capped alike, refused before the stream starts."""
    _, server, _ = site
    answer = server.post(endpoint, {**STREAMED[endpoint], "max_tokens": 10**6})
    assert answer.status == 400, answer.body
    assert answer.body == {"detail": "model chat: max_length 1000000 is more than the model's 30 and the default 250: "
                                     "a client may lower a size, not raise it; the operator sets the limit in the "
                                     "model's config in the server's YAML"}
    assert "Traceback" not in server.output()
    # within the model's: the stream starts (its chunks are stock eole's, which this toy model's break)
    connection = http.client.HTTPConnection(http_server.HOST, server.port, timeout=120)
    connection.request("POST", endpoint, json.dumps({**STREAMED[endpoint], "max_tokens": 20}),
                       {"Content-Type": "application/json"})
    started = connection.getresponse()
    assert started.status == 200 and started.getheader("content-type").startswith("text/event-stream")
    connection.close()
    assert infer(server, "chat", INPUTS[:1]).status == 200  # serving on


@pytest.mark.parametrize("model", ["ours", "stock"])
def test_a_request_asking_as_much_or_less_is_answered(site, model):
    _, server, _ = site
    for less in ({}, {"beam_size": 2, "max_length": 10, "max_length_ratio": 1.5}, {"beam_size": 1, "n_best": 1}):
        answer = infer(server, model, INPUTS, **less)
        assert answer.status == 200 and all(p[0] for p in answer.body["predictions"]), (less, answer.body)
    # a request that names no size asks eole's defaults (max_length 250 over the model's 30): always allowed
    assert server.post("/infer", {"model": model, "inputs": INPUTS}).status == 200


def test_an_operator_lets_requests_ask_up_to_the_models_sizes(encoder_decoder, tmp_path):
    """A model whose operator set more than eole's defaults: a request asks up to its values, not beyond; one that
    names none of them asks eole's defaults, within them."""
    large = {"beam_size": 12, "n_best": 4, "max_length": 300, "max_length_ratio": 0}
    conf = write_config(tmp_path, [{"id": "large", "path": str(encoder_decoder), "preload": True,
                                    "config": dict(large)}])
    server = start(conf, tmp_path)
    try:
        answer = server.post("/infer", {"model": "large", "inputs": INPUTS, **large})
        assert answer.status == 200 and [len(p) for p in answer.body["predictions"]] == [4] * len(INPUTS)
        assert server.post("/infer", {"model": "large", "inputs": INPUTS}).status == 200  # eole's defaults
        refused = server.post("/infer", {"model": "large", "inputs": INPUTS, **large, "beam_size": 13})
        assert refused.status == 400 and refused.body["detail"].startswith(
            "model large: beam_size 13 is more than the model's 12: "), refused.body
    finally:
        server.stop()


def test_the_answer_carries_each_inputs_statistics_as_the_file_has_them(site):
    cwd, server, _ = site
    stats = cwd / "stats.jsonl"
    kept = stats.read_bytes() if stats.exists() else b""
    answer = infer(server, "ours", INPUTS, headers={"X-Request-Id": "with-stats"})
    assert answer.status == 200, answer.body
    assert list(answer.body) == ["predictions", "scores", FIELD]
    records = answer.body[FIELD]
    assert [list(r) for r in records] == [["line", *STATS]] * len(INPUTS)
    written = [json.loads(line) for line in stats.read_bytes()[len(kept):].decode().splitlines()]
    assert [{k: v for k, v in r.items() if k not in ("request", "model")} for r in written] == records
    assert {r["request"] for r in written} == {"with-stats"}


def test_a_model_without_a_statistics_file_answers_them_too(site):
    cwd, server, _ = site
    before = sums(cwd)
    answer = infer(server, "plain", INPUTS)
    assert answer.status == 200 and len(answer.body[FIELD]) == len(INPUTS)
    assert "x-request-id" not in answer.headers
    assert [r["line"] for r in answer.body[FIELD]] == [1, 2, 3]
    assert sums(cwd) == before  # no file written


def test_a_stock_model_answers_no_statistics(site):
    _, server, _ = site
    answer = infer(server, "stock", INPUTS)
    assert answer.status == 200 and list(answer.body) == ["predictions", "scores"]


# ------------------------------------------------------------------------------ refused at start-up
def _stats_file(case: str, root: Path, model: Path):
    """The ``stats_file`` value of ``case`` (making what it names), and the model's extra config."""
    extra = {}
    if case == "its YAML":
        return str(root / "server.yaml"), extra
    if case == "its YAML, relative":
        return "server.yaml", extra
    if case == "a link to its YAML":
        (root / "link.yaml").symlink_to(root / "server.yaml")
        return "link.yaml", extra
    if case == "a hard link to its YAML":
        return "hard.yaml", extra  # made once the YAML is written
    if case in ("config.json", "vocab.json", "model.00.safetensors"):
        return str(model / case), extra
    if case == "a link to the model's vocab.json":
        (root / "vocab-link").symlink_to(model / "vocab.json")
        return "vocab-link", extra
    if case == "a tokenizer's model":
        (root / "tok.model").write_text("a sentencepiece model\n")
        extra = {"transforms": ["sentencepiece"],
                 "transforms_configs": {"sentencepiece": {"src_subword_model": str(root / "tok.model"),
                                                          "tgt_subword_model": str(root / "tok.model")}}}
        return "tok.model", extra
    if case == "a FIFO":
        os.mkfifo(root / "fifo")
        return "fifo", extra
    if case == "a directory":
        (root / "adir").mkdir()
        return "adir", extra
    return {"newdir/": "newdir/", "5": 5, "['a', 'b']": ["a", "b"], "a missing directory": "missing/s.jsonl",
            "its log_file": "same.log"}[case], {"log_file": "same.log"} if case == "its log_file" else extra


STARTUP = {  # case: what the one line says
    "its YAML": "is the -config file",
    "its YAML, relative": "is the -config file",
    "a link to its YAML": "is the -config file",
    "a hard link to its YAML": "is the -config file",
    "config.json": "is the file config.json of the -model_path model",
    "vocab.json": "is the file vocab.json of the -model_path model",
    "model.00.safetensors": "is the file model.00.safetensors of the -model_path model",
    "a link to the model's vocab.json": "is the file vocab.json of the -model_path model",
    "a tokenizer's model": "is the transforms_configs.sentencepiece.src_subword_model file",
    "a FIFO": "is a FIFO",
    "a directory": "is a directory",
    "newdir/": "ends with '/'",
    "5": "-stats_file: Input should be a valid string (got 5)",
    "['a', 'b']": "-stats_file: Input should be a valid string (got ['a', 'b'])",
    "a missing directory": "does not exist",
    "its log_file": "are the same file",
}


#: every case on a model loaded at the first request (checked at start-up all the same), a sample on a preloaded one
#: (checked as it loads, by the same code)
LOADS = [(case, False) for case in STARTUP] + [(case, True) for case in ("its YAML", "a FIFO", "newdir/", "5")]


@pytest.mark.parametrize("case, preload", LOADS, ids=[f"{c}-{'preloaded' if p else 'lazy'}" for c, p in LOADS])
def test_a_stats_file_that_would_destroy_or_hang_is_refused_at_start_up(encoder_decoder, tmp_path, case, preload):
    root = tmp_path / "site"
    root.mkdir()
    value, extra = _stats_file(case, root, encoder_decoder)
    conf = write_config(root, [{"id": "toy", "path": str(encoder_decoder), "preload": preload,
                                "config": {**SHARED, **OURS, **extra, "stats_file": value}}])
    if case == "a hard link to its YAML":
        os.link(conf, root / "hard.yaml")
    before, names = sums(root, encoder_decoder), sorted(os.listdir(root))
    port = http_server.free_port()
    proc = subprocess.run([_eole(), "serve", "-config", str(conf), "--host", http_server.HOST, "--port", str(port)],
                          env=http_server.env(), capture_output=True, text=True, timeout=300, cwd=root)
    line = one_error_line(proc.returncode, proc.stderr, 2, prog="eole serve")
    assert line.startswith(f"eole serve: error: {conf}: model toy: ") and STARTUP[case] in line, line
    assert sums(root, encoder_decoder) == before and sorted(os.listdir(root)) == names


# ---------------------------------------------------------------------------------------------- shutdown
@pytest.mark.parametrize("signum", [15, 2], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_the_server_promptly_with_a_decode_in_flight(encoder_decoder, tmp_path, signum):
    """A decode that would run for minutes (an exhaustive search over many inputs) is in flight when the signal
    comes: the server stops within seconds (the time is printed; the bound only tells a stop from a hang), the
    request gets a 503 in one line (or its connection closes), no traceback, the statistics file whole lines."""
    conf = write_config(tmp_path, [{"id": "toy", "path": str(encoder_decoder), "preload": True,
                                    "config": {**SHARED, **OURS, "stopping": "exhaustive", "beam_size": 30,
                                               "max_length": 250, "stats_file": "stats.jsonl"}}])
    server = start(conf, tmp_path)
    assert infer(server, "toy", INPUTS).status == 200  # one request's records in the file
    got = {}

    def long_request():
        try:
            got["answer"] = server.post("/infer", {"model": "toy", "inputs": ["a b c d e f g h"] * 4000,
                                                   **SHARED, "beam_size": 30, "max_length": 250}, timeout=600)
        except OSError as err:
            got["error"] = err

    client = threading.Thread(target=long_request)
    client.start()
    time.sleep(3)
    assert server.proc.poll() is None and "answer" not in got  # still decoding
    started = time.monotonic()
    server.proc.send_signal(signum)
    try:
        status = server.proc.wait(timeout=60)
    finally:
        server.stop()
    took = time.monotonic() - started
    client.join(timeout=60)
    print(f"eole serve stopped {took:.2f} s after signal {signum} with a decode in flight (status {status})")
    assert status == (-15 if signum == 15 else 0)
    assert took < 30
    if "answer" in got:
        assert got["answer"].status == 503 and "the server is stopping" in got["answer"].body["detail"]
    log = server.output()
    assert "Traceback" not in log and "terminate called" not in log, log[-3000:]
    for line in (tmp_path / "stats.jsonl").read_text().splitlines():
        json.loads(line)
