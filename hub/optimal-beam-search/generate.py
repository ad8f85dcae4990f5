"""Optimal beam search (Huang, Zhao & Ma, EMNLP 2017) as a transformers ``custom_generate`` method, in both layouts
transformers documents: a method repository (``model.generate(..., custom_generate=<this repository or a local
copy>, trust_remote_code=True)``) and a model repository with this ``custom_generate/`` folder beside the model's
files (after ``from_pretrained(<that repository>, trust_remote_code=True)`` every ``model.generate(...)`` is
this function). Either way it hands the arguments to transformers' own ``GenerationMixin.generate`` with
``custom_generate=optimal_beam_search``, the decoding loop of the files beside it (``hf_generate.py``, copied
from the onmt-optimal package with the part of its search core the loop imports), never to ``model.generate``,
which in a model repository is this function again.
"""
from transformers.generation.utils import GenerationMixin

from .hf_generate import optimal_beam_search


def generate(model, *args, **kwargs):
    """``GenerationMixin.generate(model, *args, **kwargs)`` decoded by ``optimal_beam_search``: transformers' beam
    search settings (``num_beams``, ``max_new_tokens``, ``length_penalty``, ...) and the search's own keyword
    arguments (``stopping``, ``length_reward``, ``length_ratio``, ``bp_norm``, ``bound``, ``drop_finished``: the
    README lists them). transformers passes ``model`` by keyword, so in a model repository the inputs come by
    keyword too (``model.generate(**inputs)``); ``custom_generate=None`` there runs transformers' own decoding."""
    kwargs.setdefault("custom_generate", optimal_beam_search)
    return GenerationMixin.generate(model, *args, **kwargs)
