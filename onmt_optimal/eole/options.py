"""The new ``eole predict`` options, in eole's own config style, their validation, and the search they select.

eole describes its options as pydantic models (``eole/config/``) and builds its ``--flag``/``-flag`` command line
from their fields (``eole.config.cli.add_model``). ``OptimalDecodingConfig`` holds our fields; ``config_class()``
makes a subclass of eole's ``PredictConfig`` with them, which ``patch`` gives to ``eole predict`` (so the flags
appear in ``eole predict -h`` and YAML configs accept the keys; stock eole forbids unknown keys).

Validation (``validate``, run once, by ``Predict.build_config``: ``patch``) is the shared one
(``onmt_optimal.options.validate``: it reads only option values, no toolkit), plus eole's sampling options (``top_k``/``top_p``); flags are named as eole's command line also
spells them (``-stopping``; eole accepts ``--stopping`` and ``-stopping``). Every impossible combination raises
``OptionError`` with a one-line message.
"""
from __future__ import annotations

from functools import lru_cache

from onmt_optimal.options import Flags, OptionError, Options, option_warnings, validate as _validate, validate_sizes
from onmt_optimal.search.registry import STOPPING_RULES
from onmt_optimal.search.scoring import BOUNDS

__all__ = ["FIELDS", "OptionError", "Options", "config_class", "option_warnings", "validate"]

PROG = "eole predict"

#: our fields: name -> (annotation, default, description)
FIELDS = {
    "stopping": (str, "default",
                 "(onmt-optimal) When beam search stops: " + ", ".join(STOPPING_RULES) + ". 'default': eole's rule (the "
                 "top item of the beam is finished). 'optimal': the optimality certificate of Huang, Zhao & Ma (2017): "
                 "stop once the n_best-th best completed hypothesis scores at least the best bound any live item "
                 "could still reach; returns the best hypotheses this beam could ever complete. 'exhaustive': never "
                 "stop early (the reference the certificate is checked against). 'shrinking': RNNsearch's shrinking "
                 "beam. 'opennmt2017': OpenNMT-py's search of early 2017 (historical)."),
    "length_reward": (float, 0.0,
                      "(onmt-optimal) Length reward r. With length_ratio: the bounded reward, score = log p(y|x) + "
                      "r * min(l, |y|), l = length_ratio * |x|; without: log p(y|x) + r * |y|. |y| counts output "
                      "tokens without EOS, |x| source (prompt) tokens as the model reads them. Needs "
                      "length_penalty none."),
    "length_ratio": (float | None, None,
                     "(onmt-optimal) Estimated output/source length ratio rho (estimate it with 'python -m "
                     "onmt_optimal ratio'). Sets l = rho * |x| for length_reward and bp_norm."),
    "bp_norm": (bool, False,
                "(onmt-optimal) Score with BP-norm (Yang et al. 2018): min(0, 1 - l/|y|) + log p(y|x)/|y|. Needs "
                "length_ratio and length_penalty none."),
    "bound": (str, "exact",
              "(onmt-optimal) Bound of a normalized score (length_penalty avg|wu, bp_norm) under stopping optimal: "
              + ", ".join(BOUNDS) + ". 'exact' is sound; 'predicted' assumes no output outgrows l (a heuristic, "
              "reported as stop_reason predicted_bound)."),
    "stats_file": (str | None, None,
                   "(onmt-optimal) Write one JSON line per input line, in input order: steps, stop reason, score, "
                   "log-probability, |y|, l, |x|, completed hypotheses."),
}


@lru_cache(maxsize=None)
def fields_model():
    """``OptimalDecodingConfig``: an eole ``Config`` with our fields (made on first use: it imports pydantic)."""
    from pydantic import Field, create_model

    from eole.config.config import Config

    return create_model("OptimalDecodingConfig", __base__=Config, **{
        name: (annotation, Field(default=default, description=description))
        for name, (annotation, default, description) in FIELDS.items()})


@lru_cache(maxsize=None)
def config_class(base=None):
    """eole's ``PredictConfig`` (or ``base``) with our fields, under the same name (eole's messages name it).
    Ours come first among the bases so that pydantic lists them last (``eole predict -h``); they define no
    method, so eole's validators and settings are ``base``'s."""
    if base is None:
        from eole.config.run import PredictConfig as base
    cls = type(base.__name__, (fields_model(), base), {"__module__": __name__, "__qualname__": base.__qualname__})
    cls.model_rebuild(force=True)
    return cls


def validate(config) -> None:
    """``OptionError`` for any value or combination the search cannot honour (see the module docstring), and
    for sizes eole fails on with a traceback (``validate_sizes``; stock eole answers -max_length 0 with empty
    lines, which stays so where none of our options is given)."""
    flags = Flags.read(config)
    validate_sizes(config, max_length_zero=not flags.active)
    _check_model_paths(config)
    _validate(config)
    sampling = getattr(config, "top_k", 0) != 0 or getattr(config, "top_p", 0.0) != 0
    if sampling and (flags.stopping != "default" or flags.length_reward > 0 or flags.bp_norm):
        raise OptionError("-stopping/-length_reward/-bp_norm apply to beam search, not to random sampling "
                          "(-top_k/-top_p)")
    if flags.active and getattr(config, "self_speculative_decoding", False):
        raise OptionError("onmt-optimal's options decode with beam search: drop -self_speculative_decoding")


def _check_model_paths(config) -> None:
    """Each ``model_path`` is an eole model directory (``config.json`` in it) or a Hugging Face model ID (eole's
    ``is_hf_model_id``: relative, with a slash, not on this disk): eole says so only after a ValueError traceback."""
    import os

    paths = getattr(config, "model_path", None)
    for path in ([paths] if isinstance(paths, str) else paths or []):
        from eole.models.hf_resolver import is_hf_model_id

        if is_hf_model_id(path):
            continue
        if not os.path.exists(path):
            raise OptionError(f"-model_path {path}: no such directory")
        if not os.path.isfile(os.path.join(path, "config.json")):
            raise OptionError(f"-model_path {path} is not an eole model directory (it has no config.json)")
