"""Dead items: live items of a certified beam that can no longer reach the answer, and need no decoder step.

After step ``t``'s collect, let ``theta_t`` be the ``n_best``-th best completed score kept for an example
(``-inf`` while fewer than ``n_best`` are kept). A live item ``p`` is **dead** when its admissible bound is below
it, ``bound(p) < theta_t``; the other live items are **needed**. ``needed`` marks them. A decoder that computes
the next step only for needed rows, and gives every other row the log-probabilities ``FILL`` (``fill``), answers
exactly as the unpruned search: the same n-best hypotheses and scores, stopping at the same step.

Where it holds (``eligible``): one rule shares the beam, its stopping rule is the certificate
(``OptimalityCertificate``: not OpenNMT's rule, not the exhaustive run, not a shrinking beam), and its score is
one whose bound, at a fixed step and example, is a non-decreasing function of the beam's ranking score of the
item and never rises from parent to child:

* ``StockScore`` with ``-length_penalty none`` and no coverage penalty: the beam ranks by ``log p``, the bound
  is ``log p``;
* ``BoundedWordReward``: ``log p + r min(l, T)``, ``log p`` plus a constant of the example;
* ``WordReward``: ``log p + r T``;
* ``BPNorm`` with the exact bound: ``min(0, 1 - l/T) + log p / T``, non-decreasing in ``log p``.

(Rounding to nearest is monotone, so a non-decreasing function in exact arithmetic stays non-decreasing on the
float32 numbers.) Pruning is off for a normalized score (``-length_penalty avg|wu``: the beam ranks by
``log p / lp`` but an item may carry its penalised sum where a blocked n-gram or a prefix touched it, which is not a
function of its rank), for a coverage penalty (the score can rise, there is no bound), for anything that reads
attention (``-replace_unk``, ``-attn_debug``, a copy generator: the decoder's rows are the beam's), for a
predicted bound (no proof) and for a forced target prefix.

**Why it is exact.** Write ``s(c)`` for the ranking score of a candidate child ``c`` (what the beam's top-k
compares) and ``beta(c)`` for its bound once chosen; by eligibility ``beta = g(s)`` with ``g`` non-decreasing, so
``beta(a) > beta(b)`` implies ``s(a) > s(b)``. By induction on the steps, the pruned and unpruned searches have,
after each step ``t``, the same kept hypotheses and the same *mattering* items: the live items with
``beta >= theta_{t-1}``, in the same slots, with the same tokens and scores. Nothing is dead while
``theta = -inf``, so the searches agree until an example has kept ``n_best`` hypotheses. Then, at step ``t + 1``:

1. Every child ``c`` of a dead item ``p`` has ``beta(c) <= beta(p) < theta_t`` (admissibility: no descendant
   scores above its ancestor's bound, and a child's bound is a bound for every descendant of the child, so the
   bounds of the rules above never rise from parent to child; ``FILL <= 0`` keeps this for the filled rows,
   which are as a real distribution that gives every token ``FILL``).
2. A child ``m`` with ``beta(m) >= theta_t`` (it may matter) therefore has ``s(m) > s(c)`` for every such ``c``,
   in both searches; and ``m`` descends from a needed item (its parent's bound is at least its own), whose row
   both searches compute identically. So the mattering children of both searches are the same candidates and
   rank above everything else: the top-b choice puts them in the same first slots, in the same order (equal
   values keep their order: the candidates before them are the same), and fills the other slots with children
   whose bound is below ``theta_t``.
3. A child with ``beta < theta_t`` that completes scores at most its bound (admissibility), below the
   ``n_best``-th kept score, so it never enters the kept ``n_best`` (ties keep the kept hypothesis): the kept
   hypotheses stay the same, so ``theta_{t+1}`` is the same in both, and ``theta_{t+1} >= theta_t`` (the kept
   scores only rise).
4. The certificate stops when ``theta_{t+1} >= max beta`` over the live items. The mattering items are the same
   in both; every other live item has ``beta < theta_t <= theta_{t+1}``, so it never holds the certificate back:
   both stop at the same step, with the same kept hypotheses, so with the same answers and scores.

What may differ is what the certificate's answer does not read: which non-mattering children fill the other
slots. A dead item's child that would have ended with EOS in the unpruned search is never made, and a needed
item's child may take its slot and end, so the record's ``completed`` (completed hypotheses seen) can differ, and
where the unpruned search had no live item left at its stop (``all_finished``) the pruned one may still hold a live
non-mattering item (``certificate``), or the other way round. This is why pruning is asked for (``-prune_dead``,
``option_table``; in code ``options.Options.prune_dead``, which the translators hand to
``adapter.beam_search.LineageBeamSearch.prune_dead``) wherever records are kept; unasked, ``onmt_translate`` skips
the dead rows only where it writes no record (``opennmt.translator.CertifiedTranslator._prunes``).
Where it is asked for but does not hold, nothing is skipped and nothing else changes; each record then says it
skipped 0 rows (``search.record``'s ``rows_skipped``).

**Where the decoder's rows go.** OpenNMT-py's and eole's decode loops (``opennmt.translator``,
``eole.translator``: ``_decode_needed_rows``; eole's for an RNN decoder only, as its transformer's CPU attention
gives a row other last bits at another place in the batch) keep the decoder's state (an RNN's hidden state, a transformer's
per-row cache) for the decoded rows only, and compose the beam's reorder with the compaction, so the state is
gathered once a step, as stock does; a needed row's parent was decoded (its bound is at least its child's), so its
state is there.
"""
from __future__ import annotations

