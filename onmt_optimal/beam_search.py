"""Beam search bookkeeping: OpenNMT-py's beam, scoring rules and stopping rules, per example, in tensors.

``CertifiedBeamSearch`` keeps OpenNMT-py's beam exactly as it is (``BeamSearch.advance`` picks the top
``beam_size`` expansions; completed items are masked out and their slots refill from live items, so the
beam never shrinks) and replaces what happens around it:

1. every step (not only when some item emits EOS) the items that completed are scored by each scoring rule
   and merged into that rule's per-example top-``n_best`` list of completed hypotheses (a stable sort, so
   among equal scores the earlier hypothesis stays first, then the higher-ranked beam item);
2. each stopping rule decides which examples it is done with, from its ``n_best``-th completed score and the
   best bound its scoring rule gives any live item; a rule's list is frozen once it is done;
3. an example leaves the batch as soon as every rule is done with it, with its answers and statistics.

One rule is the ordinary case (``onmt_translate``). Several rules share one beam when none of them changes
the beam, which is every rule but the shrinking beam: the beam's contents do not depend on where a rule
stops or what it returns. Decoding once then answers for all of them, exactly as separate runs would (this
is what the r x b sweep uses). A shrinking beam is a beam of its own, but one shared by every shrinking
rule: it shrinks by one slot per completed hypothesis whatever the score.

Everything is batched tensor code with no per-item Python loop. Per step the host reads one flag (is an
example done?), where stock OpenNMT-py reads every item's EOS flag; on CPU, where reads are free, two more
flags let idle steps skip the merge, and the steps before anything completes cost one masked minimum
(``_quiet_step``). The step itself is OpenNMT-py's (``_expand``), with an exact two-pass top-k (``top_k``)
in place of the partial sort, the one part of the step that costs more than the rest of the search
together. A beam of one item (``-beam_size 1``, which stock also runs as a ``BeamSearch``) takes a
shorter path to the same numbers: no back-pointers, no reordering, no live mask, and its answer is simply the
item that completes (``_expand_one``, ``_collect_one``).

Exact log-probabilities. Under ``-length_penalty avg|wu`` OpenNMT-py recovers each item's log-probability as
``score * penalty`` after dividing it by the penalty, which can drift by a few ulps. Certified rules need the
true, monotone sum, so when one is present the beam carries the exact cumulative log-probability instead
(items that OpenNMT-py penalised on purpose, blocked n-grams or a forced prefix, keep the penalised value).
Under ``-length_penalty none`` (the paper's setting) both are the same number.
"""
from __future__ import annotations

import torch
from onmt.translate.beam_search import BeamSearch

from onmt_optimal import patch
from onmt_optimal.scoring import ScoringRule, StepView
from onmt_optimal.stopping import StoppingRule, StopView
from onmt_optimal.top_k import top_k

NEG_INF = float("-inf")
#: OpenNMT-py's mask for completed items (beam_search.py); their children never outrank a live item
FINISHED_MASK = -65504.0
#: why a rule stopped with an example (codes of ``_stop_code``)
_MAX_LENGTH, _ALL_FINISHED, _PREDICTED, _RULE = 1, 2, 3, 4



