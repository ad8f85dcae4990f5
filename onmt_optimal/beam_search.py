"""Beam search bookkeeping: OpenNMT-py's beam, a scoring rule and a stopping rule, per example, in tensors.

``CertifiedBeamSearch`` keeps OpenNMT-py's beam exactly as it is (``BeamSearch.advance`` picks the top
``beam_size`` expansions; completed items are masked out and their slots refill from live items, so the
beam never shrinks) and replaces what happens around it:

1. every step (not only when some item emits EOS) the items that completed are scored by the scoring rule
   and merged into a per-example top-``n_best`` list of completed hypotheses (a stable sort, so among equal
   scores the earlier hypothesis stays first);
2. the stopping rule decides which examples are done, from the ``n_best``-th completed score and the best
   admissible bound over live items;
3. done examples leave the batch at once, with their answer and their search statistics.

Everything is batched tensor code; the only host synchronisations per step are OpenNMT-py's own in
``advance`` and one boolean telling the decode loop whether an example is done.

Exact log-probabilities. Under ``-length_penalty avg|wu`` OpenNMT-py recovers each item's log-probability as
``score * penalty`` after dividing it by the penalty, which can drift by a few ulps. Certified rules need the
true, monotone sum, so for them the beam carries the exact cumulative log-probability instead (items that
OpenNMT-py penalised on purpose, blocked n-grams or a forced prefix, keep the penalised value). Under
``-length_penalty none`` (the paper's setting) both are the same number.
"""
from __future__ import annotations

import torch
from onmt.translate.beam_search import BeamSearch

from onmt_optimal.scoring import ScoringRule, StepView
from onmt_optimal.stopping import StoppingRule, StopView

NEG_INF = float("-inf")
#: OpenNMT-py's mask for completed items (beam_search.py); their children never outrank a live item
FINISHED_MASK = -65504.0


