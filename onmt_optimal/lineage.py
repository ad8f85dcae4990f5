"""What the two adapters share: ``search.Beam`` driven from a ``BeamSearch`` of OpenNMT's lineage.

OpenNMT-py 3.5.1 (``onmt/translate/beam_search.py``) and eole 0.6.4 (``eole/predict/beam_search.py``) keep the same
beam state (``alive_seq``, ``alive_attn``, ``topk_log_probs``, ``topk_scores``, ``topk_ids``, ``select_indices``,
``_batch_index``, ``_batch_offset``, ``forbidden_tokens``, the coverage state) and the same decode-loop protocol:
``initialize``; per step ``advance(log_probs, attn)``, then ``update_finished()`` when ``is_finished_list`` says
an item finished, after which the loop reorders the model state by ``select_indices`` and stops on ``done``.

``CoreDriven`` is the part of the adapted ``BeamSearch`` that does not depend on the toolkit: after the toolkit's
own step (its candidate scores and its bookkeeping of the chosen items, ``_expand``), the core collects the
completed hypotheses and applies every rule; ``update_finished`` hands the leaving examples' answers to the
toolkit and drops their rows, and nothing else of the beam is read on the host. A toolkit's class mixes it in
before its own ``BeamSearch`` and supplies:

* ``_expand(log_probs, attn)``: its step statement for statement, with ``self.core.pick`` choosing the beam and
  ``_follow_picks`` (the statements both toolkits share) ending it; returns the chosen items' sums ``log p``
  (B, beam) under a length penalty, else None;
* ``_eos_mask()``: (B, beam) bool, the chosen items whose token ends a hypothesis;
* optionally ``_answered(b, tokens)``: called once per n-best answer handed over (eole counts text tokens).

Invariant: ``is_finished_list`` is ``[[True]]`` exactly when some example is done (the one host read per step),
and ``update_finished`` then removes exactly those examples, keeping the others in batch order.

A beam of one item needs no core (``search.beam_of_one``): ``beam_of_one`` says when a decode may run the
toolkit's own beam search instead, and ``beam_of_one_answers`` scores its answers under every rule.
"""
from __future__ import annotations

import torch

from onmt_optimal.search import beam_of_one as one
from onmt_optimal.search.beam import AUTO, Beam
from onmt_optimal.search.record import Record
from onmt_optimal.search.top_k import TopK, top_k

#: the toolkits' mask for completed items (beam_search.py); their children never outrank a real item
FINISHED_MASK = -65504.0


def max_length(translator, batch) -> int:
    """The decode's ``T``: the toolkit's own limit (``translate_batch`` of OpenNMT-py 3.5.1, of eole 0.6.4's
    ``Translator``), so that a search with and without the new flags runs the very same beam."""
    if translator.max_length_ratio > 0:
        return int(min(translator.max_length, batch["src"].size(1) * translator.max_length_ratio + 5))
    return translator.max_length


def strategy(cls, translator, search, batch_size: int, max_length: int, attn_debug: bool):
    """``cls`` (a ``CoreDriven`` ``BeamSearch``) built as both toolkits' translators build their own beam search
    (the same attributes in OpenNMT-py 3.5.1 and eole 0.6.4), with ``search``'s rules and host."""
    t = translator
    return cls(
        t.beam_size,
        batch_size=batch_size,
        pad=t._tgt_pad_idx,
        bos=t._tgt_bos_idx,
        eos=t._tgt_eos_idx,
        unk=t._tgt_unk_idx,
        start=t._tgt_start_with,
        n_best=t.n_best,
        global_scorer=t.global_scorer,
        min_length=t.min_length,
        max_length=max_length,
        return_attention=attn_debug or t.replace_unk,
        block_ngram_repeat=t.block_ngram_repeat,
        exclusion_tokens=t._exclusion_idxs,
        stepwise_penalty=t.stepwise_penalty,
        ratio=t.ratio,
        ban_unk_token=t.ban_unk_token,
        rules=search.rules,
        host=search.host,
    )


def beam_of_one(translator, search, attn_debug: bool) -> bool:
    """Does the toolkit's own beam search answer for every rule (``search.beam_of_one``, proved there)? With a
    beam of one item, one answer (``n_best``), and options that change neither the answer's score nor its path's
    state: no length or coverage penalty (the toolkit's score is then the exact log p), no n-gram blocking (the
    toolkit does not carry its state along when examples leave; the core does), no forced target prefix
    (``tgt_file_prefix``: eole restarts the score where it ends), no ``-ratio`` stop of the toolkit's, no
    attention handed back."""
    t, scorer = translator, translator.global_scorer
    return (search.beam_of_one and t.beam_size == 1 and t.n_best == 1 and not scorer.has_len_pen
            and not scorer.has_cov_pen and t.block_ngram_repeat == 0 and not t.tgt_file_prefix
            and not t.ratio > 0 and not (attn_debug or t.replace_unk))


