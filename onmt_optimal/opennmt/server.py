"""OpenNMT-py's ``onmt_server`` with our options in a model's ``"opt"``: its seams and repairs over ``serving``, one
replaced attribute per function; why each: docs/serving.md, "onmt_server". Without our options, stock's server."""
from __future__ import annotations

import functools
import importlib
import inspect
import logging
import os
import sys
from logging.handlers import RotatingFileHandler

from onmt_optimal import file_checks, serving
from onmt_optimal.adapter import lines
from onmt_optimal.errors import OptionError, OptionTypeError
from onmt_optimal.flags import Flags
from onmt_optimal.import_hook import around, mark, ours
from onmt_optimal.opennmt.server_files import by_dest, check_config, check_opt, check_written, client_problem
from onmt_optimal.option_table import OPENNMT, taken_by
from onmt_optimal.options import Settings, validate_sizes

PROG = "onmt_server"
#: our switches: JSON true turns one on, false leaves it off
SWITCHES = tuple(o.name for o in taken_by(OPENNMT) if o.type is bool)
#: the ``TranslationServer`` started last in this process (the one ``onmt_server`` serves: ``_guarded_serve``)
_SERVING: list = []
#: where a ``ServerModel`` keeps the settings it was made with (its clones get them)
SETTINGS = "_onmt_optimal_settings"


def patch_translation_server() -> None:
    """``onmt.translate.translation_server``: ``ServerModel`` and ``TranslationServer`` as below."""
    module = importlib.import_module("onmt.translate.translation_server")
    model, server = module.ServerModel, module.TranslationServer
    if ours(model.__init__):
        return
    if not ours(module.ArgumentParser):
        module.ArgumentParser = _one_line_parser(module.ArgumentParser)
    if not ours(module.init_logger):
        module.init_logger = around(module.init_logger)(_no_link_logger)
    model.parse_opt = around(model.parse_opt)(_parse)
    model.load = around(model.load)(_load)
    model.run = around(model.run)(_run)
    model.maybe_preprocess = around(model.maybe_preprocess)(_count_segments)
    model.maybe_tokenize = around(model.maybe_tokenize)(_note_empty)
    if not ours(server.start):
        server.start = around(server.start)(_checked_start)
    if not ours(server.clone_model):
        server.clone_model = mark(_clone_model)
    model.__init__ = around(model.__init__)(_named)  # the last: a call that finds it ours has nothing left to do


@functools.lru_cache(maxsize=None)
def option_error():
    """``ServerOptionError``: an ``OptionError`` and OpenNMT-py's ``ServerModelError`` (``/clone_model``'s)."""
    from onmt.translate.translation_server import ServerModelError

    return type("ServerOptionError", (OptionError, ServerModelError), {"__module__": __name__})


def _one_line_parser(parser_class):
    """Repair ``ArgumentParser``: its errors are an ``OptionError`` of one line, not its usage and an exit."""

    class ServerArgumentParser(parser_class):
        def error(self, message):
            raise OptionError(" ".join(str(message).split()))

    ServerArgumentParser.__qualname__ = ServerArgumentParser.__name__ = parser_class.__name__
    return mark(ServerArgumentParser)


def _no_link_logger(init_logger, log_file=None, log_file_level=0, rotate=False, **kwargs):
    """Repair ``init_logger`` as ``ServerModel`` calls it: the log file opened without following a link."""
    logger = init_logger(log_file=None, log_file_level=log_file_level, rotate=rotate, **kwargs)
    if log_file:
        handler = NoLinkRotatingFileHandler(log_file, maxBytes=1000000, backupCount=10)  # (stock's rotation)
        handler.setLevel(log_file_level)
        handler.setFormatter(logging.Formatter("[%(asctime)s %(levelname)s] %(message)s"))
        logger.addHandler(handler)
    return logger


class NoLinkRotatingFileHandler(RotatingFileHandler):
    """Opens its file as the statistics file is opened (``serving.StatsFile.open``): no link followed."""

    def _open(self):
        fd = serving.StatsFile.open(self.baseFilename, "-log_file").fd
        return os.fdopen(fd, "a", encoding=self.encoding, errors=self.errors)


