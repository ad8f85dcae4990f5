# Copied from onmt_optimal/hf/__init__.py by `make hub` (scripts/make_hub.py): edit the package, not this file.
"""Optimal beam search in Hugging Face transformers' ``generate``, as a decoding loop it calls:

    from onmt_optimal.hf import optimal_beam_search
    out = model.generate(**inputs, num_beams=10, max_new_tokens=128, custom_generate=optimal_beam_search,
                         stopping="optimal", return_dict_in_generate=True)

Read in this order: ``generate`` (the loop), ``beam`` (transformers' candidates and running beam, one step,
then the core's ``step.collect`` and ``step.decide``), ``scoring`` (transformers' length normalization as a rule with an admissible bound),
``stopping`` (transformers' own ``early_stopping`` rule), ``options`` (what is taken, what is refused),
``output`` (transformers' output classes, from the core's answers). Importing this package changes nothing in transformers.
"""
from .hf_generate import optimal_beam_search

__all__ = ["optimal_beam_search"]
