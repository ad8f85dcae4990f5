"""The certificate over vLLM's prompts, on the search core: one implementation for the offline and online loops.

vLLM's two beam searches (``LLM.beam_search``, ``offline.py``; the server's ``BeamSearchOnlineMixin.beam_search``,
``online.py``) keep, per prompt, its live ``beams`` and its ``completed`` hypotheses as Python lists of
``BeamSearchSequence``s, in the order they completed. Both loops here run vLLM's own steps and, after each step,
hand those two lists to ``Prompts.after_step``, which does what every toolkit's adapter does once its beam is
chosen (``search.step``):

1. the hypotheses each prompt completed at this step become a ``(B, W)`` row of items, ``W = 2 * beam_width``
   places (a step completes at most one hypothesis a beam, and at ``max_tokens`` the live beams join them): their
   ``cum_logprob`` (vLLM's float64 sums), whether they end in the end token (so ``|y| = t - 1``, ``StepView``)
   and vLLM's own score of each (its ``sort_beams_key``: ``StepView.stock_score``, which vLLM's rule answers
   with, ``scoring.VLLMLengthPenalty``);
2. ``step.collect``: their scores under the rule (``step.finals``), each prompt's ``beam_width`` best into the
   core's kept list (``search.kept.Kept``: a stable sort, the earlier hypothesis first among equals, as vLLM's
   final ``sorted(..., reverse=True)`` keeps them);
3. ``step.bounds`` of the live beams' sums and ``step.decide``: which prompts the stopping rule is done with
   (the certificate of Eq. 2 and Eq. 5 under ``"optimal"``; no live beam left under ``"exhaustive"``);
4. a prompt that is done leaves the core's state (``State.select``) and the loop's batch, with its answer.

A kept hypothesis is a Python object that stays in vLLM's list: the kept list holds, as the "sequence" of each
place, the hypothesis's position in its prompt's ``completed`` list alone (a start column and no tokens, which
``collect`` reads as a hypothesis of no tokens). ``answer`` reads the kept positions back: the ``beam_width`` best
completed hypotheses under the rule, best first, which is the list vLLM itself answers at ``max_tokens`` (the
certificate's proof: ``scoring`` and ``search.stopping``), and the prompt's ``Record`` (``answers.answer``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from onmt_optimal.search import answers, step
from onmt_optimal.search.constants import NEG_INF
from onmt_optimal.search.record import Record
from onmt_optimal.search.scoring import StepView
from onmt_optimal.search.state import Rules, State
from onmt_optimal.vllm.options import Search

__all__ = ["Answer", "Prompts"]


@dataclass
class Answer:
    """One prompt's answer: ``sequences``, vLLM's ``BeamSearchSequence``s, the ``beam_width`` best completed
    (best first), ``scores`` their scores under the rule, ``lengths`` their ``|y|``, and ``record`` the prompt's
    statistics (``Record``: its 1-best's)."""

    sequences: list
    scores: list = field(default_factory=list)
    lengths: list = field(default_factory=list)
    record: Record | None = None

    def stats(self, i: int) -> dict:
        """The statistics of answer ``i`` as JSON values (``Record.STATS``' names, in order): the prompt's
        ``steps``, ``stop_reason``, ``target_length``, ``src_length`` and ``completed``, answer ``i``'s own
        ``score``, ``log_prob`` and ``length`` (answer 0's are the record's); a number that is not finite is
        null, as in the statistics file."""
        own = {"score": self.scores[i], "log_prob": self.sequences[i].cum_logprob, "length": self.lengths[i]}
        stats = {**self.record.stats(), **own}
        return {name: str(v) if name == "stop_reason" else None if isinstance(v, float) and not math.isfinite(v)
                else v for name, v in stats.items()}


@dataclass
class _Prompt:
    """What ``Prompts`` holds of one prompt beside its row of the core's state."""

    hyps: object  # the loop's holder of ``beams`` and ``completed`` (vLLM's ``BeamSearchInstance`` offline)
    src_len: int  # P: the (decoder) prompt's tokens
    seen: int = 0  # hypotheses of ``hyps.completed`` already collected
    answer: Answer | None = None  # set when the prompt leaves


class Prompts:
    """The prompts one loop decodes together (a batch offline, one request online), on the core's state.

    ``hyps``: per prompt, an object with vLLM's ``beams`` and ``completed`` lists (the loop's own, which it
    updates with vLLM's step); ``src_lens``: each prompt's length in tokens; ``T``: ``max_tokens``; ``eos``: the
    end token; ``key``: the loop's ``sort_beams_key`` (vLLM's score of a hypothesis)."""

    def __init__(self, search: Search, hyps: list, src_lens: list[int], T: int, eos: int, key):
        self.search, self.T, self.eos, self.key = search, T, eos, key
        self.prompts = [_Prompt(h, int(n)) for h, n in zip(hyps, src_lens)]
        self.running = list(self.prompts)
        self.W = 2 * search.n_best
        B = len(self.prompts)
        self.rules = Rules.of([(search.score, search.stop)], search.n_best,
                              torch.ones((1, self.W), dtype=torch.bool), "cpu")
        self.state = State.start(self.rules, torch.zeros((B, self.W), dtype=torch.bool), 0, 0, torch.float64,
                                 "cpu")
        self.src_len = torch.tensor([float(p.src_len) for p in self.prompts], dtype=torch.float64)
        self.facts, self.targeted = answers.facts(self.rules.rules, self.src_len)
        self.memo: dict = {}  # the rules' per-batch constants: one row a running prompt

    @property
    def running_hyps(self) -> list:
        """The ``hyps`` of the prompts still running, in their order."""
        return [p.hyps for p in self.running]

    def ended(self, hyp) -> bool:
        """The hypothesis ends in the end token (its ``|y|`` leaves it out, as vLLM's score's length does):
        completed by it (online, whose tokens keep it only with ``include_stop_str_in_output``, says so in
        ``finish_reason``), or, under ``ignore_eos``, cut at ``max_tokens`` just after one."""
        return hyp.finish_reason == "stop" or hyp.tokens[-1] == self.eos

    def after_step(self, t: int, at_max: bool) -> list:
        """After vLLM's step ``t`` (``at_max``: the last one, after which the loop has moved the live beams to
        ``completed``, as vLLM does): collect, decide, and let the prompts that are done leave. Returns the
        ``hyps`` of the prompts that left at this step."""
        running, W = self.running, self.W
        B = len(running)
        log_prob = torch.full((B, W), NEG_INF, dtype=torch.float64)
        stock = torch.full((B, W), NEG_INF, dtype=torch.float64)
        ends = torch.zeros((B, W), dtype=torch.bool)
        completed = torch.zeros((B, W), dtype=torch.bool)
        place = torch.zeros((B, W, 1), dtype=torch.long)  # the kept "sequence": the place in ``completed``
        for n, p in enumerate(running):
            new = p.hyps.completed[p.seen:]
            k = len(new)
            if k:
                log_prob[n, :k] = torch.tensor([h.cum_logprob for h in new], dtype=torch.float64)
                stock[n, :k] = torch.tensor([self.key(h) for h in new], dtype=torch.float64)
                ends[n, :k] = torch.tensor([self.ended(h) for h in new])
                completed[n, :k] = True
                place[n, :k, 0] = torch.arange(p.seen, p.seen + k)
                p.seen += k
        src_len = self.facts[:, 0]
        view = StepView(log_prob=log_prob, eos=ends, src_len=src_len, t=t, max_length=self.T, stock_score=stock,
                        memo=self.memo)
        step.collect(rules=self.rules, state=self.state, view=view, completed=completed, seq=place)
        live = torch.zeros((B, W), dtype=torch.bool)
        sums = torch.full((B, W), NEG_INF, dtype=torch.float64)
        if not at_max:
            for n, p in enumerate(running):
                beams = p.hyps.beams
                if beams:
                    sums[n, :len(beams)] = torch.tensor([b.cum_logprob for b in beams], dtype=torch.float64)
                    live[n, :len(beams)] = True
        self.state.live = live
        bounds = None
        if not at_max:
            bounds = step.bounds(rules=self.rules, view=StepView(log_prob=sums, eos=torch.zeros_like(live),
                                                                 src_len=src_len, t=t, max_length=self.T,
                                                                 memo=self.memo), live=live)
        done = step.decide(rules=self.rules, state=self.state, view=view, completed=completed, bounds=bounds,
                           at_max=at_max).view(-1)
        if not bool(done.any()):
            return []
        why = step.codes(rules=self.rules, at_max=at_max, live=live).view(-1).tolist()
        n_completed = self.state.n_completed.view(-1).tolist()
        leaving = done.nonzero().view(-1).tolist()
        for n in leaving:
            why_n = answers.reason(why[n], self.rules.rules[0].stopping)
            running[n].answer = self._answer(n, t, why_n, int(n_completed[n]))
        stay = (~done).nonzero().view(-1)
        self.state = self.state.select(stay)
        self.facts = self.facts[stay]
        self.memo = {}
        self.running = [running[n] for n in stay.tolist()]
        return [running[n].hyps for n in leaving]

    def _answer(self, n: int, t: int, why, n_completed: int) -> Answer:
        """Row ``n``'s answer (module docstring). A hypothesis scoring ``-inf`` is never kept (``Kept``); vLLM's
        stable sort puts such ones last, in the order they completed, and so does this."""
        p, K = self.running[n], self.search.n_best
        scores = self.state.kept.score[n].tolist()
        log_probs = scores if self.state.kept.log_prob is None else self.state.kept.log_prob[n].tolist()
        places = self.state.kept.seq[n, :, 0].tolist()
        kept = [i for i, s in enumerate(scores) if s != NEG_INF]
        sequences = [p.hyps.completed[places[i]] for i in kept]
        best = [(scores[i], log_probs[i], self._tokens(p, seq)) for i, seq in zip(kept, sequences)]
        if len(kept) < K:
            taken = {places[i] for i in kept}
            for i, hyp in enumerate(p.hyps.completed):
                if len(sequences) == K:
                    break
                if i not in taken:  # scored -inf
                    sequences.append(hyp)
                    best.append((NEG_INF, hyp.cum_logprob, self._tokens(p, hyp)))
        if not best:  # nothing completed (a request aborted before its first step)
            best = [(NEG_INF, NEG_INF, [])]
        row = self.facts[n].tolist()
        target = row[1] if self.targeted[0] else None
        record = answers.answer(hyps=best, n_kept=len(kept), K=1, eos=self.eos, steps=t, why=why, target=target,
                                src_len=p.src_len, completed=n_completed)
        return Answer(sequences=sequences, scores=[b[0] for b in best[:len(sequences)]],
                      lengths=[len(b[2]) - (bool(b[2]) and b[2][-1] == self.eos) for b in best[:len(sequences)]],
                      record=record.handed_over())

    def _tokens(self, p: _Prompt, hyp) -> list[int]:
        """The hypothesis's generated tokens, its end token last where it ended in one (``ended``)."""
        tokens = list(hyp.tokens[p.src_len:])
        if self.ended(hyp) and (not tokens or tokens[-1] != self.eos):
            tokens.append(self.eos)
        return tokens
