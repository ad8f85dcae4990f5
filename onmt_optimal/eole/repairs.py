"""The named repairs of eole 0.6.4: stock behaviours we change that are not the search.

The search enters eole at its seams (``patch``: ``get_infer_class`` and ``eole predict``'s config). Everything
else the plugin replaces outside the server (``server`` holds the server's own) is here, each saying what stock
does and why we change it; ``docs/seams.md`` lists them with the test that fails when stock changes (and
``tests/eole/test_eole_stock_fingerprints.py`` fails when a module holding one is no longer 0.6.4's).

As in ``patch``, each ``patch_<module>`` changes one module of eole and imports nothing else of eole: ``hook``
runs it once that module has finished executing, and ``patch.apply()`` runs them all explicitly; each leaves an
attribute that is already ours (``import_hook.ours``) as it is:

* ``eole.inputters.dynamic_iterator.transform_bucket`` drops empty source lines, so outputs no longer line up
  with the input: kept in place while a translator decodes with the new options (``empty_lines``; otherwise
  stock's);
* ``InferenceEngine.infer_file`` wrote the statistics first and the output over them when the two were one file,
  and emptied an earlier output on a full disk: ``output`` and ``stats_file`` are written whole or not at all
  (``atomic``): eole's own ``_write_predictions_to_file`` writes the output to a temporary file (its bytes are
  eole's), the predictor the statistics to another, and both are renamed into place once the run has ended;
* ``eole.inputters.text_corpus.ParallelCorpus.load`` ends a line that is not UTF-8 in a traceback: it says which
  line (``source``);
* ``Predict.run`` ends every fault in a traceback: one ``eole predict: error: ...`` line instead
  (``failures.run``), and ``build_config``'s errors about the config file (missing, not YAML) and the options
  (pydantic's: an unknown key, a value of the wrong type) are one-line ``OptionError``s (``config_errors``), with
  exit status 2; a failed write, a file that is not UTF-8, Ctrl-C (130) and SIGTERM (143) as in
  ``onmt_translate``.
"""
from __future__ import annotations

import functools
import importlib
import os

from onmt_optimal.import_hook import mark, ours

PROG = "eole predict"


def eole_module(name: str):
    """eole's module ``name``, imported if need be. Not ``import a.b`` then ``a.b``: a patch runs as soon as its
    module has executed, before the import system binds it as an attribute of its package."""
    return importlib.import_module(name)


def patch_dynamic_iterator() -> None:
    """``eole.inputters.dynamic_iterator``: ``transform_bucket`` keeps empty lines under the new options."""
    iterator = eole_module("eole.inputters.dynamic_iterator")
    if not ours(iterator.transform_bucket):
        iterator.transform_bucket = _transform_bucket_keeping_empty


@mark
def _transform_bucket_keeping_empty(*args, **kwargs):
    """``eole.inputters.dynamic_iterator.transform_bucket`` keeping empty source lines (``empty_lines``)."""
    from onmt_optimal.eole.empty_lines import transform_bucket_keeping_empty

    return transform_bucket_keeping_empty(*args, **kwargs)


def patch_text_corpus() -> None:
    """``eole.inputters.text_corpus``: ``ParallelCorpus.load`` says which line of ``src`` is not UTF-8."""
    from onmt_optimal.adapter import source

    corpus = eole_module("eole.inputters.text_corpus").ParallelCorpus
    if not ours(corpus.load):
        corpus.load = mark(source.checked(corpus.load))


def patch_inference_engine() -> None:
    """``eole.inference_engine``: ``infer_file`` writes its files whole or not at all."""
    engine = eole_module("eole.inference_engine").InferenceEngine
    if not ours(engine.infer_file):
        engine.infer_file = _whole_outputs(engine.infer_file)
    if not ours(engine._write_predictions_to_file):
        engine._write_predictions_to_file = _written_through_outputs(engine._write_predictions_to_file)


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


def one_line_faults(stock_run):
    """``Predict.run`` (the function under the classmethod) ending every fault in one line (``failures.run``)."""

    def run(cls, args):
        from onmt_optimal import failures

        return failures.run(PROG, lambda: stock_run(cls, args))

    return mark(run)


def config_errors(stock_build, cls, args, given):
    """eole's ``build_config``, with what it raises about the config file (missing, not YAML) and the options
    (pydantic's ``ValidationError``: an unknown key, a value of the wrong type) as one-line ``OptionError``s;
    ``given``: the command line's ``Settings`` (``options.Settings``)."""
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


def invalid(err, ours=(), unknown: str = "") -> str:
    """One line for a pydantic ``ValidationError`` about the options (``ours``: our fields' names; ``unknown``:
    where an unknown key was found, the command's config or line by default)."""
    errors = err.errors()
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if not errors:
        return str(err).splitlines()[0]
    e = errors[0]
    loc = e.get("loc") or ()
    key = ".".join(str(part) for part in loc) or "config"
    if e.get("type") == "extra_forbidden":
        where = unknown or f"(from -config or the command line; {PROG} -h lists the options)"
        return f"unknown option {key!r} {where}{more}"
    whose = " (onmt-optimal)" if loc and loc[0] in ours else ""
    return f"-{key}{whose}: {e['msg']} (got {e.get('input')!r}){more}"
