"""vLLM's OpenAI-compatible server with the plugin installed (``onmt_optimal.vllm.serve``), for real: one server
on 127.0.0.1 (a free port) for the module, started as the docs say on the toy GPT-2, asked over HTTP (``httpx``
and the ``openai`` client).

* Stock until a request asks: a beam request without our options, and any sampling request, carries no
  statistics; a request that asks (``vllm_xargs``) gets the same answers as the same server's stock beam search
  (texts, token ids, logprobs, ``finish_reason``, ``stop_reason``, usage: the JSON equal but for ``id``, ``created``
  and the statistics' field), on completions (several prompts, ``n`` 1 to 4, ``length_penalty`` 0 and 1, the
  end token in the text or not) and chat completions, in no more steps; under the other rules, the certificate's
  answers are the exhaustive run's.
* The statistics reach the ``openai`` client (``choice.model_extra["onmt_optimal"]``).
* A bad value: HTTP 400, one line naming the option, and the server goes on serving.
* Nothing to search (``max_tokens`` 0, a prompt as long as ``--max-model-len``): stock's answer. A chat stream
  (vLLM streams a beam search there) is stock's stream, each choice's last event with its statistics; a
  completions stream is refused as stock refuses it.
* A client that disconnects frees its request's work; 16 requests at once, beam and sampling mixed, are answered
  as each alone.
"""
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from helpers import toy_vllm, vllm_server
from onmt_optimal.vllm.serve import FIELD

CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }}{% endfor %} ="
PROMPTS = ["a b c =", "p q r s =", "d e =", "f g h i j =", "k l =", "m n o ="]


@pytest.fixture(scope="module")
def server(toy, model_dir, tmp_path_factory):
    """``python -m vllm.entrypoints.openai.api_server`` on the toy model (a chat template of its own: the toy
    tokenizer has none); its base URL."""
    if not vllm_server.plugin_installed():
        pytest.fail(f"the vllm.general_plugins entry point {vllm_server.PLUGIN} is not installed: run `make "
                    f"setup-vllm` (pip install --no-deps -e .)")
    folder = tmp_path_factory.mktemp("serve")
    template = folder / "chat.jinja"
    template.write_text(CHAT_TEMPLATE)
    with vllm_server.serving(model_dir, folder, "--chat-template", str(template)) as base:
        yield base


MODEL = [None]  # the served model's name (``model_name``)


def post(server, path, body, timeout=120):
    return httpx.post(server + path, json={"model": MODEL[0], **body}, timeout=timeout)


@pytest.fixture(scope="module", autouse=True)
def model_name(server):
    MODEL[0] = httpx.get(server + "/v1/models").json()["data"][0]["id"]


def answer(response: httpx.Response) -> tuple[dict, list]:
    """The response's JSON without ``id`` and ``created``, and the statistics taken out of its choices."""
    assert response.status_code == 200, response.text
    body = response.json()
    body.pop("id"), body.pop("created")
    return body, [choice.pop(FIELD, None) for choice in body["choices"]]


def beam(**more) -> dict:
    return {"use_beam_search": True, "temperature": 0, **more}


@pytest.mark.parametrize("settings", [
    dict(n=3, length_penalty=0.0, max_tokens=20),
    dict(n=3, length_penalty=1.0, max_tokens=20),
    dict(n=1, length_penalty=0.0, max_tokens=20),
    dict(n=4, length_penalty=0.0, max_tokens=16, logprobs=2, return_token_ids=True),
    dict(n=2, length_penalty=1.0, max_tokens=16, include_stop_str_in_output=True, skip_special_tokens=False),
])
def test_completions_answer_as_stock(server, settings):
    stock, none = answer(post(server, "/v1/completions", beam(prompt=PROMPTS, **settings)))
    assert none == [None] * len(stock["choices"])  # no statistics where none were asked
    ours, stats = answer(post(server, "/v1/completions", beam(prompt=PROMPTS, vllm_xargs={"stopping": "optimal"},
                                                             **settings)))
    assert ours == stock
    exhaustive, full = answer(post(server, "/v1/completions", beam(
        prompt=PROMPTS, vllm_xargs={"stopping": "exhaustive"}, **settings)))
    assert exhaustive == stock
    n = settings["n"]
    for i, (s, f) in enumerate(zip(stats, full)):
        assert list(s) == ["steps", "stop_reason", "score", "log_prob", "length", "target_length", "src_length",
                           "completed"]
        assert s["steps"] <= f["steps"] <= settings["max_tokens"]
        assert f["stop_reason"] in ("all_finished", "max_length")
        assert s["score"] == f["score"] and s["length"] == f["length"]
        assert s["steps"] == stats[i - i % n]["steps"]  # a prompt's choices share its search
    if settings["length_penalty"] == 0:
        assert any(s["stop_reason"] == "certificate" for s in stats)
        assert sum(s["steps"] for s in stats) < sum(f["steps"] for f in full)


