"""``optimal_beam_search``: the decoding loop that ``model.generate(custom_generate=...)`` calls.

transformers' ``generate`` prepares everything as for its own beam search (inputs expanded to ``num_beams`` rows
an input, the encoder run, the cache, the logits processors and stopping criteria) and then calls this function
with the search's own keyword arguments (those of its signature that ``GenerationMixin._sample`` lacks). The
loop is ``_beam_search``'s: prefill, then per step the model's forward on the running items (through the
model's ``prepare_inputs_for_generation`` and its own cache object), ``log_softmax`` of the float32 logits,
the logits processors, the beam's step (``beam.advance``), and the cache reordered after the new running items
(``Cache.reorder_cache``, or the model's ``_reorder_cache``).

What differs from transformers' loop, never in what the beam holds:

* each input's answer is copied out when every rule is done with it, and the loop ends when all are done
  (transformers: when its own rule is done with all of them, at the same step or later under the certificate);
* with ``drop_finished=True`` an input also leaves the batch then: its rows are dropped from the running items,
  the per-row model inputs and the cache, in the same ``index_select`` that reorders the cache, so the model
  runs on fewer rows (faster at large batches). By default the batch keeps its shape, as transformers' does:
  the model then computes every running item with the same shapes as transformers' beam search, so the
  scores are its numbers bit for bit (a matrix product's rounding can depend on how many rows it has: a
  dropped batch may differ in the last bits, and a near tie may then go the other way);
* each step reads one ``(N, 1)`` column on the host (which inputs are done), where transformers reads one flag
  (whether all are). Also read: on the CPU, whether anything completed (``beam``'s quiet steps), and once at
  the end the answers and statistics.

Nothing of transformers is patched: without ``custom_generate=optimal_beam_search``, ``generate`` is untouched.
"""
from __future__ import annotations

import torch
from torch.nn import functional as F
from transformers.cache_utils import DynamicCache, EncoderDecoderCache
from transformers.generation.utils import ALL_CACHE_NAMES
from transformers.utils import ModelOutput

from onmt_optimal.hf import beam, options
from onmt_optimal.hf.output import Results
from onmt_optimal.option_table import HF, taken_by

#: the search's keyword arguments and their defaults (``option_table``; transformers passes a callable those of
#: its signature that ``GenerationMixin._sample`` lacks, so they are written out below)
_DEFAULTS = {o.name: o.default_for(HF) for o in taken_by(HF)}


