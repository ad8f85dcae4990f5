"""OpenNMT-py's translation server (``onmt_server``) with the plugin's options in a model's ``"opt"``: its seams
and repairs over the shared serving layer (``onmt_optimal.serving``: request ids, the statistics file, the checks
at start-up, the stop on a signal), each function below one replaced attribute, its reason in its docstring.

``ServerModel.parse_opt`` turns a model's ``"opt"`` into an ``onmt_translate`` command line, which
``validate_translate_opts`` (patched by ``patch``) checks with ours: the options reach the search as they reach
``onmt_translate``. Keys are read as OpenNMT-py's parser reads them (``server_files.by_dest``), so that no check is
skipped by spelling; the files of the config are checked together before anything is opened
(``server_files.check_config``); a client's ``/clone_model`` sets only ``server_files.CLIENT_OPTIONS``. With none
of our options the server is stock OpenNMT-py's, answers and scores alike.
"""
from __future__ import annotations

import errno
import functools
import importlib
import inspect
import logging
import os
import sys

from onmt_optimal import serving
from onmt_optimal.adapter import lines
from onmt_optimal.import_hook import mark, ours
from onmt_optimal.opennmt.server_files import check_config, check_opt, check_written, client_problem, read_key
from onmt_optimal.option_table import OPENNMT, taken_by
from onmt_optimal import file_checks
from onmt_optimal.errors import OptionError, OptionTypeError
from onmt_optimal.flags import Flags
from onmt_optimal.options import Settings, validate_sizes

PROG = "onmt_server"
#: our switches: JSON true turns one on, false leaves it off
SWITCHES = tuple(o.name for o in taken_by(OPENNMT) if o.type is bool)
#: the ``TranslationServer`` started last in this process (the one ``onmt_server`` serves: ``_guarded_serve``)
_SERVING: list = []
#: where a ``ServerModel`` keeps the settings it was made with (its clones get them)
SETTINGS = "_onmt_optimal_settings"
SHAPE = 'a list of {"id": MODEL, "src": TEXT} objects'


def patch_translation_server() -> None:
    """``onmt.translate.translation_server``: ``ServerModel`` and ``TranslationServer`` as below."""
    module = importlib.import_module("onmt.translate.translation_server")
    model = module.ServerModel
    if ours(model.__init__):
        return
    if not ours(module.ArgumentParser):
        module.ArgumentParser = _one_line_parser(module.ArgumentParser)
    if not ours(module.init_logger):
        module.init_logger = _no_link_logger(module.init_logger)
    model.parse_opt = _parsed(model.parse_opt)
    model.load = _appending(model.load)
    model.run = _with_request_id(model.run)
    model.maybe_preprocess = _counting_segments(model.maybe_preprocess)
    model.maybe_tokenize = _noting_empty(model.maybe_tokenize)
    server = module.TranslationServer
    if not ours(server.start):
        server.start = _checked_start(server.start)
    if not ours(server.clone_model):
        server.clone_model = mark(_clone_model)
    model.__init__ = _named(model.__init__)  # the last: a call that finds it ours has nothing left to do


@functools.lru_cache(maxsize=None)
def option_error():
    """``ServerOptionError``: both an ``OptionError`` (one line, status 2) and OpenNMT-py's ``ServerModelError``
    (which ``/clone_model`` answers as an error)."""
    from onmt.translate.translation_server import ServerModelError

    return type("ServerOptionError", (OptionError, ServerModelError), {"__module__": __name__})


def _one_line_parser(parser_class):
    """Repair ``ArgumentParser``: its errors are an ``OptionError`` of one line; stock printed its usage and raised
    ``SystemExit``, which ended the server at start-up and killed ``/clone_model``'s thread."""

    class ServerArgumentParser(parser_class):
        def error(self, message):
            raise OptionError(" ".join(str(message).split()))

    ServerArgumentParser.__qualname__ = ServerArgumentParser.__name__ = parser_class.__name__
    return mark(ServerArgumentParser)


def _no_link_logger(init_logger):
    """Repair ``init_logger`` as ``ServerModel`` calls it: the log file is opened (at start-up, for a clone, at
    each rotation) without following a link; stock opened the path by name, so a link put in its place took the
    next clone's log into the file it pointed to. (``onmt.utils.logging.init_logger`` itself is stock's.)"""

    @functools.wraps(init_logger)
    def init(log_file=None, log_file_level=0, rotate=False, **kwargs):
        logger = init_logger(log_file=None, log_file_level=log_file_level, rotate=rotate, **kwargs)
        if log_file:
            handler = _log_handler_class()(log_file, maxBytes=1000000, backupCount=10)  # (stock's rotation)
            handler.setLevel(log_file_level)
            handler.setFormatter(logging.Formatter("[%(asctime)s %(levelname)s] %(message)s"))
            logger.addHandler(handler)
        return logger

    return mark(init)