class CertifiedBeamSearch(BeamSearch):
    """``onmt.translate.BeamSearch`` with a pluggable scoring rule and stopping rule.

    Extra attributes after decoding: ``search_stats[b]`` for every example ``b`` of the batch, a dict with
    ``steps``, ``stop_reason``, ``score``, ``log_prob``, ``length``, ``target_length``, ``src_length``,
    ``completed``.
    """

    def __init__(self, *args, scoring: ScoringRule, stopping: StoppingRule, **kwargs):
        super().__init__(*args, **kwargs)
        self.scoring = scoring
        self.stopping = stopping
        self.search_stats = [None] * self.batch_size

    # ------------------------------------------------------------------ set-up
    def initialize(self, enc_out, src_len, src_map=None, device=None, target_prefix=None):
        out = super().initialize(enc_out, src_len, src_map, device, target_prefix)
        B, beam, K = self.batch_size, self.beam_size, self.n_best
        dev = self.topk_log_probs.device
        fdt = self.topk_log_probs.dtype
        self._src_len = src_len.to(device=dev, dtype=torch.float)  # (B,) |x|, per example
        # live[r] is True while beam row r holds a real prefix: not completed, not a child of a completed
        # item (those only refill slots once every real prefix is gone) and not of -inf score
        self._live = torch.ones(B * beam, dtype=torch.bool, device=dev)
        T = self.max_length
        self._kept_score = torch.full((B, K), NEG_INF, dtype=fdt, device=dev)
        self._kept_log_prob = torch.full((B, K), NEG_INF, dtype=fdt, device=dev)
        self._kept_len = torch.zeros((B, K), dtype=torch.long, device=dev)  # |y|
        self._kept_steps = torch.zeros((B, K), dtype=torch.long, device=dev)  # tokens incl. EOS
        self._kept_seq = torch.full((B, K, T), self.pad, dtype=torch.long, device=dev)
        self._kept_attn = None  # (B, K, T, S) once attention is tracked
        self._n_completed = torch.zeros(B, dtype=torch.long, device=dev)
        self._width = torch.full((B,), beam, dtype=torch.long, device=dev)  # shrinks under Shrinking only
        return out

    # ------------------------------------------------------------------ one step
    def advance(self, log_probs, attn):
        B = log_probs.shape[0] // self.beam_size
        vocab_size = log_probs.size(-1)
        parent_live = self._live
        super().advance(log_probs, attn)  # stock: top-k, back-pointers, alive_seq/attn, max-length flags
        beam = self.beam_size
        t = len(self) - 1  # tokens generated, this step's included
        T = self.max_length
        at_max = t >= T

        # exact cumulative log p of each chosen item: stock added the previous scores into log_probs in place
        flat_ids = self.select_indices * vocab_size + self.topk_ids.view(-1)
        log_prob = log_probs.view(-1).gather(0, flat_ids).view(B, beam)
        if self.global_scorer.has_len_pen and self.stopping.certified:
            penalty = self.global_scorer.length_penalty(t + 1, alpha=self.global_scorer.alpha)
            untouched = self.topk_scores == log_prob / penalty
            log_prob = torch.where(untouched, log_prob, self.topk_log_probs)
            self.topk_log_probs = log_prob.clone()
        elif not self.global_scorer.has_len_pen:
            log_prob = self.topk_log_probs

        eos = self.topk_ids.eq(self.eos)
        real = parent_live[self.select_indices].view(B, beam) & torch.isfinite(log_prob)
        if self.stopping.shrinks:  # only the example's current width of top items is its beam
            real &= torch.arange(beam, device=real.device).unsqueeze(0) < self._width.unsqueeze(1)
        ended = eos | at_max  # at max_length every item is finished by force, as in stock
        completed = real & ended
        live = real & ~ended

        view = StepView(
            log_prob=log_prob,
            stock_score=self.topk_scores,
            out_len=t - eos.long(),
            src_len=self._src_len,
            step=t,
            max_length=T,
        )
        self._collect(completed, self.scoring.final(view), log_prob, view.out_len, t)
        if self.stopping.shrinks:
            self._width = self._width - completed.sum(dim=1)

        bound = torch.where(live, self.scoring.bound(view), NEG_INF).max(dim=1).values
        done = self.stopping.done(
            StopView(
                top_finished=completed[:, 0],
                n_completed=self._n_completed,
                kth_score=self._kept_score[:, -1],
                best_bound=bound,
                width=self._width,
                n_best=self.n_best,
            )
        )
        if at_max:
            done = torch.ones_like(done)
        self._done = done
        self._no_live = ~live.any(dim=1)

        # completed items never grow again (stock does this in update_finished); nor, in a shrinking beam,
        # do the items that fell outside it
        self.topk_log_probs.masked_fill_(~live if self.stopping.shrinks else eos, FINISHED_MASK)
        self._live = live.view(-1)
        # the decode loop calls update_finished() only when this says something ended
        self.is_finished_list = [[bool(done.any())]]

    def _collect(self, completed, score, log_prob, out_len, t):
        """Merge this step's completed items into the per-example top-``n_best`` list (stable: ties keep the
        earlier hypothesis, then the higher-ranked beam item)."""
        B, beam, K = completed.shape[0], self.beam_size, self.n_best
        score = torch.where(completed, score, NEG_INF)
        all_score = torch.cat([self._kept_score, score], dim=1)
        order = torch.sort(all_score, dim=1, descending=True, stable=True).indices[:, :K]
        self._kept_score = all_score.gather(1, order)
        self._kept_log_prob = torch.cat([self._kept_log_prob, log_prob], 1).gather(1, order)
        self._kept_len = torch.cat([self._kept_len, out_len], 1).gather(1, order)
        steps = torch.full_like(out_len, t)
        self._kept_steps = torch.cat([self._kept_steps, steps], 1).gather(1, order)
        self._n_completed = self._n_completed + completed.sum(dim=1)

        T = self._kept_seq.shape[2]
        seq = self.alive_seq.view(B, beam, -1)[:, :, 1:]  # drop BOS: t tokens
        seq = torch.nn.functional.pad(seq, (0, T - t), value=self.pad)
        all_seq = torch.cat([self._kept_seq, seq], dim=1)
        self._kept_seq = all_seq.gather(1, order.unsqueeze(2).expand(B, K, T))

        if self.alive_attn is not None:
            S = self.alive_attn.size(-1)
            attn = self.alive_attn.view(B, beam, t, S)
            attn = torch.nn.functional.pad(attn, (0, 0, 0, T - t))
            if self._kept_attn is None or self._kept_attn.size(-1) != S:
                self._kept_attn = attn.new_zeros((B, K, T, S))
            all_attn = torch.cat([self._kept_attn, attn], dim=1)
            self._kept_attn = all_attn.gather(1, order.view(B, K, 1, 1).expand(B, K, T, S))

    # ------------------------------------------------------------------ examples leave the batch
    def update_finished(self):
        done = self._done
        B_old = done.shape[0]
        step = self.alive_seq.shape[-1]
        finished = done.nonzero().view(-1).tolist()
        self._emit(finished)

        non_finished = (~done).nonzero().view(-1)
        if non_finished.numel() == 0:
            self.done = True
            return
        B_new = non_finished.shape[0]
        predictions = self.alive_seq.view(B_old, self.beam_size, step)
        attention = (
            self.alive_attn.view(B_old, self.beam_size, step - 1, self.alive_attn.size(-1))
            if self.alive_attn is not None
            else None
        )
        self.remove_finished_batches(B_new, B_old, non_finished.cpu(), predictions, attention, step)
        for name in (
            "_src_len",
            "_kept_score",
            "_kept_log_prob",
            "_kept_len",
            "_kept_steps",
            "_kept_seq",
            "_kept_attn",
            "_n_completed",
            "_width",
        ):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, value[non_finished])
        self._live = self._live.view(B_old, self.beam_size)[non_finished].view(-1)
        self.select_indices = self._batch_index.view(B_new * self.beam_size)
        self.src_len = self.src_len[self.select_indices]
        self.maybe_update_target_prefix(self.select_indices)

    def _emit(self, rows):
        """Hand the answer and the statistics of the examples at batch rows ``rows`` to OpenNMT-py."""
        if not rows:
            return
        idx = torch.tensor(rows, device=self._kept_score.device)
        scores = self._kept_score[idx].tolist()
        log_probs = self._kept_log_prob[idx].tolist()
        lengths = self._kept_len[idx].tolist()
        steps_of = self._kept_steps[idx].tolist()
        n_completed = self._n_completed[idx].tolist()
        src_len = self._src_len[idx]
        target = self.scoring.target_length(src_len)
        target = target.tolist() if target is not None else [None] * len(rows)
        src_len = src_len.long().tolist()
        no_live = self._no_live[idx].tolist()
        at_max = len(self) - 1 >= self.max_length
        steps = len(self) - 1
        for j, row in enumerate(rows):
            b = int(self._batch_offset[row])
            if at_max:
                why = "max_length"
            elif no_live[j]:
                why = "all_finished"
            elif self.stopping.certified and not self.scoring.bound_is_proof:
                why = "predicted_bound"  # a heuristic stop: the bound assumed no output longer than l
            else:
                why = self.stopping.reason
            kept = [k for k in range(self.n_best) if scores[j][k] != NEG_INF]
            if not kept:  # nothing ever completed (every item had -inf score): report the top item
                kept = [0]
                steps_of[j][0] = steps
                self._kept_seq[row, 0, :steps] = self.alive_seq.view(-1, self.beam_size, steps + 1)[row, 0, 1:]
            # OpenNMT-py expects exactly n_best answers; fewer exist only when the beam ran dry first
            kept += [kept[-1]] * (self.n_best - len(kept))
            for k in kept:
                n = steps_of[j][k]
                self.scores[b].append(scores[j][k])
                self.predictions[b].append(self._kept_seq[row, k, :n])
                if self._kept_attn is not None:
                    self.attention[b].append(self._kept_attn[row, k, :n, : src_len[j]])
                else:
                    self.attention[b].append([])
            best = kept[0]
            self.search_stats[b] = {
                "steps": steps,
                "stop_reason": why,
                "score": scores[j][best],
                "log_prob": log_probs[j][best],
                "length": lengths[j][best],
                "target_length": target[j],
                "src_length": src_len[j],
                "completed": n_completed[j],
            }