class CertifiedBeamSearch(BeamSearch):
    """``onmt.translate.BeamSearch`` with pluggable scoring and stopping rules.

    Pass ``scoring=`` and ``stopping=`` for one rule, or ``rules=[(scoring, stopping), ...]`` for several
    rules sharing the beam (the first one answers to OpenNMT-py; all shrinking or none). After decoding, ``search_stats[b]`` holds the
    first rule's statistics for example ``b`` (``steps``, ``stop_reason``, ``score``, ``log_prob``, ``length``,
    ``target_length``, ``src_length``, ``completed``) and ``rule_results[b][r]`` holds the same for rule ``r``
    plus its 1-best ``tokens`` (target ids, EOS excluded).
    """

    def __init__(self, *args, scoring: ScoringRule | None = None, stopping: StoppingRule | None = None,
                 rules: list | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.rules = list(rules) if rules else [(scoring, stopping)]
        if len({stop.shrinks for _, stop in self.rules}) > 1:
            raise ValueError("a shrinking beam is a beam of its own: it can share a decode only with other "
                             "shrinking rules (their beams shrink alike, whatever they score)")
        self.scoring, self.stopping = self.rules[0]
        self._one = self.beam_size == 1 and not self._cov_pen  # a beam of one item: see _advance_one
        self._shrinks = self.stopping.shrinks
        self._exact_log_prob = any(stop.certified for _, stop in self.rules)
        self.search_stats = [None] * self.batch_size
        self.rule_results = [None] * self.batch_size

    # ------------------------------------------------------------------ set-up
    def initialize(self, enc_out, src_len, src_map=None, device=None, target_prefix=None):
        out = super().initialize(enc_out, src_len, src_map, device, target_prefix)
        B, beam, K, R = self.batch_size, self.beam_size, self.n_best, len(self.rules)
        dev = self.topk_log_probs.device
        fdt = self.topk_log_probs.dtype
        T = self.max_length
        self._src_len = src_len.to(device=dev, dtype=torch.float)  # (B,) |x|, per example
        # live[r] is True while beam row r holds a real prefix: not completed, not a child of a completed
        # item (those only refill slots once every real prefix is gone) and not of -inf score
        # OpenNMT-py starts each beam from one item (the others score -inf)
        self._live = torch.arange(B * beam, device=dev) % beam == 0
        self._kept_score = torch.full((B, R, K), NEG_INF, dtype=fdt, device=dev)
        self._kept_log_prob = torch.full((B, R, K), NEG_INF, dtype=fdt, device=dev)
        self._kept_len = torch.zeros((B, R, K), dtype=torch.long, device=dev)  # |y|
        self._kept_steps = torch.zeros((B, R, K), dtype=torch.long, device=dev)  # tokens incl. EOS
        self._kept_seq = torch.full((B, R, K, T), self.pad, dtype=torch.long, device=dev)
        self._kept_attn = None  # (B, R, K, T, S) once attention is tracked
        self._n_completed = torch.zeros(B, dtype=torch.long, device=dev)
        self._width = torch.full((B,), beam, dtype=torch.long, device=dev)  # shrinks under Shrinking only
        self._stop_step = torch.zeros((B, R), dtype=torch.long, device=dev)  # 0 while the rule runs
        self._stop_code = torch.zeros((B, R), dtype=torch.long, device=dev)
        self._stop_completed = torch.zeros((B, R), dtype=torch.long, device=dev)
        self._host_flags = dev.type == "cpu"
        self._offsets = self._beam_offset[:B].unsqueeze(1)  # (B, 1) first beam row of each example
        # every step so far was quiet (see _quiet_step)
        self._pristine = self._host_flags and beam > 1
        self._all_live = torch.ones(B * beam, dtype=torch.bool, device=dev) if self._pristine else None
        self._predicted = torch.tensor(
            [stop.certified and not score.bound_is_proof for score, stop in self.rules], device=dev
        )
        return out

    # ------------------------------------------------------------------ one step
    def advance(self, log_probs, attn):
        if self._one:
            return self._advance_one(log_probs, attn)
        B = log_probs.shape[0] // self.beam_size
        parent_live = self._live
        sums = self._expand(log_probs, attn)  # OpenNMT-py's step: top-k, back-pointers, alive_seq/attn
        beam = self.beam_size
        t = len(self) - 1  # tokens generated, this step's included
        T = self.max_length
        at_max = t >= T
        log_prob = self._exact_log_prob_of(sums, t)
        eos = self.topk_ids.eq(self.eos)
        if self._pristine and not at_max:
            if self._quiet_step(log_prob, eos):
                self._live = self._all_live
                self.is_finished_list = [[False]]
                return
            self._pristine = False  # from here on, every step takes the general path
        # children of live items; one that scores -inf could enter the beam only if fewer than beam
        # candidates were finite, and it would then complete or stay in the beam harmlessly at -inf
        real = parent_live.index_select(0, self.select_indices).view(B, beam)
        if self._shrinks:  # only the example's current width of top items is its beam
            real &= torch.arange(beam, device=real.device).unsqueeze(0) < self._width.unsqueeze(1)
        # at max_length every item is finished by force, as in stock
        completed = real if at_max else real & eos
        live = real ^ completed

        view = StepView(
            log_prob=log_prob,
            out_len=None,  # filled in below, only on steps that complete something (no rule's bound reads it)
            src_len=self._src_len,
            step=t,
            max_length=T,
            stock_score=self.topk_scores,
        )
        # rules not yet done with each example, (B, R); with one rule, every example still in the batch
        running = self._stop_step == 0 if len(self.rules) > 1 else None
        # most steps complete nothing and stop nothing: on CPU, where reading a flag costs no device
        # synchronisation, skip that work; elsewhere do it blindly and read one flag a step, as stock does
        some_completed = not self._host_flags or bool(completed.any())
        if some_completed:
            view.out_len = t - eos.long()
            finals = self._finals(view)
            collect = completed.unsqueeze(1) if running is None else completed.unsqueeze(1) & running.unsqueeze(2)
            self._collect(collect, finals, log_prob, view.out_len, t)
            counts = completed.sum(dim=1)
            self._n_completed = self._n_completed + counts
            if self._shrinks:
                self._width = self._width - counts

        if at_max:
            newly = torch.ones_like(self._stop_step, dtype=torch.bool) if running is None else running
        else:
            done_now = []
            for r, (score, stop) in enumerate(self.rules):
                bound = torch.where(live, score.bound(view), NEG_INF).amax(dim=1) if stop.needs_bound else None
                done_now.append(stop.done(StopView(
                    completed=completed,
                    n_completed=self._n_completed,
                    kept_score=self._kept_score[:, r] if len(self.rules) > 1 else self._kept_score.view(B, -1),
                    best_bound=bound,
                    width=self._width,
                    n_best=self.n_best,
                )))
            newly = done_now[0] if running is None else running & torch.stack(done_now, dim=1)
        any_done = False
        if not self._host_flags or bool(newly.any()):
            newly = newly.view(B, -1)
            if at_max:
                code = torch.full_like(self._stop_code, _MAX_LENGTH)
            else:
                code = torch.where(self._predicted, _PREDICTED, _RULE).unsqueeze(0)
                code = torch.where((~live.any(dim=1)).unsqueeze(1), _ALL_FINISHED, code)
            self._stop_step = torch.where(newly, t, self._stop_step)
            self._stop_code = torch.where(newly, code, self._stop_code)
            self._stop_completed = torch.where(newly, self._n_completed.unsqueeze(1), self._stop_completed)
            self._done = (self._stop_step > 0).all(dim=1)
            any_done = bool(self._done.any())

        # completed items never grow again (stock does this in update_finished); nor, in a shrinking beam, do
        # the items that fell outside it
        self.topk_log_probs.masked_fill_(~live if self._shrinks else eos, FINISHED_MASK)
        self._live = live.view(-1)
        # the decode loop calls update_finished() only when this says an example is done
        self.is_finished_list = [[any_done]]

    def _advance_one(self, log_probs, attn):
        """``advance`` for a beam of one item (``-beam_size 1``; stock runs it as a ``BeamSearch`` too).

        An example's one item is its whole beam, so every rule stops with the example at the step that item
        completes (no live item is left to bound) and the answer is that item. Hence every example still in
        the batch has completed nothing, and no per-example state but ``|x|`` outlives a step: the statistics
        of a leaving example follow from the step alone (``_stop_lists``), and leaving re-indexes nothing of
        ours but ``|x|``."""
        sums = self._expand_one(log_probs, attn)
        t = len(self) - 1
        at_max = t >= self.max_length
        # every step, idle or not: it also puts the exact sums back into topk_log_probs for the next step
        log_prob = self._exact_log_prob_of(sums, t)
        eos = self.topk_ids.eq(self.eos)  # (B, 1)
        if self._host_flags and not at_max and not bool(eos.any()):  # nothing completes, nobody leaves
            self.is_finished_list = [[False]]
            return
        completed = torch.ones_like(eos) if at_max else eos
        view = StepView(log_prob=log_prob, out_len=t - eos.long(), src_len=self._src_len, step=t,
                        max_length=self.max_length, stock_score=self.topk_scores)
        self._collect_one(self._finals(view), log_prob, view.out_len, t)
        self._done = completed.view(-1)
        self.is_finished_list = [[True]] if self._host_flags else [[bool(completed.any())]]

    def _finals(self, view):
        """Each rule's final score of every item of the step, ``(B, R, beam)``."""
        if len(self.rules) == 1:
            return self.scoring.final(view).unsqueeze(1)
        return torch.stack([score.final(view) for score, _ in self.rules], dim=1)

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

    def _quiet_step(self, log_prob, eos) -> bool:
        """Does this step, like every step before it, complete nothing and keep every item's log p finite?

        Then it changes nothing but the live mask, which becomes all True: by induction every item is a
        child of a live item (at the first step, a finite item is a child of the one live starting item: the
        others score -inf, and so do their children), none completes, and no rule stops, since a rule stops
        only on a completion or when no live item has a bound above -inf (``StoppingRule``), and a bound is
        above -inf wherever log p is (``ScoringRule``). The first step that is not quiet ends the shortcut
        for the batch. One masked minimum read on the host answers it (CPU only, where the read is free),
        where the general step makes about ten tensor operations: at batch 1 each costs 10-20 us, because
        the forward pass has just evicted the caches."""
        return log_prob.masked_fill(eos, NEG_INF).amin().item() > NEG_INF

    def _expand(self, log_probs, attn):
        """OpenNMT-py's step (``BeamSearchBase.advance`` of 3.5.1, statement for statement) but for three things:
        the top-k is ``top_k.top_k`` (exact, cheaper on CPU), nothing is copied to the host per item (stock's
        ``is_finished_list``; ``advance`` answers the decode loop with one flag instead), and a product with a
        length penalty of 1 is skipped. Each tensor operation costs 10-40 us here even on tiny tensors (the
        forward pass has just evicted the caches), so at batch 1 their number, not their size, is the cost.

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
        curr_scores, length_penalty = self._candidate_scores(log_probs)
        self.topk_scores, self.topk_ids = self._pick(curr_scores)
        if length_penalty == 1 and not self._vanilla_cov_pen:
            self.topk_log_probs = self.topk_scores  # stock multiplies by 1.0: the same numbers, one op less
        else:
            self.topk_log_probs = self.topk_scores * length_penalty
        self._batch_index = self.topk_ids // vocab_size + self._row_offsets(_B)
        self.select_indices = self._batch_index.view(_B * self.beam_size)
        self.topk_ids %= vocab_size
        self.alive_seq = torch.cat(
            [self.alive_seq.index_select(0, self.select_indices), self.topk_ids.view(_B * self.beam_size, 1)], -1
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
                    ).view(_B, self.beam_size)
        if self._vanilla_cov_pen:
            cov_penalty = self.global_scorer.cov_penalty(self._coverage, beta=self.global_scorer.beta)
            self.topk_scores -= cov_penalty.view(_B, self.beam_size).float()
        if not self.global_scorer.has_len_pen:
            return None
        flat_ids = self.select_indices * vocab_size + self.topk_ids.view(-1)  # log_probs now holds the sums
        return log_probs.view(-1).gather(0, flat_ids).view(_B, self.beam_size)

    def _expand_one(self, log_probs, attn):
        """``_expand`` for a beam of one item (stock runs ``BeamSearch`` at beam size 1 too): the same numbers,
        without what only several items need: no back-pointers to compute (each item is its own parent), no
        reordering of sequences or attention, and the top-1 is the first maximum."""
        _B = log_probs.shape[0]
        curr_scores, length_penalty = self._candidate_scores(log_probs)
        self.topk_scores, self.topk_ids = self._pick_one(curr_scores)
        self.topk_log_probs = self.topk_scores * length_penalty if length_penalty != 1 else self.topk_scores
        self._batch_index = self._row_offsets(_B)
        self.select_indices = self._batch_index.view(_B)
        self.alive_seq = torch.cat([self.alive_seq, self.topk_ids], -1)
        self.maybe_update_forbidden_tokens()
        if self.return_attention:
            self.alive_attn = attn if self.alive_attn is None else torch.cat([self.alive_attn, attn], 1)
        if not self.global_scorer.has_len_pen:
            return None
        return log_probs.gather(1, self.topk_ids)

    def _row_offsets(self, B):
        """``_beam_offset[:B]`` as a column (the first beam row of each example), kept until examples leave:
        a slice costs as much as an addition here."""
        if self._offsets.shape[0] != B:
            self._offsets = self._beam_offset[:B].unsqueeze(1)
        return self._offsets

    def _candidate_scores(self, log_probs):
        """Stock's scores of every expansion, ``(B * beam, V)``: min-length and unk masks, the items' sums
        (added into ``log_probs`` in place), the length penalty and n-gram blocking. Returns the scores and
        the penalty."""
        self.ensure_min_length(log_probs)
        self.ensure_unk_removed(log_probs)
        log_probs += self.topk_log_probs.view(-1, 1)
        # the score if the sequence ends now: its length counts the EOS
        length_penalty = self.global_scorer.length_penalty(len(self) + 1, alpha=self.global_scorer.alpha)
        curr_scores = log_probs / length_penalty if length_penalty != 1 else log_probs
        self.block_ngram_repeats(curr_scores)
        return curr_scores, length_penalty

    def _pick(self, log_probs):
        """Stock's ``_pick`` with the exact two-pass top-k (see ``top_k``)."""
        vocab_size = log_probs.size(-1)
        log_probs = self.target_prefixing(log_probs)
        return top_k(log_probs.reshape(-1, self.beam_size * vocab_size), self.beam_size)

    def _pick_one(self, log_probs):
        """``_pick`` for a beam of one item: the first maximum, as a stable sort's top 1."""
        return self.target_prefixing(log_probs).max(dim=1, keepdim=True)

    def _collect(self, completed, score, log_prob, out_len, t):
        """Merge this step's completed items (``completed``: (B, R, beam)) into each rule's top-``n_best`` list.

        Stable sort: among equal scores the earlier hypothesis stays first, then the higher-ranked beam item."""
        B, R, beam = completed.shape
        K = self.n_best
        if K == 1:
            return self._collect_best(completed, score, log_prob, out_len, t)
        score = torch.where(completed, score, NEG_INF)
        all_score = torch.cat([self._kept_score, score], dim=2)
        order = torch.sort(all_score, dim=2, descending=True, stable=True).indices[:, :, :K]
        self._kept_score = all_score.gather(2, order)

        def merged(kept, new):  # new: (B, beam) per item, the same for every rule
            return torch.cat([kept, new.unsqueeze(1).expand(B, R, beam)], dim=2).gather(2, order)

        self._kept_log_prob = merged(self._kept_log_prob, log_prob)
        self._kept_len = merged(self._kept_len, out_len)
        self._kept_steps = merged(self._kept_steps, torch.full_like(out_len, t))

        seq, attn = self._items(t)
        T = seq.shape[2]
        all_seq = torch.cat([self._kept_seq, seq.unsqueeze(1).expand(B, R, beam, T)], dim=2)
        self._kept_seq = all_seq.gather(2, order.unsqueeze(3).expand(B, R, K, T))
        if attn is not None:
            S = attn.shape[3]
            all_attn = torch.cat([self._kept_attn, attn.unsqueeze(1).expand(B, R, beam, T, S)], dim=2)
            self._kept_attn = all_attn.gather(2, order.view(B, R, K, 1, 1).expand(B, R, K, T, S))

    def _collect_best(self, completed, score, log_prob, out_len, t):
        """``_collect`` for ``n_best = 1``, the usual case, in fewer tensor operations: the stable sort becomes
        a max (the first of equal scores is the higher-ranked item; a tie with the kept one keeps it)."""
        B, R, beam = completed.shape
        best, arg = torch.where(completed, score, NEG_INF).max(dim=2)  # (B, R)
        better = best > self._kept_score[:, :, 0]
        if self._host_flags and not bool(better.any()):
            return
        update = better.unsqueeze(2)  # (B, R, 1)
        self._kept_score = torch.where(update, best.unsqueeze(2), self._kept_score)
        self._kept_log_prob = torch.where(update, log_prob.gather(1, arg).unsqueeze(2), self._kept_log_prob)
        self._kept_len = torch.where(update, out_len.gather(1, arg).unsqueeze(2), self._kept_len)
        self._kept_steps = self._kept_steps.masked_fill(update, t)

        seq, attn = self._items(t)
        T = seq.shape[2]
        seq = seq.gather(1, arg.unsqueeze(2).expand(B, R, T)).unsqueeze(2)  # (B, R, 1, T)
        self._kept_seq = torch.where(update.unsqueeze(3), seq, self._kept_seq)
        if attn is not None:
            S = attn.shape[3]
            attn = attn.gather(1, arg.view(B, R, 1, 1).expand(B, R, T, S)).unsqueeze(2)  # (B, R, 1, T, S)
            self._kept_attn = torch.where(update.view(B, R, 1, 1, 1), attn, self._kept_attn)

    def _collect_one(self, score, log_prob, out_len, t):
        """``_collect`` for a beam of one item: an example completes once and leaves in that very step (every
        rule stops with it), so its answer is this step's item, taken as it is for every row (tokens unpadded,
        ``(B, R, 1, t)``). A row whose item did not complete holds a live item's numbers here, which nothing
        reads: it does not leave at this step, and the step it leaves at overwrites them."""
        B, R = score.shape[:2]
        self._kept_score = score
        self._kept_log_prob = log_prob.unsqueeze(1).expand(B, R, 1)
        self._kept_len = out_len.unsqueeze(1).expand(B, R, 1)
        self._kept_seq = self.alive_seq[:, 1:].view(B, 1, 1, t).expand(B, R, 1, t).contiguous()  # _emit writes
        if self.alive_attn is not None:
            S = self.alive_attn.shape[2]
            self._kept_attn = self.alive_attn.view(B, 1, 1, t, S).expand(B, R, 1, t, S)

    def _items(self, t):
        """This step's items as hypotheses, padded to ``max_length``: tokens ``(B, beam, T)`` (BOS dropped) and
        attention ``(B, beam, T, S)`` or None; allocates the kept attention once attention is tracked."""
        beam, T = self.beam_size, self._kept_seq.shape[3]
        seq = self.alive_seq.view(-1, beam, t + 1)[:, :, 1:]
        seq = torch.nn.functional.pad(seq, (0, T - t), value=self.pad)
        if self.alive_attn is None:
            return seq, None
        S = self.alive_attn.size(-1)
        attn = torch.nn.functional.pad(self.alive_attn.view(-1, beam, t, S), (0, 0, 0, T - t))
        if self._kept_attn is None or self._kept_attn.size(-1) != S:
            B, R, K = self._kept_score.shape
            self._kept_attn = attn.new_zeros((B, R, K, T, S))
        return seq, attn

    # ------------------------------------------------------------------ examples leave the batch
    _PER_EXAMPLE = ("_src_len", "_kept_score", "_kept_log_prob", "_kept_len", "_kept_steps", "_kept_seq",
                    "_kept_attn", "_n_completed", "_width", "_stop_step", "_stop_code", "_stop_completed")

    def update_finished(self):
        done = self._done
        B_old = done.shape[0]
        step = self.alive_seq.shape[-1]
        self._emit(done.nonzero().view(-1))

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
        if self._one:  # nothing of ours outlives a step but |x| (see _advance_one)
            self._src_len = self._src_len[non_finished]
        else:
            for name in self._PER_EXAMPLE:
                value = getattr(self, name)
                if value is not None:
                    setattr(self, name, value[non_finished])
            self._live = self._live.view(B_old, self.beam_size)[non_finished].view(-1)
        self.select_indices = self._batch_index.view(B_new * self.beam_size)
        self.src_len = self.src_len[self.select_indices]
        self.maybe_update_target_prefix(self.select_indices)

    def _reason(self, code: int, stop: StoppingRule) -> str:
        return {_MAX_LENGTH: "max_length", _ALL_FINISHED: "all_finished", _PREDICTED: "predicted_bound"}.get(
            code, stop.reason
        )

    def _stop_lists(self, take, n):
        """Per leaving row and rule: the step it stopped at, why (a ``_stop_code``), how many hypotheses it had
        completed by then, and the step each kept hypothesis completed at (per k): nested lists."""
        if self._one:  # every rule stops now, with the one item, which completed now
            t, R = len(self) - 1, len(self.rules)
            code = _MAX_LENGTH if t >= self.max_length else _ALL_FINISHED
            return [[t] * R] * n, [[code] * R] * n, [[1] * R] * n, [[[t] for _ in range(R)] for _ in range(n)]
        return (take(self._stop_step).tolist(), take(self._stop_code).tolist(), take(self._stop_completed).tolist(),
                take(self._kept_steps).tolist())

    def _emit(self, leaving):
        """Hand the answers and statistics of the examples at batch rows ``leaving`` (a tensor) to OpenNMT-py."""
        rows = leaving.tolist()
        if not rows:
            return
        if len(rows) == self._kept_score.shape[0]:  # the whole batch leaves (at batch 1, always): no gather
            take = lambda x: x  # noqa: E731
        else:
            take = lambda x: x.index_select(0, leaving)  # noqa: E731
        scores = take(self._kept_score).tolist()  # [row][rule][k]
        log_probs = take(self._kept_log_prob).tolist()
        lengths = take(self._kept_len).tolist()
        stop_step, stop_code, stop_completed, steps_of = self._stop_lists(take, len(rows))
        src_len = take(self._src_len)
        targets = [score.target_length(src_len) for score, _ in self.rules]
        targets = [t.tolist() if t is not None else [None] * len(rows) for t in targets]
        src_len = src_len.long().tolist()
        now = len(self) - 1
        # a beam of one item keeps one hypothesis per rule, whatever n_best (it completes only one)
        kept = [[[k for k, score in enumerate(per_rule) if score != NEG_INF] for per_rule in row] for row in scores]
        for j, row in enumerate(rows):
            for r, kept_r in enumerate(kept[j]):
                if not kept_r:  # nothing ever completed (every item had -inf score): report the top item
                    kept_r.append(0)
                    steps_of[j][r][0] = now
                    self._kept_seq[row, r, 0, :now] = self.alive_seq.view(-1, self.beam_size, now + 1)[row, 0, 1:]
                # OpenNMT-py expects exactly n_best answers; fewer exist only when the beam ran dry first
                kept_r += [kept_r[-1]] * (self.n_best - len(kept_r))
        longest = max(steps_of[j][r][k[0]] for j in range(len(rows)) for r, k in enumerate(kept[j]))
        tokens = take(self._kept_seq)[..., :longest].tolist()  # [row][rule][k][step]
        batch_of = self._batch_offset.tolist()
        for j, row in enumerate(rows):
            b = batch_of[row]
            results = []
            for r, (score, stop) in enumerate(self.rules):
                best = kept[j][r][0]
                ys = tokens[j][r][best][: steps_of[j][r][best]]
                results.append({
                    "steps": stop_step[j][r],
                    "stop_reason": self._reason(stop_code[j][r], stop),
                    "score": scores[j][r][best],
                    "log_prob": log_probs[j][r][best],
                    "length": lengths[j][r][best],
                    "target_length": targets[r][j],
                    "src_length": src_len[j],
                    "completed": stop_completed[j][r],
                    "tokens": ys[:-1] if ys and ys[-1] == self.eos else ys,
                })
            for k in kept[j][0]:
                n = steps_of[j][0][k]
                self.scores[b].append(scores[j][0][k])
                self.predictions[b].append(self._kept_seq[row, 0, k, :n])
                if self._kept_attn is not None:
                    self.attention[b].append(self._kept_attn[row, 0, k, :n, : src_len[j]])
                else:
                    self.attention[b].append([])
            self.search_stats[b] = {k: v for k, v in results[0].items() if k != "tokens"}
            self.rule_results[b] = results

patch.resume(__name__)  # finish patching OpenNMT-py if this module was the first to import it (patch.py)
