"""OpenNMT's lineage of beam search (OpenNMT-py 3.5.1, eole 0.6.4) on the search core's step, as transformers'
loop (``hf.beam``) is on it: the toolkit's own step up to the choice of the beam, then the core's ``step.step``.

OpenNMT-py 3.5.1 (``onmt/translate/beam_search.py``) and eole 0.6.4 (``eole/predict/beam_search.py``) keep the same
beam state and the same decode-loop protocol: ``initialize``; per step ``advance(log_probs, attn)``, then
``update_finished()`` when ``is_finished_list`` says an item finished, after which the loop reorders the model
state by ``select_indices`` and stops on ``done``. ``LineageBeamSearch`` is that protocol for both; a toolkit's
class mixes it in before its own ``BeamSearch``, names its ``contract.Contract`` (``CONTRACT``) and supplies its
step up to the beam's choice, statement for statement: the hook ``_expand`` (abstract here), optionally
``_answered`` and ``_fix_answer`` (``contract.Hooks`` declares all three).

Follow example ``b`` of a batch. Its beam holds ``beam`` items, rows ``b * beam .. b * beam + beam - 1`` of every
``(B * beam, ...)`` tensor. At step ``t`` (tokens generated so far, this step's included):

1. **Pick** (``_expand``, ``search.top_k.pick``): the toolkit scores every expansion, ``(B * beam, V)``, with its
   own options applied (length penalty, blocked n-grams, minimum length, forced prefix); the ``beam`` best
   expansions of ``b`` are its new items (the paper's Section 2: ``B_t = top_b{ y . w }``), each with its parent row
   and its token. ``top_k`` is exact (a stable sort's first ``beam``). Their scores, tokens, blocked n-grams,
   attention and coverage follow them (``_follow_picks``).
2. **Complete**: an item is *real* while it descends from real items only (at ``t = 1`` the one starting item of
   ``b``). A real item whose token ends a hypothesis, or any real item at ``t = T = max_length``, is a completed
   hypothesis: it leaves the beam for good (its score is masked so that its children never outrank a real item;
   they only refill slots when fewer than ``beam`` real items are left, and stay unreal).
3. **Collect and stop** (``step.step``): each rule scores the completed ones (``scoring``) and keeps its
   ``n_best`` best; each decides from its ``n_best``-th kept score and the best *bound* of a real live item
   (the certificate of Eq. 2 and Eq. 5, ``stopping``). The step returns the ``(B, 1)`` column of the examples
   every rule is done with: the one host read a step (``is_finished_list``).
4. **Leave** (``update_finished``): once every rule is done with ``b`` (at ``T`` at the latest), its answers
   cross to the host in one transfer with those of every example leaving at the same step (``answers``), are
   handed over (``_hand_over``), and its rows leave the toolkit's tensors and the core's state (``_keep``).

Where the bookkeeping lives, next to the decode or on a host fed one packed transfer a step (the default next
to a CUDA model), is ``search.transfer``'s business (``place``); a decode that returns attention keeps it next
to the model, where the kept hypotheses' attention is. The toolkit's state this class reads and writes is
``contract.Beam`` and ``contract.StartedBeam``, checked when the search is built (``_init_search``) and when
``initialize`` has run (``_start_search``). After decoding, ``rule_results[b][r]`` holds rule ``r``'s
``search.record.Record`` for example ``b`` (with its 1-best ``tokens``) and ``search_stats[b]`` the first
rule's.
"""
from __future__ import annotations

from abc import ABCMeta, abstractmethod
from dataclasses import replace

import torch

from onmt_optimal.adapter import contract
from onmt_optimal.search import answers, constants, dead, step, transfer
from onmt_optimal.search.record import Record
from onmt_optimal.search.scoring import StepView, wide
from onmt_optimal.search.state import Rule, Rules, State
from onmt_optimal.search.top_k import TopK

#: the toolkits' mask for completed items (beam_search.py); their children never outrank a real item
FINISHED_MASK = -65504.0