def beam_of_one_answers(translator, search, batch, results, eos: set, T: int | None = None) -> tuple[list, list]:
    """``(stats, records)`` of ``results``, the toolkit's own decode of ``batch`` with a beam of one
    (``beam_of_one``), as ``CoreDriven`` gives them: per example the first rule's ``Record``, and per example, per
    rule of ``search``, its ``Record`` with the 1-best ``tokens`` (without its end token, one of ``eos``); each
    example's score in ``results`` becomes the first rule's. One read of the device for the batch (the tokens and
    ``|x|``), then the scoring's one copy there and one read (``beam_of_one.records``).
    ``T``: the decode's length limit, if not ``max_length``'s (a decoder-only model's is the toolkit's own)."""
    predictions = [answer[0] for answer in results["predictions"]]
    B = len(predictions)
    steps = [p.numel() for p in predictions]
    flat = torch.cat([batch["srclen"].view(B).to(predictions[0]), *predictions]).tolist()
    tokens, at = [], B
    for n in steps:
        tokens.append(flat[at:at + n])
        at += n
    ended = [row[-1] in eos for row in tokens]
    log_prob = [float(answer[0]) for answer in results["scores"]]
    scored = one.records(search.rules, log_prob, steps, ended, flat[:B],
                         max_length(translator, batch) if T is None else T, predictions[0].device)
    out = [[record.with_tokens(row[:-1] if end else row) for record in per_rule]
           for row, per_rule, end in zip(tokens, scored, ended)]
    results["scores"] = [[per_rule[0].score] for per_rule in out]
    return [per_rule[0] for per_rule in out], out


class CoreDriven:
    """Mixin for a ``BeamSearch`` of OpenNMT's lineage; see the module docstring. After decoding,
    ``rule_results[b][r]`` holds rule ``r``'s ``Record`` for example ``b`` (with its 1-best ``tokens``) and
    ``search_stats[b]`` the first rule's."""

    def _init_core(self, rules: list, eos: int, top_k: TopK = top_k, host: torch.device | str | None = AUTO) -> None:
        """``host``: where the core's bookkeeping lives (``search.Beam``); the attention of kept hypotheses
        stays with the model, so a decode that returns attention keeps it there too."""
        if self.return_attention:
            host = None
        self.core = Beam(rules, self.beam_size, self.n_best, eos, self.pad, top_k, host)
        self._exact_log_prob = any(stop.certified for _, stop in rules)
        self.search_stats = [None] * self.batch_size
        self.rule_results = [None] * self.batch_size

    def _start_core(self, src_len: torch.Tensor) -> None:
        """Once the toolkit's ``initialize`` has made ``topk_log_probs``: ``src_len`` (B,) is each example's |x|."""
        dev = self.topk_log_probs.device
        self.core.start(src_len.to(device=dev), self.max_length, self.topk_log_probs.dtype, self.alive_seq)

    # ------------------------------------------------------------------ one step
    def advance(self, log_probs, attn):
        B = log_probs.shape[0] // self.beam_size
        sums = self._expand(log_probs, attn)
        t = len(self) - 1  # tokens generated, this step's included
        log_prob = self._exact_log_prob_of(sums, t)
        eos = self._eos_mask()
        seq = None  # a host keeps its own copy of the tokens
        if self.core.host is None:
            seq = self.alive_seq.view(B, self.beam_size, t + 1)  # the start token, then the tokens
        items_attn = None
        if self.alive_attn is not None and self.return_attention:
            items_attn = self.alive_attn.view(B, self.beam_size, t, self.alive_attn.shape[-1])
        done = self.core.step(t, self._batch_index, self.topk_ids, eos, log_prob, self.topk_scores, seq, items_attn)
        # completed items never grow again (stock does this in update_finished); nor, in a shrinking beam, do
        # the items that fell outside it
        finished = (~self.core.live).to(eos.device, non_blocking=True) if self.core.shrinks else eos
        self.topk_log_probs.masked_fill_(finished, FINISHED_MASK)
        self._done_mask = done
        self._done = [d for (d,) in done.tolist()]  # the one read on the host per step
        # the decode loop calls update_finished() only when this says an example is done
        self.is_finished_list = [[any(self._done)]]

    def _follow_picks(self, cumulative, attn, step: int, length_penalty):
        """The end of both toolkits' step, the same statements in OpenNMT-py 3.5.1 and eole 0.6.4 (but for the
        product with a length penalty of 1, skipped): once ``core.pick`` has chosen the items, their scores, tokens,
        blocked n-grams, attention and coverage follow them. ``cumulative`` (B * beam, V): every candidate's sum
        of log-probabilities. Returns the chosen items' sums (B, beam) under a length penalty, else None."""
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
        predictions = self.alive_seq.view(B_old, beam, step)
        host = self.core.host
        if host is None:
            # the rows that stay, then those that leave, each in batch order, as device indices made on the
            # device: a host-made index would be copied to the device, which waits for the device (a sync).
            # When every example leaves (always at batch 1) no index is needed
            rows = index = None
            if staying:
                order = torch.sort(self._done_mask.view(torch.int8).view(-1), stable=True).indices  # (a bitcast)
                rows, index = order[: len(staying)], order[len(staying):]
            answers = self.core.answers(leaving, predictions, index)
            core_rows = rows
        else:  # the bookkeeping is on the host: the answers need no transfer, the device one copy of the rows
            answers = self.core.answers(leaving, None, torch.tensor(leaving, device=host) if staying else None)
            core_rows = rows = None
            if staying:
                core_rows = torch.tensor(staying, device=host)
                rows = core_rows.to(predictions.device, non_blocking=True)
        self._hand_over(leaving, answers)
        if not staying:
            self.done = True
            return
        self._keep(staying, rows, B_old, predictions, step)
        self.core.keep(core_rows)
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
        kept_attn = self.core.kept.attn
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
