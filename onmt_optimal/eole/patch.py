"""The one place where eole 0.6.4 is changed. Every change is a substitution of a module or class attribute.

Each ``patch_<module>`` function changes one module of eole and imports nothing else of eole: ``hook`` runs it
once that module has finished executing (so ``import eole`` alone patches nothing and imports nothing more than
stock), and ``apply()`` runs them all explicitly. Each may run any number of times: it leaves an attribute that
already holds one of our functions (``import_hook.ours``) as it is, so a second call changes nothing and a call
after eole's modules are imported afresh patches the new ones:

* ``eole.predict.get_infer_class`` (which ``build_predictor`` looks up at call time) answers
  ``CertifiedTranslator`` for eole's ``Translator`` and ``CertifiedGeneratorLM`` for its ``GeneratorLM``
  (``translator``); those decode as stock eole unless a new option asks for the new search;
* ``eole.inputters.dynamic_iterator.transform_bucket`` keeps empty source lines in place while a translator
  decodes with the new options (``empty_lines``; otherwise it is stock's);
* ``InferenceEngine.infer_file`` writes ``output`` and ``stats_file`` whole or not at all (``atomic``): eole's own
  ``_write_predictions_to_file`` writes the output to a temporary file (its bytes are eole's), the predictor the
  statistics to another, and both are renamed into place once the run has ended; stock eole wrote the statistics
  first and the output over them when the two were one file, and emptied an earlier output on a full disk;
* ``eole.inputters.text_corpus.ParallelCorpus.load`` says which line of ``src`` is not UTF-8 (``source``).

``patch_predict_command()``, when ``eole.bin.run.predict`` has been imported (the ``eole predict`` command;
``apply_cli()`` is ``apply()`` and this, explicitly):

* ``Predict.config_class`` becomes eole's ``PredictConfig`` with our fields (``options.config_class``), so
  ``eole predict -h`` lists them, the command line takes ``--stopping``/``-stopping`` and the like, and YAML
  configs take the keys;
* ``Predict.build_config`` also validates them (and that ``src`` is readable and ``output``/``stats_file``
  writable), and refuses a run that would write a file it reads (``files``: with or without our options),
  before the model loads; with our options on and ``-output`` standard output, ``Predict.run``'s closing
  ``Time w/o ...`` print goes to stderr (``adapter.closing``);
* ``Predict.run`` ends every fault with one ``eole predict: error: ...`` line, not a traceback
  (``failures.run``): an ``OptionError`` or any pydantic error about the options (an unknown key, a value of the
  wrong type) or the YAML config (missing, not YAML) with exit status 2; a failed write, a file that is not UTF-8,
  Ctrl-C (130) and SIGTERM (143) as in ``onmt_translate``.

The translator is imported when first called, not by a patch: a patch runs when its eole module finishes
importing, which may be in the middle of importing one of our modules (whichever imports eole first). So no
module of the package imports this one back: no import cycle.
"""
from __future__ import annotations

import functools
import importlib
import os
import sys

from onmt_optimal.import_hook import mark, ours

PROG = "eole predict"


def patch_predict() -> None:
    """``eole.predict``: ``get_infer_class`` answers our predictors (module docstring)."""
    predict = _module("eole.predict")
    if not ours(predict.get_infer_class):
        predict.get_infer_class = _certified_classes(predict.get_infer_class)


def patch_dynamic_iterator() -> None:
    """``eole.inputters.dynamic_iterator``: ``transform_bucket`` keeps empty lines under the new options."""
    _module("eole.inputters.dynamic_iterator").transform_bucket = _transform_bucket_keeping_empty


def patch_text_corpus() -> None:
    """``eole.inputters.text_corpus``: ``ParallelCorpus.load`` says which line of ``src`` is not UTF-8."""
    from onmt_optimal.adapter import source

    corpus = _module("eole.inputters.text_corpus").ParallelCorpus
    if not ours(corpus.load):
        corpus.load = mark(source.checked(corpus.load))


def patch_inference_engine() -> None:
    """``eole.inference_engine``: ``infer_file`` writes its files whole or not at all."""
    engine = _module("eole.inference_engine").InferenceEngine
    if not ours(engine.infer_file):
        engine.infer_file = _whole_outputs(engine.infer_file)
    if not ours(engine._write_predictions_to_file):
        engine._write_predictions_to_file = _written_through_outputs(engine._write_predictions_to_file)


#: the patches of the prediction path, which ``apply`` runs
PATCHES = (patch_predict, patch_dynamic_iterator, patch_text_corpus, patch_inference_engine)


def _module(name: str):
    """eole's module ``name``, imported if need be. Not ``import a.b`` then ``a.b``: a patch runs as soon as its
    module has executed, before the import system binds it as an attribute of its package."""
    return importlib.import_module(name)


def apply() -> None:
    """Every patch of the prediction path now (importing those modules), for a caller that decodes without the
    ``eole predict`` command (the tools, a process where the import hook is not active)."""
    for patch in PATCHES:
        patch()


def _certified_classes(get_infer_class):
    """``eole.predict.get_infer_class`` answering our predictor for each of eole's that we extend."""
    import eole.predict

    @functools.wraps(get_infer_class)
    def certified(model_config):
        cls = get_infer_class(model_config)
        from onmt_optimal.eole.translator import CertifiedGeneratorLM, CertifiedTranslator

        return {eole.predict.Translator: CertifiedTranslator, eole.predict.GeneratorLM: CertifiedGeneratorLM}.get(
            cls, cls)

    return mark(certified)