def _parse(parse_opt, self, opt):
    """Seam ``ServerModel.parse_opt``: keys by name, switches, sizes and written files checked (docs/serving.md)."""
    check_opt(opt)
    named = by_dest(opt)  # (in place: clones copy it); our switches: true the bare switch, false removed (off)
    for name in SWITCHES:
        if name in named and not isinstance(named[name], bool):
            raise OptionTypeError(f"-{name} must be true or false (got {named[name]!r})")
    opt.clear()
    opt.update({key: value for key, value in named.items() if not (key in SWITCHES and value is False)})
    argv = sys.argv
    try:
        parsed = parse_opt(self, opt)
    finally:
        sys.argv = argv
    if getattr(parsed, "ray_workers", 0):
        raise OptionError("-ray_workers is onmt_translate's: the server decodes each request in its own process")
    own = Settings.read(parsed)
    validate_sizes(own)
    if isinstance(own.batch_size, int) and own.batch_size < 1:
        raise OptionError(f"-batch_size must be at least 1 (got {own.batch_size})")
    written = {f"-{name}": os.path.join(self.model_root, path) for name in ("stats_file", "log_file")
               if isinstance(path := getattr(parsed, name, None), str) and path}
    check_written([*written.items(), ("-dump_beam", getattr(parsed, "dump_beam", None))])
    if "-stats_file" in written:
        parsed.stats_file = written["-stats_file"]
        file_checks.check_appended("-stats_file", parsed.stats_file)
        file_checks.check_distinct(reads=[("-model", m) for m in parsed.models], writes=list(written.items()))
        serving.open_stats(parsed.stats_file)
    return parsed


def _named(init, self, opt, model_id, *args, **kwargs):
    """Repair ``ServerModel.__init__``: a refused option a ``ServerOptionError`` naming the model; settings kept."""
    setattr(self, SETTINGS, dict(kwargs))
    try:
        init(self, opt, model_id, *args, **kwargs)
    except OptionError as err:
        named = option_error()(f"model {model_id}: {err}")
        named.reason = str(err)
        raise named from None


def _load(load, self, *args, **kwargs):
    """Seam ``ServerModel.load``: records appended to ``stats_file`` and, under our search, handed to the request."""
    load(self, *args, **kwargs)
    translator = self.translator
    if getattr(translator, "search", None) is None:
        return
    search = translator.search = translator.search.records_read()  # each answer carries its records
    if search.stats_file:
        translator.stats_log = serving.StatsLog(serving.open_stats(search.stats_file), self.model_id)
    if search.stock:
        return
    translate = translator._translate

    @functools.wraps(translate)
    def handing(*args, **kwargs):
        result = translate(*args, **kwargs)
        if (request := serving.CURRENT.get()) is not None:
            request.records = lines.ordered(translator._stats)
        return result

    translator._translate = handing


def _count_segments(maybe_preprocess, self, sequence):
    """Seam ``ServerModel.maybe_preprocess``: notes how many segments each input made (``Request.segments``)."""
    out = maybe_preprocess(self, sequence)
    if (request := serving.CURRENT.get()) is not None and isinstance(out, dict):
        request.segments.append(len(out.get("seg", ())))
    return out


def _note_empty(maybe_tokenize, self, sequence, side="src"):
    """Seam ``ServerModel.maybe_tokenize``: notes which source segments came out empty (``Request.empty``)."""
    out = maybe_tokenize(self, sequence, side)
    if (request := serving.CURRENT.get()) is not None and side == "src":
        request.empty.append(out == "")
    return out


def _checked_start(start, self, config_file):
    """Repair ``TranslationServer.start``: every file of the config checked first (``check_config``)."""
    _SERVING[:] = [self]
    check_config(config_file)
    return start(self, config_file)


def _clone_model(self, model_id, opt, timeout=-1):
    """Repair ``TranslationServer.clone_model``: a client's ``"opt"`` checked, a fresh id (docs/serving.md)."""
    from onmt.translate.translation_server import ServerModelError

    source = self.models.get(model_id)
    if source is None:
        raise ServerModelError(f"No such model '{model_id}'")
    problem = _clone_problem(opt, timeout) or (None if opt is None else client_problem(opt, source.opt))
    if problem is not None:
        raise option_error()(f"clone of model {model_id}: {problem}")
    opt = dict(source.user_opt if opt is None else opt)  # (the operator's options, files included)
    opt["models"] = [os.path.abspath(m) for m in source.opt.models]
    settings = {**getattr(source, SETTINGS, {}), "timeout": timeout, "load": True}
    try:
        new_id = self.preload_model(opt, **settings)  # registered only once made and loaded
    except option_error() as err:
        raise option_error()(f"clone of model {model_id}: {getattr(err, 'reason', err)}") from None
    return new_id, self.models[new_id].load_time


