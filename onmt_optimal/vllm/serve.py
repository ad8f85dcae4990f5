"""vLLM's OpenAI-compatible server with the certificate, for the requests that ask (a ``vllm.general_plugins``
entry point: ``register``).

vLLM loads its general plugins in each of its processes; ``register`` changes three methods and nothing else:

* ``BeamSearchOnlineMixin.beam_search`` (the server's beam search, under ``/v1/completions``,
  ``/v1/chat/completions`` and the speech-to-text endpoints): vLLM's own unless the request asked for the search
  or the server has a default (``DEFAULTS``), then ``online.beam_search`` with those options;
* ``OpenAIServingCompletion.create_completion`` and ``OpenAIServingChat.create_chat_completion`` (patched when
  their modules load, ``import_hook.install``): a request with ``use_beam_search`` asks through vLLM's field
  for extensions, ``vllm_xargs``, with the option table's names that vLLM takes (``stopping``,
  ``length_reward``, ``length_ratio``, ``bp_norm``), checked as ``optimal_beam_search`` checks them; a bad
  value is answered with vLLM's own error response, HTTP 400, one line naming the option. Each choice of a
  request that ran the search carries its statistics in the field ``FIELD`` (``prompts.Answer.stats``);
  every other field of the response is vLLM's.

The options reach ``beam_search`` and the statistics come back through a ``ContextVar`` set for the request's
task: vLLM calls ``beam_search`` in that task, once a prompt, in the prompts' order. A request without our
options, or without beam search, runs vLLM's code as it is. ``ONMT_OPTIMAL_DISABLE`` (``import_hook``) set to a
true value leaves vLLM stock.
"""
from __future__ import annotations

import json
import os
import sys
from contextvars import ContextVar
from dataclasses import dataclass, field

from onmt_optimal import import_hook
from onmt_optimal.option_table import VLLM, taken_by

#: the server-wide default: a JSON object of the options, as a request's ``vllm_xargs`` gives them; a request's
#: own values replace the default's, option by option
DEFAULTS = "ONMT_OPTIMAL_VLLM_DEFAULTS"
#: the field of each choice that holds its statistics
FIELD = "onmt_optimal"
#: the options a request may give (``option_table``'s, that vLLM takes)
NAMES = tuple(o.name for o in taken_by(VLLM))
_SWITCHES = frozenset(o.name for o in taken_by(VLLM) if o.type is bool)

COMPLETION = "vllm.entrypoints.openai.completion.serving"
CHAT = "vllm.entrypoints.openai.chat_completion.serving"

_default: dict = {}


@dataclass
class _Request:
    """One request's options and, per ``beam_search`` call (a prompt), the list its answer goes into."""

    values: dict
    answered: list = field(default_factory=list)


_request: ContextVar[_Request | None] = ContextVar("onmt_optimal_vllm_request", default=None)


class Refused(ValueError):
    """A request's options that the search cannot take: the one line its 400 answer says."""


def register() -> None:
    """The entry point (``vllm.general_plugins``): check the server's default, patch the server's beam search."""
    global _default
    if import_hook.disabled():
        return
    try:
        _default = defaults(os.environ.get(DEFAULTS))
    except Refused as refused:
        raise SystemExit(f"onmt-optimal: {refused}") from None
    from vllm.entrypoints.generate.beam_search import online as stock

    _replace(stock.BeamSearchOnlineMixin, "beam_search", _beam_search)
    import_hook.install({COMPLETION: "patch_completion", CHAT: "patch_chat"}, lambda: sys.modules[__name__])
    if COMPLETION in sys.modules:
        patch_completion()
    if CHAT in sys.modules:
        patch_chat()


def defaults(text: str | None) -> dict:
    """The options of ``DEFAULTS``' value ``text`` (none where unset or empty), checked; ``Refused`` if bad."""
    if not text:
        return {}
    try:
        values = json.loads(text)
    except ValueError:
        values = None
    if not isinstance(values, dict) or set(values) - set(NAMES):
        raise Refused(f"{DEFAULTS} must be a JSON object of {', '.join(NAMES)} (got {text!r})")
    asked(values, DEFAULTS)
    return values


