"""vLLM's OpenAI-compatible server with the certificate, for the requests that ask (a ``vllm.general_plugins``
entry point: ``register``).

vLLM loads its general plugins in each of its processes; ``register`` checks that vLLM is the tested release
(``internals.version_error``: another is named in one line of the server's log, ``refuse_version``, and nothing
is changed), checks the server's default (``DEFAULTS``: a bad one stops the server at start-up with one line) and
changes three methods (``internals``) and nothing else:

* ``BeamSearchOnlineMixin.beam_search`` (the server's beam search, under ``/v1/completions``,
  ``/v1/chat/completions`` and the speech-to-text endpoints): vLLM's own unless the request asked for the search
  or the server has a default, then ``online.beam_search`` with those options; a prompt vLLM decodes in no step
  (``max_tokens`` 0) is vLLM's own answer, as there is nothing to search;
* ``OpenAIServingCompletion.create_completion`` and ``OpenAIServingChat.create_chat_completion`` (patched when
  their modules load, ``import_hook.install``, in the server's process; the patch logs one line there): a
  request with ``use_beam_search`` asks through vLLM's field for extensions, ``vllm_xargs``, with the option
  table's names that vLLM takes (``option_table.taken_by(VLLM)``: ``stopping``, the scores' options), checked as
  ``optimal_beam_search`` checks them; a bad value is answered with vLLM's own error response, HTTP 400, one line
  naming where it was given and the option. Each choice of a request that ran the search carries its statistics
  in the field ``FIELD`` (``prompts.Answer.stats``); in a stream (chat completions: vLLM streams a beam search
  there), the event that ends a choice carries them. Every other field and event is vLLM's.

The options reach ``beam_search`` and the statistics come back through a ``ContextVar`` set for the request's
task: vLLM calls ``beam_search`` in that task, once a prompt, in the prompts' order. A request without our
options, or without beam search, runs vLLM's code as it is. ``ONMT_OPTIMAL_DISABLE`` (``import_hook``) set to a
true value leaves vLLM stock.
"""
from __future__ import annotations

import inspect
import json
import logging
import os
import sys
from contextvars import ContextVar
from dataclasses import dataclass, field

from onmt_optimal import import_hook, serving
from onmt_optimal.option_table import VLLM, spell, taken_by
from onmt_optimal.vllm import internals

#: the server-wide default: a JSON object of the options, as a request's ``vllm_xargs`` gives them; a request's
#: own values replace the default's, option by option
DEFAULTS = "ONMT_OPTIMAL_VLLM_DEFAULTS"
#: the field of each choice that holds its statistics
FIELD = serving.FIELD
#: the options a request may give (``option_table``'s, that vLLM takes)
NAMES = tuple(o.name for o in taken_by(VLLM))
_SWITCHES = frozenset(o.name for o in taken_by(VLLM) if o.type is bool)

COMPLETION = internals.COMPLETION
CHAT = internals.CHAT
#: a child of vLLM's logger: its lines go where vLLM's go, in its format
log = logging.getLogger("vllm.onmt_optimal")

_default: dict = {}


@dataclass
class _Request:
    """One request's options and, per ``beam_search`` call (a prompt, in the prompts' order), the statistics of
    its choices (a list, one entry a choice: a dict, or None where the search did not run)."""

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
    if internals.version_error() is not None:  # another vLLM: the server stays stock, and its log says why
        import_hook.install({COMPLETION: "refuse_version"}, lambda: sys.modules[__name__])
        if COMPLETION in sys.modules:
            refuse_version()
        return
    try:
        _default = defaults(os.environ.get(DEFAULTS))
    except Refused as refused:
        raise SystemExit(f"onmt-optimal: {refused}") from None
    _replace(internals.online_mixin(), "beam_search", _beam_search)
    import_hook.install({COMPLETION: "patch_completion", CHAT: "patch_chat"}, lambda: sys.modules[__name__])
    if COMPLETION in sys.modules:
        patch_completion()
    if CHAT in sys.modules:
        patch_chat()


def defaults(text: str | None) -> dict:
    """The options of ``DEFAULTS``' value ``text`` (none where unset or empty), checked as a request's are and,
    as far as no request's ``max_tokens`` matters, as the search checks them (the registered scoring rules'
    checks, ``scoring.option_checks``, for some request's ``max_tokens``: a default too large for every request
    is refused here, at start-up); ``Refused`` if bad."""
    if not text:
        return {}
    try:
        values = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than Python's parser goes
        values = None
    if not isinstance(values, dict) or set(values) - set(NAMES):
        shown = text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"
        raise Refused(f"{DEFAULTS} must be a JSON object of {', '.join(NAMES)} (got {shown!r})")
    values = {name: _switch(name, value) for name, value in values.items()}
    from onmt_optimal.search.scoring import option_checks
    from onmt_optimal.vllm import options

    try:
        checked = options.flags(**values)
    except (TypeError, ValueError) as bad:
        raise Refused(f"{DEFAULTS}: {bad}") from None
    for option, check in option_checks():
        problem = check(spell(VLLM, option), getattr(checked, option), None, per="max_tokens")
        if problem is not None:
            raise Refused(f"{DEFAULTS}: {problem}")
    return values


def asked(xargs: dict | None, where: str = "vllm_xargs") -> dict:
    """The search's options in a request's ``vllm_xargs`` (other keys are other extensions'), checked
    (``options.flags``) with the server's default under them; ``Refused``, one line naming the option (and
    where it was given, ``_where``), for a bad value."""
    from onmt_optimal.vllm import options

    values = {name: _switch(name, xargs[name]) for name in NAMES if xargs and name in xargs}
    if values or _default:
        try:
            options.flags(**{**_default, **values})
        except (TypeError, ValueError) as bad:
            raise Refused(f"{_where(values, where)}: {bad}") from None
    return values