@functools.lru_cache(maxsize=1)
def _log_handler_class():
    from logging.handlers import RotatingFileHandler

    class NoLinkRotatingFileHandler(RotatingFileHandler):
        """Opens its file with ``O_NOFOLLOW``; one that is not a regular file of its own is refused in one line."""

        def _open(self):
            import stat

            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
            try:
                fd = os.open(self.baseFilename, flags, 0o666)
            except OSError as err:
                link = " (a symbolic link)" if err.errno == errno.ELOOP else ""
                raise OptionError(f"-log_file {self.baseFilename} cannot be opened{link}: "
                                  f"{err.strerror or err}") from None
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
                os.close(fd)
                raise OptionError(f"-log_file {self.baseFilename} is not a regular file of its own (a link, a FIFO "
                                  f"or a device): the server follows no link")
            return os.fdopen(fd, "a", encoding=self.encoding, errors=self.errors)

    return NoLinkRotatingFileHandler


def _parsed(parse_opt):
    """Seam ``ServerModel.parse_opt``: keys by the options' names (``server_files.check_opt``, ``_canonical``); our
    switches true or false (stock passed JSON ``false`` as the bare switch: on); ``sys.argv`` given back whatever
    happens; ``-ray_workers`` and sizes no request could be decoded with refused; written files checked and
    ``stats_file`` joined to the model's root, as ``log_file`` is, and opened once (``serving.open_stats``)."""

    @functools.wraps(parse_opt)
    def parse(self, opt):
        check_opt(opt)
        _canonical(opt, read_key)
        _switches(opt)
        argv = sys.argv
        try:
            parsed = parse_opt(self, opt)
        finally:
            sys.argv = argv
        if getattr(parsed, "ray_workers", 0):
            raise OptionError("-ray_workers is onmt_translate's: the server decodes each request in its own process")
        _check_sizes(parsed)
        _check_written(parsed, self.model_root)
        if getattr(parsed, "stats_file", None):
            parsed.stats_file = os.path.join(self.model_root, parsed.stats_file)
            _check_stats_file(parsed, self.model_root)
            serving.open_stats(parsed.stats_file)
        return parsed

    return mark(parse)


def _check_sizes(parsed) -> None:
    """-beam_size, -n_best, -max_length and -batch_size below 1 refused as ``onmt_translate`` refuses them (stock
    started, then answered every request with an internal message)."""
    own = Settings.read(parsed)
    validate_sizes(own)
    if isinstance(own.batch_size, int) and own.batch_size < 1:
        raise OptionError(f"-batch_size must be at least 1 (got {own.batch_size})")


def _canonical(opt: dict, read_key) -> None:
    """``opt``'s keys (in place: clones copy it) as the options' names the parser reads (``read_key``); an unknown
    key stays (the parser refuses it); of several keys setting one option the last wins, as on a command line."""
    named = {}
    for key, value in opt.items():
        dest = read_key(key)[0]
        named.pop(dest or key, None)
        named[dest or key] = value
    opt.clear()
    opt.update(named)


def _switches(opt: dict) -> None:
    """Our switches in ``opt``: true stays (the bare switch), false is removed (off), anything else is refused."""
    for name in SWITCHES:
        if name not in opt:
            continue
        if not isinstance(opt[name], bool):
            raise OptionTypeError(f"-{name} must be true or false (got {opt[name]!r})")
        if not opt[name]:
            del opt[name]


def _check_written(parsed, model_root: str) -> None:
    """The files the parsed options make the model write are none the server reads (``check_written``), whatever
    named them (a key, a ``"config"`` YAML)."""
    joined = [(flag, getattr(parsed, flag[1:], None)) for flag in ("-stats_file", "-log_file")]
    check_written([(flag, os.path.join(model_root, path)) for flag, path in joined if path and isinstance(path, str)]
                  + [("-dump_beam", getattr(parsed, "dump_beam", None))])


def _check_stats_file(opt, model_root: str) -> None:
    """``stats_file`` takes appended records, and is neither a model file nor ``log_file``."""
    serving.check("-stats_file", opt.stats_file)
    log_file = os.path.join(model_root, opt.log_file) if getattr(opt, "log_file", "") else None
    file_checks.check_distinct(reads=[("-model", m) for m in opt.models],
                    writes=[("-stats_file", opt.stats_file), ("-log_file", log_file)])


