"""The toolkit's half of a certified step: a ``BeamSearch`` of OpenNMT's lineage that hands its chosen items to a
``certifier.Certifier`` and applies what it says.

OpenNMT-py 3.5.1 (``onmt/translate/beam_search.py``) and eole 0.6.4 (``eole/predict/beam_search.py``) keep the same
beam state and the same decode-loop protocol: ``initialize``; per step ``advance(log_probs, attn)``, then
``update_finished()`` when ``is_finished_list`` says an item finished, after which the loop reorders the model
state by ``select_indices`` and stops on ``done``. ``LineageBeamSearch`` is that protocol for both; a toolkit's
class mixes it in before its own ``BeamSearch``, names its ``contract.Contract`` (``CONTRACT``) and supplies its
step, statement for statement: the hooks ``_expand`` and ``_eos_mask`` (abstract here), optionally
``_answered`` and ``_fix_answer`` (``contract.Step`` declares all four).

One step, in order: ``advance`` runs ``_expand``, gathers the chosen items into a ``certifier.StepIn``, and
applies the ``certifier.Verdict`` (completed items masked, the one host read: ``is_finished_list``);
``update_finished`` asks the certifier for a ``certifier.Departure`` and applies it: the answers handed over
(``_hand_over``), the rows that stay kept (``_keep``). The toolkit's state this class reads and writes is
``contract.Beam`` and ``contract.StartedBeam``, checked when the search is built (``_init_certifier``) and when
``initialize`` has run (``_start_certifier``). After decoding, ``rule_results[b][r]`` holds rule ``r``'s
``search.record.Record`` for example ``b`` (with its 1-best ``tokens``) and ``search_stats[b]`` the first
rule's.
"""
from __future__ import annotations

from abc import ABCMeta, abstractmethod

import torch

from onmt_optimal.adapter import contract
from onmt_optimal.adapter.certifier import Certifier, StepIn
from onmt_optimal.search.record import Record
from onmt_optimal.search.top_k import TopK

#: the toolkits' mask for completed items (beam_search.py); their children never outrank a real item
FINISHED_MASK = -65504.0


