"""What ``optimal_beam_search``'s keyword arguments and transformers' settings mean: the rules a decode runs, or
one ``ValueError`` line for what it cannot honour.

The search's own arguments (``option_table``'s options that transformers takes) are validated and select the
(scoring, stopping) rules as the other toolkits' options do (``flags.check_search``, ``flags.Flags.rules``); the
score is transformers' own ``length_penalty`` unless a length reward or BP-norm replaces it, and
``stopping="default"`` is transformers' own ``early_stopping`` rule. Of transformers' settings (a
``GenerationConfig``, logits processors, stopping criteria), what works exactly as in its beam search is
``PROCESSORS`` (each sees one row at a time, so dropping finished inputs from the batch changes nothing, and
each only lowers scores or sets them to 0 or ``-inf``, so a running sum never rises: the bounds' premise) and
``CRITERIA``; everything else that changes the search is refused, saying why (``REFUSED``, ``GENERATION_MODES``,
``check_settings``, ``check_inputs``).
"""
from __future__ import annotations

from dataclasses import dataclass

from onmt_optimal.errors import OptionError
from onmt_optimal.flags import Flags, check_search, score_switches
from onmt_optimal.hf.scoring import LengthPenalty
from onmt_optimal.hf.stopping import TransformersRule
from onmt_optimal.option_table import HF, spell
from onmt_optimal.search import limits

#: logits processors that work as in transformers' beam search (class names, as in transformers 5.17 to 5.23)
PROCESSORS = frozenset({
    "NoBadWordsLogitsProcessor", "ForcedBOSTokenLogitsProcessor", "ForcedEOSTokenLogitsProcessor",
    "MinLengthLogitsProcessor", "MinNewTokensLengthLogitsProcessor", "NoRepeatNGramLogitsProcessor",
    "RepetitionPenaltyLogitsProcessor", "SuppressTokensLogitsProcessor", "SuppressTokensAtBeginLogitsProcessor",
    "InfNanRemoveLogitsProcessor", "LogitNormalization",
})

#: stopping criteria that work as in transformers' beam search
CRITERIA = frozenset({"MaxLengthCriteria", "EosTokenCriteria"})

#: why a known processor or criterion is refused (anything else unknown: "not known to this search")
REFUSED = {
    "SequenceBiasLogitsProcessor": "sequence_bias can raise a score, so no bound on a continuation holds",
    "ExponentialDecayLengthPenalty": "exponential_decay_length_penalty can raise a score, so no bound holds",
    "EncoderRepetitionPenaltyLogitsProcessor": "encoder_repetition_penalty holds per-input state for the "
                                               "whole batch, which this search shrinks as inputs finish",
    "EncoderNoRepeatNGramLogitsProcessor": "encoder_no_repeat_ngram_size holds per-input state for the whole "
                                           "batch, which this search shrinks as inputs finish",
    "PrefixConstrainedLogitsProcessor": "prefix_allowed_tokens_fn is called with batch positions, which change "
                                        "as this search drops finished inputs",
    "MaxTimeCriteria": "max_time stops at a time, not at a score: nothing is certified",
    "StopStringCriteria": "stop_strings end a hypothesis without an end token",
}


#: transformers' settings that select another search than beam search (constrained, group beam search), which its
#: own generate runs or refuses: the loop here would ignore them (their neutral values, None, 0 or 1, pass)
GENERATION_MODES = {
    "force_words_ids": "it is constrained beam search, another search (transformers' own refuses it)",
    "constraints": "it is constrained beam search, another search (transformers' own refuses it)",
    "num_beam_groups": "group beam search is another search (diverse groups of beams), not this one",
    "diversity_penalty": "it belongs to group beam search (num_beam_groups), another search",
}


def _another_search(flag: str, value) -> bool:
    """Whether ``value`` of ``GENERATION_MODES``' ``flag`` selects another search (None, one group or no
    diversity penalty do not)."""
    if value is None:
        return False
    if flag == "num_beam_groups":
        return value > 1
    if flag == "diversity_penalty":
        return value != 0
    return True