def _named(init):
    """Repair ``ServerModel.__init__``: a refused option names the model and is a ``ServerOptionError``, answered
    by ``/clone_model`` as an error, not a crash; the settings it was made with kept for its clones."""

    @functools.wraps(init)
    def __init__(self, opt, model_id, *args, **kwargs):
        setattr(self, SETTINGS, dict(kwargs))
        try:
            init(self, opt, model_id, *args, **kwargs)
        except OptionError as err:
            named = option_error()(f"model {model_id}: {err}")
            named.reason = str(err)
            raise named from None

    return mark(__init__)


def _appending(load):
    """Seam ``ServerModel.load``: the translator appends each request's records to ``stats_file`` through the
    handle opened at start-up (``serving.stats_log``) and, under our search, hands them to the request
    (``Translator._translate`` of that instance, under the model's lock)."""

    @functools.wraps(load)
    def appending(self, *args, **kwargs):
        load(self, *args, **kwargs)
        search = getattr(self.translator, "search", None)
        if search is not None and search.stats_file:
            self.translator.stats_log = serving.stats_log(search.stats_file, self.model_id)
        if search is not None and not search.stock:
            self.translator._translate = _handing_records(self.translator, self.translator._translate)

    return mark(appending)


def _handing_records(translator, translate):
    @functools.wraps(translate)
    def handing(*args, **kwargs):
        result = translate(*args, **kwargs)
        request = serving.CURRENT.get()
        if request is not None:
            request.records = lines.ordered(translator._stats)
        return result

    return handing


def _counting_segments(maybe_preprocess):
    """Seam ``ServerModel.maybe_preprocess``: notes how many segments each input made (``Request.segments``)."""

    @functools.wraps(maybe_preprocess)
    def counting(self, sequence):
        out = maybe_preprocess(self, sequence)
        request = serving.CURRENT.get()
        if request is not None and isinstance(out, dict):
            request.segments.append(len(out.get("seg", ())))
        return out

    return mark(counting)


def _noting_empty(maybe_tokenize):
    """Seam ``ServerModel.maybe_tokenize``: notes which source segments came out empty (answered without a
    decode), so that statistics stay aligned (``Request.empty``)."""

    @functools.wraps(maybe_tokenize)
    def noting(self, sequence, side="src"):
        out = maybe_tokenize(self, sequence, side)
        request = serving.CURRENT.get()
        if request is not None and side == "src":
            request.empty.append(out == "")
        return out

    return mark(noting)


def _checked_start(start):
    """Repair ``TranslationServer.start``: every file of the config checked first (``server_files.check_config``:
    distinct, regular, writable), before any model or log file is opened; stock opened them as it went."""

    @functools.wraps(start)
    def checked(self, config_file):
        _SERVING[:] = [self]
        check_config(config_file)
        return start(self, config_file)

    return mark(checked)


def _clone_model(self, model_id, opt, timeout=-1):
    """Repair ``TranslationServer.clone_model``: a client's ``"opt"`` sets only ``server_files.CLIENT_OPTIONS``
    (``client_problem``: anything else refused in one line, nothing registered, no file read); the clone gets a
    fresh id (stock took the body's ``"timeout"`` for it, failed on ``load_time`` with a 500 and left it
    registered), the timeout, its model's files, root and tokenizer, and is loaded. Returns ``(id, load time)``."""
    from onmt.translate.translation_server import ServerModelError

    source = self.models.get(model_id)
    if source is None:
        raise ServerModelError(f"No such model '{model_id}'")
    if isinstance(timeout, bool) or not isinstance(timeout, int):
        raise ServerModelError(f"clone of model {model_id}: timeout must be a whole number of seconds "
                               f"(got {timeout!r})")
    if opt is None:
        opt = dict(source.user_opt)  # the operator's options, files included
    else:
        if not isinstance(opt, dict):
            raise ServerModelError(f"clone of model {model_id}: opt must be an object of options (got {opt!r})")
        problem = client_problem(opt)
        if problem is not None:
            raise option_error()(f"clone of model {model_id}: {problem}")
        opt = dict(opt)
    opt["models"] = [os.path.abspath(m) for m in source.opt.models]
    settings = {**getattr(source, SETTINGS, {}), "timeout": timeout, "load": True}
    try:
        new_id = self.preload_model(opt, **settings)  # registered only once made and loaded
    except option_error() as err:
        raise option_error()(f"clone of model {model_id}: {getattr(err, 'reason', err)}") from None
    return new_id, self.models[new_id].load_time


