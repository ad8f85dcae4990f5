"""OpenNMT-py's translation server (``onmt_server``) with the plugin's options in a model's ``"opt"``.

OpenNMT-py's server turns each model's ``"opt"`` of its ``conf.json`` into an ``onmt_translate`` command line
(``ServerModel.parse_opt``) and validates it with ``validate_translate_opts``, which ``patch`` extends with our
checks: so the options already reach the search. What this module changes, once
``onmt.translate.translation_server`` has executed (``patch_translation_server``) and once ``onmt.bin.server``
has (``patch_command``):

* ``ServerModel.parse_opt``: each key read as OpenNMT-py's parser reads it and written by the option's name
  (``server_files.by_dest``, ``_canonical``), so that no check is skipped by spelling; sizes no request could be
  decoded with (``_check_sizes``: -beam_size, -n_best, -max_length, -batch_size below 1) are refused; a switch of
  ours (``"bp_norm"``, ``"progress"``) set to ``false`` is off (stock passes every JSON boolean as the bare
  switch, so ``false`` turned it on) and any other value than true or false
  is refused, and so are ``"ray_workers"`` (``onmt_translate``'s alone), ``"transforms"`` (the server applies
  none) and a path-typed option that is not a string (``server_files.check_opt``); an error of OpenNMT-py's
  parser (a value of the wrong type, an unknown option) is one ``OptionError`` line instead of its usage text
  and ``SystemExit``; a relative ``stats_file`` is joined to the model's root, as ``log_file`` is, and must be
  a regular file that takes appended lines, and neither a model file nor the log file;
* ``ServerModel.__init__``: those errors, and every check of ours (``options.check_search`` through
  ``validate_translate_opts``, the same as ``onmt_translate``'s), name the model and are a ``ServerModelError``
  too, so ``/clone_model`` answers them as an error, not a crash; the model keeps the settings it was made with
  (its root, tokenizer, ...) for its clones;
* ``ServerModel.load``: the translator appends each request's records to ``stats_file`` (``adapter.served``)
  instead of rewriting the file per request, through the handle the server opened at start-up (``_opened``: once
  per file, no link followed; a file swapped in later is not followed), and hands each request's records to its
  answer;
* ``ServerModel.run``: the request's id (the client's ``X-Request-Id``, or a fresh one) goes with its records and
  back to the client in that header, where a ``stats_file`` is set; under onmt-optimal's search each sentence's
  answer carries its statistics (``server_http.put_stats``), found through ``maybe_preprocess`` and
  ``maybe_tokenize`` (how many segments each input made, which were empty);
* ``TranslationServer.start``: every file the config makes the server read and write is checked first
  (``server_files.check_config``: distinct, regular, writable), before any model or log file is opened;
* ``TranslationServer.clone_model``: a client's ``"opt"`` may set only the decoding options of
  ``server_files.CLIENT_OPTIONS``, each by its exact name (``server_files.client_problem``: anything else is
  refused in one line, nothing registered, no file read); the clone gets a fresh id (stock
  took the body's ``"timeout"`` for it, failed on ``load_time`` with a 500 and left the model registered under
  that id), the timeout as its timeout, its model's files, root and tokenizer, and is loaded;
* ``onmt.bin.server.start`` (``main``'s): a host and port it cannot listen on (in use: ``served.port_problem``) ends
  the command in one line, exit status 2, before any model loads; a refused option (at start-up: every model's
  ``"opt"`` is parsed then, loaded or not) or a refused file ends the command with ``onmt_server: error: CONFIG:
  model ID: ...`` and exit status 2, no traceback; SIGTERM and SIGINT stop it at once
  (``server_http.stop_on_signals``); its Flask app answers malformed requests 400 in one line
  (``server_http.guard``).

With none of our options the server is stock OpenNMT-py's, answers and scores alike.
"""
from __future__ import annotations

import errno
import functools
import importlib
import os
import sys

from onmt_optimal.import_hook import mark, ours
from onmt_optimal.option_table import OPENNMT, taken_by

PROG = "onmt_server"

#: our switches: JSON true turns one on, false leaves it off
SWITCHES = tuple(o.name for o in taken_by(OPENNMT) if o.type is bool)


def patch_translation_server() -> None:
    """``onmt.translate.translation_server``: ``ServerModel`` as the module docstring says."""
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


#: the ``TranslationServer`` started last in this process (the one ``onmt_server`` serves: ``server_http.guard``)
_SERVING: list = []
#: where a ``ServerModel`` keeps the settings it was made with (its clones get them)
SETTINGS = "_onmt_optimal_settings"