import torch

from onmt_optimal.search.scoring import BoundedWordReward, BPNorm, ScoringRule, StepView, StockScore, WordReward
from onmt_optimal.search.stopping import OptimalityCertificate

__all__ = ["FILL", "LEAST_ROWS", "eligible", "fill", "needed", "spread"]

#: the fewest rows a pruned step decodes (padded with rows whose output is not used). Measured on this project's
#: CPU torch build: a matrix product of 1 to 3 rows takes another kernel than one of 4 or more, whose rows come out
#: bit for bit as in the whole batch's product, so a step of fewer rows would change scores in their last bits
#: (``tests/e2e/test_dead_rows.py`` at batch 1). No such check exists for a GPU's kernels: there a pruned decode's
#: scores may differ from the unpruned one's in their last bits
LEAST_ROWS = 4


#: the log-probability a row that is not decoded gives every token: the toolkits' mask for completed items
#: (``adapter.beam_search.FINISHED_MASK``), far below any real candidate, and <= 0 (the proof's step 1)
FILL = -65504.0


def monotone(scoring: ScoringRule) -> bool:
    """Is ``scoring``'s bound, at a fixed step and example, a non-decreasing function of the beam's ranking score
    (``log p`` under ``-length_penalty none``), and admissible? (The module docstring.)"""
    if not scoring.bound_is_proof:
        return False
    if isinstance(scoring, StockScore):
        return not scoring.normalized and not scoring.has_coverage
    if isinstance(scoring, BPNorm):
        return scoring.bound_mode == "exact"
    return isinstance(scoring, (BoundedWordReward, WordReward))


def eligible(rules: list) -> bool:
    """May a search with ``rules`` (``(scoring, stopping)`` pairs sharing its beam) skip its dead rows? One rule,
    the certificate, a ``monotone`` score. The toolkit adds its own conditions (no length or coverage penalty in
    its ranking, no attention, no copy generator, no target prefix)."""
    if len(rules) != 1:
        return False
    scoring, stopping = rules[0]
    return type(stopping) is OptimalityCertificate and not stopping.shrinks and monotone(scoring)


def needed(*, scoring: ScoringRule, view: StepView, live: torch.Tensor, kept_score: torch.Tensor,
           n_best: int) -> torch.Tensor:
    """(B, beam) bool: the live items whose bound is at least the ``n_best``-th kept score (``kept_score``
    (B, K), sorted, ``-inf`` for an empty place): the rows the next step must decode. Every other row is dead or
    holds no live item."""
    kth = kept_score[:, n_best - 1:n_best]
    return live & (scoring.bound(view) >= kth)


def fill(rows: torch.Tensor, log_probs: torch.Tensor, total: int) -> torch.Tensor:
    """(total, V): ``log_probs`` (n, V), the decoded rows, at ``rows`` (n,) and ``FILL`` everywhere else."""
    out = log_probs.new_full((total, log_probs.shape[1]), FILL)
    return out.index_copy_(0, rows, log_probs)


def spread(scores: torch.Tensor | None, rows: torch.Tensor, log_probs: torch.Tensor, total: int) -> torch.Tensor:
    """``fill`` without writing the rows that are not decoded: ``log_probs`` (n, V) copied to ``rows`` of
    ``scores``'s first ``total`` rows, where the other rows keep what the last step left there (the beam adds its
    sums to them in place, masks, never raises one above 0: every number in them is at most 0 and none is NaN, which
    is all the proof's step 1 asks of a row that is not needed). ``scores`` is None at a batch's first step (or
    smaller than ``total`` rows): then a ``fill``. Returns the ``(total, V)`` tensor the beam reads; pass it back as
    ``scores`` at the next step. Saves a ``(total, V)`` write a step, the same size as the decode's own output."""
    if scores is None or scores.shape[0] < total or scores.shape[1] != log_probs.shape[1] \
            or scores.dtype != log_probs.dtype:
        return fill(rows, log_probs, total)
    out = scores[:total]
    return out.index_copy_(0, rows, log_probs)
