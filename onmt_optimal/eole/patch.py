"""Where the search enters eole 0.6.4: its seams. Every change is a substitution of a module or class attribute.

Each ``patch_<module>`` function changes one module of eole and imports nothing else of eole: ``hook`` runs it
once that module has finished executing (so ``import eole`` alone patches nothing and imports nothing more than
stock), and ``apply()`` runs them all explicitly, the repairs' too (``repairs``: stock behaviours we change that
are not the search). Each may run any number of times: it leaves an attribute that already holds one of our
functions (``import_hook.ours``) as it is, so a second call changes nothing and a call after eole's modules are
imported afresh patches the new ones:

* ``eole.predict.get_infer_class`` (which ``build_predictor`` looks up at call time) answers
  ``CertifiedTranslator`` for eole's ``Translator`` and ``CertifiedGeneratorLM`` for its ``GeneratorLM``
  (``translator``); those decode as stock eole unless a new option asks for the new search.

``patch_predict_command()``, when ``eole.bin.run.predict`` has been imported (the ``eole predict`` command;
``apply_cli()`` is ``apply()`` and this, explicitly):

* ``Predict.config_class`` becomes eole's ``PredictConfig`` with our fields (``options.config_class``), so
  ``eole predict -h`` lists them, the command line takes ``--stopping``/``-stopping`` and the like, and YAML
  configs take the keys;
* ``Predict.build_config`` also validates them (and that ``src`` is readable and ``output``/``stats_file``
  writable), and refuses a run that would write a file it reads (``files``: with or without our options),
  before the model loads, its errors one line each (``repairs.config_errors``); with our options on and
  ``-output`` standard output, ``Predict.run``'s closing ``Time w/o ...`` print goes to stderr
  (``adapter.closing``); ``Predict.run`` ends every fault in one line (``repairs.one_line_faults``).

The translator is imported when first called, not by a patch: a patch runs when its eole module finishes
importing, which may be in the middle of importing one of our modules (whichever imports eole first). So no
module of the package imports this one back: no import cycle.
"""
from __future__ import annotations

import functools
import sys

from onmt_optimal.eole import repairs
from onmt_optimal.eole.repairs import PROG, eole_module
from onmt_optimal.import_hook import mark, ours


def patch_predict() -> None:
    """``eole.predict``: ``get_infer_class`` answers our predictors (module docstring)."""
    predict = eole_module("eole.predict")
    if not ours(predict.get_infer_class):
        predict.get_infer_class = _certified_classes(predict.get_infer_class)


#: the patches of the prediction path, which ``apply`` runs: the seam, then the repairs
PATCHES = (patch_predict, repairs.patch_dynamic_iterator, repairs.patch_text_corpus, repairs.patch_inference_engine)


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


def apply_cli() -> None:
    """``apply`` and our options in ``eole predict`` (see the module docstring)."""
    apply()
    patch_predict_command()


def patch_predict_command() -> None:
    """``eole.bin.run.predict.Predict``: our options, their validation, the file checks and one-line faults."""
    Predict = eole_module("eole.bin.run.predict").Predict  # noqa: N806 (eole's class)
    if ours(Predict.run):
        return
    from onmt_optimal.eole import options

    Predict.config_class = options.config_class()
    stock_build = Predict.build_config.__func__
    stock_run = Predict.run.__func__

    def build_config(cls, args):
        from onmt_optimal.adapter import closing
        from onmt_optimal.eole import files

        given = options.Settings.read(args)  # the command line's (the -config file's options are the config's)
        config = repairs.config_errors(stock_build, cls, args, given)
        own, flags = options.read_parsed(config)
        files.check(own, flags, given.config)
        options.validate(own, flags)
        for warning in options.option_warnings(own, flags):
            sys.stderr.write(f"{PROG}: warning: {warning}\n")
        closing.route(sys.modules.get(cls.__module__), flags.active, getattr(own, "output", None))
        return config

    Predict.build_config = classmethod(mark(build_config))
    Predict.run = classmethod(repairs.one_line_faults(stock_run))  # the last: a call that finds it ours has nothing left to do