@functools.lru_cache(maxsize=None)
def option_error():
    """``ServerOptionError``: a refused option of a model, both an ``OptionError`` (one line, status 2) and
    OpenNMT-py's ``ServerModelError`` (which its ``/clone_model`` answers as an error)."""
    from onmt.translate.translation_server import ServerModelError

    from onmt_optimal.options import OptionError

    return type("ServerOptionError", (OptionError, ServerModelError), {"__module__": __name__})


def _one_line_parser(parser_class):
    """OpenNMT-py's ``ArgumentParser`` whose errors (a value of the wrong type, an unknown option) are an
    ``OptionError`` of one line: stock prints its usage (over 100 lines) and raises ``SystemExit``, which ends
    the server at start-up and kills the request's thread in ``/clone_model``."""

    class ServerArgumentParser(parser_class):
        def error(self, message):
            from onmt_optimal.options import OptionError

            raise OptionError(" ".join(str(message).split()))

    ServerArgumentParser.__qualname__ = ServerArgumentParser.__name__ = parser_class.__name__
    return mark(ServerArgumentParser)


def _no_link_logger(init_logger):
    """OpenNMT-py's ``init_logger`` as ``ServerModel`` calls it (``rotate=True``), whose log file is opened, at
    start-up, for a clone and at each rotation, without following a link (``_log_handler_class``): stock
    opened the path by name, so a link put in its place after start-up took the log of the next clone (or
    rotation) into the file it pointed to. (``onmt.utils.logging.init_logger`` itself, which training and
    ``onmt_translate`` call, is left as it is.)"""

    @functools.wraps(init_logger)
    def init(log_file=None, log_file_level=0, rotate=False, **kwargs):
        logger = init_logger(log_file=None, log_file_level=log_file_level, rotate=rotate, **kwargs)
        if log_file:
            import logging

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
        """A ``RotatingFileHandler`` that opens its file with ``O_NOFOLLOW`` and refuses one that is not a regular
        file or has other hard links (``options.OptionError``: the model is refused in one line)."""

        def _open(self):
            import stat

            from onmt_optimal.options import OptionError

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
    """``ServerModel.parse_opt`` with our switches read as true or false, ``sys.argv`` given back whatever
    happens (stock leaves its ``-model ...`` there when parsing fails), and ``stats_file`` resolved and checked."""

    @functools.wraps(parse_opt)
    def parse(self, opt):
        from onmt_optimal.opennmt.server_files import check_opt, read_key

        check_opt(opt)
        _canonical(opt, read_key)
        _switches(opt)
        argv = sys.argv
        try:
            parsed = parse_opt(self, opt)
        finally:
            sys.argv = argv
        if getattr(parsed, "ray_workers", 0):
            from onmt_optimal.options import OptionError

            raise OptionError("-ray_workers is onmt_translate's: the server decodes each request in its own process")
        _check_sizes(parsed)
        _check_written(parsed, self.model_root)
        stats_file = getattr(parsed, "stats_file", None)
        if stats_file:
            parsed.stats_file = os.path.join(self.model_root, stats_file)
            _check_stats_file(parsed, self.model_root)
            setattr(self, STATS_HANDLE, _opened(parsed.stats_file))
        return parsed

    return mark(parse)


def _check_sizes(parsed) -> None:
    """Values no request could be decoded with, refused when the model is made (at start-up, or a clone's
    ``/clone_model``) in one line, as ``onmt_translate`` refuses them (``options.validate_sizes``): -beam_size,
    -n_best, -max_length and -batch_size below 1. Stock started and answered every request with an internal
    message ("step must be nonzero", "list index out of range")."""
    from onmt_optimal.options import OptionError, Settings, validate_sizes

    own = Settings.read(parsed)
    validate_sizes(own)
    if isinstance(own.batch_size, int) and own.batch_size < 1:
        raise OptionError(f"-batch_size must be at least 1 (got {own.batch_size})")


def _canonical(opt: dict, read_key) -> None:
    """``opt``'s keys (in place: it is the model's ``user_opt``, which its clones copy) as the options' names,
    read as OpenNMT-py's parser reads them (``server_files.read_key``, after ``check_opt`` refused what cannot be
    read so): the command line stock makes of it then says what the checks read. A key the parser does not know
    stays as it is (the parser refuses it); of several keys setting one option the last wins, as on a command
    line."""
    named = {}
    for key, value in opt.items():
        dest = read_key(key)[0]
        named.pop(dest or key, None)
        named[dest or key] = value
    opt.clear()
    opt.update(named)


