"""``onmt_server`` safe to expose: no client chooses a file, no operator mistake destroys one, no shutdown hangs.

Against a real ``onmt_server`` on 127.0.0.1 (the session's toy model, started and stopped here) with a real HTTP
client, a table of attacks (a ``/clone_model`` whose ``"opt"`` sets anything but a decoding option by its name:
a file, a config, a value inside a key as OpenNMT-py's parser reads ``-KEY=VALUE``, an abbreviation, ``h``, a
value read as an option; then a request to the id stock left registered), a Hypothesis property over keys off the
allow-list, malformed requests, the statistics file swapped for links after start-up, and operator mistakes (a
``stats_file`` that is the config, the tokenizer's model directly, through a link or spelled
``/proc/self/root/...``, a FIFO, ``newdir/``, ``5``, a list, under /sys, a link; a ``"transforms"``; spellings of
keys that skipped the checks; a YAML ``"config"`` naming the files; sizes no request decodes with), each with the
sha256 of every file around before and after. Before: a clone with ``{"timeout": 556, "opt": {"stats_file":
PATH}}`` left model 556 registered and its first request appended to PATH; the mistakes started and corrupted the
file on the first request (a FIFO hung every request); malformed requests were 500s with tracebacks. Then the time
the server takes to stop on SIGTERM and SIGINT while it decodes (stock's SIGINT could abort with status 134,
"terminate called without an active exception"), and the shipped ``configs/tvsub-zh-en/server.json`` started as
docs/usage.md says, answering a raw line as ``onmt_translate -config configs/tvsub-zh-en/optimal.yaml`` does.
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from helpers import http_server, onmt_server
from helpers.one_line import one_error_line
from helpers.onmt_server import INPUTS, OURS, ROOT, SHARED, entry, write_config
from onmt_optimal.opennmt import option_reading, server_files

pytestmark = pytest.mark.slow  # every test here starts a server

REPO = Path(__file__).resolve().parents[2]


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def checksums(*dirs: Path) -> dict:
    """sha256 of every regular file under ``dirs`` (links followed to regular files), by path."""
    out = {}
    for d in dirs:
        for path in sorted(Path(d).rglob("*")):
            if path.is_file():
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def root(toy_model, tmp_path_factory) -> Path:
    """models_root: the toy model (a link), a SentencePiece model file, and the files a server writes."""
    path = tmp_path_factory.mktemp("served")
    (path / "model.pt").symlink_to(toy_model)
    (path / "src.spm.model").write_bytes((REPO / "models/tvsub-zh-en/src.spm.model").read_bytes())
    return path


@pytest.fixture(scope="module")
def outside(tmp_path_factory) -> Path:
    """Files outside models_root that a client would like the server to write."""
    path = tmp_path_factory.mktemp("outside")
    (path / "victim.txt").write_text("a user's file\n")
    return path


@pytest.fixture(scope="module")
def server(root, tmp_path_factory):
    served = onmt_server.serve_ours_and_stock(root, tmp_path_factory.mktemp("cwd"),
                                              tmp_path_factory.mktemp("log") / "output.log")
    yield served
    served.stop()


def model_ids(server) -> list:
    return sorted(m["model_id"] for m in server.get(f"{ROOT}/models").body)


def written_by_the_server(root: Path) -> dict:
    """The files the operator let model 7 write, which grow by appending only."""
    return {name: (root / name).read_bytes() if (root / name).exists() else b""
            for name in ("stats.jsonl", "server.log")}


# ------------------------------------------------------------------ a clone's "opt": decoding options only
SECRET = "password: hunter2-do-not-echo\nbeam_size: 4\n"
CLONE_ATTACKS = [
    ("stats_file-outside", lambda root, out: {"stats_file": str(out / "new.jsonl")}),
    ("stats_file-victim", lambda root, out: {"stats_file": str(out / "victim.txt")}),
    ("stats_file-config", lambda root, out: {"stats_file": str(root / "conf.json")}),
    ("stats_file-tokenizer", lambda root, out: {"stats_file": str(root / "src.spm.model")}),
    ("stats_file-relative", lambda root, out: {"stats_file": "relative.jsonl"}),
    ("log_file", lambda root, out: {"log_file": str(out / "victim.txt"), "log_file_level": "INFO"}),
    ("output", lambda root, out: {"output": str(out / "victim.txt")}),
    ("dump_beam", lambda root, out: {"dump_beam": str(out / "victim.txt")}),
    ("save_config", lambda root, out: {"save_config": str(out / "victim.txt")}),
    ("config", lambda root, out: {"config": str(out / "secret.yaml")}),
    ("models", lambda root, out: {"models": [str(out / "victim.txt")]}),
    ("onmttok_kwargs", lambda root, out: {"src_onmttok_kwargs": "{'bpe_model_path': '/etc/passwd'}"}),
    ("transforms", lambda root, out: {"transforms": ["sentencepiece"]}),
    ("dashed-log_file", lambda root, out: {"-log_file": str(out / "victim.txt"), "log_file_level": "INFO"}),
    ("abbreviated-stats_file", lambda root, out: {"stats_fil": str(out / "victim.txt")}),
    ("abbreviated-output", lambda root, out: {"outp": str(out / "victim.txt")}),
    # the value inside the key, as OpenNMT-py's parser reads "-KEY=VALUE" (and "--KEY=VALUE", abbreviated too)
    ("key=stats_file", lambda root, out: {f"stats_file={out / 'victim.txt'}": True}),
    ("key=dashed-stats_file", lambda root, out: {f"-stats_file={out / 'victim.txt'}": True}),
    ("key=abbreviated-stats_file", lambda root, out: {f"-stats_fil={out / 'victim.txt'}": True}),
    ("key=log_file", lambda root, out: {f"log_file={out / 'victim.txt'}": True, "log_file_level": "INFO"}),
    ("key=config-secret", lambda root, out: {f"config={out / 'secret.yaml'}": True}),
    ("key=save_config", lambda root, out: {f"save_config={out / 'saved.yaml'}": True}),
    ("key=stats_file-conf", lambda root, out: {f"stats_file={root / 'conf.json'}": True}),
    # options that make the parser exit (stock: the request never answered)
    ("help-h", lambda root, out: {"h": True}),
    ("help-dashed", lambda root, out: {"-h": True}),
    ("help-word", lambda root, out: {"help": True}),
    ("help-letters", lambda root, out: {"hx": True}),
    # a value the parser would read as an option of its own
    ("value-of-a-switch", lambda root, out: {"verbose": f"-stats_file={out / 'victim.txt'}"}),
    ("value-of-an-allowed-option", lambda root, out: {"beam_size": f"-stats_file={out / 'victim.txt'}"}),
    ("value-of-an-allowed-switch", lambda root, out: {"stepwise_penalty": f"-stats_file={out / 'victim.txt'}"}),
    ("value-list", lambda root, out: {"ignore_when_blocking": ["a", f"-stats_file={out / 'victim.txt'}"]}),
    # decoding options spelled otherwise than by their names, options that are no decoding settings
    ("abbreviated-allowed", lambda root, out: {"beam": 2}),
    ("double-dash", lambda root, out: {"--beam_size": 2}),
    ("gpu", lambda root, out: {"gpu": 0}),
    ("precision", lambda root, out: {"precision": "int8"}),
    ("ray_workers", lambda root, out: {"ray_workers": 2}),
    ("progress", lambda root, out: {"progress": True}),
    ("verbose", lambda root, out: {"verbose": True}),
    ("ambiguous", lambda root, out: {"s": str(out / "victim.txt")}),
    ("not-a-name", lambda root, out: {"": True}),
]


@pytest.fixture(scope="module")
def secret(outside) -> Path:
    path = outside / "secret.yaml"
    path.write_text(SECRET)
    return path


def _refused_clone(server, root, outside, opt: dict, body_more: dict | None = None) -> str:
    """The clone of model 7 with ``opt`` answered an error in one line, nothing registered, no file changed but
    the server's own appended files (which only grew); the server still serving. Returns the error."""
    before, grown = checksums(root, outside, server.cwd), written_by_the_server(root)
    ids = model_ids(server)
    answer = server.post(f"{ROOT}/clone_model/7", {"timeout": 556, "opt": opt, **(body_more or {})}, timeout=60)
    assert answer.status == 200 and answer.body["status"] == "error", answer.body
    error = answer.body["error"]
    assert error.startswith("clone of model 7: ") and len(error.splitlines()) == 1, error
    assert "hunter2" not in error and "password" not in error  # no file's content comes back
    assert model_ids(server) == ids  # nothing left registered (stock: model 556)
    refused = server.post(f"{ROOT}/translate", [{"id": 556, "src": "a b c"}])
    assert refused.status == 400 and refused.body["error"].startswith("no model 556"), refused.body
    assert checksums(root, outside, server.cwd) == {**before, **{k: v for k, v in checksums(root).items()
                                                                 if Path(k).name in grown}}
    now = written_by_the_server(root)
    assert all(now[k].startswith(grown[k]) for k in grown)
    assert server.post(f"{ROOT}/translate", [{"id": 7, "src": "a b c"}]).status == 200  # serves on
    return error


