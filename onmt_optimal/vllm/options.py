"""What ``optimal_beam_search``'s arguments mean: the (scoring, stopping) rule a decode runs, or one clear line
(``TypeError`` for an argument of the wrong kind, ``ValueError`` for a value it cannot honour).

The search's arguments are ``option_table``'s options that vLLM takes, validated as every toolkit's
(``options.check_search``). The score is vLLM's own (``BeamSearchParams.length_penalty``:
``scoring.VLLMLengthPenalty``) unless a length reward (the paper's bounded reward with ``length_ratio``, He et
al.'s per-word reward without) or BP-norm (with ``length_ratio``) replaces it, as the other toolkits' flags
do; the beam itself is always vLLM's, ranked by its ``length_penalty`` score. Refused: ``structured_outputs``
(a grammar ends hypotheses without an end token, at a step the search core's lengths do not describe) and an
engine whose "logprobs" are logits (``logprobs_mode`` ``raw_logits`` or ``processed_logits``: they can be
positive, so a sum can rise and no bound holds). ``prune_dead`` asks the offline loop not to send the dead
beams to the engine (``dead_beams``, where it applies).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from onmt_optimal.option_table import VLLM
from onmt_optimal.errors import OptionError, OptionTypeError
from onmt_optimal.flags import Flags, check_search, score_switches
from onmt_optimal.search import limits
from onmt_optimal.search.scoring import BoundedWordReward, ScoringRule
from onmt_optimal.search.stopping import StoppingRule
from onmt_optimal.vllm.scoring import VLLMLengthPenalty

#: vLLM's ``logprobs_mode`` values whose numbers are log-probabilities (``<= 0``)
LOG_PROBABILITIES = ("raw_logprobs", "processed_logprobs")


@dataclass(frozen=True)
class Search:
    """One decode's rules: ``score`` ranks the answers, ``stop`` says when a prompt is done; ``n_best`` answers a
    prompt (vLLM's ``beam_width``); ``prune_dead``: skip the dead beams where that holds (``dead_beams``)."""

    score: ScoringRule
    stop: StoppingRule
    n_best: int
    prune_dead: bool = False


def search(llm, params, **values) -> Search:
    """The rules ``optimal_beam_search``'s arguments ask for (``rules``; their defaults are the option table's, in
    that function's signature), or one ``TypeError``/``ValueError`` line, ``llm`` and ``params`` checked first."""
    from vllm import LLM
    from vllm.sampling_params import BeamSearchParams

    if not isinstance(llm, LLM):
        raise TypeError(f"optimal_beam_search takes a vllm.LLM first, got {type(llm).__name__}")
    if not isinstance(params, BeamSearchParams):
        raise TypeError(f"params must be a vllm.sampling_params.BeamSearchParams, got {type(params).__name__}")
    from onmt_optimal.vllm.internals import model_config

    return rules(flags(**values), params, *engine(model_config(llm)))


def engine(model_config) -> tuple[str, int | None]:
    """What the search reads of vLLM's engine (its ``ModelConfig``, or None): its ``logprobs_mode`` and its
    ``max_model_len``, at vLLM's defaults where the config lacks them; ``rules``' last two arguments."""
    return getattr(model_config, "logprobs_mode", "raw_logprobs"), getattr(model_config, "max_model_len", None)


def flags(**values) -> Flags:
    """The search's options (``option_table``'s names that vLLM takes, the others at vLLM's defaults), checked as
    every toolkit's are (``options.check_search``: ``OptionError``, a ``ValueError``, or ``OptionTypeError``, also
    a ``TypeError``). An integer beyond a float's range (JSON has them: ``1e400`` is a float, ``10**400`` an
    integer) is refused by name first."""
    for name, value in values.items():
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > sys.float_info.max:
            raise OptionError(f"{name} must be a finite number (got an integer of {int(math.log10(abs(value))) + 1} "
                              f"digits, beyond a float's range)")
    checked = Flags.of(VLLM, **values)
    check_search(checked, VLLM)
    if not isinstance(checked.prune_dead, bool):  # a switch of vLLM's here, whichever toolkits the table names
        raise OptionTypeError(f"prune_dead must be True or False (got {checked.prune_dead!r})")
    return checked


def rules(flags: Flags, params, logprobs_mode: str, max_model_len: int | None = None) -> Search:
    """The (checked) ``flags``' rules on a decode of ``params`` (``BeamSearchParams``) by an engine whose logprobs
    are ``logprobs_mode``'s and whose sequences (prompt and output) hold at most ``max_model_len`` tokens
    (``options.Flags.rules``), or one ``ValueError`` line for vLLM's settings that the search cannot take, the
    reward checked against ``max_tokens`` and ``length_penalty`` as every toolkit's exponent."""
    if params.max_tokens < 1:
        raise ValueError(f"params.max_tokens must be at least 1, got {params.max_tokens}")
    T = params.max_tokens  # |y|; the divisor's length is the prompt's and the output's: the model's limit
    check_search(flags, VLLM, T, [limits.exponent_error("params.length_penalty", params.length_penalty, "avg",
                                                        max_model_len or T)])
    if params.structured_outputs is not None:
        raise ValueError("optimal_beam_search does not take structured_outputs: a grammar ends hypotheses "
                         "without an end token, which no bound here covers")
    if logprobs_mode not in LOG_PROBABILITIES:
        raise ValueError(f"optimal_beam_search needs an engine whose logprobs are log-probabilities "
                         f"(logprobs_mode {' or '.join(LOG_PROBABILITIES)}), got logprobs_mode={logprobs_mode!r}")
    lp = params.length_penalty
    if flags.length_ratio is not None and not flags.scores and lp != 0:
        raise OptionError(f"length_ratio without {' or '.join(score_switches())} needs length_penalty=0 in params, "
                          f"the log-probability, reported with its target length (got {lp!r})")
    ((score, stop),) = flags.rules(
        lambda: BoundedWordReward(0.0, flags.length_ratio) if flags.length_ratio is not None  # raw log p, with l
        else VLLMLengthPenalty(lp))
    return Search(score=score, stop=stop, n_best=params.beam_width, prune_dead=flags.prune_dead)