def check_inputs(model_kwargs, num_beams: int) -> None:
    """``ValueError`` (one line) for an input that is all padding (its ``attention_mask`` row all 0, in each of
    its ``num_beams`` rows): there is nothing to decode, and the loop ran it to ``max_length`` on padding. One
    read of the mask on the host (the rows found empty), before the first step."""
    mask = model_kwargs.get("attention_mask")
    if mask is None or mask.dim() != 2 or mask.shape[1] == 0:
        return
    empty = (mask.sum(dim=1) == 0).nonzero().view(-1).tolist()
    if empty:
        raise ValueError(f"optimal_beam_search does not take an input that is all padding: input "
                         f"{empty[0] // max(num_beams, 1)} of the batch has an attention_mask of zeros")


@dataclass
class Search:
    """What one decode runs: ``rules`` ``[(scoring, stopping), ...]`` sharing one beam (the first answers in
    ``sequences``), each keeping its ``keep`` best finished hypotheses and answering the ``n_best`` first."""

    rules: list
    num_beams: int
    n_best: int
    keep: int
    eos: list

    @property
    def shrinks(self) -> bool:
        return self.rules[0].stopping.shrinks


def _name(x) -> str:
    return type(x).__name__


def _refuse(what: str, why: str) -> ValueError:
    return ValueError(f"optimal_beam_search does not take {what}: {why}")


def check_settings(generation_config, logits_processor, stopping_criteria) -> None:
    """Raise ``ValueError`` (one line) for a transformers setting this search refuses (the module docstring)."""
    if generation_config.do_sample:
        raise _refuse("do_sample=True", "it is a deterministic beam search (drop do_sample)")
    for flag in ("output_scores", "output_logits", "output_attentions", "output_hidden_states"):
        if getattr(generation_config, flag, False):
            raise _refuse(f"{flag}=True", "it keeps no per-step tensors (sequences_scores and search_stats are "
                                          "always returned with return_dict_in_generate=True)")
    if getattr(generation_config, "low_memory", False):
        raise _refuse("low_memory=True", "transformers' beam search refuses it too")
    if generation_config._eos_token_tensor is None:
        raise _refuse("a model without an end token", "set eos_token_id")
    for flag, why in GENERATION_MODES.items():
        value = getattr(generation_config, flag, None)
        if _another_search(flag, value):
            raise _refuse(f"{flag}={value!r}", why)
    for processor in logits_processor or ():
        if _name(processor) not in PROCESSORS:
            raise _refuse(f"the logits processor {_name(processor)}",
                          REFUSED.get(_name(processor), "it is not known to keep scores from rising or to see "
                                                        "one row at a time"))
    for criterion in stopping_criteria or ():
        if _name(criterion) not in CRITERIA:
            raise _refuse(f"the stopping criterion {_name(criterion)}",
                          REFUSED.get(_name(criterion), "only max_length/max_new_tokens and the end tokens "
                                                        "end a hypothesis here"))
    beams, n_best = generation_config.num_beams, generation_config.num_return_sequences or 1
    if n_best > beams:
        raise ValueError(f"num_return_sequences ({n_best}) must not exceed num_beams ({beams})")


def search(generation_config, **values) -> Search:
    """The rules the search's keyword arguments (``values``: ``option_table``'s, transformers' defaults for the
    others) ask for on ``generation_config``'s score, or one-line ``OptionError`` (a ``ValueError``;
    ``flags.check_search``, and ``stopping="default"``, transformers' rule on its own score, with another)."""
    flags = Flags.of(HF, **values)
    lp, T = generation_config.length_penalty, generation_config.max_length
    check_search(flags, HF, T, [limits.exponent_error(spell(HF, "length_penalty"), lp, "avg", T)],
                 normalized=lp != 0, normalized_as="length_penalty != 0")
    names = [flags.stopping] if isinstance(flags.stopping, str) else list(flags.stopping)
    if "default" in names and flags.scores:
        raise OptionError("stopping='default' is transformers' early_stopping rule, defined on its length_penalty "
                          f"score: it does not take {' or '.join(score_switches())}")
    ratio = None if flags.length_ratio is None else float(flags.length_ratio)
    rules = flags.rules(lambda: LengthPenalty(lp, flags.bound, ratio),
                        {"default": lambda: TransformersRule(generation_config.early_stopping, lp)})
    beams, n_best = generation_config.num_beams, generation_config.num_return_sequences or 1
    keep = beams if "default" in names else n_best  # transformers' rule compares with a store of num_beams
    eos = generation_config._eos_token_tensor.view(-1).tolist()
    return Search(rules=list(rules), num_beams=beams, n_best=n_best, keep=keep, eos=eos)
