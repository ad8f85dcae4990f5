"""The server-wide default (``ONMT_OPTIMAL_VLLM_DEFAULTS``) and the reading of a request's ``vllm_xargs``.

* The values: a JSON object of the search's options, checked as a request's are; a bad one is one line.
* A bad default stops the server at start-up: one line, exit status 1, no traceback (a value out of range, a
  number beyond a float's, nesting deeper than Python parses, a reward too large for any ``max_tokens``).
* With a default, the server says so in one line of its log; a beam request without ``vllm_xargs`` runs the
  search (its choices carry the statistics, its answers are stock's), and a request's own keys replace the
  default's.
"""
import os
import subprocess
import sys

import httpx
import pytest

from helpers import vllm_server
from onmt_optimal.search import scoring
from onmt_optimal.search.scoring import ScoringRule
from onmt_optimal.vllm import serve


@pytest.mark.parametrize("text, words", [
    ("xx", "must be a JSON object of stopping, length_reward, length_ratio, bp_norm"),
    ('["stopping"]', "must be a JSON object of"),
    ('{"beam": 4}', "must be a JSON object of"),
    ('{"length_reward": -1}', "ONMT_OPTIMAL_VLLM_DEFAULTS: length_reward must be a finite number >= 0"),
    ('{"bp_norm": true}', "bp_norm=True needs length_ratio"),
    ('{"length_reward": 1%s}' % ("0" * 400), "ONMT_OPTIMAL_VLLM_DEFAULTS: length_reward must be a finite number "
                                             "(got an integer of 401 digits, beyond a float's range)"),
    ("[" * 100_000, "must be a JSON object of"),
    ('{"length_reward": 1e308}', "length_reward 1e+308 is too large for float32 scores at any max_tokens"),
    ('{"length_reward": 1e400}', "length_reward must be a finite number >= 0 (got inf)"),
    ('{"length_ratio": 1%s}' % ("0" * 400), "length_ratio must be a finite number (got an integer of 401"),
])
def test_bad_defaults_are_one_line(text, words):
    with pytest.raises(serve.Refused) as caught:
        serve.defaults(text)
    assert words in str(caught.value) and "\n" not in str(caught.value) and len(str(caught.value)) < 300


class _Strict(ScoringRule):
    """A rule no module of the package knows, whose check of ``length_ratio`` depends on the output length."""

    name = "strict"
    options = ("strict",)
    checks = (("length_ratio", lambda name, value, T, per=None: (
        f"{name} {value:g} is too long at any {per}" if per is not None and value is not None and value > 2
        else None)),)


def test_the_default_runs_every_registered_rules_checks(monkeypatch):
    """``defaults`` runs the registered rules' checks (``scoring.option_checks``) for a request's ``max_tokens``,
    whichever rule they are, so a new rule's checks need no edit of the server."""
    monkeypatch.setattr(scoring, "SCORING_RULES", dict(scoring.SCORING_RULES))  # restored after the test
    scoring.register(_Strict)
    assert serve.defaults('{"length_ratio": 1.5}') == {"length_ratio": 1.5}
    with pytest.raises(serve.Refused) as caught:
        serve.defaults('{"length_ratio": 3}')
    assert str(caught.value) == "ONMT_OPTIMAL_VLLM_DEFAULTS: length_ratio 3 is too long at any max_tokens"


def test_a_request_value_beyond_a_float_is_named():
    with pytest.raises(serve.Refused) as caught:
        serve.asked({"length_reward": 10**400})
    assert str(caught.value) == ("vllm_xargs: length_reward must be a finite number (got an integer of 401 digits, "
                                 "beyond a float's range)")


def test_good_defaults_and_switches():
    assert serve.defaults(None) == serve.defaults("") == {}
    assert serve.defaults('{"stopping": "optimal", "length_reward": 1.2, "length_ratio": 1}') == {
        "stopping": "optimal", "length_reward": 1.2, "length_ratio": 1}
    for given in (True, 1, "true", "True"):
        assert serve.asked({"bp_norm": given, "length_ratio": 1.0, "other": 3}) == {"bp_norm": True,
                                                                                     "length_ratio": 1.0}
    assert serve.asked({"bp_norm": 0}) == {"bp_norm": False}
    assert serve.asked({"other": "x"}) == {} and serve.asked(None) == {}
    with pytest.raises(serve.Refused, match="vllm_xargs: bp_norm must be True or False"):
        serve.asked({"bp_norm": 2, "length_ratio": 1.0})


