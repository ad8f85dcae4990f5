"""``onmt_server``'s HTTP side: requests that stock answered with a 500 and a traceback, answered 400 in one line;
each sentence's statistics in the answer; a prompt stop on SIGTERM and SIGINT.

* ``guard``: before a route runs, a ``/translate`` body that is not a non-empty list of objects with a string
  ``"src"``, a first ``"id"`` that names no model, a ``/clone_model`` body that is not an object (or whose
  ``"opt"`` is not one, or whose ``"timeout"`` is not a whole number) and a ``/to_cpu``, ``/to_gpu`` of no model
  are answered ``400 {"status": "error", "error": LINE}``. Stock read ``inputs[0]["src"]`` as it came (a number
  failed in a regular expression), indexed an object body as a list, and looked an unknown id up in its
  models while handling the error, each a 500 with a traceback in its log.
* ``put_stats``: the answer of a model that decodes with onmt-optimal's search carries, in each sentence's
  answer, its statistics (``served.FIELD``, ``served.Request.answer_stats``).
* ``stop_on_signals``: SIGTERM and SIGINT let the statistics appends in flight finish and take their locks
  (``served.quiesce``), say one line, and end the process as killed by that signal, at once, even while a
  request decodes. Stock's SIGINT raised ``KeyboardInterrupt`` in the main thread and the interpreter's exit,
  with torch's threads still decoding, could abort ("terminate called without an active exception", status 134).
"""
from __future__ import annotations

import os
import signal
import sys
import threading

from onmt_optimal.adapter import served

#: the signals that stop the server, and what it says
STOPPING = {signal.SIGTERM: "terminated (SIGTERM)", signal.SIGINT: "interrupted (Ctrl-C)"}

SHAPE = 'a list of {"id": MODEL, "src": TEXT} objects'


def guard(app, models) -> None:
    """``app`` (the server's Flask app) answers the requests of the module docstring 400; ``models()``: the
    server's models (``TranslationServer.models``)."""
    from flask import jsonify, request

    @app.before_request
    def refuse_bad_request():
        problem = _problem(request, models())
        if problem is None:
            return None
        response = jsonify({"status": "error", "error": problem})
        response.status_code = 400
        return response


def _problem(request, models: dict) -> str | None:
    endpoint = (request.endpoint or "").rsplit(".", 1)[-1]
    if endpoint in ("to_cpu", "to_gpu"):
        model_id = (request.view_args or {}).get("model_id")
        return None if models.get(model_id) is not None else f"no model {model_id}{_known(models)}"
    if endpoint not in ("translate", "clone_model"):
        return None
    body = request.get_json(force=True, silent=True)
    if body is None:
        return "the body is not JSON" if endpoint == "translate" else None
    if endpoint == "clone_model":
        return _clone_problem(body)
    if not isinstance(body, list) or not body:
        return f"the body must be {SHAPE} (got {_kind(body)})"
    for n, item in enumerate(body, start=1):
        if not isinstance(item, dict):
            return f"item {n} of the body must be an object {{\"id\": MODEL, \"src\": TEXT}} (got {_kind(item)})"
        if not isinstance(item.get("src"), str):
            return f"item {n}: \"src\" must be a string (got {_kind(item.get('src'))})"
    model_id = body[0].get("id", 0)
    if isinstance(model_id, bool) or not isinstance(model_id, int) or models.get(model_id) is None:
        return f"no model {model_id!r}{_known(models)}"
    return None


def _clone_problem(body) -> str | None:
    if not isinstance(body, dict):
        return f'the body must be an object {{"opt": {{...}}, "timeout": SECONDS}} (got {_kind(body)})'
    if body.get("opt") is not None and not isinstance(body["opt"], dict):
        return f'"opt" must be an object of options (got {_kind(body["opt"])})'
    timeout = body.get("timeout", -1)
    if isinstance(timeout, bool) or not isinstance(timeout, int):
        return f'"timeout" must be a whole number of seconds, negative for none (got {timeout!r})'
    return None


def _known(models: dict) -> str:
    ids = sorted(k for k, v in models.items() if v is not None and isinstance(k, int))
    return f" (the models are {', '.join(map(str, ids))})" if ids else " (no model is served)"


def _kind(value) -> str:
    if value == []:
        return "an empty list"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def put_stats(response, stats: list):
    """``response`` (stock's answer: per n-best rank, one object per input) with each input's statistics in
    its objects' ``served.FIELD``."""
    from flask import current_app

    body = response.get_json(silent=True)
    if not isinstance(body, list) or not all(isinstance(rank, list) and len(rank) == len(stats) for rank in body):
        return response
    for rank in body:
        for item, one in zip(rank, stats):
            item[served.FIELD] = one
    response.set_data(current_app.json.response(body).get_data())  # as stock's ``jsonify`` writes it
    return response


def stop_on_signals(prog: str) -> None:
    """SIGTERM and SIGINT end the process as the module docstring says (from the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in STOPPING:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, lambda signum, frame: _stop(prog, signum))


def _stop(prog: str, signum: int) -> None:
    served.quiesce()
    try:
        sys.stderr.write(f"{prog}: {STOPPING[signum]}: stopped serving\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)  # ends as killed by the signal, at once: no exit handler waits on a decode
    os._exit(128 + signum)  # (reached only if the signal is blocked)