def _with_request_id(run):
    """Seam ``ServerModel.run`` (under the model's lock), where our options are set: the request is a
    ``serving.Request`` (the client's ``X-Request-Id`` or a fresh one), whose id goes with its records and back in
    that header; under our search each sentence's answer carries its statistics (``_put_stats``)."""

    @functools.wraps(run)
    def run_request(self, inputs):
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
                return response if stats is None else _put_stats(response, stats)
        return result

    return mark(run_request)


def _put_stats(response, stats: list):
    """``response`` (per n-best rank, one object per input) with each input's statistics in ``serving.FIELD``."""
    from flask import current_app

    body = response.get_json(silent=True)
    if not isinstance(body, list) or not all(isinstance(rank, list) and len(rank) == len(stats) for rank in body):
        return response
    for rank in body:
        for item, one in zip(rank, stats):
            item[serving.FIELD] = one
    response.set_data(current_app.json.response(body).get_data())  # as stock's ``jsonify`` writes it
    return response


def patch_command() -> None:
    """Repair ``onmt.bin.server.start`` (which ``main`` looks up at call time): a host and port it cannot listen on
    end the command in one line, status 2, before any model loads (stock loaded every model, then an ``OSError``
    traceback); a refused option or file is ``onmt_server: error: CONFIG: model ID: ...``, status 2; SIGTERM and
    SIGINT stop it at once (``serving.stop_on_signals``; stock's SIGINT could abort in torch's threads, status
    134). Its app is guarded (``_guarded_serve``)."""
    cli = importlib.import_module("onmt.bin.server")
    if ours(cli.start):
        return
    stock_start = cli.start

    @functools.wraps(stock_start)
    def start(config_file, *args, **kwargs):
        serving.stop_on_signals(PROG)
        try:
            bound = inspect.signature(stock_start).bind(config_file, *args, **kwargs)
            bound.apply_defaults()
            host, port = bound.arguments.get("host"), bound.arguments.get("port")
        except TypeError:
            return stock_start(config_file, *args, **kwargs)  # stock says what is wrong with its arguments
        return serving.started(PROG, host, port, config_file, lambda: stock_start(config_file, *args, **kwargs))

    cli.start = mark(start)
    if not ours(cli.serve):
        cli.serve = _guarded_serve(cli.serve)


def _guarded_serve(serve):
    """Repair ``onmt.bin.server.serve`` (waitress's, which ``start`` calls with its Flask app): before a route runs,
    a malformed request (``_problem``) is answered ``400 {"status": "error", "error": LINE}``; stock read the
    body as it came and answered a 500 with a traceback in its log."""

    @functools.wraps(serve)
    def guarded(app, *args, **kwargs):
        from flask import jsonify, request

        @app.before_request
        def refuse_bad_request():
            problem = _problem(request, _SERVING[0].models if _SERVING else {})
            if problem is None:
                return None
            response = jsonify({"status": "error", "error": problem})
            response.status_code = 400
            return response

        return serve(app, *args, **kwargs)

    return mark(guarded)


def _problem(request, models: dict) -> str | None:
    """A ``/translate`` body that is not a non-empty list of objects with a string ``"src"`` and a first ``"id"``
    naming a model, a ``/clone_model`` body that is not an object (``"opt"`` an object, ``"timeout"`` a whole
    number), a ``/to_cpu``, ``/to_gpu`` of no model: one line; None for anything else."""
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
        if body.get("opt") is not None and not isinstance(body["opt"], dict):
            return f'"opt" must be an object of options (got {serving.kind(body["opt"])})'
        timeout = body.get("timeout", -1)
        if isinstance(timeout, bool) or not isinstance(timeout, int):
            return f'"timeout" must be a whole number of seconds, negative for none (got {timeout!r})'
        return None
    if not isinstance(body, list) or not body:
        return f"the body must be {SHAPE} (got {serving.kind(body)})"
    for n, item in enumerate(body, start=1):
        if not isinstance(item, dict):
            return f"item {n} of the body must be an object {{\"id\": MODEL, \"src\": TEXT}} (got {serving.kind(item)})"
        if not isinstance(item.get("src"), str):
            return f"item {n}: \"src\" must be a string (got {serving.kind(item.get('src'))})"
    model_id = body[0].get("id", 0)
    if isinstance(model_id, bool) or not isinstance(model_id, int) or models.get(model_id) is None:
        return f"no model {model_id!r}{_known(models)}"
    return None


def _known(models: dict) -> str:
    ids = sorted(k for k, v in models.items() if v is not None and isinstance(k, int))
    return f" (the models are {', '.join(map(str, ids))})" if ids else " (no model is served)"
