"""OpenNMT-py's translation server (``onmt_server``) with the plugin's options in a model's ``"opt"``.

OpenNMT-py's server turns each model's ``"opt"`` of its ``conf.json`` into an ``onmt_translate`` command line
(``ServerModel.parse_opt``) and validates it with ``validate_translate_opts``, which ``patch`` extends with our
checks: so the options already reach the search. What this module changes, once
``onmt.translate.translation_server`` has executed (``patch_translation_server``) and once ``onmt.bin.server``
has (``patch_command``):

* ``ServerModel.parse_opt``: a switch of ours (``"bp_norm"``, ``"progress"``) set to ``false`` is off (stock
  passes every JSON boolean as the bare switch, so ``false`` turned it on) and any other value than true or false
  is refused, and so is ``"ray_workers"`` (``onmt_translate``'s alone); an error of OpenNMT-py's parser (a value
  of the wrong type, an unknown option) is one ``OptionError`` line instead of its usage text and
  ``SystemExit``; a relative ``stats_file`` is joined to the model's root, as ``log_file`` is, and must be
  appendable, and neither a model file nor the log file;
* ``ServerModel.__init__``: those errors, and every check of ours (``options.check_search`` through
  ``validate_translate_opts``, the same as ``onmt_translate``'s), name the model and are a ``ServerModelError``
  too, so ``/clone_model`` answers them as an error, not a crash;
* ``ServerModel.load``: the translator appends each request's records to ``stats_file`` (``adapter.served``)
  instead of rewriting the file per request;
* ``ServerModel.run``: the request's id (the client's ``X-Request-Id``, or a fresh one) goes with its records and
  back to the client in that header, where a ``stats_file`` is set;
* ``onmt.bin.server.start`` (``main``'s): a refused option (at start-up: every model's ``"opt"`` is parsed then,
  loaded or not) or an unwritable ``stats_file`` ends the command with ``onmt_server: error: CONFIG: model ID:
  ...`` and exit status 2, no traceback.

With none of our options the server is stock OpenNMT-py's, answers and scores alike.
"""
from __future__ import annotations

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
    model.parse_opt = _parsed(model.parse_opt)
    model.load = _appending(model.load)
    model.run = _with_request_id(model.run)
    model.__init__ = _named(model.__init__)  # the last: a call that finds it ours has nothing left to do


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


def _parsed(parse_opt):
    """``ServerModel.parse_opt`` with our switches read as true or false, ``sys.argv`` given back whatever
    happens (stock leaves its ``-model ...`` there when parsing fails), and ``stats_file`` resolved and checked."""

    @functools.wraps(parse_opt)
    def parse(self, opt):
        _switches(opt)
        argv = sys.argv
        try:
            parsed = parse_opt(self, opt)
        finally:
            sys.argv = argv
        if getattr(parsed, "ray_workers", 0):
            from onmt_optimal.options import OptionError

            raise OptionError("-ray_workers is onmt_translate's: the server decodes each request in its own process")
        stats_file = getattr(parsed, "stats_file", None)
        if stats_file:
            parsed.stats_file = os.path.join(self.model_root, stats_file)
            _check_stats_file(parsed, self.model_root)
        return parsed

    return mark(parse)


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


def _check_stats_file(opt, model_root: str) -> None:
    """``stats_file`` takes appended records, and is neither a model file nor ``log_file`` (both joined to the
    model's root by OpenNMT-py)."""
    from onmt_optimal.adapter import served
    from onmt_optimal.options import _check_distinct

    served.check("-stats_file", opt.stats_file)
    log_file = os.path.join(model_root, opt.log_file) if getattr(opt, "log_file", "") else None
    _check_distinct(opt, reads=[("-model", m) for m in opt.models],
                    writes=[("-stats_file", opt.stats_file), ("-log_file", log_file)])


def _named(init):
    """``ServerModel.__init__`` whose refused options name the model and are a ``ServerOptionError``."""

    @functools.wraps(init)
    def __init__(self, opt, model_id, *args, **kwargs):
        from onmt_optimal.options import OptionError

        try:
            init(self, opt, model_id, *args, **kwargs)
        except OptionError as err:
            raise option_error()(f"model {model_id}: {err}") from None

    return mark(__init__)


def _appending(load):
    """``ServerModel.load`` whose translator appends each request's records to ``stats_file``."""

    @functools.wraps(load)
    def appending(self, *args, **kwargs):
        load(self, *args, **kwargs)
        search = getattr(self.translator, "search", None)
        if search is not None and search.stats_file:
            from onmt_optimal.adapter.served import StatsLog

            self.translator.stats_log = StatsLog(search.stats_file, self.model_id)

    return mark(appending)


def _with_request_id(run):
    """``ServerModel.run`` (under its lock) answering a request with its id where ``stats_file`` is set: the
    client's ``X-Request-Id`` (Flask's request, when there is one) or a fresh one, in the records and the
    response's header."""

    @functools.wraps(run)
    def run_request(self, inputs):
        if not getattr(self.opt, "stats_file", None):
            return run(self, inputs)
        from onmt_optimal.adapter import served

        flask = sys.modules.get("flask")
        in_flask = flask is not None and flask.has_request_context()
        request = served.Request(flask.request.headers.get(served.HEADER) if in_flask else None)
        token = served.CURRENT.set(request)
        try:
            result = run(self, inputs)
        finally:
            served.CURRENT.reset(token)
        if in_flask and request.used:
            @flask.after_this_request
            def answer_id(response):
                response.headers[served.HEADER] = request.id
                return response
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

        try:
            return stock_start(config_file, *args, **kwargs)
        except (failures.Fault, atomic.OutputError) as err:
            failures.fail(PROG, f"{config_file}: {err}", getattr(err, "status", 1))

    cli.start = mark(start)