def asked(xargs: dict | None, where: str = "vllm_xargs") -> dict:
    """The search's options in a request's ``vllm_xargs`` (other keys are other extensions'), checked
    (``options.flags``); ``Refused``, one line naming the option, for a bad value."""
    from onmt_optimal.vllm import options

    values = {name: _switch(name, xargs[name]) for name in NAMES if xargs and name in xargs}
    if values or _default:
        try:
            options.flags(**{**_default, **values})
        except (TypeError, ValueError) as bad:
            raise Refused(f"{where}: {bad}") from None
    return values


def _switch(name: str, value):
    """A switch's value as a request gives it: ``vllm_xargs`` takes strings and numbers only (vLLM's request
    model turns a JSON ``true`` into ``1``), so a switch is ``true``/``false``, ``1``/``0`` or the strings
    ``"true"``/``"false"``; anything else is left for the check to refuse."""
    if name not in _SWITCHES or isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value


def _replace(owner, name: str, ours) -> None:
    """Put ``ours`` in ``owner.name``'s place, once (``import_hook.mark``), keeping vLLM's as ``ours.stock``."""
    if import_hook.ours(getattr(owner, name)):
        return
    ours.stock = getattr(owner, name)
    setattr(owner, name, import_hook.mark(ours))


def _beam_search(self, prompt, request_id, params, lora_request=None, trace_headers=None, session_id=None):
    """``BeamSearchOnlineMixin.beam_search``: vLLM's, or the search where the request or the server asks."""
    request = _request.get()
    values = {**_default, **(request.values if request is not None else {})}
    if not values:
        return _beam_search.stock(self, prompt, request_id, params, lora_request, trace_headers, session_id)
    from onmt_optimal.vllm import online, options

    try:
        search = options.rules(options.flags(**values), params, *options.engine(getattr(self, "model_config", None)))
    except (TypeError, ValueError) as bad:
        raise Refused(f"vllm_xargs: {bad}") from None
    answered: list = []
    if request is not None:
        request.answered.append(answered)
    return online.beam_search(self, prompt, request_id, params, lora_request, trace_headers, session_id,
                              search=search, answered=answered)


def _serving(create):
    """A serving class's ``create_*`` method, with the request's options set for its ``beam_search`` calls and
    the statistics put in each choice of the response."""
    async def create_with_search(self, request, raw_request=None):
        if not getattr(request, "use_beam_search", False):
            return await create_with_search.stock(self, request, raw_request)
        try:
            values = asked(getattr(request, "vllm_xargs", None))
        except Refused as refused:
            return self.create_error_response(str(refused))
        if not values and not _default:
            return await create_with_search.stock(self, request, raw_request)
        state = _Request(values)
        token = _request.set(state)
        try:
            response = await create_with_search.stock(self, request, raw_request)
        except Refused as refused:
            return self.create_error_response(str(refused))
        finally:
            _request.reset(token)
        _put_stats(response, state)
        return response

    create_with_search.__name__ = create.__name__
    create_with_search.__doc__ = create.__doc__
    return create_with_search


def _put_stats(response, state: _Request) -> None:
    """Each choice's statistics in its field ``FIELD``: the choices are the prompts' answers, in order."""
    choices = getattr(response, "choices", None)
    if choices is None:
        return
    stats = [answered[0].stats(i) for answered in state.answered if answered
             for i in range(len(answered[0].sequences))]
    if len(stats) == len(choices):
        for choice, one in zip(choices, stats):
            setattr(choice, FIELD, one)


def patch_completion() -> None:
    from vllm.entrypoints.openai.completion.serving import OpenAIServingCompletion

    _replace(OpenAIServingCompletion, "create_completion", _serving(OpenAIServingCompletion.create_completion))


def patch_chat() -> None:
    from vllm.entrypoints.openai.chat_completion.serving import OpenAIServingChat

    _replace(OpenAIServingChat, "create_chat_completion", _serving(OpenAIServingChat.create_chat_completion))