@pytest.mark.parametrize("name, opt", CLONE_ATTACKS, ids=[c[0] for c in CLONE_ATTACKS])
def test_a_clone_that_sets_more_than_decoding_options_is_refused_and_nothing_is_written(server, root, outside,
                                                                                          secret, name, opt):
    error = _refused_clone(server, root, outside, {**SHARED, **OURS, **opt(root, outside)})
    assert any(says in error for says in ("is not an option a client may set", "would be read as the option",
                                          "could abbreviate several options", "is not an option's name",
                                          "is a switch: true or false", "takes a word or a number")), error


KEYS = st.one_of(
    st.deferred(lambda: st.sampled_from(sorted(option_reading.option_strings())).map(lambda s: s.lstrip("-"))),
    st.text(st.sampled_from("-=_/.abcdefhilmnoprstuvxyz015 "), min_size=1, max_size=24))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.builds(lambda key, dashes, cut, eq: "-" * dashes + (key[:max(1, len(key) - cut)] if cut else key)
                     + eq, KEYS, st.integers(0, 2), st.integers(0, 6),
                     st.sampled_from(["", "=victim.txt", "=/proc/self/root/etc/hostname", "=secret.yaml"])),
       value=st.one_of(st.booleans(), st.integers(-3, 3), st.sampled_from(["victim.txt", "-stats_file=victim.txt",
                                                                         "secret.yaml", "-h", "--help"])))