def _switches(opt: dict) -> None:
    """Our switches in ``opt`` (a model's ``"opt"``): true stays (the bare switch), false is removed (off),
    anything else is refused."""
    from onmt_optimal.options import OptionTypeError

    for name in SWITCHES:
        if name not in opt:
            continue
        if not isinstance(opt[name], bool):
            raise OptionTypeError(f"-{name} must be true or false (got {opt[name]!r})")
        if not opt[name]:
            del opt[name]


def _check_written(parsed, model_root: str) -> None:
    """The files the parsed options make the model write (``stats_file`` and ``log_file`` joined to its root, as
    the server joins them, ``dump_beam``) are none of the files the server reads (``server_files.check_written``):
    whatever named them (a key, a ``"config"`` YAML), the parser's result is checked."""
    from onmt_optimal.opennmt.server_files import check_written

    joined = [(flag, getattr(parsed, flag[1:], None)) for flag in ("-stats_file", "-log_file")]
    check_written([(flag, os.path.join(model_root, path)) for flag, path in joined if path and isinstance(path, str)]
                  + [("-dump_beam", getattr(parsed, "dump_beam", None))])


def _check_stats_file(opt, model_root: str) -> None:
    """``stats_file`` takes appended records, and is neither a model file nor ``log_file`` (both joined to the
    model's root by OpenNMT-py)."""
    from onmt_optimal.adapter import served
    from onmt_optimal.options import _check_distinct

    served.check("-stats_file", opt.stats_file)
    log_file = os.path.join(model_root, opt.log_file) if getattr(opt, "log_file", "") else None
    _check_distinct(reads=[("-model", m) for m in opt.models],
                    writes=[("-stats_file", opt.stats_file), ("-log_file", log_file)])


#: the statistics files this process's server opened, by their resolved path (``_opened``)
_OPENED: dict = {}
#: where a ``ServerModel`` keeps its statistics file's handle (``served.StatsFile``)
STATS_HANDLE = "_onmt_optimal_stats_file"


def _opened(path: str):
    """The statistics file at ``path`` as this server opened it: opened once (``served.StatsFile.open``: no link
    followed, refused in one line otherwise) when a model first names it, at start-up, then shared by every model
    and clone that names it, so that a file put in its place later is never followed."""
    from onmt_optimal.adapter.served import StatsFile

    handle = _OPENED.get(path)
    if handle is None:
        handle = _OPENED[path] = StatsFile.open(path)
    return handle


def _named(init):
    """``ServerModel.__init__`` whose refused options name the model and are a ``ServerOptionError``."""

    @functools.wraps(init)
    def __init__(self, opt, model_id, *args, **kwargs):
        from onmt_optimal.options import OptionError

        setattr(self, SETTINGS, dict(kwargs))
        try:
            init(self, opt, model_id, *args, **kwargs)
        except OptionError as err:
            named = option_error()(f"model {model_id}: {err}")
            named.reason = str(err)
            raise named from None

    return mark(__init__)


def _appending(load):
    """``ServerModel.load`` whose translator appends each request's records to ``stats_file``."""

    @functools.wraps(load)
    def appending(self, *args, **kwargs):
        load(self, *args, **kwargs)
        search = getattr(self.translator, "search", None)
        if search is not None and search.stats_file:
            from onmt_optimal.adapter.served import StatsLog

            self.translator.stats_log = StatsLog(search.stats_file, self.model_id, getattr(self, STATS_HANDLE, None))
        if search is not None and not search.stock:
            self.translator._translate = _handing_records(self.translator, self.translator._translate)

    return mark(appending)


def _handing_records(translator, translate):
    """``translator._translate`` that hands the decode's records, in input order, to the request being answered
    (``served.Request.records``), under the model's lock."""

    @functools.wraps(translate)
    def handing(*args, **kwargs):
        from onmt_optimal.adapter import lines, served

        result = translate(*args, **kwargs)
        request = served.CURRENT.get()
        if request is not None:
            request.records = lines.ordered(translator._stats)
        return result

    return handing


def _counting_segments(maybe_preprocess):
    """``ServerModel.maybe_preprocess`` noting how many segments each input of the request made."""

    @functools.wraps(maybe_preprocess)
    def counting(self, sequence):
        from onmt_optimal.adapter import served

        out = maybe_preprocess(self, sequence)
        request = served.CURRENT.get()
        if request is not None and isinstance(out, dict):
            request.segments.append(len(out.get("seg", ())))
        return out

    return mark(counting)