def test_prompts_that_end_in_the_end_token_answer_as_stock(server, toy):
    """The server's loop keeps the end token out of a completed hypothesis's tokens: the empty answer to a prompt
    that ends in it is one token shorter under vLLM's score than offline; the search scores it as vLLM does."""
    end = toy_vllm.toy_hf.EOS
    prompts = [[*ids, end] for ids in (p["prompt_token_ids"] for p in toy_vllm.prompts(toy, 8, seed=11))]
    empty = 0
    for lp in (1.0, -1.0):
        body = beam(prompt=prompts, n=4, max_tokens=12, length_penalty=lp)
        stock, _ = answer(post(server, "/v1/completions", dict(body)))
        ours, stats = answer(post(server, "/v1/completions", {**body, "vllm_xargs": {"stopping": "optimal"}}))
        assert ours == stock
        empty += sum(s["length"] == 0 for s in stats)
    assert empty  # the empty answers are among them


def test_chat_completions_answer_as_stock(server):
    body = beam(messages=[{"role": "user", "content": "a b c d"}], n=3, max_tokens=20, length_penalty=0.0,
                logprobs=True, top_logprobs=2)
    stock, _ = answer(post(server, "/v1/chat/completions", dict(body)))
    ours, stats = answer(post(server, "/v1/chat/completions", {**body, "vllm_xargs": {"stopping": "optimal"}}))
    assert ours == stock
    assert all(s["stop_reason"] in ("certificate", "all_finished", "max_length") for s in stats)


@pytest.mark.parametrize("xargs", [{"length_reward": 0.8, "length_ratio": 1.2}, {"length_reward": 0.3},
                                   {"bp_norm": True, "length_ratio": 1.2}, {"bp_norm": "true", "length_ratio": 1.2},
                                   {"length_ratio": 1.2}])
def test_other_rules_certified_as_exhaustive(server, xargs):
    body = beam(prompt=PROMPTS, n=3, max_tokens=20, length_penalty=0.0)
    optimal, stats = answer(post(server, "/v1/completions", {**body, "vllm_xargs": xargs}))
    exhaustive, full = answer(post(server, "/v1/completions", {**body, "vllm_xargs": {**xargs,
                                                                                      "stopping": "exhaustive"}}))
    assert optimal == exhaustive
    for s, f in zip(stats, full):
        assert s["steps"] <= f["steps"] and s["score"] == f["score"]
        assert (s["target_length"] is None) == ("length_ratio" not in xargs)


def test_openai_client_reads_the_statistics(server):
    from openai import OpenAI

    client = OpenAI(base_url=server + "/v1", api_key="none")
    extra = {"use_beam_search": True, "length_penalty": 0.0, "vllm_xargs": {"stopping": "optimal"}}
    out = client.completions.create(model=MODEL[0], prompt="a b c =", n=2, max_tokens=16, temperature=0,
                                    extra_body=extra)
    stock = client.completions.create(model=MODEL[0], prompt="a b c =", n=2, max_tokens=16, temperature=0,
                                      extra_body={k: v for k, v in extra.items() if k != "vllm_xargs"})
    assert [c.text for c in out.choices] == [c.text for c in stock.choices]
    assert out.usage == stock.usage
    stats = [c.model_extra[FIELD] for c in out.choices]
    assert stats[0]["steps"] >= 1 and stats[0]["stop_reason"] in ("certificate", "max_length", "all_finished")
    assert FIELD not in (stock.choices[0].model_extra or {})


@pytest.mark.parametrize("xargs, words", [
    ({"length_reward": -1}, "length_reward must be a finite number >= 0"),
    ({"length_reward": "x"}, "length_reward must be a finite number >= 0"),
    ({"stopping": "fast"}, "stopping must be one of optimal, exhaustive"),
    ({"length_ratio": 0}, "length_ratio must be a finite number > 0"),
    ({"bp_norm": 2, "length_ratio": 1.0}, "bp_norm must be True or False"),
    ({"bp_norm": True}, "bp_norm=True needs length_ratio"),
    ({"length_ratio": 1.0}, "length_ratio without length_reward or bp_norm needs length_penalty=0"),
])
def test_bad_value_is_400_one_line_and_the_server_goes_on(server, xargs, words):
    for path, prompt in (("/v1/completions", {"prompt": "a b ="}),
                         ("/v1/chat/completions", {"messages": [{"role": "user", "content": "a b"}]})):
        response = post(server, path, beam(n=2, max_tokens=8, vllm_xargs=xargs, **prompt))
        assert response.status_code == 400
        message = response.json()["error"]["message"]
        assert message.startswith("vllm_xargs: ") and words in message and "\n" not in message
    after = post(server, "/v1/completions", beam(prompt="a b =", n=2, max_tokens=8,
                                                 vllm_xargs={"stopping": "optimal"}))
    assert after.status_code == 200