def test_a_clone_key_off_the_allow_list_never_changes_a_file(server, root, outside, secret, key, value):
    """The property: whatever a key not on the allow-list (``CLIENT_OPTIONS``, by its exact name) and its value,
    the clone is refused, nothing is registered and no file changes."""
    assume(key not in server_files.CLIENT_OPTIONS)
    key = key.replace("victim.txt", str(outside / "victim.txt")).replace("secret.yaml", str(secret))
    value = value.replace("victim.txt", str(outside / "victim.txt")) if isinstance(value, str) else value
    _refused_clone(server, root, outside, {**SHARED, key: value})


def test_a_clone_of_a_clone_keeps_the_operators_files_only(server, root, outside):
    """A clone without "opt" takes its model's options (the operator's files); its clone again: neither writes
    anywhere the operator did not name."""
    before = checksums(outside, server.cwd)
    first = server.post(f"{ROOT}/clone_model/7", {"timeout": -1})
    assert first.body["status"] == "ok", first.body
    second = server.post(f"{ROOT}/clone_model/{first.body['model_id']}", {"timeout": -1})
    assert second.body["status"] == "ok", second.body
    kept = written_by_the_server(root)
    assert server.post(f"{ROOT}/translate", [{"id": second.body["model_id"], "src": "a b c"}]).status == 200
    assert written_by_the_server(root)["stats.jsonl"].startswith(kept["stats.jsonl"])
    assert checksums(outside, server.cwd) == before
    for new in (first.body["model_id"], second.body["model_id"]):
        assert server.get(f"{ROOT}/unload_model/{new}").body["status"] == "ok"


def test_a_clone_without_files_is_served_under_a_fresh_id(server, root, outside):
    before = checksums(outside, server.cwd)
    answer = server.post(f"{ROOT}/clone_model/8", {"timeout": 556, "opt": {**SHARED, "beam_size": 2}})
    assert answer.status == 200 and answer.body["status"] == "ok", answer.body
    new = answer.body["model_id"]
    assert new not in (7, 8, 556) and new in model_ids(server)
    got = server.post(f"{ROOT}/translate", [{"id": new, "src": "a b c"}])
    assert got.status == 200 and got.body[0][0]["tgt"], got.body
    assert server.get(f"{ROOT}/unload_model/{new}").body["status"] == "ok"
    assert checksums(outside, server.cwd) == before


# ------------------------------------------------------------------ sizes: a client may lower them, not raise them
#: model 7's sizes (``SHARED``, OpenNMT-py's defaults for the rest): beam 3, n_best 2, max_length 30,
#: max_length_ratio 1.25, batch_size 30 sentences
TOO_LARGE = [  # a clone's sizes beyond SHARED, and what its one line says
    ("beam_size", {"beam_size": 100000}, "beam_size 100000 is more than the model's 3 and the default 5"),
    ("n_best", {"n_best": 1000}, "n_best 1000 is more than the model's 2"),
    ("max_length", {"max_length": 10**9}, "max_length 1000000000 is more than the model's 30 and the default 250"),
    ("max_length_ratio", {"max_length_ratio": 1e6}, "max_length_ratio 1000000.0 is more than the model's 1.25"),
    ("max_length_ratio-0", {"max_length_ratio": 0}, "max_length_ratio 0.0 (no ratio cap) is more than the "
                                                    "model's 1.25"),
    ("batch_size", {"batch_size": 10**7}, "batch_size 10000000 sents is more than the model's 30 sents and the "
                                          "default 30 sents"),
    ("batch_size-string", {"batch_size": "31"}, "batch_size 31 sents is more than the model's 30 sents and the "
                                                "default 30 sents"),
]


@pytest.mark.parametrize("name, more, says", TOO_LARGE, ids=[t[0] for t in TOO_LARGE])
def test_a_clone_asking_more_than_its_model_is_refused(server, root, outside, name, more, says):
    opt = {k: v for k, v in {**SHARED, **OURS, **more}.items() if v is not None}
    error = _refused_clone(server, root, outside, opt)
    assert error == (f"clone of model 7: {says}: a client may lower a size, not raise it; the operator sets the "
                     f"limit in the model's \"opt\" in the server's config"), error


