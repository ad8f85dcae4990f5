"""What ``optimal_beam_search``'s arguments mean: the (scoring, stopping) rule a decode runs, or one clear line
(``TypeError`` for an argument of the wrong kind, ``ValueError`` for a value it cannot honour).

The score is vLLM's own (``BeamSearchParams.length_penalty``: ``scoring.VLLMLengthPenalty``) unless
``length_reward`` (the paper's bounded reward with ``length_ratio``, He et al.'s per-word reward without) or
``bp_norm`` (with ``length_ratio``) replaces it, as the other toolkits' flags do; the beam itself is always
vLLM's, ranked by its ``length_penalty`` score. Refused: ``structured_outputs`` (a grammar ends hypotheses
without an end token, at a step the search core's lengths do not describe) and an engine whose "logprobs"
are logits (``logprobs_mode`` ``raw_logits`` or ``processed_logits``: they can be positive, so a sum can
rise and no bound holds).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from onmt_optimal.search.scoring import BoundedWordReward, BPNorm, ScoringRule, WordReward
from onmt_optimal.search.stopping import Exhaustive, OptimalityCertificate, StoppingRule
from onmt_optimal.vllm.scoring import VLLMLengthPenalty

#: ``stopping`` values
STOPPING = {"optimal": OptimalityCertificate, "exhaustive": Exhaustive}
#: vLLM's ``logprobs_mode`` values whose numbers are log-probabilities (``<= 0``)
LOG_PROBABILITIES = ("raw_logprobs", "processed_logprobs")


@dataclass(frozen=True)
class Search:
    """One decode's rules: ``score`` ranks the answers, ``stop`` says when a prompt is done; ``n_best`` answers a
    prompt (vLLM's ``beam_width``)."""

    score: ScoringRule
    stop: StoppingRule
    n_best: int


def _number(name: str, value, low: float, strict: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or value < low or (strict and value == low):
        raise ValueError(f"{name} must be a finite number {'>' if strict else '>='} {low:g}, got {value!r}")
    return float(value)


def search(llm, params, stopping="optimal", length_reward=0.0, length_ratio=None, bp_norm=False) -> Search:
    """The rules the arguments ask for, or one ``TypeError``/``ValueError`` line."""
    from vllm import LLM
    from vllm.sampling_params import BeamSearchParams

    if not isinstance(llm, LLM):
        raise TypeError(f"optimal_beam_search takes a vllm.LLM first, got {type(llm).__name__}")
    if not isinstance(params, BeamSearchParams):
        raise TypeError(f"params must be a vllm.sampling_params.BeamSearchParams, got {type(params).__name__}")
    if params.max_tokens < 1:
        raise ValueError(f"params.max_tokens must be at least 1, got {params.max_tokens}")
    if not isinstance(stopping, str) or stopping not in STOPPING:
        raise ValueError(f"stopping must be one of {', '.join(STOPPING)}, got {stopping!r}")
    reward = _number("length_reward", length_reward, 0.0, strict=False)
    ratio = None if length_ratio is None else _number("length_ratio", length_ratio, 0.0, strict=True)
    if not isinstance(bp_norm, bool):
        raise TypeError(f"bp_norm must be True or False, got {type(bp_norm).__name__}")
    if bp_norm and ratio is None:
        raise ValueError("bp_norm=True needs length_ratio=RHO (> 0): its brevity penalty aims at RHO * |x|")
    if bp_norm and reward > 0:
        raise ValueError("bp_norm and length_reward are two different scores: choose one")
    if params.structured_outputs is not None:
        raise ValueError("optimal_beam_search does not take structured_outputs: a grammar ends hypotheses "
                         "without an end token, which no bound here covers")
    mode = getattr(llm.model_config, "logprobs_mode", "raw_logprobs")
    if mode not in LOG_PROBABILITIES:
        raise ValueError(f"optimal_beam_search needs an engine whose logprobs are log-probabilities "
                         f"(logprobs_mode {' or '.join(LOG_PROBABILITIES)}), got logprobs_mode={mode!r}")
    lp = params.length_penalty
    score: ScoringRule
    if bp_norm:
        score = BPNorm(ratio)
    elif reward > 0:
        score = BoundedWordReward(reward, ratio) if ratio is not None else WordReward(reward)
    elif ratio is not None:
        if lp != 0:
            raise ValueError("length_ratio without length_reward or bp_norm needs length_penalty=0 in params "
                             f"(the log-probability, reported with its target length), got {lp!r}")
        score = BoundedWordReward(0.0, ratio)  # raw log p; l is reported in the statistics
    else:
        score = VLLMLengthPenalty(lp)
    return Search(score=score, stop=STOPPING[stopping](), n_best=params.beam_width)
