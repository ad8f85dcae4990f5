"""eole's inference server (``eole serve``) with the plugin's options in a model's ``config``: its seams and
repairs over the shared serving layer (``onmt_optimal.serving``), each patch once its eole module has executed
(``hook``); why each, and what it refuses: docs/serving.md, "eole serve"."""
from __future__ import annotations

import asyncio
import functools
import importlib
import json
import os
import signal
import stat
import sys

import yaml

from onmt_optimal import file_checks, serving
from onmt_optimal.eole import files, options
from onmt_optimal.eole.options import FIELDS
from onmt_optimal.errors import OptionError
from onmt_optimal.import_hook import mark, ours
from onmt_optimal.serving import around

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
    """``Model.get_config`` that checks our options as ``eole predict`` does, where the model sets any; its
    faults one-line ``OptionError``s naming the model."""
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
        raise options.OptionError(f"model {self.model_id}: {_invalid(err)}") from None
    except options.OptionError as err:
        raise type(err)(f"model {self.model_id}: {err}") from None


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


def _check_stats_file(config, model_id=None) -> None:
    """``config.stats_file`` made absolute, checked (docs/serving.md, "eole serve") and opened, once per model."""
    given = config.stats_file
    config.stats_file = path = os.path.abspath(given)
    if model_id is not None and (model_id, path) in _CHECKED and path in serving.OPENED:
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
        serving.check_apart("-stats_file", path, [(f"model {site_id}'s {what}", read) for what, read in reads],
                            [(f"model {site_id}'s {flag}", written) for flag, written in writes])
    serving.open_stats(path)
    if model_id is not None:
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
    """``Server.start`` that reads every model's files first (``_SITE``), checks at start-up every local model
    setting our options that stock did not load then, and answers an unknown model 400 (``Models``)."""
    is_path = isinstance(server_config_path, str)
    _server_config[0] = os.path.abspath(server_config_path) if is_path else None
    _SITE[:] = _site(server_config_path) if is_path else []
    start(self, server_config_path)
    self.models = Models(self.models)
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
    """``Model.infer_async`` that refuses a bad request (400, one line) before any decode and, under our search,
    decodes it on its own under its id (``REQUEST_SETTING``), its records into its answer (docs/serving.md)."""

    @functools.wraps(infer_async)
    async def infer(self, inputs, settings=None, is_chat=False):
        settings = {} if settings is None else settings
        problem = _input_problem(self, inputs, settings)
        if problem is None:
            if not self.loaded:
                self.load()  # as stock's first step: its config holds the limits, its predictor the settings
            problem = size_problem(self, settings) or request_problem(self, settings)
        if problem is not None:
            from fastapi import HTTPException

            raise HTTPException(status_code=400, detail=problem)
        predictor = getattr(self.engine, "predictor", None)
        search = getattr(predictor, "search", None)
        if search is None or search.stock:
            return await _unless_stopped(self, infer_async(self, inputs, settings=settings, is_chat=is_chat))
        request = serving.CURRENT.get() or serving.Request()
        request.used = request.used or bool(search.stats_file)
        result = await _unless_stopped(self, infer_async(self, inputs, is_chat=is_chat,
                                                         settings={**settings, REQUEST_SETTING: request.id}))
        records = predictor.served_records.pop(request.id, None)
        if records is not None:
            request.stats = records
        return result

    return mark(infer)


async def _unless_stopped(model, decode):
    """``decode`` awaited; cancelled as the server stops, it is answered 503 and one line instead of a 500."""
    try:
        return await decode
    except asyncio.CancelledError:
        from fastapi import HTTPException

        raise HTTPException(status_code=503, detail=f"model {model.model_id}: the server is stopping; this "
                                                    f"request was not answered") from None


def _input_problem(model, inputs, settings: dict) -> str | None:
    """One line on a request that has no input, or whose settings name a file (``FILE_SETTINGS``), or None."""
    if isinstance(inputs, (list, tuple)) and not inputs:
        return f"model {model.model_id}: the request has no input (an empty list): give at least one"
    for name in FILE_SETTINGS:
        value = settings.get(name)
        if value and value != model.pre_config.get(name):
            return (f"model {model.model_id}: {name} names a file ({value!r}): a request cannot choose one; the "
                    f"server reads and writes only the files of its YAML")
    return None


def size_problem(model, settings: dict) -> str | None:
    """One line on a size of the request's ``settings`` above the model's config and eole's default, which
    ``/infer`` asks for the sizes a request names none of (``serving.size_problem``), or None."""
    fields = type(model.config).model_fields
    defaults = {name: fields[name].default for name in (*serving.SIZES, "batch_type") if name in fields}
    problem = serving.size_problem(settings, model.config, "the model's config in the server's YAML", defaults)
    return None if problem is None else f"model {model.model_id}: {problem}"


def request_problem(model, settings: dict) -> str | None:
    """One line on what the request's ``settings`` (those the predictor applies over the model's config) ask that
    the search of a model setting our options cannot do, checked as ``eole predict`` checks a config, or None."""
    predictor, config = getattr(model.engine, "predictor", None), getattr(model, "config", None)
    if predictor is None or config is None or not _ours_in(model.pre_config):
        return None
    fields = type(config).model_fields
    applied = {k: v for k, v in settings.items() if k in fields and hasattr(predictor, k)}
    try:
        options.validate(*options.read_parsed(config.model_copy(update=applied)), run=False)
    except options.OptionError as err:
        return f"model {model.model_id}: {err}"
    return None


class RequestIds:
    """ASGI middleware: each HTTP request a ``serving.Request``; its id back where its records were written, and a
    200 answer of ``/infer`` decoded with our search with its records; any other answer as it is."""

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
                if infer and request.stats is not None and message.get("status") == 200:
                    held.append(message)  # sent with the body, once its length is known
                    return
            elif message.get("type") == "http.response.body" and held:
                held.append(message)
                if message.get("more_body"):
                    return
                start, message = _with_stats(held, request.stats)
                held.clear()
                await send(start)
            await send(message)

        with serving.answering(given.decode("latin-1") if given is not None else None) as request:
            await self.app(scope, receive, send_with_id)


def _with_stats(held: list, stats: list) -> tuple:
    """The answer's start and body messages (``held``) with ``serving.FIELD`` added to its JSON object, as FastAPI
    writes it (compact, UTF-8), its ``content-length`` updated."""
    start, parts = held[0], held[1:]
    body = json.loads(b"".join(part.get("body", b"") for part in parts))
    body[serving.FIELD] = stats
    data = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    headers = [(name, str(len(data)).encode("latin-1") if name.lower() == b"content-length" else value)
               for name, value in start.get("headers", ())]
    return {**start, "headers": headers}, {"type": "http.response.body", "body": data, "more_body": False}


def patch_server_app() -> None:
    """``eole.server.app``: ``create_app`` adds ``RequestIds`` and answers a request naming one of our options
    400 and one line (``own_option_answer``); its from-import copy in ``eole.bin.run.serve`` too."""
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
    """FastAPI's answer to a body its schema refuses: stock's (422), but 400 and one line where it names one of
    our options, a model's, which no request sets."""
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
    """Repair ``eole.bin.run.serve.Serve.run``: the port first, a refused option in one line, and SIGTERM and
    SIGINT stop it within ``GRACE`` seconds (docs/serving.md, "The stop")."""
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