def _served_clone(server, model_id: int, opt: dict):
    """The clone of ``model_id`` with ``opt`` made and answering ``INPUTS``, then unloaded. Returns its answer."""
    answer = server.post(f"{ROOT}/clone_model/{model_id}", {"timeout": -1, "opt": opt})
    assert answer.status == 200 and answer.body["status"] == "ok", answer.body
    got = server.post(f"{ROOT}/translate", [{"id": answer.body["model_id"], "src": line} for line in INPUTS])
    assert server.get(f"{ROOT}/unload_model/{answer.body['model_id']}").body["status"] == "ok"
    assert got.status == 200 and got.body[0][0]["tgt"], got.body
    return got.body


def test_a_clone_asking_as_much_or_less_is_served(server):
    assert len(_served_clone(server, 7, {**SHARED, **OURS, "max_length_ratio": 1.25, "batch_size": 30})) == 2
    less = {"beam_size": 2, "n_best": 1, "max_length": 10, "max_length_ratio": 1.0, "batch_size": 2,
            "batch_type": "tokens"}
    assert len(_served_clone(server, 7, {**OURS, **less})) == 1
    # a size not named is OpenNMT-py's default (max_length 250 over the model's 30): a client may always ask it
    assert len(_served_clone(server, 7, dict(OURS))) == 1


def test_an_operator_lets_clients_ask_up_to_the_models_sizes(root, tmp_path):
    """A model whose operator set more than OpenNMT-py's defaults (and batches by tokens): a clone asks up to its
    values, not beyond; a clone that batches by sentences is refused (a batch of them has no bound in tokens)."""
    large = {"beam_size": 12, "n_best": 4, "max_length": 300, "max_length_ratio": 0, "batch_size": 512,
             "batch_type": "tokens"}
    (tmp_path / "model.pt").symlink_to(root / "model.pt")
    conf = write_config(tmp_path, entry(5, {**large, "length_penalty": "none"}))
    served = onmt_server.start(conf, tmp_path / "server.log", cwd=tmp_path)
    try:
        assert len(_served_clone(served, 5, {**large, **OURS})) == 4
        ids = model_ids(served)
        for more, says in [({"beam_size": 13}, "beam_size 13 is more than the model's 12"),
                           ({"batch_type": "sents"}, "batch_size 512 sents is more than the model's 512 tokens "
                                                     "and the default 30 sents")]:
            answer = served.post(f"{ROOT}/clone_model/5", {"timeout": -1, "opt": {**large, **more}})
            assert answer.body["status"] == "error" and says in answer.body["error"], answer.body
            assert len(answer.body["error"].splitlines()) == 1
            assert model_ids(served) == ids  # nothing registered
        assert served.post(f"{ROOT}/translate", [{"id": 5, "src": "a b c"}]).status == 200  # serves on
    finally:
        served.stop()


# ------------------------------------------------------------------ the statistics file swapped after start-up
def test_a_stats_file_swapped_after_start_up_is_not_followed(root, outside, tmp_path):
    """The server opened its statistics file at start-up: the file moved away and a link (to its config, to the
    tokenizer it reads, to a user's file; symbolic or hard) or a FIFO put in its place, the next requests (of the
    model and of a clone made since) append to the file it opened, wherever it now is; no other file changes."""
    served_root = tmp_path / "root"
    served_root.mkdir()
    (served_root / "model.pt").symlink_to(root / "model.pt")
    (served_root / "src.spm.model").write_bytes((root / "src.spm.model").read_bytes())
    conf = write_config(served_root, entry(7, {**SHARED, **OURS, "stats_file": "stats.jsonl"}))
    server = onmt_server.start(conf, tmp_path / "server.log", cwd=tmp_path)
    stats, moved = served_root / "stats.jsonl", served_root / "moved.jsonl"
    try:
        assert stats.exists() and stats.stat().st_size == 0  # opened (made) at start-up, before any request
        clone = server.post(f"{ROOT}/clone_model/7", {"timeout": -1}).body["model_id"]
        os.rename(stats, moved)
        targets = [("symlink", conf), ("symlink", served_root / "src.spm.model"), ("symlink", outside / "victim.txt"),
                   ("hard link", conf), ("hard link", outside / "victim.txt"), ("fifo", None)]
        for kind, target in targets:
            if kind == "symlink":
                stats.symlink_to(target)
            elif kind == "hard link":
                os.link(target, stats)
            else:
                os.mkfifo(stats)
            before = {k: v for k, v in checksums(served_root, outside).items() if k != str(moved)}
            size = moved.stat().st_size
            for model_id in (7, clone):
                answer = server.post(f"{ROOT}/translate", [{"id": model_id, "src": "a b c"}], timeout=120)
                assert answer.status == 200 and answer.body[0][0]["tgt"], (kind, target, answer.body)
            after = {k: v for k, v in checksums(served_root, outside).items() if k != str(moved)}
            assert after == before, (kind, target)
            grown = moved.read_bytes()[size:].decode().splitlines()
            assert [json.loads(line)["model"] for line in grown] == [7, clone], (kind, target)
            stats.unlink()
    finally:
        server.stop()


