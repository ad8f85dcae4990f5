"""Optimal beam search (Huang, Zhao & Ma, EMNLP 2017) as a transformers ``custom_generate`` method.

``model.generate(..., custom_generate=<this repository or folder>, trust_remote_code=True)`` loads this file and
calls ``generate(model=model, **arguments)`` with every argument of that ``generate`` call. It hands them back to
``model.generate`` with ``custom_generate=onmt_optimal.hf.optimal_beam_search``, the installed package's
decoding loop, so transformers prepares the inputs, the cache, the logits processors and the stopping criteria
as for any callable ``custom_generate``, and the loop that runs is the package's: the same answers, statistics
and one-line errors as ``custom_generate=optimal_beam_search``. This file holds no search of its own.
"""
from onmt_optimal.hf import optimal_beam_search


def generate(model, *args, **kwargs):
    """``model.generate(*args, **kwargs)`` decoded by ``optimal_beam_search`` (its keyword arguments: ``stopping``,
    ``length_reward``, ``length_ratio``, ``bp_norm``, ``bound``, ``drop_finished``)."""
    kwargs.pop("custom_generate", None)
    return model.generate(*args, custom_generate=optimal_beam_search, **kwargs)
