"""eole's inference server (``eole serve``) with the plugin's options in a model's ``config``.

``eole serve -config server.yaml`` builds each model's ``PredictConfig`` from the ``config`` mapping of its entry,
which stock eole refuses our options in (its configs forbid unknown keys). What this module changes, each patch
once its eole module has executed (``hook``):

* ``eole.server.model`` (``patch_server_model``): a model's config is eole's ``PredictConfig`` with our fields
  (``options.config_class``, as ``eole predict``'s), checked as ``eole predict`` checks it (``options.validate``:
  ``options.check_search`` and the option table) when any of our options is set; a relative ``stats_file`` is
  taken from the server's working directory, as eole takes the model's ``log_file`` and a local ``path``, and
  must be appendable, and neither a file of the model nor the log file. ``Server.start`` checks every model
  that sets one of our options at start-up, loaded or not (a model given as a Hugging Face ID, which eole would
  download, is checked when it loads). A request's decoding settings, which eole applies over the config for
  that request, are checked with the config's options: a refused one is answered with HTTP 400 and one line
  (``request_problem``), and the server goes on serving. The loaded predictor appends each request's records
  to ``stats_file`` (``adapter.served``) instead of rewriting the file per request; a request to such a model
  carries its id to the predictor as one more setting of the request (``REQUEST_SETTING``, which eole's
  ``update_settings`` sets on the predictor), so eole's batcher, which groups only requests with equal settings,
  decodes it in an engine call of its own: its records are its own;
* ``eole.server.app`` (``patch_server_app``): the application reads each request's ``X-Request-Id`` (or makes
  one) and, where the request's records were written, answers it in that header (``RequestIds``);
* ``eole.bin.run.serve`` (``patch_serve_command``): a refused option at start-up ends ``eole serve`` with
  ``eole serve: error: CONFIG: model ID: ...`` and exit status 2, no traceback.

With none of our options a model is served as stock eole serves it, answers and scores alike.
"""
from __future__ import annotations

import functools
import importlib
import os
import sys

from onmt_optimal.import_hook import mark, ours

PROG = "eole serve"

#: the request setting that carries a request's id to the predictor (``translator.Certified``'s attribute)
REQUEST_SETTING = "onmt_optimal_request"


def _ours_in(config: dict) -> bool:
    """Whether a model's ``config`` mapping sets any of our options."""
    from onmt_optimal.eole.options import FIELDS

    return isinstance(config, dict) and any(name in config for name in FIELDS)


def patch_server_model() -> None:
    """``eole.server.model``: our options in a model's config, checked; statistics appended per request."""
    module = importlib.import_module("eole.server.model")
    model = module.Model
    if ours(model.get_config):
        return
    from onmt_optimal.eole import options

    module.PredictConfig = options.config_class()
    module.Server.start = _checked_at_start(module.Server.start)
    model.load = _appending(model.load)
    model.infer_async = _per_request(model.infer_async)
    model.get_config = _checked(model.get_config)  # the last: a call that finds it ours has nothing left to do


def _checked(get_config):
    """``Model.get_config`` that checks our options as ``eole predict`` does, where the model sets any; its
    faults are one-line ``OptionError``s naming the model."""

    @functools.wraps(get_config)
    def checked(self):
        if not _ours_in(self.pre_config):
            return get_config(self)
        from pydantic import ValidationError

        from onmt_optimal.eole import options

        try:
            get_config(self)
            config = self.config
            options.validate(config, run=False)
            for warning in options.option_warnings(config):
                sys.stderr.write(f"{PROG}: warning: model {self.model_id}: {warning}\n")
            if config.stats_file:
                config.stats_file = os.path.abspath(config.stats_file)
                _check_stats_file(config)
        except ValidationError as err:
            raise options.OptionError(f"model {self.model_id}: {_invalid(err)}") from None
        except options.OptionError as err:
            raise type(err)(f"model {self.model_id}: {err}") from None

    return mark(checked)


def _invalid(err) -> str:
    """One line for pydantic's ``ValidationError`` about a model's config."""
    errors = err.errors()
    if not errors:
        return str(err).splitlines()[0]
    first = errors[0]
    key = ".".join(str(part) for part in first.get("loc") or ()) or "config"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if first.get("type") == "extra_forbidden":
        return f"unknown option {key!r} in its config{more}"
    return f"-{key}: {first['msg']} (got {first.get('input')!r}){more}"


def _check_stats_file(config) -> None:
    """``stats_file`` takes appended records, and is neither a file of the model nor ``log_file``."""
    from onmt_optimal.adapter import served
    from onmt_optimal.options import _check_distinct

    served.check("-stats_file", config.stats_file)
    paths = config.model_path if isinstance(config.model_path, list) else [config.model_path]
    reads = [("-model_path", os.path.join(path, name)) for path in paths if os.path.isdir(path)
             for name in os.listdir(path)]
    _check_distinct(config, reads=reads, writes=[("-stats_file", config.stats_file),
                                                 ("-log_file", getattr(config, "log_file", None))])