def test_a_log_file_swapped_for_a_link_after_start_up_is_not_followed(root, outside, tmp_path):
    """Stock opened the log file by name for every model it made: a link put in its place after start-up took the
    log of the next clone into the file it pointed to. Now a clone whose log file is a link is refused in one line,
    and the models already made log into the file they opened."""
    served_root = tmp_path / "root"
    served_root.mkdir()
    (served_root / "model.pt").symlink_to(root / "model.pt")
    conf = write_config(served_root, entry(7, {**SHARED, "log_file": "server.log", "log_file_level": "INFO"}))
    server = onmt_server.start(conf, tmp_path / "server.out", cwd=tmp_path)
    log, moved = served_root / "server.log", served_root / "moved.log"
    try:
        os.rename(log, moved)
        for kind, target in [("symlink", conf), ("symlink", outside / "victim.txt"), ("hard link", conf)]:
            if kind == "symlink":
                log.symlink_to(target)
            else:
                os.link(target, log)
            before = {k: v for k, v in checksums(served_root, outside).items() if k != str(moved)}
            answer = server.post(f"{ROOT}/clone_model/7", {"timeout": -1})
            assert answer.body["status"] == "error", (kind, target, answer.body)
            assert answer.body["error"].startswith("clone of model 7: -log_file "), answer.body
            assert server.post(f"{ROOT}/translate", [{"id": 7, "src": "a b c"}]).status == 200
            assert {k: v for k, v in checksums(served_root, outside).items() if k != str(moved)} == before
            assert model_ids(server) == [7]
            log.unlink()
    finally:
        server.stop()


# ------------------------------------------------------------------ malformed requests: 400 in one line
BAD_REQUESTS = [
    ("src-number", "/translate", [{"id": 7, "src": 5}], 'item 1: "src" must be a string (got a number)'),
    ("src-missing", "/translate", [{"id": 7}], 'item 1: "src" must be a string (got null)'),
    ("object-body", "/translate", {"id": 7, "src": "a"}, "the body must be a list of"),
    ("empty-list", "/translate", [], "(got an empty list)"),
    ("item-not-object", "/translate", ["a b"], "item 1 of the body must be an object"),
    ("unknown-id", "/translate", [{"id": 999, "src": "a"}], "no model 999 (the models are "),
    ("id-string", "/translate", [{"id": "7", "src": "a"}], "no model '7'"),
    ("clone-list-body", "/clone_model/7", [1], "the body must be an object"),
    ("clone-opt-list", "/clone_model/7", {"opt": ["a"]}, '"opt" must be an object of options'),
    ("clone-timeout", "/clone_model/7", {"timeout": "x"}, '"timeout" must be a whole number'),
]


@pytest.mark.parametrize("name, path, body, says", BAD_REQUESTS, ids=[c[0] for c in BAD_REQUESTS])
def test_a_malformed_request_is_answered_400_in_one_line(server, name, path, body, says):
    size = len(server.output())
    answer = server.post(ROOT + path, body)
    assert answer.status == 400, (answer.status, answer.body)
    assert answer.body["status"] == "error" and says in answer.body["error"], answer.body
    assert len(answer.body["error"].splitlines()) == 1
    assert "Traceback" not in server.output()[size:]
    assert server.post(f"{ROOT}/translate", [{"id": 8, "src": "a b c"}]).status == 200  # serves on


def test_an_unknown_model_of_to_cpu_is_answered_400(server):
    answer = server.get(f"{ROOT}/to_cpu/999")
    assert answer.status == 400 and answer.body["error"].startswith("no model 999"), answer.body


# ------------------------------------------------------------------ statistics in the answer
def test_each_sentence_carries_its_statistics_as_the_file_has_them(server, root):
    stats = root / "stats.jsonl"
    kept = stats.read_bytes() if stats.exists() else b""
    answer = server.post(f"{ROOT}/translate", [{"id": 7, "src": line} for line in [*INPUTS[:3], "", INPUTS[3]]])
    assert answer.status == 200, answer.body
    appended = [json.loads(line) for line in stats.read_bytes()[len(kept):].decode().splitlines()]
    for record in appended:
        assert record.pop("request") == answer.headers["x-request-id"] and record.pop("model") == 7
    for rank in answer.body:  # every n-best answer of a sentence carries the sentence's statistics
        assert [item["onmt_optimal"] for item in rank] == [*appended[:3], None, appended[3]]
    assert [r["line"] for r in appended] == [1, 2, 3, 4]
    assert answer.body[0][0]["pred_score"] == appended[0]["score"]