def _whole_outputs(infer_file):
    """``InferenceEngine.infer_file`` as one ``atomic.Outputs``: what it writes (``output`` by the engine,
    ``stats_file`` by the predictor, both finding the outputs in ``run_outputs``) is renamed into place when it
    returns, removed when it raises."""

    @functools.wraps(infer_file)
    def whole(self, *args, **kwargs):
        from onmt_optimal import atomic
        from onmt_optimal.eole import run_outputs

        with atomic.Outputs() as outputs, run_outputs.running(outputs):
            result = infer_file(self, *args, **kwargs)
            outputs.commit()
        return result

    return mark(whole)


def _written_through_outputs(write):
    """eole's ``_write_predictions_to_file`` writing to the path ``infer_file``'s ``atomic.Outputs`` gives for
    ``output_path`` (a temporary file, or the path itself for a stream); a failed write is an ``OutputError``."""

    @functools.wraps(write)
    def written(self, scores, estims, preds, output_path):
        from onmt_optimal.eole import run_outputs

        outputs = run_outputs.current()
        if outputs is None:
            return write(self, scores, estims, preds, output_path)
        try:
            return write(self, scores, estims, preds, outputs.path("-output", output_path))
        except OSError as err:
            raise outputs.error("-output", err) from None

    return mark(written)


def _transform_bucket_keeping_empty(*args, **kwargs):
    """``eole.inputters.dynamic_iterator.transform_bucket`` keeping empty source lines (``empty_lines``)."""
    from onmt_optimal.eole.empty_lines import transform_bucket_keeping_empty

    return transform_bucket_keeping_empty(*args, **kwargs)


def apply_cli() -> None:
    """``apply`` and our options in ``eole predict`` (see the module docstring)."""
    apply()
    patch_predict_command()


def patch_predict_command() -> None:
    """``eole.bin.run.predict.Predict``: our options, their validation, the file checks and one-line faults."""
    Predict = _module("eole.bin.run.predict").Predict  # noqa: N806 (eole's class)
    if ours(Predict.run):
        return
    from onmt_optimal.eole import options

    Predict.config_class = options.config_class()
    stock_build = Predict.build_config.__func__
    stock_run = Predict.run.__func__

    def build_config(cls, args):
        from onmt_optimal.adapter import closing
        from onmt_optimal.eole import files
        from onmt_optimal.options import Settings

        given = Settings.read(args)  # the command line's (the -config file's options are the config's)
        config = _built(stock_build, cls, args, given)
        own, flags = options.read_parsed(config)
        files.check(own, flags, given.config)
        options.validate(own, flags)
        for warning in options.option_warnings(own, flags):
            sys.stderr.write(f"{PROG}: warning: {warning}\n")
        closing.route(sys.modules.get(cls.__module__), flags.active, getattr(own, "output", None))
        return config

    def run(cls, args):
        from onmt_optimal import failures

        return failures.run(PROG, lambda: stock_run(cls, args))

    Predict.build_config = classmethod(build_config)
    Predict.run = classmethod(mark(run))  # the last: a call that finds it ours has nothing left to do


def _built(stock_build, cls, args, given):
    """eole's ``build_config``, with what it raises about the config file (missing, not YAML) and the options
    (pydantic's ``ValidationError``: an unknown key, a value of the wrong type) as one-line ``OptionError``s;
    ``given``: the command line's ``Settings``."""
    import yaml
    from pydantic import ValidationError

    from onmt_optimal.adapter import yaml_guard
    from onmt_optimal.eole import options

    path = given.config
    if path is not None:
        yaml_guard.check("-config", path)
    models = given.model_path  # (pydantic's "undefined" where the -config gives it)
    for model in [models] if isinstance(models, str) else models if isinstance(models, (list, tuple)) else []:
        if isinstance(model, str) and os.path.isdir(model):
            options.check_model_files(model)  # eole reads its config.json here: a damaged one, in one line
    try:
        return stock_build(cls, args)
    except OSError as err:
        if path is None or err.filename != path:
            raise
        raise options.OptionError(f"-config {path}: cannot read it ({err.strerror or type(err).__name__})") from None
    except yaml.YAMLError as err:
        mark, problem = getattr(err, "problem_mark", None), getattr(err, "problem", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1}: {problem})" if mark is not None and problem else ""
        raise options.OptionError(f"-config {path}: not valid YAML{where}") from None
    except ValidationError as err:
        raise options.OptionError(invalid(err, options.FIELDS)) from None
    except AttributeError as err:
        # eole 0.6.4's PredictConfig checks ``compute_dtype: int8`` against ``self.gpu``, a field it does not have:
        # int8 fails in eole's own config check, whatever the other options
        if not str(err).endswith("has no attribute 'gpu'"):
            raise
        raise options.OptionError("-compute_dtype int8: eole 0.6.4 cannot take it (its config check reads a 'gpu' "
                                  "field that its PredictConfig lacks); use fp32, fp16 or bf16") from None


def invalid(err, ours) -> str:
    """One line for a pydantic ``ValidationError`` about the options (``ours``: our fields' names)."""
    errors = err.errors()
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if not errors:
        return str(err).splitlines()[0]
    e = errors[0]
    loc = e.get("loc") or ()
    key = ".".join(str(part) for part in loc) or "config"
    if e.get("type") == "extra_forbidden":
        return f"unknown option {key!r} (from -config or the command line; {PROG} -h lists the options){more}"
    whose = " (onmt-optimal)" if loc and loc[0] in ours else ""
    return f"-{key}{whose}: {e['msg']} (got {e.get('input')!r}){more}"
