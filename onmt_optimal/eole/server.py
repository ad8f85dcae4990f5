"""eole's inference server (``eole serve``) with our options in a model's ``config``: its seams and repairs over
``serving``, each patch once its eole module has executed (``hook``); why each: docs/serving.md, "eole serve"."""
from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import json
import os
import signal
import stat
import sys

import yaml

from onmt_optimal import file_checks, serving
from onmt_optimal.eole import files, options, repairs
from onmt_optimal.eole.options import FIELDS
from onmt_optimal.errors import OptionError
from onmt_optimal.import_hook import around, mark, ours

PROG = "eole serve"
#: the request setting that carries a request's id to the predictor (``translator.Certified``'s attribute)
REQUEST_SETTING = "onmt_optimal_request"
#: the request settings (eole's ``DecodingConfig``) that name a file: a request may not choose one
FILE_SETTINGS = ("phrase_table", "dump_beam")
#: seconds the requests in flight get to finish once SIGTERM or SIGINT asks the server to stop
GRACE = 2.0
#: the server's YAML (``Server.start``'s path, absolute): a file every model reads
_server_config: list = [None]
#: every model of the server's YAML (``_site``): ``(id, local model directory or None, files read, files written)``
_SITE: list = []
#: ``(model id, stats_file)`` pairs checked and opened at start-up (or at the model's first load)
_CHECKED: set = set()
#: the models the server started last serves (``Server.models``)
_SERVED: list = [{}]


def _ours_in(config: dict) -> bool:
    """Whether a model's ``config`` mapping sets any of our options."""
    return isinstance(config, dict) and any(name in config for name in FIELDS)


def patch_server_model() -> None:
    """``eole.server.model``: our options in a model's config, checked; statistics appended per request."""
    module = importlib.import_module("eole.server.model")
    model = module.Model
    if ours(model.get_config):
        return
    module.PredictConfig = options.config_class()
    module.Server.start = around(module.Server.start)(_checked_start)
    model.load = around(model.load)(_load)
    model.infer_async = _per_request(model.infer_async)
    model.get_config = around(model.get_config)(_get_config)  # the last: a call that finds it ours has nothing left


def _get_config(get_config, self):
    """``Model.get_config`` checking our options as ``eole predict`` does; faults one line naming the model."""
    if not _ours_in(self.pre_config):
        return get_config(self)
    from pydantic import ValidationError

    try:
        get_config(self)
        own, flags = options.read_parsed(self.config)
        options.validate(own, flags, run=False)
        for warning in options.option_warnings(own, flags):
            sys.stderr.write(f"{PROG}: warning: model {self.model_id}: {warning}\n")
        if self.config.stats_file:
            _check_stats_file(self.config, self.model_id)
    except ValidationError as err:
        raise options.OptionError(f"model {self.model_id}: {repairs.invalid(err, unknown='in its config')}") from None
    except options.OptionError as err:
        raise type(err)(f"model {self.model_id}: {err}") from None


def _check_stats_file(config, model_id) -> None:
    """``config.stats_file`` made absolute, checked (docs/serving.md, "eole serve") and opened, once per model."""
    given = config.stats_file
    config.stats_file = path = os.path.abspath(given)
    if (model_id, path) in _CHECKED and path in serving.OPENED:
        return
    file_checks.check_writable("-stats_file", path + os.sep if given.endswith(os.sep) else path)  # a directory
    mode = os.stat(path).st_mode if os.path.exists(path) else stat.S_IFREG
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise OptionError(f"-stats_file {path} is {kind}: the server appends records to a regular file; name one")
    file_checks.check_appended("-stats_file", path)
    files.check_served(*options.read_parsed(config), _server_config[0])  # (read anew: stats_file is absolute now)
    for site_id, directory, reads, writes in _SITE:  # every model of the server's YAML
        member = files._in_model(path, directory) if directory is not None else None
        if member is not None:
            what = "directory" if member == "." else f"file {member} of the model directory"
            raise OptionError(f"-stats_file {path} is model {site_id}'s {what} {directory}, which the server "
                              f"reads: writing it would destroy it; name another file")
        file_checks.check_apart("-stats_file", path, [(f"model {site_id}'s {what}", read) for what, read in reads],
                                [(f"model {site_id}'s {flag}", written) for flag, written in writes])
    serving.open_stats(path)
    _CHECKED.add((model_id, path))