def optimal_beam_search(model, input_ids, logits_processor=None, stopping_criteria=None, generation_config=None,
                        synced_gpus=False, stopping=_DEFAULTS["stopping"], length_reward=_DEFAULTS["length_reward"],
                        length_ratio=_DEFAULTS["length_ratio"], bp_norm=_DEFAULTS["bp_norm"],
                        bound=_DEFAULTS["bound"], drop_finished=_DEFAULTS["drop_finished"], **model_kwargs):
    """Beam search with optimal stopping (Huang, Zhao & Ma, 2017) on transformers' own beam, called through
    ``model.generate(..., custom_generate=optimal_beam_search, ...)`` with transformers' beam search settings
    (``num_beams``, ``max_new_tokens``, ``length_penalty``, ``num_return_sequences``, ...) and the search's own
    arguments: ``stopping`` (``"optimal"``, ``"exhaustive"``, ``"shrinking"``, ``"default"``, or a list of them
    decoded at once), the score (``length_reward``, ``length_ratio``, ``bp_norm``; else transformers'
    ``length_penalty``), ``bound`` and ``drop_finished`` (the module docstring); docs/hf.md says what each means.

    Returns what transformers' beam search returns: the ``sequences``, or with ``return_dict_in_generate=True``
    its output class with ``sequences_scores`` (the first rule's) and per input ``search_stats`` and
    ``rule_results`` (``output``). Unsupported settings raise one-line ``ValueError`` (``options``).
    """
    del synced_gpus  # (transformers does not pass it to a callable; a multi-process decode is not supported)
    options.check_settings(generation_config, logits_processor, stopping_criteria)
    options.check_inputs(model_kwargs, generation_config.num_beams)
    search = options.search(generation_config, stopping=stopping, length_reward=length_reward,
                            length_ratio=length_ratio, bp_norm=bp_norm, bound=bound, drop_finished=drop_finished)
    if drop_finished and _cache_key(model_kwargs) is not None:
        _check_cache(model, model_kwargs[_cache_key(model_kwargs)])
    constants, state, fill = _start(model, search, input_ids, generation_config, model_kwargs)
    results = Results(constants, input_ids, fill)
    b, is_encoder_decoder = search.num_beams, model.config.is_encoder_decoder

    outputs = model._prefill(input_ids, generation_config, model_kwargs,
                             is_first_iteration=not generation_config.is_assistant)
    answered = [False] * (input_ids.shape[0] // b)  # inputs whose answers are out (a batch that keeps its shape)
    t = 0
    while True:
        if t > 0:
            inputs = model.prepare_inputs_for_generation(
                state.sequences, next_sequence_length=1 if model_kwargs["use_cache"] else None, **model_kwargs)
            outputs = model(**inputs, return_dict=True)
        model_kwargs = model._update_model_kwargs_for_generation(outputs, model_kwargs,
                                                                 is_encoder_decoder=is_encoder_decoder)
        logits = outputs.logits[:, -1, :].to(copy=True, dtype=torch.float32, device=input_ids.device)
        del outputs
        log_probs = F.log_softmax(logits, dim=-1)
        if logits_processor:
            log_probs = logits_processor(state.sequences, log_probs)
        t += 1
        state, done, rows = beam.advance(constants, state, log_probs, t)
        finished = done.view(-1).tolist()  # the step's one read
        leaving = [now and not before for now, before in zip(finished, answered)]
        if any(leaving):
            results.record(state, leaving)
            if all(finished):
                break
            if drop_finished:
                state, rows, answered = _drop(state, rows, leaving, model_kwargs, b)
            else:
                answered = finished
        _reorder_cache(model, model_kwargs, rows)
    return results.output(generation_config, is_encoder_decoder)


def _start(model, search, input_ids, generation_config, model_kwargs) -> tuple:
    """The decode's constants and first state (``beam.start``), and the id that fills a finished row
    (transformers' ``output_fill_value``: the pad token, else the first end token)."""
    prompt_len = input_ids.shape[1]
    if prompt_len == 0:
        raise ValueError("optimal_beam_search needs input_ids (a prompt of token ids), not inputs_embeds alone")
    T = generation_config.max_length - prompt_len
    if T < 1:
        raise ValueError(f"max_length ({generation_config.max_length}) leaves no token to generate after the "
                         f"prompt of {prompt_len}")
    pad, eos = generation_config._pad_token_tensor, generation_config._eos_token_tensor
    fill = int(pad or eos.view(-1)[0])
    src_len = _source_lengths(model_kwargs, input_ids, search.num_beams, model.config.is_encoder_decoder)
    constants, state = beam.start(search, input_ids, src_len, T, fill)
    return constants, state, fill


def _cache_key(model_kwargs) -> str | None:
    """The name under which ``model_kwargs`` holds the cache, or None (no cache)."""
    return next((key for key in ALL_CACHE_NAMES if model_kwargs.get(key) is not None), None)


def _drop(state, rows, leaving: list[bool], model_kwargs: dict, b: int) -> tuple:
    """``drop_finished``: the inputs ``leaving`` dropped from the running items, from the rows the cache is
    reordered by and from every per-row model input; none of the inputs left is answered yet."""
    keep = torch.tensor([n for n, left in enumerate(leaving) if not left], device=rows.device)
    state, rows = state.select(keep), rows[keep]
    _select_rows(model_kwargs, (keep.unsqueeze(1) * b + torch.arange(b, device=keep.device)).view(-1),
                 len(leaving) * b)
    return state, rows, [False] * keep.shape[0]


def _reorder_cache(model, model_kwargs: dict, rows: torch.Tensor) -> None:
    """The cache made to follow the new running items ``rows``, as transformers does: the model's own
    reordering, else the cache's."""
    cache_key = _cache_key(model_kwargs)
    if cache_key is None:
        return
    beam_idx = rows.view(-1)
    if hasattr(model, "_reorder_cache"):
        model_kwargs[cache_key] = model._reorder_cache(model_kwargs[cache_key], beam_idx)
    elif hasattr(model_kwargs[cache_key], "reorder_cache"):
        model_kwargs[cache_key].reorder_cache(beam_idx)
    else:
        raise ValueError(f"{type(model).__name__}'s cache cannot be reordered for beam search "
                         f"(transformers' beam search refuses it too): pass use_cache=False")


def _check_cache(model, cache) -> None:
    """With ``drop_finished`` the cache must shrink with the batch: transformers' dynamic caches do (their
    ``reorder_cache`` is an ``index_select`` per layer), a static cache does not."""
    if hasattr(model, "_reorder_cache"):
        return
    if isinstance(cache, EncoderDecoderCache):
        ok = isinstance(cache.self_attention_cache, DynamicCache) and isinstance(cache.cross_attention_cache,
                                                                                 DynamicCache)
    else:
        ok = isinstance(cache, DynamicCache)
    if not ok:
        raise ValueError(f"drop_finished=True does not take a {type(cache).__name__}: dropping finished inputs "
                         f"from the batch needs a dynamic cache (drop cache_implementation or drop_finished)")


def _source_lengths(model_kwargs, input_ids, b: int, is_encoder_decoder: bool) -> torch.Tensor:
    """(N,) ``|x|``: the tokens the model reads of each input (the encoder's or the prompt's unmasked tokens)."""
    mask = model_kwargs.get("attention_mask")
    N = input_ids.shape[0] // b
    if mask is not None and mask.dim() == 2:
        return mask.view(N, b, -1)[:, 0].sum(dim=1).float()
    if is_encoder_decoder:
        length = model_kwargs["encoder_outputs"].last_hidden_state.shape[1]
    else:
        length = input_ids.shape[1]
    return torch.full((N,), float(length), device=input_ids.device)


def _select_rows(model_kwargs: dict, keep: torch.Tensor, rows: int) -> None:
    """Keep only the flat rows ``keep`` of every per-row model input (masks, position ids, encoder outputs); the
    cache follows in ``reorder_cache``."""
    def select(x):
        if isinstance(x, torch.Tensor) and x.dim() > 0 and x.shape[0] == rows:
            return x.index_select(0, keep.to(x.device))
        if isinstance(x, tuple):
            return tuple(select(y) for y in x)
        return x

    for key, value in list(model_kwargs.items()):
        if key in ALL_CACHE_NAMES or key == "cache_position":
            continue
        if isinstance(value, ModelOutput):
            model_kwargs[key] = type(value)(**{k: select(v) for k, v in value.items()})
        else:
            model_kwargs[key] = select(value)