class LineageBeamSearch(metaclass=ABCMeta):
    """Mixin for a ``BeamSearch`` of OpenNMT's lineage, with rules ``[(scoring, stopping), ...]`` that share its
    beam (the first answers to the toolkit, the others in ``rule_results`` only); see the module docstring."""

    #: the toolkit's contract (``contract.OPENNMT_PY_CONTRACT``, ``contract.EOLE_CONTRACT``)
    CONTRACT: contract.Contract
    #: ask for the dead rows to be skipped (``search.dead``; ``-prune_dead``: the record's ``completed`` and,
    #: rarely, ``stop_reason`` may differ, the answers, scores and steps do not). The toolkit's translator sets it
    #: where its decode loop decodes only the rows ``rows_to_decode`` names (``opennmt.translator``: unasked too,
    #: where it writes no record). Where it holds
    #: (``prunes``), each step also reads which rows the next one must decode, with its one read, and each record
    #: handed over says how many rows its example's decode skipped (``Record.rows_skipped``)
    prune_dead: bool = False

    def _init_search(self, rules: list, eos: int, top_k: TopK, host: torch.device | str | None) -> None:
        """Once the toolkit's constructor has run: check its members (``contract``). ``eos``: the end token the
        core knows; ``host``: where the bookkeeping lives (``options.Options.host``, ``search.transfer``)."""
        contract.check(self, self.CONTRACT.beam, self.CONTRACT.toolkit)
        if len({stop.shrinks for _, stop in rules}) > 1:
            raise ValueError("a shrinking beam is a beam of its own: it can share a decode only with other "
                             "shrinking rules (their beams shrink alike, whatever they score)")
        self.rules = [Rule(*rule) for rule in rules]
        self.end = eos
        self._top_k = top_k
        #: the ``host`` option; the attention of kept hypotheses stays with the model, and so does the bookkeeping
        self._host = None if self.return_attention else host
        #: may the step read the bookkeeping's tensors (None: where they live on the CPU; tests set it)
        self.free_reads = None
        self.shrinks = self.rules[0].stopping.shrinks
        #: a certified rule needs each item's exact log p (a length penalty's score * penalty may be ulps off)
        self.exact_log_prob = any(stop.certified for _, stop in rules)
        self.search_stats = [None] * self.batch_size
        self.rule_results = [None] * self.batch_size

    def _start_search(self, src_len: torch.Tensor) -> None:
        """Once the toolkit's ``initialize`` has made ``topk_log_probs`` (the initial sums, whose device and dtype
        are the search's) and ``alive_seq`` (the start tokens): ``src_len`` (B,) is each example's |x|."""
        contract.check(self, self.CONTRACT.started_beam, self.CONTRACT.toolkit)
        B, beam = src_len.shape[0], self.beam_size
        src_len = src_len.to(device=self.topk_log_probs.device)
        #: where the batch's bookkeeping lives (``transfer.Local`` or ``transfer.Host``)
        self.place = transfer.place(self._host, self.free_reads, src_len.device, self.alive_seq, beam)
        device = self.place.device
        #: (B,) float |x|, where the bookkeeping lives (after examples left: a view of ``facts``)
        self.source_length = src_len.to(device=device, dtype=torch.float)
        #: (B, 1 + R) what is known of each example from the start: |x| and each rule's target length l
        self.facts, self.targeted = answers.facts(self.rules, self.source_length)
        #: constants made once per device (each tensor made here is an operation per batch: at batch 1, per line)
        self._slots, first = _constants(beam, device)
        self.plan = Rules.of(self.rules, self.n_best, first, device)
        #: the batch's state (``search.state.State``); each beam starts from its first item (``live``: a view).
        #: The kept scores are in float32 at least (``scoring.wide``): a half-precision score is exact there, and
        #: a kept score rounded to half precision could round up past a bound it is compared with
        self.core = State.start(self.plan, first.expand(B, beam), self.max_length, self.pad,
                                wide(self.topk_log_probs.dtype), device, self.shrinks)
        #: ``top_k.pick``'s constants: (B, 1) the first beam row of each example, made where it runs, and V
        self.picks = {}
        self.memo = {}  # the rules' per-batch constants (``StepView.once``)
        #: the dead rows are skipped (``will_prune``)
        self.prunes = self.will_prune()
        self._needed = None  # per example of the last step, the needed flags of its items (host lists)
        if self.prunes:  # before step 1 each beam's first item is its one live item
            self._needed = [[j == 0 for j in range(beam)]] * B
            self._done = [False] * B
            #: (B,) on the host, by example (``_batch_offset``): the rows its decode skipped so far
            self._rows_skipped = torch.zeros(B, dtype=torch.long)

    # ------------------------------------------------------------------ one step
    @abstractmethod
    def _expand(self, log_probs: torch.Tensor, attn: torch.Tensor | None):
        """The toolkit's step up to the beam's choice (``top_k.pick`` with ``self._top_k`` and ``self.picks``;
        ``contract.Hooks._expand``): ``(cumulative, length_penalty, ends)``."""

    def advance(self, log_probs, attn):
        t = len(self)  # tokens generated, this step's included (the items grow in ``_follow_picks``)
        # 1. pick: the toolkit's expansions, B_t = top_b{...}, and what follows the chosen items
        cumulative, length_penalty, ends = self._expand(log_probs, attn)
        sums = self._follow_picks(cumulative, attn, t, length_penalty)
        log_prob = self._exact_log_prob_of(sums, t)
        B, beam, place, state = ends.shape[0], self.beam_size, self.place, self.core
        parents, tokens, eos, score, kept_attn = self._batch_index, self.topk_ids, ends, self.topk_scores, None
        if place.host is None:
            seq = self.alive_seq.view(B, beam, t + 1)  # the start token, then the tokens
            if self.return_attention:
                kept_attn = self.alive_attn.view(B, beam, t, self.alive_attn.shape[-1])
        else:  # one packed transfer; the host keeps its own copy of the tokens
            parents, tokens, eos, log_prob, score, seq = place.receive(t, parents, tokens, eos, log_prob, score,
                                                                       None)
        view = StepView(log_prob=log_prob, eos=eos, src_len=self.source_length, t=t, max_length=self.max_length,
                        stock_score=score, memo=self.memo, like_cuda=place.like_cuda)
        # 2. complete: the real items that end (every real one at T) are completed hypotheses and leave the beam
        at_max = t >= self.max_length
        real = torch.take(state.live, parents)
        if self.shrinks:  # only the example's current width of top items is its beam
            real &= self._slots < state.width
        completed = real if at_max else torch.bitwise_and(real, eos)  # at T every real item ends, as in stock
        # A quiet step (nothing completed) has nothing to merge or count. Where a read is free (``place``) asking
        # costs one operation; elsewhere it would be a synchronization, so the step merges the empty set (a no-op)
        quiet = place.free_reads and kept_attn is None and not at_max and not completed.any()
        state.live = real if quiet else real != completed
        # 3. collect and stop: the best completed so far, the bounds, the certificate (``step.step``)
        done = step.step(rules=self.plan, state=state, view=view, completed=completed, quiet=quiet, seq=seq,
                         attn=kept_attn)
        # completed items never grow again (stock does this in update_finished); nor, in a shrinking beam, do the
        # items that fell outside it
        finished = (~state.live).to(ends.device, non_blocking=True) if self.shrinks else ends
        self._done_mask = done
        if self.prunes and not at_max:  # the rows the next step needs, in the same read (``search.dead``)
            rule = self.plan.rules[0]
            needed = dead.needed(scoring=rule.scoring, view=view, live=state.live, kept_score=state.kept.score,
                                 n_best=self.n_best)
            read = torch.cat([done, needed], dim=1).tolist()  # the step's one read
            self._done = [row[0] for row in read]
            self._needed = [row[1:] for row in read]
        else:
            self._done = [d for (d,) in done.tolist()]  # the step's one read
        self.topk_log_probs.masked_fill_(finished, FINISHED_MASK)
        # the decode loop calls update_finished() only when this says an example is done (4. leave)
        self.is_finished_list = [[any(self._done)]]

    def _follow_picks(self, cumulative, attn, t: int, length_penalty):
        """The end of both toolkits' step, the same statements in OpenNMT-py 3.5.1 and eole 0.6.4 (but for the
        product with a length penalty of 1, skipped): once ``top_k.pick`` has chosen the items, their scores,
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
            if t == 1:
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
        if self.exact_log_prob:
            penalty = self.global_scorer.length_penalty(t + 1, alpha=self.global_scorer.alpha)
            untouched = self.topk_scores == log_prob / penalty
            log_prob = torch.where(untouched, log_prob, self.topk_log_probs)
            self.topk_log_probs = log_prob.clone()
        return log_prob

    def will_prune(self) -> bool:
        """Will this search skip its dead rows (``prunes``, decided as ``initialize`` runs; the toolkit's decode loop
        asks before)? Where ``prune_dead`` asks for it and ``search.dead.eligible`` holds, with no length or coverage
        penalty in the beam's ranking and no attention; the toolkit's loop adds its own conditions."""
        return bool(self.prune_dead and dead.eligible(self.rules) and not self.return_attention
                    and not getattr(self, "_cov_pen", False) and not self.global_scorer.has_len_pen)

    def rows_to_decode(self, device, least: int = 1) -> tuple[torch.Tensor, int]:
        """With ``prunes``: ``(rows, n)``, the rows (a long tensor on ``device``) of the toolkit's ``(B * beam, ...)``
        tensors, as they are after ``update_finished``, that the next step decodes, in order: the ``n`` it needs
        (``search.dead.needed``) and, where they are fewer than ``least``, as many others as make ``least`` rows
        (where there are), whose log-probabilities, at most 0, are as good as any (``search.dead.spread``). Made
        from the step's read, on the host; each example's rows not in ``rows`` are counted as skipped by its decode
        (the toolkit's loop decodes exactly ``rows`` next)."""
        flags = torch.tensor([row for row, done in zip(self._needed, self._done) if not done],
                             dtype=torch.bool).view(-1)
        rows = flags.nonzero().view(-1)
        n = rows.shape[0]
        if n < least:
            rows = torch.cat([rows, (~flags).nonzero().view(-1)[: least - n]]).sort().values
        beam = self.beam_size
        decoded = torch.bincount(rows // beam, minlength=flags.shape[0] // beam)
        self._rows_skipped.index_add_(0, self._batch_offset, beam - decoded)
        return rows.to(device, non_blocking=True), n

    # ------------------------------------------------------------------ examples leave the batch
    def update_finished(self):
        """The examples the last step said are done leave with their answers, from one transfer; the others
        stay, in batch order."""
        done = self._done
        B_old, beam = len(done), self.beam_size
        length = self.alive_seq.shape[-1]
        predictions = self.alive_seq.view(B_old, beam, length)
        leaving = [i for i, d in enumerate(done) if d]
        staying = [i for i, d in enumerate(done) if not d]
        host = self.place.host
        if host is None:
            # the rows that stay, then those that leave, each in batch order, as device indices made on the
            # device: a host-made index would be copied to the device, which waits for the device (a sync).
            # When every example leaves (always at batch 1) no index is needed
            rows = index = None
            if staying:
                order = torch.sort(self._done_mask.view(torch.int8).view(-1), stable=True).indices  # (a bitcast)
                rows, index = order[: len(staying)], order[len(staying):]
            answered = self._answers(leaving, predictions, index)
            core_rows = rows
        else:  # the bookkeeping is on the host: the answers need no transfer, the device one copy of the rows
            answered = self._answers(leaving, self.place.items,
                                     torch.tensor(leaving, device=host) if staying else None)
            core_rows = rows = None
            if staying:
                core_rows = torch.tensor(staying, device=host)
                rows = core_rows.to(predictions.device, non_blocking=True)
        self._hand_over(leaving, answered)
        if not staying:
            self.done = True
            return
        self._keep(staying, rows, B_old, predictions, length)
        self.facts = self.facts[core_rows]
        self.source_length = self.facts[:, 0]
        self.memo = {}
        if host is not None:  # (next to the decode nothing of theirs is kept apart: ``transfer.Local``)
            self.place.keep(core_rows)
        self.core = self.core.select(core_rows)
        if self.block_ngram_repeat > 0:  # the blocking state follows its paths (stock leaves it behind)
            self.forbidden_tokens = [self.forbidden_tokens[i * beam + j] for i in staying for j in range(beam)]
        self.select_indices = self._batch_index.view(len(staying) * beam)
        self.src_len = self.src_len[self.select_indices]
        self.maybe_update_target_prefix(self.select_indices)

    def _answers(self, rows: list[int], items: torch.Tensor, index: torch.Tensor | None) -> list[list[Record]]:
        """The answers of the examples at batch rows ``rows``, per row and rule (``answers.answer``), from one
        transfer. ``index``: ``rows`` as a tensor where the bookkeeping lives, None when every example leaves;
        ``items`` (B, beam, 1 + t): the beam's items there (``answers.records``)."""
        state = self.core
        packed = answers.pack(rules=self.plan, state=state, facts=self.facts)
        if len(rows) < packed.shape[0]:
            packed = packed[torch.tensor(rows, device=packed.device) if index is None else index]
        return answers.records(rules=self.plan, packed=packed.tolist(), batch_rows=rows, items=items, t=state.t,
                               T1=state.kept.seq.shape[2], targeted=self.targeted,
                               separate_log_prob=state.kept.log_prob is not None, eos=self.end)

    def _keep(self, staying, rows, B_old, predictions, length):
        """Stock's ``remove_finished_batches`` with the rows that stay as a host list (for the host-side
        ``_batch_offset``) and as a device tensor (for everything else)."""
        beam = self.beam_size
        self._batch_offset = self._batch_offset[staying]
        self.topk_log_probs = self.topk_log_probs[rows]
        self._batch_index = self._batch_index[rows]
        self.alive_seq = predictions[rows].view(-1, self.alive_seq.size(-1))
        if self.alive_attn is not None:
            S = self.alive_attn.size(-1)
            self.alive_attn = self.alive_attn.view(B_old, beam, length - 1, S)[rows].view(-1, length - 1, S)
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
            if self.prunes:
                skipped = int(self._rows_skipped[b])
                per_rule = [replace(result, rows_skipped=skipped) for result in per_rule]
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


def _constants(beam: int, device) -> tuple:
    """``(slots, first)``: ``arange(beam)`` and the (1, beam) mask of each beam's first item, made once per beam
    size and device."""
    def make():
        slots = torch.arange(beam, device=device)
        return slots, (slots == 0).view(1, beam)
    return constants.once(("beam", beam, device), make)