def _checked_at_start(start):
    """``Server.start`` that checks, at start-up, every model setting one of our options that stock did not load
    then (``preload``): a local model directory only (a Hugging Face ID is checked when it loads)."""

    @functools.wraps(start)
    def checked_start(self, server_config_path):
        start(self, server_config_path)
        for model in self.models.values():
            local = os.path.expandvars(model.model_path) if isinstance(model.model_path, str) else None
            if model.loaded or not _ours_in(model.pre_config) or not local or not os.path.isdir(local):
                continue
            model.local_path = local
            try:
                model.get_config()
            finally:
                model.local_path = None  # load finds it again (``maybe_retrieve_model``)

    return mark(checked_start)


def _appending(load):
    """``Model.load`` whose predictor appends each request's records to ``stats_file``."""

    @functools.wraps(load)
    def appending(self):
        load(self)
        predictor = getattr(self.engine, "predictor", None)
        search = getattr(predictor, "search", None)
        if search is not None and not search.stock and search.stats_file:
            from onmt_optimal.adapter.served import StatsLog

            predictor.stats_log = StatsLog(search.stats_file, self.model_id)

    return mark(appending)


def _per_request(infer_async):
    """``Model.infer_async`` that, for a model setting our options, checks the request's decoding settings with
    them (``request_problem``: HTTP 400, one line) and, where it has a ``stats_file``, hands the request's id
    (``served.CURRENT``, set by ``RequestIds``, or a fresh one) to the predictor as the setting
    ``REQUEST_SETTING``."""

    @functools.wraps(infer_async)
    async def infer(self, inputs, settings=None, is_chat=False):
        settings = {} if settings is None else settings
        if _ours_in(self.pre_config):
            if not self.loaded:
                self.load()  # as stock's first step: its predictor says which settings apply
            problem = request_problem(self, settings)
            if problem is not None:
                from fastapi import HTTPException

                raise HTTPException(status_code=400, detail=problem)
            if self.pre_config.get("stats_file"):
                from onmt_optimal.adapter import served

                request = served.CURRENT.get() or served.Request()
                request.used = True
                settings = {**settings, REQUEST_SETTING: request.id}
        return await infer_async(self, inputs, settings=settings, is_chat=is_chat)

    return mark(infer)


def request_problem(model, settings: dict) -> str | None:
    """One line on what the request's ``settings`` ask that the model's search cannot do with them (eole
    applies each setting the predictor has, e.g. ``beam_size``, ``n_best``, ``max_length``, ``ratio``, ``top_k``,
    over the model's config for that request: ``update_settings``), checked as ``eole predict`` checks a config;
    None when there is nothing to refuse."""
    from onmt_optimal.eole import options

    predictor = getattr(model.engine, "predictor", None)
    config = getattr(model, "config", None)
    if predictor is None or config is None:
        return None
    fields = type(config).model_fields
    applied = {k: v for k, v in settings.items() if k in fields and hasattr(predictor, k)}
    try:
        options.validate(config.model_copy(update=applied), run=False)
    except options.OptionError as err:
        return f"model {model.model_id}: {err}"
    return None


class RequestIds:
    """ASGI middleware: each HTTP request is a ``served.Request`` (its ``X-Request-Id``, or a fresh id) while it
    is answered; a request whose records were written gets its id back in that header. Any other request's
    answer is left as it is."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope.get("type") != "http":
            return await self.app(scope, receive, send)
        from onmt_optimal.adapter import served

        header = served.HEADER.lower().encode("latin-1")
        given = next((value for name, value in scope.get("headers", ()) if name.lower() == header), None)
        request = served.Request(given.decode("latin-1") if given is not None else None)

        async def send_with_id(message):
            if message.get("type") == "http.response.start" and request.used:
                headers = [*message.get("headers", ()), (header, request.id.encode("latin-1"))]
                message = {**message, "headers": headers}
            await send(message)

        token = served.CURRENT.set(request)
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            served.CURRENT.reset(token)


def patch_server_app() -> None:
    """``eole.server.app``: ``create_app`` adds ``RequestIds`` to the application it makes."""
    module = importlib.import_module("eole.server.app")
    if ours(module.create_app):
        return
    stock_create = module.create_app

    @functools.wraps(stock_create)
    def create_app(config_file):
        app = stock_create(config_file)
        app.add_middleware(RequestIds)
        return app

    module.create_app = mark(create_app)
    serve = sys.modules.get("eole.bin.run.serve")  # a copy taken by ``from eole.server.app import create_app``
    if serve is not None and getattr(serve, "create_app", None) is stock_create:
        serve.create_app = module.create_app


def patch_serve_command() -> None:
    """``eole.bin.run.serve.Serve.run``: a refused option at start-up is one line, exit status 2."""
    module = importlib.import_module("eole.bin.run.serve")
    serve = module.Serve
    if ours(serve.run):
        return
    stock_run = serve.run.__func__

    def run(cls, args):
        from onmt_optimal import atomic, failures

        try:
            return stock_run(cls, args)
        except (failures.Fault, atomic.OutputError) as err:
            failures.fail(PROG, f"{getattr(args, 'config', 'the config')}: {err}", getattr(err, "status", 1))

    serve.run = classmethod(mark(run))