def test_a_stock_model_answers_without_statistics(server):
    answer = server.post(f"{ROOT}/translate", [{"id": 8, "src": "a b c"}])
    assert all("onmt_optimal" not in item for rank in answer.body for item in rank)


# ------------------------------------------------------------------ operator mistakes: refused at start-up
def _fifo(root: Path) -> str:
    path = root / "stats.fifo"
    if not path.exists():
        os.mkfifo(path)
    return str(path)


def _link(root: Path) -> str:
    path = root / "spm-link"
    if not path.is_symlink():
        path.symlink_to(root / "src.spm.model")
    return str(path)


TOKENIZER = {"tokenizer": {"src": {"type": "sentencepiece", "model": "src.spm.model"},
                           "tgt": {"type": "sentencepiece", "model": "src.spm.model"}}}
MISTAKES = [
    ("stats-is-config", lambda r: ({"stats_file": "bad.json"}, {}), "-stats_file {root}/bad.json is the server's "
                                                                    "config file (-m)"),
    ("log-is-config", lambda r: ({"log_file": "bad.json"}, {}), "-log_file {root}/bad.json is the server's config"),
    ("stats-is-tokenizer", lambda r: ({"stats_file": "src.spm.model"}, TOKENIZER),
     "is the tokenizer's src SentencePiece model"),
    ("stats-links-to-tokenizer", lambda r: ({"stats_file": _link(r)}, TOKENIZER),
     "is the tokenizer's src SentencePiece model"),
    ("stats-is-model", lambda r: ({"stats_file": "model.pt"}, {}), "is the -model file"),
    ("stats-fifo", lambda r: ({"stats_file": _fifo(r)}, {}), "is not a regular file"),
    ("stats-dir-slash", lambda r: ({"stats_file": "newdir/"}, {}), "ends with '/'"),
    ("stats-number", lambda r: ({"stats_file": 5}, {}), "-stats_file must be a file name (a string), got 5"),
    ("stats-list", lambda r: ({"stats_file": ["a", "b"]}, {}), "got ['a', 'b']"),
    ("stats-under-sys", lambda r: ({"stats_file": "/sys/onmt-optimal-stats.jsonl"}, {}), "/sys"),
    ("transforms", lambda r: ({"transforms": "sentencepiece"}, {}), '"transforms" in a model\'s "opt" is ignored'),
    ("abbreviated-stats", lambda r: ({"stats_fil": "bad.json"}, {}), '"stats_fil" abbreviates an option\'s name'),
    ("dashed-stats-is-config", lambda r: ({"-stats_file": "bad.json"}, {}), "-stats_file {root}/bad.json is the "
                                                                          "server's config file (-m)"),
    # the same file by another name: compared by identity (device, inode), not by name
    ("stats-proc-root-tokenizer", lambda r: ({"stats_file": f"/proc/self/root{r}/src.spm.model"}, TOKENIZER),
     "is the tokenizer's src SentencePiece model"),
    ("stats-proc-root-model", lambda r: ({"stats_file": f"/proc/self/root{r}/model.pt"}, {}), "is the -model file"),
    ("log-dotdot-config", lambda r: ({"log_file": f"../{r.name}/bad.json"}, {}), "is the server's config file"),
    ("stats-hard-link-to-config", lambda r: ({"stats_file": _hard(r, "bad.json")}, {}),
     "is the server's config file"),
    # values no request could be decoded with (stock started, then answered each request with an internal message)
    ("beam-0", lambda r: ({"beam_size": 0}, {}), "-beam_size must be at least 1 (got 0)"),
    ("n_best-0", lambda r: ({"n_best": 0}, {}), "-n_best must be at least 1 (got 0)"),
    ("max_length-0", lambda r: ({"max_length": 0}, {}), "-max_length must be at least 1 (got 0)"),
    ("batch_size-0", lambda r: ({"batch_size": 0}, {}), "-batch_size must be at least 1 (got 0)"),
    # a link as the statistics file: refused, the server opens it once and follows no link
    ("stats-symlink-elsewhere", lambda r: ({"stats_file": _symlink(r, "elsewhere/new.jsonl")}, {}),
     "is a symbolic link"),
    ("stats-hard-link-elsewhere", lambda r: ({"stats_file": _hard(r, "elsewhere.txt")}, {}),
     "has 1 other hard link"),
    # spellings OpenNMT-py's parser reads as an option with its value: the checks read them so, or refuse them
    ("key=stats-is-config", lambda r: ({"stats_file=bad.json": True}, {}), "holds a value inside the key"),
    ("key=dashed-abbreviated", lambda r: ({f"-stats_fil={r}/bad.json": True}, {}), "holds a value inside the key"),
    ("key=log-is-config", lambda r: ({f"log_file={r}/bad.json": True, "log_file_level": "INFO"}, {}),
     "holds a value inside the key"),
    ("key=config", lambda r: ({f"config={_yaml(r, 'stats_file: bad.json')}": True}, {}), "holds a value inside"),
    ("help", lambda r: ({"h": True}, {}), '"h" makes OpenNMT-py\'s parser print its help and exit'),
    ("save_config", lambda r: ({"save_config": "saved.yaml"}, {}), "makes OpenNMT-py's parser write a config file"),
    ("value-reads-as-option", lambda r: ({"verbose": f"-stats_file={r}/bad.json"}, {}),
     'the value of "verbose" would be read as the option -stats_file'),
    ("ambiguous", lambda r: ({"s": "x"}, {}), '"s" could abbreviate several options\' names'),
    # a YAML "config" names the files for the model: read as the checks read the "opt"
    ("yaml-stats-is-config", lambda r: ({"config": _yaml(r, "stats_file: bad.json")}, {}),
     "-stats_file {root}/bad.json is the server's config file (-m)"),
    ("yaml-abbreviated-stats", lambda r: ({"config": _yaml(r, "stats_fil: bad.json")}, {}),
     "its key \"stats_fil\" is not an option's full name"),
    ("yaml-abbreviated-log", lambda r: ({"config": _yaml(r, "log_fi: bad.json\nlog_file_level: INFO")}, {}),
     "its key \"log_fi\" is not an option's full name"),
    ("yaml-stats-number", lambda r: ({"config": _yaml(r, "stats_file: 5")}, {}), "must be a file name (a string), "
                                                                                 "got 5"),
    ("yaml-stats-true", lambda r: ({"config": _yaml(r, "stats_file: true")}, {}), "must be a file name (a string), "
                                                                                  "got True"),
]