def _noting_empty(maybe_tokenize):
    """``ServerModel.maybe_tokenize`` noting, for each source segment, whether it came out empty (the server
    answers it without a decode)."""

    @functools.wraps(maybe_tokenize)
    def noting(self, sequence, side="src"):
        from onmt_optimal.adapter import served

        out = maybe_tokenize(self, sequence, side)
        request = served.CURRENT.get()
        if request is not None and side == "src":
            request.empty.append(out == "")
        return out

    return mark(noting)


def _checked_start(start):
    """``TranslationServer.start`` checking every file of the config first (``server_files.check_config``)."""

    @functools.wraps(start)
    def checked(self, config_file):
        from onmt_optimal.opennmt.server_files import check_config

        _SERVING[:] = [self]
        check_config(config_file)
        return start(self, config_file)

    return mark(checked)


def _clone_model(self, model_id, opt, timeout=-1):
    """``TranslationServer.clone_model`` as the module docstring says: ``model_id``'s model again, with
    ``opt`` (None: its own options) under a fresh id; returns ``(new id, load time)``."""
    from onmt.translate.translation_server import ServerModelError

    from onmt_optimal.opennmt.server_files import client_problem

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
    """``ServerModel.run`` (under its lock) answering a request with its id where ``stats_file`` is set: the
    client's ``X-Request-Id`` (Flask's request, when there is one) or a fresh one, in the records and the
    response's header."""

    @functools.wraps(run)
    def run_request(self, inputs):
        from onmt_optimal.options import Flags

        if not Flags.read(self.opt).active:
            return run(self, inputs)
        from onmt_optimal.adapter import served
        from onmt_optimal.opennmt import server_http

        flask = sys.modules.get("flask")
        in_flask = flask is not None and flask.has_request_context()
        request = served.Request(flask.request.headers.get(served.HEADER) if in_flask else None)
        token = served.CURRENT.set(request)
        try:
            result = run(self, inputs)
        finally:
            served.CURRENT.reset(token)
        if in_flask:
            stats = request.answer_stats()

            @flask.after_this_request
            def answer(response):
                if request.used:
                    response.headers[served.HEADER] = request.id
                return response if stats is None else server_http.put_stats(response, stats)
        return result

    return mark(run_request)


def patch_command() -> None:
    """``onmt.bin.server``: ``start`` (which ``main`` looks up at call time) refuses a bad option in one line
    (module docstring); faults while serving are answered by the server, as stock's."""
    cli = importlib.import_module("onmt.bin.server")
    if ours(cli.start):
        return
    stock_start = cli.start

    @functools.wraps(stock_start)
    def start(config_file, *args, **kwargs):
        from onmt_optimal import atomic, failures
        from onmt_optimal.opennmt import server_http

        server_http.stop_on_signals(PROG)
        problem = _port_problem(stock_start, config_file, *args, **kwargs)
        if problem is not None:
            failures.fail(PROG, problem, 2)
        try:
            return stock_start(config_file, *args, **kwargs)
        except (failures.Fault, atomic.OutputError) as err:
            failures.fail(PROG, f"{config_file}: {err}", getattr(err, "status", 1))

    cli.start = mark(start)
    if not ours(cli.serve):
        cli.serve = _guarded_serve(cli.serve)


def _port_problem(stock_start, *args, **kwargs) -> str | None:
    """Why ``start`` could not listen on the host and port it was given (``served.port_problem``), in one line, or
    None; asked before any model loads: stock loaded every model, then ended in an OSError traceback."""
    import inspect

    from onmt_optimal.adapter import served

    try:
        bound = inspect.signature(stock_start).bind(*args, **kwargs)
    except TypeError:
        return None  # stock says what is wrong with its arguments
    bound.apply_defaults()
    return served.port_problem(bound.arguments.get("host"), bound.arguments.get("port"))


def _guarded_serve(serve):
    """waitress's ``serve`` (which ``start`` calls last, with its Flask app) with the app's requests guarded
    (``server_http.guard``) against the server ``start`` started."""

    @functools.wraps(serve)
    def guarded(app, *args, **kwargs):
        from onmt_optimal.opennmt import server_http

        server_http.guard(app, lambda: _SERVING[0].models if _SERVING else {})
        return serve(app, *args, **kwargs)

    return mark(guarded)