def _where(values: dict, where: str = "vllm_xargs") -> str:
    """Where a request's options came from: its ``vllm_xargs``, the server's default, or both."""
    if not _default:
        return where
    return DEFAULTS if not values else f"{where} over {DEFAULTS}"


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


def _replace(owner, name: str, ours) -> bool:
    """Put ``ours`` in ``owner.name``'s place, once (``import_hook.mark``), keeping vLLM's as ``ours.stock``;
    whether it did (False: already ours)."""
    if import_hook.ours(getattr(owner, name)):
        return False
    ours.stock = getattr(owner, name)
    setattr(owner, name, import_hook.mark(ours))
    return True


def _beam_search(self, prompt, request_id, params, lora_request=None, trace_headers=None, session_id=None):
    """``BeamSearchOnlineMixin.beam_search``: vLLM's, or the search where the request or the server asks. A
    prompt vLLM decodes in no step (``max_tokens`` 0: asked, or a prompt that fills the model's length) gets
    vLLM's own answer, without statistics: there is nothing to search."""
    request = _request.get()
    given = request.values if request is not None else {}
    values = {**_default, **given}
    if not values:
        return _beam_search.stock(self, prompt, request_id, params, lora_request, trace_headers, session_id)
    answered: list = []  # this prompt's slot: its choices' statistics, once answered
    if request is not None:
        request.answered.append(answered)
    if params.max_tokens < 1:
        return _counted(_beam_search.stock(self, prompt, request_id, params, lora_request, trace_headers,
                                           session_id), answered)
    from onmt_optimal.vllm import online, options

    try:
        search = options.rules(options.flags(**values), params, *options.engine(internals.model_config(self)))
    except (TypeError, ValueError) as bad:
        raise Refused(f"{_where(given)}: {bad}") from None
    return online.beam_search(self, prompt, request_id, params, lora_request, trace_headers, session_id,
                              search=search, answered=answered)


async def _counted(stock, answered: list):
    """vLLM's own beam search of a prompt, its choices counted in ``answered`` (no statistics)."""
    async for output in stock:
        answered.append([None] * len(output.outputs))
        yield output


def _serving(create):
    """A serving class's ``create_*`` method, with the request's options set for its ``beam_search`` calls and
    the statistics put in each choice of the response (``_put_stats``), or of its stream (``_streamed``)."""
    async def create_with_search(self, request, raw_request=None):
        if not getattr(request, "use_beam_search", False):
            return await create_with_search.stock(self, request, raw_request)
        try:
            values = asked(getattr(request, "vllm_xargs", None))
        except Refused as refused:
            return internals.error_response(self, str(refused))
        if not values and not _default:
            return await create_with_search.stock(self, request, raw_request)
        state = _Request(values)
        token = _request.set(state)
        try:
            response = await create_with_search.stock(self, request, raw_request)
        except Refused as refused:
            return internals.error_response(self, str(refused))
        finally:
            _request.reset(token)
        if inspect.isasyncgen(response):
            return _streamed(response, state)
        _put_stats(response, state)
        return response

    create_with_search.__name__ = create.__name__
    create_with_search.__doc__ = create.__doc__
    return create_with_search


def _stats(state: _Request) -> list:
    """The statistics of the request's choices (dicts, or None), in the choices' order: the prompts' in the
    prompts' order (their ``beam_search`` calls'), each its choices'; empty until every prompt is answered."""
    if not all(state.answered):
        return []
    return [one for slot in state.answered for one in slot[0]]


def _put_stats(response, state: _Request) -> None:
    """Each choice's statistics in its field ``FIELD``."""
    choices = getattr(response, "choices", None)
    stats = _stats(state)
    if choices is None or len(stats) != len(choices):
        return
    for choice, one in zip(choices, stats):
        if one is not None:
            setattr(choice, FIELD, one)


async def _streamed(events, state: _Request):
    """vLLM's stream of the response (server-sent events, ``data: {JSON}``): the event that ends a choice (its
    ``finish_reason`` set) carries the choice's statistics in ``FIELD``; every other event is vLLM's as is."""
    async for event in events:
        yield _with_stats(event, state)


def _with_stats(event: str, state: _Request) -> str:
    if not (event.startswith("data: {") and '"finish_reason"' in event):
        return event
    body = json.loads(event[len("data: "):])
    stats, changed = _stats(state), False
    for choice in body.get("choices") or ():
        i = choice.get("index", 0)
        if choice.get("finish_reason") is not None and isinstance(i, int) and 0 <= i < len(stats) and stats[i]:
            choice[FIELD], changed = stats[i], True
    return f"data: {json.dumps(body, ensure_ascii=False, separators=(',', ':'))}\n\n" if changed else event


def patch_completion() -> None:
    """Patch ``OpenAIServingCompletion`` (in the server's process alone) and say so in the server's log."""
    serving = internals.completion_serving()
    if _replace(serving, "create_completion", _serving(serving.create_completion)):
        log.info("onmt-optimal: beam requests that ask (vllm_xargs: %s) run the optimal beam search; "
                 "server default (%s): %s", ", ".join(NAMES), DEFAULTS, json.dumps(_default) if _default else "none")


def refuse_version() -> None:
    """Say in the server's log (its process alone, where the serving classes load) that this vLLM is not the
    tested release and the plugin is not installed: one line."""
    log.warning("%s: the plugin is not installed, the server is vLLM's own", internals.version_error())


def patch_chat() -> None:
    serving = internals.chat_serving()
    _replace(serving, "create_chat_completion", _serving(serving.create_chat_completion))