def test_nothing_to_search_answers_as_stock(server, toy):
    """A prompt as long as ``--max-model-len`` (64 tokens) leaves ``max_tokens`` 0, as does asking for 0: vLLM
    answers without a step; so does the plugin, without statistics for that prompt."""
    full = toy.tokenizer("a").input_ids[-1:] * 64
    short = toy_vllm.prompts(toy, 1, seed=3)[0]["prompt_token_ids"]
    for more, searched in (({"prompt": "a b =", "max_tokens": 0}, 0), ({"prompt": [full, short], "max_tokens": 8}, 2)):
        body = beam(n=2, length_penalty=0.0, **more)
        stock, _ = answer(post(server, "/v1/completions", dict(body)))
        ours, stats = answer(post(server, "/v1/completions", {**body, "vllm_xargs": {"stopping": "optimal"}}))
        assert ours == stock
        n = len(stats) - searched  # the choices of the prompts not searched (vLLM's answer: the prompt alone)
        assert n >= 1 and stats[:n] == [None] * n and None not in stats[n:]


def events(server, body) -> list[dict]:
    """A streamed request's events (``data: {JSON}``), ``id`` and ``created`` left out."""
    out = []
    with httpx.stream("POST", server + "/v1/chat/completions", json={"model": MODEL[0], **body},
                      timeout=120) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line.startswith("data: {"):
                event = json.loads(line[len("data: "):])
                event.pop("id"), event.pop("created")
                out.append(event)
    return out


def test_a_chat_stream_carries_the_statistics_in_each_choice_s_last_event(server):
    body = beam(messages=[{"role": "user", "content": "a b c d"}], n=2, max_tokens=16, length_penalty=0.0)
    whole, stats = answer(post(server, "/v1/chat/completions", {**body, "vllm_xargs": {"stopping": "optimal"}}))
    stock = events(server, {**body, "stream": True})
    ours = events(server, {**body, "stream": True, "vllm_xargs": {"stopping": "optimal"}})
    last = {c["index"]: c for e in ours for c in e["choices"] if c.get("finish_reason") is not None}
    assert [last[i].pop(FIELD) for i in range(2)] == stats
    assert ours == stock
    text = {i: "".join(c["delta"].get("content") or "" for e in ours for c in e["choices"] if c["index"] == i)
            for i in range(2)}
    assert [text[i] for i in range(2)] == [c["message"]["content"] for c in whole["choices"]]


def test_a_completions_stream_is_refused_as_stock_refuses_it(server):
    body = beam(prompt="a b =", n=2, max_tokens=8, stream=True)
    stock = post(server, "/v1/completions", dict(body))
    ours = post(server, "/v1/completions", {**body, "vllm_xargs": {"stopping": "optimal"}})
    assert stock.status_code == ours.status_code == 400
    assert ours.json()["error"]["message"] == stock.json()["error"]["message"]


def test_sampling_requests_are_stock(server):
    body = {"prompt": "a b c =", "max_tokens": 8, "temperature": 0, "logprobs": 2}
    stock, none = answer(post(server, "/v1/completions", dict(body)))
    ours, stats = answer(post(server, "/v1/completions", {**body, "vllm_xargs": {"stopping": "optimal"}}))
    assert ours == stock and stats == none == [None]


def finished_requests(server) -> float:
    """The engine's finished requests (each beam of each step is one), from vLLM's metrics."""
    text = httpx.get(server + "/metrics", timeout=10).text
    return sum(float(x) for x in re.findall(r"^vllm:request_success_total\{[^}]*\} (\S+)$", text, re.M))


def test_a_client_that_disconnects_frees_its_work(server):
    """40 prompts, beam 8, 50 tokens, run exhaustively: at least 40 * (1 + 49 * 8) engine requests. The client
    gives up after a second; soon after, the engine finishes no more requests."""
    prompts = ["a b =", "c d =", "e f =", "g h ="] * 10
    start = finished_requests(server)
    with pytest.raises(httpx.TimeoutException):
        post(server, "/v1/completions", beam(prompt=prompts, n=8, max_tokens=50, length_penalty=1.0,
                                             vllm_xargs={"stopping": "exhaustive"}), timeout=1.0)
    time.sleep(2)
    settled = finished_requests(server)
    time.sleep(2)
    assert finished_requests(server) == settled
    assert settled - start < 40 * (1 + 49 * 8)


def test_sixteen_at_once_answer_as_one_by_one(server):
    requests = []
    for i, prompt in enumerate(PROMPTS + ["a p =", "b c d e f ="]):
        requests.append(("/v1/completions", beam(prompt=prompt, n=3 + i % 2, max_tokens=16,
                                                 length_penalty=float(i % 2), logprobs=2,
                                                 **({"vllm_xargs": {"stopping": "optimal"}} if i % 4 else {}))))
        requests.append(("/v1/completions", {"prompt": prompt, "max_tokens": 12, "temperature": 0, "logprobs": 2}))

    def ask(request):
        path, body = request
        return answer(post(server, path, dict(body)))

    alone = [ask(r) for r in requests]
    with ThreadPoolExecutor(len(requests)) as pool:
        together = list(pool.map(ask, requests))
    assert len(requests) == 16
    assert together == alone
    assert json.dumps(alone)  # plain JSON throughout