def _run(run, self, inputs):
    """Seam ``ServerModel.run``: a ``serving.Request``, its id back, each answer with its statistics (``FIELD``)."""
    if not Flags.read(self.opt).active:
        return run(self, inputs)
    flask = sys.modules.get("flask")
    in_flask = flask is not None and flask.has_request_context()
    with serving.answering(flask.request.headers.get(serving.HEADER) if in_flask else None) as request:
        result = run(self, inputs)
    if in_flask:
        stats = request.answer_stats()

        @flask.after_this_request
        def answer(response):
            if request.used:
                response.headers[serving.HEADER] = request.id
            body = None if stats is None else response.get_json(silent=True)  # per n-best rank, per input
            if isinstance(body, list) and all(isinstance(rank, list) and len(rank) == len(stats) for rank in body):
                for rank in body:
                    for item, one in zip(rank, stats):
                        item[serving.FIELD] = one
                response.set_data(flask.current_app.json.response(body).get_data())  # as stock's jsonify writes it
            return response
    return result


def patch_command() -> None:
    """Repair ``onmt.bin.server``: ``start`` (the port first, one-line refusals, signals) and ``serve``."""
    cli = importlib.import_module("onmt.bin.server")
    if ours(cli.start):
        return
    cli.start = around(cli.start)(_start)
    if not ours(cli.serve):
        cli.serve = around(cli.serve)(_guarded_serve)


def _start(stock_start, config_file, *args, **kwargs):
    serving.stop_on_signals(PROG)
    try:
        bound = inspect.signature(stock_start).bind(config_file, *args, **kwargs)
    except TypeError:
        return stock_start(config_file, *args, **kwargs)  # stock says what is wrong with its arguments
    bound.apply_defaults()
    host, port = bound.arguments.get("host"), bound.arguments.get("port")
    return serving.started(PROG, host, port, config_file, lambda: stock_start(config_file, *args, **kwargs))


def _guarded_serve(serve, app, *args, **kwargs):
    """Repair ``onmt.bin.server.serve``: a malformed request (``_problem``) answered 400 and one line."""
    from flask import jsonify, request

    @app.before_request
    def refuse_bad_request():
        problem = _problem(request, _SERVING[0].models if _SERVING else {})
        return None if problem is None else (jsonify({"status": "error", "error": problem}), 400)

    return serve(app, *args, **kwargs)


def _problem(request, models: dict) -> str | None:
    """What is malformed in a ``/translate``, ``/clone_model``, ``/to_cpu`` or ``/to_gpu`` request, or None."""
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
        if not isinstance(body, dict):
            return f'the body must be an object {{"opt": {{...}}, "timeout": SECONDS}} (got {serving.kind(body)})'
        return _clone_problem(body.get("opt"), body.get("timeout", -1))
    if not isinstance(body, list) or not body:
        return f'the body must be a list of {{"id": MODEL, "src": TEXT}} objects (got {serving.kind(body)})'
    for n, item in enumerate(body, start=1):
        if not isinstance(item, dict):
            return f"item {n} of the body must be an object {{\"id\": MODEL, \"src\": TEXT}} (got {serving.kind(item)})"
        if not isinstance(item.get("src"), str):
            return f"item {n}: \"src\" must be a string (got {serving.kind(item.get('src'))})"
    model_id = body[0].get("id", 0)
    if isinstance(model_id, bool) or not isinstance(model_id, int) or models.get(model_id) is None:
        return f"no model {model_id!r}{_known(models)}"
    return None


def _clone_problem(opt, timeout) -> str | None:
    """What is malformed in a ``/clone_model``'s ``"opt"`` or ``"timeout"``, in one line, or None."""
    if opt is not None and not isinstance(opt, dict):
        return f'"opt" must be an object of options (got {serving.kind(opt)})'
    if isinstance(timeout, bool) or not isinstance(timeout, int):
        return f'"timeout" must be a whole number of seconds, negative for none (got {timeout!r})'
    return None


def _known(models: dict) -> str:
    ids = sorted(k for k, v in models.items() if v is not None and isinstance(k, int))
    return f" (the models are {', '.join(map(str, ids))})" if ids else " (no model is served)"
