"""OpenNMT-py's ``BeamSearch`` on the search core's step, through ``onmt_optimal.adapter.beam_search.LineageBeamSearch``
(what the OpenNMT-py and eole adapters share).

OpenNMT-py keeps what belongs to its options: the candidate scores (minimum length, banned ``<unk>``, length
penalty, n-gram blocking, forced target prefix, coverage penalty), the tokens and attention of every item
(``alive_seq``, ``alive_attn``) and the decode loop (``Translator._translate_batch_with_strategy``), which
calls ``advance`` every step and ``update_finished`` when ``is_finished_list`` says so. The core picks the
beam, collects the completed hypotheses for every rule and decides who stops.

What changes against stock's ``BeamSearch`` (which runs without the new flags):

* the step reads one ``(B, 1)`` column on the host (which examples are done), where stock reads every item's EOS
  flag and then runs ``update_finished`` whenever any item completed; here it runs only when an example is
  done, and hands its answers over from one transfer (with ``host``, ``Options.host``, the core's
  bookkeeping runs on the host instead, fed one packed transfer a step: ``search.transfer``);
* predictions are handed over as host tensors, already read (OpenNMT-py reads each with ``.tolist()``);
* n-gram blocking (``-block_ngram_repeat``) keeps its per-path state (``forbidden_tokens``) in step with the
  paths when examples leave the batch. Stock does not re-index it, so surviving paths inherit other paths'
  blocked n-grams and the beam depends on when other sentences stop, which is what a stopping rule changes;
* under a length penalty the beam carries each item's exact cumulative log-probability (below).

Exact log-probabilities. Under ``-length_penalty avg|wu`` OpenNMT-py recovers each item's log-probability as
``score * penalty`` after dividing it by the penalty, which can drift by a few ulps. Certified rules need the
true, monotone sum, so when one is present the beam carries the exact sum instead (items that OpenNMT-py
penalised on purpose, blocked n-grams or a forced prefix, keep the penalised value). Under
``-length_penalty none`` (the paper's setting) both are the same number.
"""
from __future__ import annotations

from onmt.translate.beam_search import BeamSearch

from onmt_optimal.adapter import contract
from onmt_optimal.adapter.beam_search import LineageBeamSearch
from onmt_optimal.search.top_k import TopK, pick, top_k
from onmt_optimal.search.transfer import AUTO


class CertifiedBeamSearch(LineageBeamSearch, BeamSearch):
    """``onmt.translate.BeamSearch`` with the rules ``rules=[(scoring, stopping), ...]`` (the first answers to
    OpenNMT-py). After decoding, ``search_stats[b]`` holds the first rule's ``search.record.Record`` for example
    ``b`` and ``rule_results[b][r]`` rule ``r``'s, with its 1-best ``tokens``."""

    CONTRACT = contract.OPENNMT_PY_CONTRACT

    def __init__(self, *args, rules: list, top_k: TopK = top_k, host: str | None = AUTO, **kwargs):
        super().__init__(*args, **kwargs)
        self._init_search(rules, self.eos, top_k, host)

    def initialize(self, enc_out, src_len, src_map=None, device=None, target_prefix=None):
        out = super().initialize(enc_out, src_len, src_map, device, target_prefix)
        self._start_search(src_len)
        return out

    # ------------------------------------------------------------------ one step (the rest: LineageBeamSearch.advance)
    def _expand(self, log_probs, attn):
        """OpenNMT-py's step (``BeamSearchBase.advance`` of 3.5.1, statement for statement) but for three things:
        the core picks the beam (an exact top-k), nothing is read on the host (stock's ``is_finished_list``),
        and a product with a length penalty of 1 is skipped. What follows the choice is both toolkits'
        (``_follow_picks``).

        Returns ``(cumulative, length_penalty, ends)``: every candidate's sum (B * beam, V), the step's length
        penalty and the chosen items whose token is the end token (B, beam)."""
        _B = log_probs.shape[0] // self.beam_size
        if self._stepwise_cov_pen and self._prev_penalty is not None:
            self.topk_log_probs += self._prev_penalty
            self.topk_log_probs -= self.global_scorer.cov_penalty(
                self._coverage + attn, self.global_scorer.beta
            ).view(_B, self.beam_size)
        t = len(self)
        self.ensure_min_length(log_probs)
        self.ensure_unk_removed(log_probs)
        log_probs += self.topk_log_probs.view(-1, 1)
        # the score if the sequence ends now: its length counts the EOS
        length_penalty = self.global_scorer.length_penalty(t + 1, alpha=self.global_scorer.alpha)
        curr_scores = log_probs / length_penalty if length_penalty != 1 else log_probs
        self.block_ngram_repeats(curr_scores)
        curr_scores = self.target_prefixing(curr_scores)
        self.topk_scores, self.topk_ids, self._batch_index = pick(curr_scores, self.beam_size, self._top_k,
                                                                        self.picks)
        return log_probs, length_penalty, self.topk_ids.eq(self.eos)  # log_probs now holds the sums
