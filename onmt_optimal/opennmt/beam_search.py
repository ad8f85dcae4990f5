"""OpenNMT-py's ``BeamSearch`` driven by the search core (``onmt_optimal.search.beam.Beam``).

OpenNMT-py keeps what belongs to its options: the candidate scores (minimum length, banned ``<unk>``, length
penalty, n-gram blocking, forced target prefix, coverage penalty), the tokens and attention of every item
(``alive_seq``, ``alive_attn``) and the decode loop (``Translator._translate_batch_with_strategy``), which
calls ``advance`` every step and ``update_finished`` when ``is_finished_list`` says so. The core picks the
beam, collects the completed hypotheses for every rule and decides who stops.

What changes against stock's ``BeamSearch`` (which runs without the new flags):

* the step reads one ``(B,)`` mask on the host (which examples are done), where stock reads every item's EOS
  flag and then runs ``update_finished`` whenever any item completed; here it runs only when an example is
  done, and hands its answers over from one transfer;
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

import torch
from onmt.translate.beam_search import BeamSearch

from onmt_optimal.search.beam import Beam
from onmt_optimal.search.top_k import TopK, top_k

#: OpenNMT-py's mask for completed items (beam_search.py); their children never outrank a real item
FINISHED_MASK = -65504.0


class CertifiedBeamSearch(BeamSearch):
    """``onmt.translate.BeamSearch`` with the rules ``rules=[(scoring, stopping), ...]`` (the first answers to
    OpenNMT-py). After decoding, ``search_stats[b]`` holds the first rule's statistics for example ``b``
    (``steps``, ``stop_reason``, ``score``, ``log_prob``, ``length``, ``target_length``, ``src_length``,
    ``completed``) and ``rule_results[b][r]`` the same for rule ``r`` plus its 1-best ``tokens``."""

    def __init__(self, *args, rules: list, top_k: TopK = top_k, **kwargs):
        super().__init__(*args, **kwargs)
        self.core = Beam(rules, self.beam_size, self.n_best, self.eos, self.pad, top_k)
        self._exact_log_prob = any(stop.certified for _, stop in rules)
        self.search_stats = [None] * self.batch_size
        self.rule_results = [None] * self.batch_size

    def initialize(self, enc_out, src_len, src_map=None, device=None, target_prefix=None):
        out = super().initialize(enc_out, src_len, src_map, device, target_prefix)
        dev = self.topk_log_probs.device
        self.core.start(src_len.to(device=dev), self.max_length, self.topk_log_probs.dtype)
        return out

    # ------------------------------------------------------------------ one step
    def advance(self, log_probs, attn):
        B = log_probs.shape[0] // self.beam_size
        sums = self._expand(log_probs, attn)
        t = len(self) - 1  # tokens generated, this step's included
        log_prob = self._exact_log_prob_of(sums, t)
        eos = self.topk_ids.eq(self.eos)
        seq = self.alive_seq.view(B, self.beam_size, t + 1)[:, :, 1:]
        items_attn = None
        if self.alive_attn is not None and self.return_attention:
            items_attn = self.alive_attn.view(B, self.beam_size, t, self.alive_attn.shape[-1])
        done = self.core.step(t, self.select_indices, eos, log_prob, self.topk_scores, seq, items_attn)
        # completed items never grow again (stock does this in update_finished); nor, in a shrinking beam, do
        # the items that fell outside it
        finished = ~self.core.live.view(B, self.beam_size) if self.core.shrinks else eos
        self.topk_log_probs.masked_fill_(finished, FINISHED_MASK)
        self._done_mask = done
        self._done = done.tolist()  # the one read on the host per step
        # the decode loop calls update_finished() only when this says an example is done
        self.is_finished_list = [[any(self._done)]]

    def _expand(self, log_probs, attn):
        """OpenNMT-py's step (``BeamSearchBase.advance`` of 3.5.1, statement for statement) but for three things:
        the core picks the beam (an exact top-k), nothing is read on the host (stock's ``is_finished_list``),
        and a product with a length penalty of 1 is skipped.

        Returns the chosen items' sums ``log p`` (B, beam) under a length penalty (``topk_log_probs`` is then
        stock's ``score * penalty``), else None (``topk_log_probs`` is the sum)."""
        vocab_size = log_probs.size(-1)
        _B = log_probs.shape[0] // self.beam_size
        if self._stepwise_cov_pen and self._prev_penalty is not None:
            self.topk_log_probs += self._prev_penalty
            self.topk_log_probs -= self.global_scorer.cov_penalty(
                self._coverage + attn, self.global_scorer.beta
            ).view(_B, self.beam_size)
        step = len(self)
        self.ensure_min_length(log_probs)
        self.ensure_unk_removed(log_probs)
        log_probs += self.topk_log_probs.view(-1, 1)
        # the score if the sequence ends now: its length counts the EOS
        length_penalty = self.global_scorer.length_penalty(step + 1, alpha=self.global_scorer.alpha)
        curr_scores = log_probs / length_penalty if length_penalty != 1 else log_probs
        self.block_ngram_repeats(curr_scores)
        curr_scores = self.target_prefixing(curr_scores)
        self.topk_scores, self.topk_ids, self._batch_index = self.core.pick(curr_scores)
        if length_penalty == 1 and not self._vanilla_cov_pen:
            self.topk_log_probs = self.topk_scores  # stock multiplies by 1.0: the same numbers, one op less
        else:
            self.topk_log_probs = self.topk_scores * length_penalty
        self.select_indices = self._batch_index.view(_B * self.beam_size)
        self.alive_seq = torch.cat(
            [self.alive_seq.index_select(0, self.select_indices), self.topk_ids.view(_B * self.beam_size, 1)], -1
        )
        self.maybe_update_forbidden_tokens()
        if self.return_attention or self._cov_pen:
            current_attn = attn.index_select(0, self.select_indices)
            if step == 1:
                self.alive_attn = current_attn
                if self._cov_pen:
                    self._prev_penalty = torch.zeros_like(self.topk_log_probs)
                    self._coverage = current_attn
            else:
                self.alive_attn = torch.cat([self.alive_attn.index_select(0, self.select_indices), current_attn], 1)
                if self._cov_pen:
                    self._coverage = self._coverage.index_select(0, self.select_indices)
                    self._coverage += current_attn
                    self._prev_penalty = self.global_scorer.cov_penalty(
                        self._coverage, beta=self.global_scorer.beta
                    ).view(_B, self.beam_size)
        if self._vanilla_cov_pen:
            cov_penalty = self.global_scorer.cov_penalty(self._coverage, beta=self.global_scorer.beta)
            self.topk_scores -= cov_penalty.view(_B, self.beam_size).float()
        if not self.global_scorer.has_len_pen:
            return None
        flat_ids = self.select_indices * vocab_size + self.topk_ids.view(-1)  # log_probs now holds the sums
        return log_probs.view(-1).gather(0, flat_ids).view(_B, self.beam_size)

    def _exact_log_prob_of(self, sums, t):
        """The exact cumulative log p of each chosen item, (B, beam). Under a length penalty ``sums`` holds the
        sums (see ``_expand``); stock's ``topk_log_probs`` (score * penalty) may be a few ulps off them."""
        if sums is None:
            return self.topk_log_probs  # score * 1.0: already exact (masked only at the end of this step)
        log_prob = sums
        if self._exact_log_prob:
            penalty = self.global_scorer.length_penalty(t + 1, alpha=self.global_scorer.alpha)
            untouched = self.topk_scores == log_prob / penalty
            log_prob = torch.where(untouched, log_prob, self.topk_log_probs)
            self.topk_log_probs = log_prob.clone()
        return log_prob

    # ------------------------------------------------------------------ examples leave the batch
    def update_finished(self):
        done, beam = self._done, self.beam_size
        B_old = len(done)
        step = self.alive_seq.shape[-1]
        leaving = [i for i, d in enumerate(done) if d]
        staying = [i for i, d in enumerate(done) if not d]
        # the rows that stay, then those that leave, each in batch order, as device indices made on the device:
        # a host-made index would be copied to the device, which waits for the device (a synchronization)
        order = torch.sort(self._done_mask.to(torch.int8), stable=True).indices
        predictions = self.alive_seq.view(B_old, beam, step)
        answers = self.core.answers(leaving, predictions[:, 0, 1:], order[len(staying):] if staying else None)
        self._hand_over(leaving, answers)
        if not staying:
            self.done = True
            return
        rows = order[: len(staying)]
        self._keep(staying, rows, B_old, predictions, step)
        self.core.keep(rows)
        if self.block_ngram_repeat > 0:  # the blocking state follows its paths (stock leaves it behind)
            self.forbidden_tokens = [self.forbidden_tokens[i * beam + j] for i in staying for j in range(beam)]
        self.select_indices = self._batch_index.view(len(staying) * beam)
        self.src_len = self.src_len[self.select_indices]
        self.maybe_update_target_prefix(self.select_indices)

    def _keep(self, staying, rows, B_old, predictions, step):
        """Stock's ``remove_finished_batches`` with the rows that stay as a host list (for the host-side
        ``_batch_offset``) and as a device tensor (for everything else)."""
        beam = self.beam_size
        self._batch_offset = self._batch_offset[staying]
        self.topk_log_probs = self.topk_log_probs[rows]
        self._batch_index = self._batch_index[rows]
        self.alive_seq = predictions[rows].view(-1, self.alive_seq.size(-1))
        if self.alive_attn is not None:
            S = self.alive_attn.size(-1)
            self.alive_attn = self.alive_attn.view(B_old, beam, step - 1, S)[rows].view(-1, step - 1, S)
            if self._cov_pen:
                self._coverage = self._coverage.view(B_old, beam, 1, S)[rows].view(-1, 1, S)
                if self._stepwise_cov_pen:
                    self._prev_penalty = self._prev_penalty[rows]

    def _hand_over(self, leaving, answers):
        """Give OpenNMT-py the answers of the examples at batch rows ``leaving``."""
        kept_attn = self.core.kept.attn
        batch_of = self._batch_offset.tolist()  # a host tensor in OpenNMT-py
        for row, per_rule in zip(leaving, answers):
            b = batch_of[row]
            first = per_rule[0]
            for k, (score, tokens) in enumerate(first["hypotheses"]):
                self.scores[b].append(score)
                self.predictions[b].append(torch.tensor(tokens, dtype=torch.long))
                if kept_attn is None:
                    self.attention[b].append([])
                else:
                    k = min(k, first["kept"] - 1) if first["kept"] else 0
                    self.attention[b].append(kept_attn[row, 0, k, : len(tokens), : first["src_length"]])
            self.search_stats[b] = {key: first[key] for key in STATS}
            self.rule_results[b] = [{key: result[key] for key in (*STATS, "tokens")} for result in per_rule]


#: the per-sentence statistics (``-stats_file``), in this order
STATS = ("steps", "stop_reason", "score", "log_prob", "length", "target_length", "src_length", "completed")