def _hard(root: Path, name: str) -> str:
    path = root / f"hard-{name}"
    if not path.exists():
        (root / name).touch()  # (the config is written after: the link is to the file it will be)
        os.link(root / name, path)
    return str(path)


def _symlink(root: Path, target: str) -> str:
    (root / target).parent.mkdir(exist_ok=True)
    path = root / "stats-link.jsonl"
    path.symlink_to(root / target)
    return str(path)


def _yaml(root: Path, text: str) -> str:
    path = root / "model.yaml"
    path.write_text(text + "\n")
    return str(path)


@pytest.mark.parametrize("name, make, says", MISTAKES, ids=[m[0] for m in MISTAKES])
def test_an_operator_mistake_ends_the_server_at_start_up_and_touches_no_file(tmp_path, toy_model, name, make, says):
    root = tmp_path  # a models_root of its own
    (root / "model.pt").symlink_to(toy_model)
    (root / "src.spm.model").write_bytes(b"a SentencePiece model\n")
    opt, more = make(root)
    conf = write_config(root, entry(3, {**SHARED, **OURS, **opt}, **more), name="bad.json")
    before = checksums(root)
    returncode, stderr = _start_or_refuse(conf, root)
    line = one_error_line(returncode, stderr, 2, prog="onmt_server")
    assert line.startswith(f"onmt_server: error: {conf}: model 3: ") and says.format(root=root) in line, line
    assert checksums(root) == before
    assert not [p for p in ("newdir", "5", "True", "saved.yaml") if (root / p).exists()]


@pytest.mark.parametrize("opt, says", [({"beam_size": 0}, "-beam_size must be at least 1 (got 0)"),
                                       ({"n_best": 0}, "-n_best must be at least 1 (got 0)"),
                                       ({"max_length": 0}, "-max_length must be at least 1 (got 0)")],
                         ids=["beam", "n_best", "max_length"])
def test_a_stock_model_that_cannot_decode_ends_the_server_at_start_up(tmp_path, toy_model, opt, says):
    """Without the plugin's options too: stock started and answered every request with "step must be nonzero" or
    "list index out of range"."""
    (tmp_path / "model.pt").symlink_to(toy_model)
    conf = write_config(tmp_path, entry(3, opt), name="bad.json")
    before = checksums(tmp_path)
    line = one_error_line(*_start_or_refuse(conf, tmp_path), 2, prog="onmt_server")
    assert line == f"onmt_server: error: {conf}: model 3: {says}"
    assert checksums(tmp_path) == before


@pytest.mark.parametrize("opt", [{"beam_size": 0}, {"n_best": 0}, {"max_length": 0}, {"batch_size": 0}],
                         ids=["beam", "n_best", "max_length", "batch_size"])
def test_a_clone_that_cannot_decode_is_refused(server, root, outside, secret, opt):
    error = _refused_clone(server, root, outside, {**SHARED, **opt})
    assert "must be at least 1 (got 0)" in error, error


