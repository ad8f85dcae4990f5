"""Optimal beam search (Huang, Zhao & Ma, EMNLP 2017) as a transformers ``custom_generate`` method.

transformers calls ``generate(model=model, **arguments)`` in the two layouts it documents:

* a method repository: ``model.generate(..., custom_generate=<this repository or a local copy>,
  trust_remote_code=True)``;
* a model repository with this ``custom_generate/`` folder beside the model's files: after
  ``from_pretrained(<that repository>, trust_remote_code=True)`` every ``model.generate(...)`` is this function.

Either way it hands the arguments to transformers' own ``GenerationMixin.generate`` with
``custom_generate=optimal_beam_search``, the decoding loop of the files beside it (``hf_generate.py``, copied from
the onmt-optimal package with the part of its search core that the loop imports): transformers prepares the
inputs, the encoder, the cache, the logits processors and the stopping criteria as for its own beam search, then
runs the loop. It never calls ``model.generate``, which in a model repository is this function again.
"""
from transformers.generation.utils import GenerationMixin

from .hf import optimal_beam_search


def generate(*args, model, **kwargs):
    """``GenerationMixin.generate(model, *args, **kwargs)`` decoded by ``optimal_beam_search``: transformers' beam
    search settings (``num_beams``, ``max_new_tokens``, ``length_penalty``, ``num_return_sequences``, ...) and the
    search's own keyword arguments (``stopping``, ``length_reward``, ``length_ratio``, ``bp_norm``, ``bound``,
    ``drop_finished``; the README lists them). In a model repository a caller may still name another decoding
    method: ``custom_generate=None`` runs transformers' own. ``model`` comes by keyword in both layouts, so the
    inputs may come by position, as to ``generate`` itself."""
    kwargs.setdefault("custom_generate", optimal_beam_search)
    return GenerationMixin.generate(model, *args, **kwargs)