def test_the_plugin_patches_unless_disabled():
    """``register`` (vLLM's call of the entry point) puts the search in vLLM's online beam search, unless
    ``ONMT_OPTIMAL_DISABLE`` is true."""
    code = ("import os\n"
            "from vllm.entrypoints.generate.beam_search.online import BeamSearchOnlineMixin as M\n"
            "from onmt_optimal.import_hook import ours\n"
            "from onmt_optimal.vllm import serve\n"
            "os.environ['ONMT_OPTIMAL_DISABLE'] = '1'; serve.register(); print(ours(M.beam_search))\n"
            "os.environ['ONMT_OPTIMAL_DISABLE'] = '0'; serve.register(); print(ours(M.beam_search))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.stdout.split() == ["False", "True"], done.stderr[-2000:]


@pytest.mark.parametrize("text, line", [
    ('{"length_reward": -1}', "length_reward must be a finite number >= 0 (got -1)"),
    ('{"length_reward": 1%s}' % ("0" * 400), "length_reward must be a finite number (got an integer of 401 "
                                             "digits, beyond a float's range)"),
    ('{"length_reward": 1e308}', "length_reward 1e+308 is too large for float32 scores at any max_tokens: at "
                                 "most 8.50706e+37 (divided by a request's max_tokens)"),
])
def test_a_bad_default_stops_the_server_in_one_line(toy, model_dir, text, line):
    done = subprocess.run(vllm_server.command(model_dir, vllm_server.free_port()), capture_output=True, text=True,
                          timeout=300, env={**os.environ, serve.DEFAULTS: text})
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == f"onmt-optimal: ONMT_OPTIMAL_VLLM_DEFAULTS: {line}"
    assert "Traceback" not in done.stderr


@pytest.fixture(scope="module")
def started(toy, model_dir, tmp_path_factory):
    if not vllm_server.plugin_installed():
        pytest.fail(f"the vllm.general_plugins entry point {vllm_server.PLUGIN} is not installed: run `make "
                    f"setup-vllm` (pip install --no-deps -e .)")
    with vllm_server.start(model_dir, tmp_path_factory.mktemp("serve_default"),
                           env={serve.DEFAULTS: '{"stopping": "optimal"}'}) as server:
        yield server


@pytest.fixture(scope="module")
def server(started):
    return started.base


def test_the_server_says_the_plugin_and_its_default_loaded(started):
    lines = [line for line in started.output().splitlines() if "onmt-optimal" in line]
    assert len(lines) == 1, started.output()[-3000:]
    assert lines[0].endswith("beam requests that ask (vllm_xargs: stopping, length_reward, length_ratio, bp_norm) "
                             "run the optimal beam search; server default (ONMT_OPTIMAL_VLLM_DEFAULTS): "
                             '{"stopping": "optimal"}')


def test_nothing_to_search_is_answered(server):
    """``max_tokens`` 0 under the default: vLLM's own answer (200), without statistics."""
    name = httpx.get(server + "/v1/models").json()["data"][0]["id"]
    response = httpx.post(server + "/v1/completions", json={"model": name, "prompt": "a b =", "max_tokens": 0,
                                                            "use_beam_search": True, "n": 2}, timeout=120)
    assert response.status_code == 200, response.text
    assert all(serve.FIELD not in c for c in response.json()["choices"])


def test_the_default_applies_to_every_beam_request(server):
    name = httpx.get(server + "/v1/models").json()["data"][0]["id"]

    def ask(**xargs):
        body = {"model": name, "prompt": ["a b c =", "p q ="], "use_beam_search": True, "n": 3, "max_tokens": 20,
                "temperature": 0, "length_penalty": 0.0, **({"vllm_xargs": xargs} if xargs else {})}
        response = httpx.post(server + "/v1/completions", json=body, timeout=120)
        assert response.status_code == 200, response.text
        out = response.json()
        stats = [choice.pop(serve.FIELD) for choice in out["choices"]]
        return [(c["text"], c["finish_reason"]) for c in out["choices"]], out["usage"], stats

    default, usage, stats = ask()
    exhaustive, usage_full, full = ask(stopping="exhaustive")
    assert default == exhaustive and usage == usage_full
    assert all(s["steps"] <= f["steps"] for s, f in zip(stats, full))
    assert any(s["stop_reason"] == "certificate" for s in stats)
    assert all(f["stop_reason"] in ("all_finished", "max_length") for f in full)
    sampled = httpx.post(server + "/v1/completions", json={"model": name, "prompt": "a b =", "max_tokens": 8,
                                                           "temperature": 0}, timeout=120).json()
    assert serve.FIELD not in sampled["choices"][0]