def _site(server_config_path) -> list:
    """``_SITE``'s entries, read from the server's YAML as eole reads it; nothing where it cannot be read."""
    try:
        with open(server_config_path, encoding="utf-8") as f:
            conf = yaml.safe_load(f)
    except (OSError, ValueError, yaml.YAMLError):
        return []
    entries = conf.get("models") if isinstance(conf, dict) else None
    site = []
    for entry in [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []:
        path = entry.get("path")
        local = os.path.expandvars(path) if isinstance(path, str) else None
        config = entry.get("config") if isinstance(entry.get("config"), dict) else {}
        reads = [(f"-{name} file", config[name]) for name in ("phrase_table", "src_subword_vocab")
                 if isinstance(config.get(name), str) and config[name]]
        reads += [(f"{where} file", value) for where, value in files._transform_files(
            config.get("transforms_configs") or {}, "transforms_configs")]
        log = config.get("log_file")
        writes = [("-log_file", log)] if isinstance(log, str) and log else []
        site.append((entry.get("id"), local if local and os.path.isdir(local) else None, reads, writes))
    return site


def _checked_start(start, self, server_config_path):
    """``Server.start``: every model's files read first (``_SITE``), our models checked, ``Models`` for 400s."""
    is_path = isinstance(server_config_path, str)
    _server_config[0] = os.path.abspath(server_config_path) if is_path else None
    _SITE[:] = _site(server_config_path) if is_path else []
    start(self, server_config_path)
    self.models = _SERVED[0] = Models(self.models)
    for model in self.models.values():
        local = os.path.expandvars(model.model_path) if isinstance(model.model_path, str) else None
        if model.loaded or not _ours_in(model.pre_config) or not local or not os.path.isdir(local):
            continue
        model.local_path = local
        try:
            model.get_config()
        finally:
            model.local_path = None  # load finds it again (``maybe_retrieve_model``)


class Models(dict):
    """``Server.models``, whose lookup of an id it does not hold raises ``unknown_model()``: 400 and one line."""

    def __missing__(self, model_id):
        raise unknown_model()(status_code=400, detail=f"unknown model: {model_id!r}; served: {list(self)!r}")


@functools.lru_cache(maxsize=1)
def unknown_model():
    """``UnknownModel``: FastAPI's ``HTTPException`` and a ``KeyError``, as stock's lookup raised."""
    from fastapi import HTTPException

    return type("UnknownModel", (HTTPException, KeyError), {"__module__": __name__})


def _load(load, self):
    """``Model.load`` whose predictor appends each request's records to ``stats_file`` (``serving.StatsLog``)."""
    load(self)
    predictor = getattr(self.engine, "predictor", None)
    search = getattr(predictor, "search", None)
    if search is not None and not search.stock and search.stats_file:
        predictor.stats_log = serving.StatsLog(serving.open_stats(search.stats_file), self.model_id)


def _per_request(infer_async):
    """``Model.infer_async``: a bad request refused (400), ours decoded alone under its id (docs/serving.md)."""

    @functools.wraps(infer_async)
    async def infer(self, inputs, settings=None, is_chat=False):
        from fastapi import HTTPException

        settings = {} if settings is None else settings
        problem = request_problem(self, inputs, settings)
        if problem is not None:
            raise HTTPException(status_code=400, detail=f"model {self.model_id}: {problem}")
        predictor = getattr(self.engine, "predictor", None)
        search = getattr(predictor, "search", None)
        request = None if search is None or search.stock else serving.CURRENT.get() or serving.Request()
        if request is not None:
            request.used = request.used or bool(search.stats_file)
            settings = {**settings, REQUEST_SETTING: request.id}
        try:
            result = await infer_async(self, inputs, settings=settings, is_chat=is_chat)
        except asyncio.CancelledError:  # the server stops: 503 and one line, not a 500
            raise HTTPException(status_code=503, detail=f"model {self.model_id}: the server is stopping; this "
                                                        f"request was not answered") from None
        if request is not None:
            request.stats = predictor.served_records.pop(request.id, request.stats)
        return result

    return mark(infer)


def request_problem(model, inputs, settings: dict) -> str | None:
    """One line on what a request asks that is refused before any decode (docs/serving.md, "eole serve")."""
    if isinstance(inputs, (list, tuple)) and not inputs:
        return "the request has no input (an empty list): give at least one"
    for name in FILE_SETTINGS:
        value = settings.get(name)
        if value and value != model.pre_config.get(name):
            return (f"{name} names a file ({value!r}): a request cannot choose one; the server reads and writes "
                    f"only the files of its YAML")
    if not model.loaded:
        model.load()  # as stock's first step: its config holds the limits, its predictor the settings
    fields = type(model.config).model_fields
    problem = size_problem(model.config, settings)
    predictor = getattr(model.engine, "predictor", None)
    if problem is not None or predictor is None or not _ours_in(model.pre_config):
        return problem
    applied = {k: v for k, v in settings.items() if k in fields and hasattr(predictor, k)}
    try:
        options.validate(*options.read_parsed(model.config.model_copy(update=applied)), run=False)
    except options.OptionError as err:
        return str(err)
    return None


def size_problem(config, settings: dict) -> str | None:
    """``serving.size_problem`` of a request's ``settings`` against a model's ``config`` and eole's defaults."""
    fields = type(config).model_fields
    defaults = {name: fields[name].default for name in (*serving.SIZES, "batch_type") if name in fields}
    return serving.size_problem(settings, config, "the model's config in the server's YAML", defaults)


class StreamRefused(Exception):
    """A streamed request's settings refused before its answer starts: ``RequestIds`` answers 400 and the line."""


def patch_streaming() -> None:
    """Repair ``eole.server.streaming.inference_stream``, which streamed answers decode through (chat completions,
    messages, the web workspace), not ``Model.infer_async``: their sizes capped alike (``StreamRefused``)."""
    module = importlib.import_module("eole.server.streaming")
    if not ours(module.inference_stream):
        module.inference_stream = around(module.inference_stream)(_capped_stream)


def _capped_stream(inference_stream, engine, prompt, settings, *args, **kwargs):
    config = getattr(engine, "config", None)  # (a model's ``PredictConfig``)
    problem = size_problem(config, settings or {}) if hasattr(type(config), "model_fields") else None
    if problem is not None:
        model_id = next((k for k, m in _SERVED[0].items() if getattr(m, "engine", None) is engine), None)
        raise StreamRefused(problem if model_id is None else f"model {model_id}: {problem}")
    return _started(inference_stream(engine, prompt, settings, *args, **kwargs))


@contextlib.asynccontextmanager
async def _started(stream):
    """``stream`` entered once the start of its answer, which ``RequestIds`` holds until the check, is sent."""
    request = serving.CURRENT.get()
    if request is not None and request.release is not None:
        await request.release()
    async with stream as chunks:
        yield chunks


class RequestIds:
    """ASGI middleware: a ``serving.Request`` per request; its id, its records in a 200 ``/infer`` answer, and a
    stream refused before its first chunk (``StreamRefused``) answered 400 and one line."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope.get("type") != "http":
            return await self.app(scope, receive, send)
        header = serving.HEADER.lower().encode("latin-1")
        given = next((value for name, value in scope.get("headers", ()) if name.lower() == header), None)
        held = []
        infer = scope.get("path", "").rstrip("/") == "/infer"

        async def send_with_id(message):
            if message.get("type") == "http.response.start":
                if request.used:
                    headers = [*message.get("headers", ()), (header, request.id.encode("latin-1"))]
                    message = {**message, "headers": headers}
                streamed = any(name.lower() == b"content-type" and value.startswith(b"text/event-stream")
                               for name, value in message.get("headers", ()))
                if streamed or infer and request.stats is not None and message.get("status") == 200:
                    held.append(message)  # sent with the body once its length is known; a stream's: ``release``
                    return
            elif message.get("type") == "http.response.body" and held and not infer:
                await release()
            elif message.get("type") == "http.response.body" and held:
                held.append(message)
                if message.get("more_body"):
                    return
                start, parts = held[0], held[1:]
                body = {**json.loads(b"".join(part.get("body", b"") for part in parts)), serving.FIELD: request.stats}
                data = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
                length = str(len(data)).encode("latin-1")
                await send({**start, "headers": [(name, length if name.lower() == b"content-length" else value)
                                                  for name, value in start.get("headers", ())]})
                held.clear()
                message = {"type": "http.response.body", "body": data, "more_body": False}
            await send(message)

        async def release():  # a stream's start, held until its settings pass (``_started``) or its first chunk
            if held and not infer:
                await send(held.pop())

        with serving.answering(given.decode("latin-1") if given is not None else None) as request:
            request.release = release
            try:
                await self.app(scope, receive, send_with_id)
            except StreamRefused as err:
                if not held:
                    raise
                from fastapi.responses import JSONResponse

                await JSONResponse(status_code=400, content={"detail": str(err)})(scope, receive, send)


def patch_server_app() -> None:
    """``eole.server.app.create_app`` (and its copy in ``eole.bin.run.serve``): ``RequestIds``, 400s."""
    module = importlib.import_module("eole.server.app")
    if ours(module.create_app):
        return
    stock_create = module.create_app
    module.create_app = around(stock_create)(_create_app)
    serve = sys.modules.get("eole.bin.run.serve")
    if serve is not None and getattr(serve, "create_app", None) is stock_create:
        serve.create_app = module.create_app


def _create_app(create_app, config_file):
    from fastapi.exceptions import RequestValidationError

    app = create_app(config_file)
    app.add_middleware(RequestIds)
    app.add_exception_handler(RequestValidationError, own_option_answer)
    return app


async def own_option_answer(request, exc):
    """Stock's 422 for a body its schema refuses, but 400 and one line where it names one of our options."""
    from fastapi.exception_handlers import request_validation_exception_handler
    from fastapi.responses import JSONResponse

    named = [str(error["loc"][-1]) for error in exc.errors()
             if error.get("type") == "extra_forbidden" and error.get("loc") and error["loc"][-1] in FIELDS]
    if not named:
        return await request_validation_exception_handler(request, exc)
    why = ("it names a file, and a request cannot choose one: the server writes only the files of its YAML"
           if named[0] == "stats_file" else
           "it is a model's option, set in the model's config in the server's YAML (one model entry per "
           "setting; entries may share a path)")
    return JSONResponse(status_code=400, content={"detail": f"{named[0]} cannot be given in a request: {why}"})


def patch_serve_command() -> None:
    """Repair ``eole.bin.run.serve.Serve.run``: the port first, one-line refusals, stop within ``GRACE``."""
    module = importlib.import_module("eole.bin.run.serve")
    if ours(module.Serve.run):
        return

    def run(cls, args):
        app = serving.started(PROG, args.host, args.port, getattr(args, "config", "the config"),
                              lambda: module.create_app(args.config))
        previous = serving.stop_on_signals(interrupted=0, if_ignored=True)
        try:
            module.uvicorn.run(app=app, host=args.host, port=args.port, log_level="info",
                               timeout_graceful_shutdown=GRACE)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    module.Serve.run = classmethod(mark(run))