class LineageBeamSearch(metaclass=ABCMeta):
    """Mixin for a ``BeamSearch`` of OpenNMT's lineage; see the module docstring."""

    #: the toolkit's contract (``contract.OPENNMT_PY_CONTRACT``, ``contract.EOLE_CONTRACT``)
    CONTRACT: contract.Contract

    def _init_certifier(self, rules: list, eos: int, top_k: TopK, host: torch.device | str | None) -> None:
        """Once the toolkit's constructor has run: check its members (``contract``), make the certifier.
        ``host``: where the bookkeeping lives (``options.Options.host``, ``search.transfer``)."""
        contract.check(self, self.CONTRACT.beam, self.CONTRACT.toolkit)
        self.certifier = Certifier(rules, self.beam_size, self.n_best, eos, self.pad, top_k, host,
                                   keeps_attention=self.return_attention)
        self.search_stats = [None] * self.batch_size
        self.rule_results = [None] * self.batch_size

    def _start_certifier(self, src_len: torch.Tensor) -> None:
        """Once the toolkit's ``initialize`` has made ``topk_log_probs``: ``src_len`` (B,) is each example's |x|."""
        contract.check(self, self.CONTRACT.started_beam, self.CONTRACT.toolkit)
        self.certifier.start(src_len, self.max_length, self.topk_log_probs, self.alive_seq)

    # ------------------------------------------------------------------ one step
    @abstractmethod
    def _expand(self, log_probs: torch.Tensor, attn: torch.Tensor | None) -> torch.Tensor | None:
        """The toolkit's step up to the beam's choice, then ``_follow_picks`` (``contract.Step._expand``)."""

    @abstractmethod
    def _eos_mask(self) -> torch.Tensor:
        """(B, beam) bool: the chosen items whose token ends a hypothesis."""

    def advance(self, log_probs, attn):
        sums = self._expand(log_probs, attn)
        t = len(self) - 1  # tokens generated, this step's included
        log_prob = self._exact_log_prob_of(sums, t)
        chosen = StepIn(t=t, parents=self._batch_index, tokens=self.topk_ids, ends=self._eos_mask(),
                        log_prob=log_prob, score=self.topk_scores, items=self.alive_seq,
                        attn=self.alive_attn if self.return_attention else None)
        verdict = self.certifier.judge(chosen)
        self.topk_log_probs.masked_fill_(verdict.finished, FINISHED_MASK)
        self._verdict = verdict
        # the decode loop calls update_finished() only when this says an example is done
        self.is_finished_list = [[verdict.any_done]]

    def _follow_picks(self, cumulative, attn, step: int, length_penalty):
        """The end of both toolkits' step, the same statements in OpenNMT-py 3.5.1 and eole 0.6.4 (but for the
        product with a length penalty of 1, skipped): once ``certifier.pick`` has chosen the items, their scores,
        tokens, blocked n-grams, attention and coverage follow them. ``cumulative`` (B * beam, V): every
        candidate's sum of log-probabilities. Returns the chosen items' sums (B, beam) under a length penalty,
        else None."""
        B = cumulative.shape[0] // self.beam_size
        if length_penalty == 1 and not self._vanilla_cov_pen:
            self.topk_log_probs = self.topk_scores  # stock multiplies by 1.0: the same numbers, one op less
        else:
            self.topk_log_probs = self.topk_scores * length_penalty
        self.select_indices = self._batch_index.view(B * self.beam_size)
        self.alive_seq = torch.cat(
            [self.alive_seq[self.select_indices], self.topk_ids.view(B * self.beam_size, 1)], -1
        )
        self.maybe_update_forbidden_tokens()
        if self.return_attention or self._cov_pen:
            current_attn = attn[self.select_indices]
            if step == 1:
                self.alive_attn = current_attn
                if self._cov_pen:
                    self._prev_penalty = torch.zeros_like(self.topk_log_probs)
                    self._coverage = current_attn
            else:
                self.alive_attn = torch.cat([self.alive_attn[self.select_indices], current_attn], 1)
                if self._cov_pen:
                    self._coverage = self._coverage[self.select_indices]
                    self._coverage += current_attn
                    self._prev_penalty = self.global_scorer.cov_penalty(
                        self._coverage, beta=self.global_scorer.beta
                    ).view(B, self.beam_size)
        if self._vanilla_cov_pen:
            cov_penalty = self.global_scorer.cov_penalty(self._coverage, beta=self.global_scorer.beta)
            self.topk_scores -= cov_penalty.view(B, self.beam_size).float()
        if not self.global_scorer.has_len_pen:
            return None
        flat_ids = self.select_indices * cumulative.shape[1] + self.topk_ids.view(-1)
        return cumulative.view(-1).gather(0, flat_ids).view(B, self.beam_size)

    def _exact_log_prob_of(self, sums, t):
        """The exact cumulative log p of each chosen item, (B, beam). Under a length penalty ``sums`` holds the
        sums (see ``_expand``); stock's ``topk_log_probs`` (score * penalty) may be a few ulps off them."""
        if sums is None:
            return self.topk_log_probs  # score * 1.0: already exact (masked only at the end of this step)
        log_prob = sums
        if self.certifier.exact_log_prob:
            penalty = self.global_scorer.length_penalty(t + 1, alpha=self.global_scorer.alpha)
            untouched = self.topk_scores == log_prob / penalty
            log_prob = torch.where(untouched, log_prob, self.topk_log_probs)
            self.topk_log_probs = log_prob.clone()
        return log_prob

    # ------------------------------------------------------------------ examples leave the batch
    def update_finished(self):
        B_old, beam = len(self._verdict.done), self.beam_size
        step = self.alive_seq.shape[-1]
        predictions = self.alive_seq.view(B_old, beam, step)
        departure = self.certifier.depart(self._verdict, predictions)
        self._hand_over(departure.leaving, departure.answers)
        staying = departure.staying
        if not staying:
            self.done = True
            return
        self._keep(staying, departure.rows, B_old, predictions, step)
        self.certifier.keep(departure)
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
        """Give the toolkit the answers of the examples at batch rows ``leaving``."""
        kept_attn = self.certifier.kept_attn
        batch_of = self._batch_offset.tolist()  # a host tensor in both toolkits
        for row, per_rule in zip(leaving, answers):
            b = batch_of[row]
            per_rule = [self._fix_answer(result) for result in per_rule]
            first = per_rule[0]
            for k, (score, tokens) in enumerate(first.hypotheses):
                self.scores[b].append(score)
                self.predictions[b].append(torch.tensor(tokens, dtype=torch.long))
                if kept_attn is None:
                    self.attention[b].append([])
                else:
                    k = min(k, first.kept - 1) if first.kept else 0
                    self.attention[b].append(kept_attn[row, k, : len(tokens), : first.src_length])
                self._answered(b, tokens)
            self.rule_results[b] = [result.handed_over() for result in per_rule]
            self.search_stats[b] = self.rule_results[b][0]

    def _answered(self, b: int, tokens: list) -> None:
        """Hook: one n-best answer of example ``b`` was handed over."""

    def _fix_answer(self, result: Record) -> Record:
        """Hook: adjust one rule's answer before it is handed over (e.g. for other end tokens)."""
        return result
