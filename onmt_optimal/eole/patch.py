"""The one place where eole 0.6.4 is changed. Every change is a substitution of a module or class attribute.

``apply()`` (idempotent), called when ``eole`` is first imported (see ``hook``) or explicitly:

* ``eole.predict.get_infer_class`` (which ``build_predictor`` looks up at call time) answers
  ``CertifiedTranslator`` for eole's ``Translator`` and ``CertifiedGeneratorLM`` for its ``GeneratorLM``
  (``translator``); those decode as stock eole unless a new option asks for the new search;
* ``eole.inputters.dynamic_iterator.transform_bucket`` keeps empty source lines in place while a translator
  decodes with the new options (``empty_lines``; otherwise it is stock's).

``apply_cli()``, when ``eole.bin.run.predict`` has been imported (the ``eole predict`` command):

* ``Predict.config_class`` becomes eole's ``PredictConfig`` with our fields (``options.config_class``), so
  ``eole predict -h`` lists them, the command line takes ``--stopping``/``-stopping`` and the like, and YAML
  configs take the keys;
* ``Predict.build_config`` also validates them (and that ``src`` is readable and ``output``/``stats_file``
  writable), before the model loads;
* ``Predict.run`` ends an ``OptionError`` (or a pydantic error about one of our fields) with one
  ``eole predict: error: ...`` line and exit status 2, not a traceback.

The translator is imported when first called, not by ``apply``: ``apply`` runs when ``eole`` finishes importing,
which may be in the middle of importing one of our modules (whichever imports eole first). So no module of the
package imports this one back: no import cycle.
"""
from __future__ import annotations

import functools
import sys

_applied = False


def apply() -> None:
    global _applied
    if _applied:
        return
    _applied = True
    import eole.predict

    stock = eole.predict.get_infer_class

    @functools.wraps(stock)
    def get_infer_class(model_config):
        cls = stock(model_config)
        from onmt_optimal.eole.translator import CertifiedGeneratorLM, CertifiedTranslator

        return {eole.predict.Translator: CertifiedTranslator, eole.predict.GeneratorLM: CertifiedGeneratorLM}.get(
            cls, cls)

    eole.predict.get_infer_class = get_infer_class

    import eole.inputters.dynamic_iterator

    eole.inputters.dynamic_iterator.transform_bucket = _transform_bucket_keeping_empty


def _transform_bucket_keeping_empty(*args, **kwargs):
    """``eole.inputters.dynamic_iterator.transform_bucket`` keeping empty source lines (``empty_lines``)."""
    from onmt_optimal.eole.empty_lines import transform_bucket_keeping_empty

    return transform_bucket_keeping_empty(*args, **kwargs)


def apply_cli() -> None:
    """Our options in ``eole predict`` (see the module docstring)."""
    apply()
    from eole.bin.run.predict import Predict

    if getattr(Predict, "_onmt_optimal", False):
        return
    from onmt_optimal.eole import options

    Predict.config_class = options.config_class()
    stock_build = Predict.build_config.__func__
    stock_run = Predict.run.__func__

    def build_config(cls, args):
        config = stock_build(cls, args)
        options.validate(config)
        return config

    def run(cls, args):
        from pydantic import ValidationError

        try:
            return stock_run(cls, args)
        except options.OptionError as err:
            _fail(str(err))
        except ValidationError as err:
            ours = [e for e in err.errors() if e.get("loc") and e["loc"][0] in options.FIELDS]
            if not ours:
                raise
            e = ours[0]
            _fail(f"-{e['loc'][0]}: {e['msg']} (got {e.get('input')!r})")

    Predict.build_config = classmethod(build_config)
    Predict.run = classmethod(run)
    Predict._onmt_optimal = True


def _fail(message: str) -> None:
    sys.stderr.write(f"eole predict: error: {message}\n")
    raise SystemExit(2)