def test_a_port_in_use_ends_the_server_in_one_line_before_any_model_loads(tmp_path, toy_model):
    """Stock loaded every model (``"load": true``), then ended in an OSError traceback."""
    import socket

    (tmp_path / "model.pt").symlink_to(toy_model)
    conf = write_config(tmp_path, entry(3, {**SHARED, **OURS, "stats_file": "stats.jsonl"}))
    before = checksums(tmp_path)
    with socket.socket() as taken:
        taken.bind((http_server.HOST, 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = time.monotonic()
        proc = subprocess.run(onmt_server.command(conf, port),
                              env=http_server.env(), capture_output=True, text=True, timeout=120, cwd=tmp_path)
        took = time.monotonic() - started
    line = one_error_line(proc.returncode, proc.stderr, 2, prog="onmt_server")
    assert line == f"onmt_server: error: port {port} on {http_server.HOST} is in use"
    assert "Loading model" not in proc.stderr and took < 30, (took, proc.stderr[-2000:])
    assert checksums(tmp_path) == before and not (tmp_path / "stats.jsonl").exists()


def _start_or_refuse(conf: Path, cwd: Path) -> tuple[int, str]:
    """``onmt_server -m conf``'s exit status and stderr; a server that starts listening instead fails the test."""
    port = http_server.free_port()
    with open(cwd.parent / f"{cwd.name}.err", "w+") as err:
        proc = subprocess.Popen(onmt_server.command(conf, port),
                                env=http_server.env(), stdout=subprocess.DEVNULL, stderr=err, cwd=cwd)
        deadline = time.time() + 300
        while proc.poll() is None and time.time() < deadline:
            try:
                listening = http_server.request(f"http://{http_server.HOST}:{port}{ROOT}/health", timeout=2)
            except OSError:
                listening = None
            if listening is not None:
                proc.kill()
                proc.wait()
                pytest.fail("onmt_server started and listens instead of refusing the config")
            time.sleep(0.5)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        err.seek(0)
        return proc.returncode, err.read()


# ------------------------------------------------------------------ stopping while decoding
def _decoding_server(root: Path, log: Path):
    conf = write_config(root, entry(5, {"beam_size": 12, "max_length": 200, "length_penalty": "none",
                                        "stopping": "exhaustive", "stats_file": "stop.jsonl",
                                        "batch_size": 4, "max_length_ratio": 0}), name="stop.json")
    return onmt_server.start(conf, log)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_the_server_at_once_while_it_decodes(root, tmp_path, signum):
    served = _decoding_server(root, tmp_path / "server.log")
    try:
        assert served.post(f"{ROOT}/translate", [{"id": 5, "src": "a b"}]).status == 200  # loaded, one record
        answers = []
        request = threading.Thread(target=lambda: answers.append(_quietly(served, [
            {"id": 5, "src": " ".join(INPUTS)}] * 1000)))
        request.start()
        time.sleep(3)  # well into the decode (1000 sentences, a beam of 12 to max_length 200: a minute)
        assert request.is_alive() and served.proc.poll() is None
        sent = time.monotonic()
        served.proc.send_signal(signum)
        served.proc.wait(timeout=60)
        took = time.monotonic() - sent
        request.join(timeout=60)
    finally:
        served.stop()
    print(f"\n{signal.Signals(signum).name}: stopped {took:.2f} s after the signal, mid-decode")
    output = served.output()
    assert served.proc.returncode == -signum, output[-3000:]  # ended as killed by the signal, not an abort
    assert "terminate called" not in output and "Traceback" not in output, output[-3000:]
    word = "terminated (SIGTERM)" if signum == signal.SIGTERM else "interrupted (Ctrl-C)"
    assert output.splitlines()[-1] == f"onmt_server: {word}: stopped serving"
    assert answers == [None]  # the request in flight got no answer: the server did not wait for it
    for line in (root / "stop.jsonl").read_text().splitlines():
        json.loads(line)  # records whole


def _quietly(server, body):
    try:
        answer = server.post(f"{ROOT}/translate", body)
        return answer.status
    except OSError:
        return None


# ------------------------------------------------------------------ the shipped config, as the docs start it
def test_the_shipped_tvsub_config_answers_as_onmt_translate(tmp_path):
    served = onmt_server.start("configs/tvsub-zh-en/server.json", tmp_path / "s.log", cwd=REPO)
    lines = ["罗斯 , 谢谢", "我 不 知道 你 在 说 什么"]
    try:
        answer = served.post(f"{ROOT}/translate", [{"id": 100, "src": line} for line in lines])
    finally:
        served.stop()
    src, out = tmp_path / "src.txt", tmp_path / "out.txt"
    src.write_text("\n".join(lines) + "\n")
    done = subprocess.run([_bin("onmt_translate"), "-config", "configs/tvsub-zh-en/optimal.yaml", "-src", str(src),
                           "-output", str(out)], cwd=REPO, env=http_server.env(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [item["tgt"] for item in answer.body[0]] == out.read_text().splitlines()
    assert all(item["onmt_optimal"]["stop_reason"] == "certificate" for item in answer.body[0])
