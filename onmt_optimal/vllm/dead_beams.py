"""Dead beams in vLLM's offline loop: the live beams no step needs to send to the engine (``prune_dead``).

After step ``t`` (``prompts.Prompts.after_step``), let ``theta`` be a prompt's ``beam_width``-th best completed
score kept under the rule (``-inf`` while fewer are kept). A live beam is **dead** when no descendant of it can
enter the answer: its bound is below ``theta`` (``search.dead``, whose proof by induction this module follows).
``needed`` marks the other beams; ``beam_search._Steps`` sends only those to the engine at step ``t + 1``, and the
answers (texts, token ids, ``cum_logprob``, scores) and the steps are those of the search that sends every beam.

**Where it applies** (``applies``): the certificate (``stopping="optimal"``) and a score whose bound is a
non-decreasing function of the beam's sum and never rises from parent to child (``search.dead.monotone``: the
bounded and per-word rewards, BP-norm; and vLLM's own ``scoring.VLLMLengthPenalty``, whose bound
``fl(s / D)`` is non-decreasing in ``s`` for ``D > 0`` and, ``D`` being a maximum over fewer lengths at the next
step, never rises from a beam to its child), without ``ignore_eos``; elsewhere nothing is skipped.

**What vLLM's step ranks by.** vLLM's offline step (``_beam_search_step``) makes each sent beam's candidates in
the order of the beams and of the engine's logprobs, moves those that end in the end token to ``completed``, and
keeps the first ``beam_width`` of the others under a *stable* sort by its key ``h(s) = fl(s / d)``, where ``s``
is the candidate's sum and ``d = max(P + t + 1, 1) ** length_penalty`` is one number for every candidate of a
prompt at step ``t + 1`` (``P + t + 1`` tokens, the prompt's with them, none the end token: those left; with
``ignore_eos`` the end token stays among them with one token less in its length, so ``h`` is not one function of
``s``, and nothing is pruned). ``h`` is non-decreasing in ``s`` but not strictly (two sums may round to one key,
and a stable sort then keeps the candidates' order), so the test is made on the *largest* sum with the beam's own
key: ``X(s) = max{x : h(x) = h(s)}`` (``ceiling``, at most a few floats above ``s``); a beam is needed when
``bound(X(s)) >= theta``. This marks more beams needed than ``bound(s) >= theta``, never fewer.

**Why it is exact** (``search.dead``'s steps 1 to 4; here, step 2). Let ``p`` be a beam pruned after step ``t``
(``bound_t(X(s_p)) < theta``) and ``m`` a candidate of step ``t + 1`` that may matter (``bound_{t+1}(s_m) >=
theta``). If ``s_m <= X(s_p)``, then ``bound_{t+1}(s_m) <= bound_{t+1}(X(s_p)) <= bound_t(X(s_p)) < theta``
(monotone in the sum; never rising from a step to the next at a fixed sum): a contradiction. So ``s_m > X(s_p)``,
and ``h(s_m) > h(s_p) >= h(s_c)`` for every child ``c`` of ``p`` (``s_c <= s_p``: each log-probability is ``<= 0``,
``scoring``): every candidate that may matter ranks strictly above every child of every pruned beam. The pruned
step's candidates are the unpruned step's less those children, in the same order, so vLLM's stable sort puts the
candidates that may matter in the same first places, in the same order, in both; a child of a pruned beam that
ends in the end token scores at most its bound, below ``theta``, and never enters the kept list. By induction
(``search.dead``) both searches keep the same hypotheses and stop at the same step. What differs is what the
answer does not read: the beams in the other places, and the completed hypotheses that a pruned beam's children
would have been, so ``completed`` (the statistics' count of completed hypotheses seen) and, rarely,
``stop_reason`` may differ. An engine that aborts a request (``"abort"``) ends the prompt with its live beams as
answers: there the pruned search has fewer of them.

The server's loop (``online``) runs vLLM's online step, which selects with numpy's ``argpartition``/``argsort``:
their order among equal sums depends on the whole array, so a step sent fewer beams may order equal sums
otherwise, and the server sends every beam.
"""
from __future__ import annotations

import math

import torch

from onmt_optimal.search import dead
from onmt_optimal.search.constants import NEG_INF
from onmt_optimal.search.scoring import StepView
from onmt_optimal.search.stopping import OptimalityCertificate
from onmt_optimal.vllm.scoring import VLLMLengthPenalty

__all__ = ["applies", "ceiling", "needed"]

#: the most floats above a sum that ``ceiling`` looks at (each shares the sum's key within one or two floats):
#: past it, the beam counts as needed
CEILING_STEPS = 64


def applies(search, params) -> bool:
    """Is pruning asked for (``search.prune_dead``) and does it hold (module docstring) for a decode of
    ``params`` (``BeamSearchParams``)?"""
    if not search.prune_dead or params.ignore_eos:
        return False
    stop, score = search.stop, search.score
    if type(stop) is not OptimalityCertificate or stop.shrinks or not score.bound_is_proof:
        return False
    return isinstance(score, VLLMLengthPenalty) or dead.monotone(score)


def ceiling(s: float, d: float) -> float:
    """``X(s)``: the largest float ``x >= s`` whose key ``x / d`` is ``s / d``'s (module docstring); ``inf`` (the
    beam is needed) where it is not found within ``CEILING_STEPS`` floats."""
    key, x = s / d, s
    for _ in range(CEILING_STEPS):
        up = math.nextafter(x, math.inf)
        if up / d != key:
            return x
        x = up
    return math.inf


def needed(decode, t: int, length_penalty: float) -> list[list[bool]]:
    """After step ``t`` of ``decode`` (a ``prompts.Prompts``), per prompt still running, per live beam (in the
    beams' order): must step ``t + 1`` send it (module docstring)? ``length_penalty``: vLLM's, the key's
    exponent."""
    running, W = decode.running, decode.W
    B = len(running)
    sums = torch.full((B, W), NEG_INF, dtype=torch.float64)
    live = torch.zeros((B, W), dtype=torch.bool)
    for n, p in enumerate(running):
        for i, beam in enumerate(p.hyps.beams):
            d = float(max(len(beam.tokens) + 1, 1) ** length_penalty)  # the key's divisor at step t + 1
            sums[n, i] = ceiling(beam.cum_logprob, d)
            live[n, i] = True
    view = StepView(log_prob=sums, eos=torch.zeros_like(live), src_len=decode.facts[:, 0], t=t,
                    max_length=decode.T, memo=decode.memo)
    mask = dead.needed(scoring=decode.search.score, view=view, live=live, kept_score=decode.state.kept.score,
                       n_best=decode.search.n_best)
    return [mask[n, :len(p.hyps.beams)].tolist() for n, p in enumerate(running)]
