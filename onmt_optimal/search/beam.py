"""One sentence through the search: the beam's bookkeeping, batched, for every scoring and stopping rule.

Follow example ``b`` of a batch. Its beam holds ``beam`` items, rows ``b * beam .. b * beam + beam - 1`` of
every ``(B * beam, ...)`` tensor. At step ``t`` (tokens generated so far, this step's included):

1. **Pick** (``Beam.pick``): the toolkit hands over every expansion's score, ``(B * beam, V)``, with its own
   options applied (length penalty, blocked n-grams, minimum length, forced prefix). The ``beam`` best
   expansions of ``b`` are its new items (the paper's Section 2: ``B_t = top_b{ y . w }``); each remembers
   its parent row and its token. ``top_k`` is exact (a stable sort's first ``beam``).
2. **Complete** (``Beam.step``): an item is *real* while it descends from real items only (at ``t = 1`` the
   one starting item of ``b``). A real item whose token is EOS, or any real item at ``t = T = max_length``,
   is a completed hypothesis: it leaves the beam for good (the toolkit masks its score so that its children
   never outrank a real item; they only refill slots when fewer than ``beam`` real items are left, and stay
   unreal). Each rule scores the completed ones (``scoring``: Eq. 1 for log p, Eq. 4 for the bounded reward)
   and keeps its ``n_best`` best (``kept.Kept``).
3. **Stop** (``stopping``): each rule decides from its ``n_best``-th kept score and the best *bound* any real
   live item still has (the most any continuation could score, ``ScoringRule.bound``). The certificate holds
   when the kept score is at least that bound (Eq. 2; Eq. 5 with the reward): no live item can ever enter the
   ``n_best`` list, so the answer is exactly what the same beam would return if it ran on to ``T``.
4. **Leave** (``Beam.answers``): once every rule is done with ``b`` (at ``T`` at the latest), its answers and
   statistics cross to the host in one transfer, together with those of every example leaving at the same
   step, and ``Beam.keep`` drops its rows from the search's tensors.

Several rules can share one beam (the sweep): the beam's contents never depend on where a rule stops or what
it returns, so one decode answers for all of them, exactly as separate decodes would. A shrinking beam (the
paper's baseline) is the exception: each completed hypothesis takes one slot out of its example's beam, so it
can share a decode only with other shrinking rules.

Device traffic. Everything above is tensor code without a per-item Python loop, and ``step`` reads nothing of an
accelerator on the host: it returns a ``(B, 1)`` column of the examples that are done, the one read per step the
toolkit needs to know whether to stop. ``answers`` makes one more per batch of leaving examples. (Where the
bookkeeping lives on the CPU, a read waits for nothing, and a step that completed nothing skips its merge:
``step``'s quiet steps.) That is the contract the
tests count (``tests/test_device_reads.py``). With a ``host`` (the default while the model runs on a CUDA
device: ``Beam``'s docstring says why) the same code runs on the host instead: the step's ``(B, beam)`` facts
cross in one packed transfer (the step's one read), the host keeps its own copy of the items' tokens, and
leaving examples cross nothing; the accelerator then runs the pick and the packing only (and the host divides by
a Python number as a CUDA device does, ``StepView.divide``, so that a bound is computed as the device computed
the score it bounds). On CPU the host is the device and the bookkeeping stays where it is.
"""
from __future__ import annotations

import torch

from onmt_optimal.search import constants
from onmt_optimal.search.constants import NEG_INF, neg_inf
from onmt_optimal.search.kept import Kept
from onmt_optimal.search.scoring import ScoringRule, StepView
from onmt_optimal.search.stopping import StoppingRule, StopView
from onmt_optimal.search.top_k import TopK, top_k

#: ``Beam``'s ``host``: the CPU when the decode runs on a CUDA device, else next to the decode
AUTO = "auto"
#: why a rule stopped with an example
MAX_LENGTH, ALL_FINISHED, PREDICTED, RULE = 1, 2, 3, 4


class Beam:
    """The bookkeeping of a batch of beams, for rules ``[(scoring, stopping), ...]`` that share it.

    The first rule is the one the toolkit outputs; the others answer in ``answers`` only.

    ``host``: where the bookkeeping lives. None: on the decode's device, reading one ``(B, 1)`` column a step
    there. A device (the CPU, when the model runs on an accelerator): each step's ``(B, beam)`` facts cross to it
    in one packed transfer (``_receive``), the bookkeeping (and a copy of every item's tokens) runs there, and
    leaving examples need no transfer at all; on the accelerator the search then costs the pick and the packing,
    a few kernels a step, instead of every operation of the bookkeeping (about fifteen more). ``AUTO`` (the
    default): the CPU when the decode runs on a CUDA device, else none, decided at each ``start`` (another
    accelerator's division is not imitated, ``StepView.divide``).

    Why the host on an accelerator. A step's operations act on ``(B, beam)`` tensors, far too small to keep a
    GPU busy: each costs what launching it costs, and the host launches them one by one. The same operation on
    a host tensor costs the host less than a launch, and the one read a step (which waits for the device in
    either place) is the packed transfer instead of the ``(B, 1)`` column: the device runs what stock's step
    runs plus one ``cat``. Counted on CPU (``scripts/op_breakdown.py`` with an ``optimal-host`` variant, which
    splits the ops by where they would run), TVsub LSTM, b = 10: the search issues 11.2 kernel-like ops per
    decoder call at batch 1 and 13.8 at batch 32 on the device (stock 12.3 and 35.5; next to the model 25.5 and
    35.5). The benchmark times both places on a GPU (its ``optimal-device`` variant)."""

    def __init__(self, rules: list[tuple[ScoringRule, StoppingRule]], beam_size: int, n_best: int,
                 eos: int, pad: int, top_k: TopK = top_k, host: torch.device | str | None = AUTO,
                 free_reads: bool | None = None):
        if len({stop.shrinks for _, stop in rules}) > 1:
            raise ValueError("a shrinking beam is a beam of its own: it can share a decode only with other "
                             "shrinking rules (their beams shrink alike, whatever they score)")
        self.rules = list(rules)
        self.beam_size, self.n_best, self.eos, self.pad = beam_size, n_best, eos, pad
        self.top_k = top_k
        self.shrinks = rules[0][1].shrinks
        self._host = host
        #: may the step read its own tensors on the host (``step``'s quiet steps)? None: where they live on the
        #: CPU, where a read waits for nothing; False reads as next to an accelerator (the tests count reads so)
        self.free_reads = free_reads
        #: where the bookkeeping of the current batch lives (``start`` resolves ``AUTO``)
        self.host = None if host is None or host == AUTO else torch.device(host)

    # ------------------------------------------------------------------ a batch begins
    def start(self, src_len: torch.Tensor, max_length: int, dtype=torch.float,
              items: torch.Tensor | None = None) -> None:
        """``src_len``: ``(B,)`` the source lengths ``|x|`` in model tokens; ``max_length``: ``T``; ``items``
        (B * beam, s): the items' start tokens (a ``host`` keeps its own copy of the items' tokens)."""
        B, beam, R, K = src_len.shape[0], self.beam_size, len(self.rules), self.n_best
        #: (B, 1) the first beam row of each example, made by ``pick`` where it runs (on the decode's device)
        self._offsets = None
        if self._host == AUTO:
            self.host = torch.device("cpu") if src_len.device.type == "cuda" else None
        device = self.host or src_len.device
        self._free_reads = torch.device(device).type == "cpu" if self.free_reads is None else self.free_reads
        #: (B, beam, 1 + t) a host's copy of the items' tokens
        self.items = None if self.host is None else items.to(device).view(B, beam, -1)
        self.max_length = max_length
        self.src_len = src_len.to(device=device, dtype=torch.float)
        #: the host computes as the decode's CUDA device does (``StepView.divide``)
        self._like_cuda = self.host is not None and src_len.device.type == "cuda"
        targets = [score.target_length(self.src_len) for score, _ in self.rules]
        self._targeted = [target is not None for target in targets]
        #: (B, 1 + R) what is known of each example from the start: |x| and each rule's target length l
        nan = None if all(self._targeted) else self.src_len.new_full((B,), float("nan"))
        self.facts = torch.stack([self.src_len] + [nan if target is None else target for target in targets], dim=1)
        #: constants made once per device (each tensor made here is an operation per batch: at batch 1, per line)
        self._slots, first, self._one, self._all_finished = _constants(beam, device)
        #: (B, beam) bool: the item holds a real live prefix; each beam starts from its first item
        self.live = first.expand(B, beam)  # (a view: never written in place)
        self.kept = Kept.empty(B, R, K, max_length, self.pad, dtype, device)
        #: (B, beam) completed hypotheses so far per beam slot (their sum per example is the statistic; a sum
        #: only when read: adding the step's mask costs fewer operations than summing it every step). Counts,
        #: codes and steps are float32 (exact below 2^24) so that they cross to the host in the same tensor
        #: as the scores without a conversion
        self.completions = torch.zeros((B, beam), dtype=torch.float, device=device)
        #: (B, 1) the example's beam size now (a shrinking beam only)
        self.width = torch.full((B, 1), beam, dtype=torch.long, device=device) if self.shrinks else None
        #: (1, beam) or (1, R, beam): which items each rule collects when they complete: all, or the top one
        self._collectable = None
        if any(stop.top_only for _, stop in self.rules):
            self._collectable = torch.stack([first.view(beam) if stop.top_only else self._slots >= 0
                                             for _, stop in self.rules]).unsqueeze(0)
            if R == 1:
                self._collectable = self._collectable.view(1, beam)
        self._vocab = None  # (V as a 0-d tensor, V)
        self._memo = {}  # the rules' per-batch constants (``StepView.once``)
        #: several rules: per example and rule, the step it stopped at (0 while running), why, and with how
        #: many completed hypotheses; one rule stops with its example, so this is read off the last step
        self.stop_step = self.stop_code = self.stop_completed = None
        if R > 1:
            self.stop_step = torch.zeros((B, R), dtype=torch.float, device=device)
            self.stop_code = torch.zeros((B, R), dtype=torch.float, device=device)
            self.stop_completed = torch.zeros((B, R), dtype=torch.float, device=device)
        #: the code of a stop by the rule itself: its own reason, or a heuristic bound's; (1, R) on the device
        codes = tuple(float(PREDICTED if stop.certified and not score.bound_is_proof else RULE)
                      for score, stop in self.rules)
        self._rule_codes = constants.row(codes, device)

    # ------------------------------------------------------------------ one step
    def pick(self, scores: torch.Tensor):
        """The ``beam`` best expansions of each example: ``(values, tokens, parents)``, ``(B, beam)`` each;
        ``parents`` are rows of the ``(B * beam, ...)`` tensors. ``scores``: ``(B * beam, V)``."""
        V = scores.shape[1]
        B = scores.shape[0] // self.beam_size
        if self._vocab is None or self._vocab[1] != V:
            self._vocab = (torch.tensor(V, device=scores.device), V)
        if self._offsets is None:
            self._offsets = torch.arange(0, B * self.beam_size, self.beam_size, device=scores.device).unsqueeze(1)
        elif self._offsets.shape[0] != B:  # examples left: the first beam row of each example
            self._offsets = self._offsets[:B]
        values, ids = self.top_k(scores.view(B, self.beam_size * V), self.beam_size)
        return values, ids.remainder(self._vocab[0]), ids.div(self._vocab[0], rounding_mode="floor") + self._offsets

    def step(self, t: int, parents: torch.Tensor, tokens: torch.Tensor, eos: torch.Tensor, log_prob: torch.Tensor,
             stock_score: torch.Tensor | None, seq: torch.Tensor | None, attn: torch.Tensor | None = None):
        """Collect the hypotheses completed at step ``t`` and apply the stopping rules.

        ``parents`` (B, beam): each item's parent row (``pick``); ``tokens`` (B, beam): its token; ``eos``
        (B, beam): its token ends it; ``log_prob`` (B, beam): its exact cumulative log p; ``stock_score``: the
        toolkit's own score of it; ``seq`` (B, beam, 1 + t): the start token and its tokens (None with a ``host``,
        which keeps its own); ``attn`` (B, beam, t, S) or None (not with a ``host``). Returns the ``(B, 1)``
        column of the examples every rule is done with (all of them at ``t = T``), where the bookkeeping lives.

        Per-example facts are ``(B, 1)`` columns throughout (``StopView``): they meet ``(B, beam)`` tensors
        without a view."""
        B, beam = eos.shape
        if self.host is not None:
            parents, tokens, eos, log_prob, stock_score = self._receive(parents, tokens, eos, log_prob, stock_score)
            self.items = seq = torch.cat([self.items.view(B * beam, t)[parents],
                                          tokens.view(B, beam, 1)], dim=2)
        at_max = t >= self.max_length
        real = torch.take(self.live, parents)
        if self.shrinks:  # only the example's current width of top items is its beam
            real &= self._slots < self.width
        completed = real if at_max else torch.bitwise_and(real, eos)  # at T every real item ends, as in stock
        # A quiet step (no item completed) has nothing to merge or count. Where the bookkeeping lives on the
        # CPU, asking costs one operation and no synchronization, and saves the merge's and the count's
        # eight; most steps are quiet at small batches (TVsub, batch 1, b = 10: 80%). Next to an accelerator
        # the question would be a synchronization, so the step merges an empty set instead (a no-op: nothing
        # beats a kept score with -inf)
        quiet = self._free_reads and attn is None and not at_max and not completed.any()
        live = real if quiet else real != completed
        view = StepView(log_prob=log_prob, eos=eos,
                        src_len=self.src_len, step=t, max_length=self.max_length, stock_score=stock_score,
                        memo=self._memo, like_cuda=self._like_cuda)
        R = len(self.rules)
        if not quiet:
            self._merge(t, completed, view, seq, attn)
        self.live = live
        self._t, self._at_max = t, at_max

        if R == 1:
            if at_max:
                return torch.ones((B, 1), dtype=torch.bool, device=eos.device)
            return self._done(0, view, live, completed)
        n_completed = self.n_completed
        if at_max:
            newly = self.stop_step == 0
        else:
            newly = torch.cat([self._done(r, view, live, completed) for r in range(R)], dim=1)
            newly &= self.stop_step == 0
        code = self._codes(at_max, live).expand(B, R)
        self.stop_step = torch.where(newly, t, self.stop_step)
        self.stop_code = torch.where(newly, code, self.stop_code)
        self.stop_completed = torch.where(newly, n_completed, self.stop_completed)
        return (self.stop_step > 0).all(dim=1, keepdim=True)

    def _merge(self, t: int, completed, view: StepView, seq, attn) -> None:
        """Keep each rule's ``n_best`` best of what completed at step ``t`` and count the completions."""
        log_prob = view.log_prob
        finals = [score.final(view) for score, _ in self.rules]
        score_is_log_prob = all(final is log_prob for final in finals)
        if len(self.rules) == 1:  # (B, beam): Kept takes one rule's items as they are
            finals, collect = finals[0], completed
        else:
            finals = torch.stack(finals, dim=1)
            collect = completed.unsqueeze(1) & (self.stop_step == 0).unsqueeze(2)
        if self._collectable is not None:
            collect = collect & self._collectable
        self.kept.merge(collect, finals, log_prob, t, seq, attn, score_is_log_prob)
        # (a 0-d one: a Python number or the bool mask itself would be converted first, three operations more)
        torch.where(completed, self.completions + self._one, self.completions, out=self.completions)
        if self.shrinks:
            self.width.sub_(completed.sum(dim=1, keepdim=True))

    def _receive(self, parents, tokens, eos, log_prob, stock_score):
        """The step's ``(B, beam)`` facts on the ``host``: one operation on the decode's device (their bytes side
        by side, ``_pack``: no conversion) and one transfer (the step's one read); the host reads them back as
        views of what arrived. The toolkit's own score crosses only where it is not the log-probability itself
        (under a length penalty), and stays the same tensor where it is (the scores keep it once, ``Kept``)."""
        own = stock_score is not None and stock_score is not log_prob
        scores = [log_prob, stock_score] if own else [log_prob]
        if own and stock_score.element_size() > log_prob.element_size():
            scores.reverse()
        sent = [parents, tokens, *scores, eos]  # (larger elements first: ``_pack``)
        parents, tokens, *scores, eos = _unpack(_pack(sent).to(self.host), sent)
        if own and stock_score.element_size() > log_prob.element_size():
            scores.reverse()
        return parents, tokens, eos, scores[0], (scores[1] if own else None if stock_score is None else scores[0])

    @property
    def n_completed(self) -> torch.Tensor:
        """(B, 1) completed hypotheses so far (the statistics; ``TopFinished`` and ``Shrinking`` read it)."""
        return self.completions.sum(dim=1, keepdim=True)

    def _done(self, r: int, view: StepView, live, completed) -> torch.Tensor:
        """(B, 1): rule ``r`` is done with the example."""
        score, stop = self.rules[r]
        bound = None
        if stop.needs_bound:  # (B, 1): the best bound of a live item (max with keepdim: a single operation)
            bound = torch.where(live, score.bound(view), neg_inf(view.log_prob)).max(dim=1, keepdim=True).values
        K = self.n_best
        kept = self.kept.score if len(self.rules) == 1 else self.kept.score[:, r * K:(r + 1) * K]
        return stop.done(StopView(completed=completed, completions=self.completions, kept_score=kept,
                                  best_bound=bound, width=self.width, n_best=K))

    def _codes(self, at_max: bool, live) -> torch.Tensor:
        """(B, R) why each rule stops at this step, if it does."""
        if at_max:
            return torch.full((live.shape[0], 1), float(MAX_LENGTH), device=live.device)
        return torch.where(live.any(dim=1, keepdim=True), self._rule_codes, self._all_finished)

    # ------------------------------------------------------------------ examples leave
    def answers(self, rows: list[int], items: torch.Tensor, index: torch.Tensor | None = None) -> list[list[dict]]:
        """The answers of the examples at batch rows ``rows`` (those ``step`` just said are done): per row, per
        rule, ``{"hypotheses": [(score, tokens), ...] (n_best, best first), "kept" (how many of them are
        distinct: the last one is repeated up to n_best), "steps", "stop_reason", "score",
        "log_prob", "length", "target_length", "src_length", "completed", "tokens"}`` (``tokens``: the 1-best
        without EOS; a hypothesis's token list keeps its EOS, as OpenNMT-py hands it on).

        Everything crosses to the host in one transfer. ``index``: ``rows`` as a device tensor, if the caller
        has one (else it is made here: a copy to the device, which waits for it on an accelerator); None
        when every example leaves. ``items`` (B, beam, 1 + t): the beam's items (the start token, then the
        tokens); the top one's tokens are read only for an example whose every hypothesis scored -inf (it kept
        none): a second transfer in that degenerate case alone."""
        B = self.src_len.shape[0]
        n, R, K = len(rows), len(self.rules), self.n_best
        kept = self.kept
        if self.host is not None:
            items = self.items
        if R == 1:  # the rule stops with its example, at this step: why depends on whether items are live
            stop = [self.n_completed, self._codes(self._at_max, self.live)]
        else:
            stop = [torch.stack([self.stop_step, self.stop_code, self.stop_completed], dim=2).view(B, -1)]
        # one float32 row per example (token ids and counts are exact in float32, below 2^24)
        log_probs = [] if kept.log_prob is None else [kept.log_prob]  # else the scores
        packed = torch.cat([kept.score, *log_probs, *stop, self.facts, kept.seq.view(B, -1)], dim=1)
        if n < B:
            packed = packed[torch.tensor(rows, device=packed.device) if index is None else index]
        packed = packed.tolist()

        T1 = kept.seq.shape[2]  # the start token, then T tokens
        out = []
        for j, row in enumerate(packed):
            score = row[:R * K]
            log_prob, at = (score, R * K) if not log_probs else (row[R * K:2 * R * K], 2 * R * K)
            if R == 1:
                completed, code = row[at:at + 2]
                stop, at = [self._t, code, completed], at + 2
            else:
                stop, at = row[at:at + 3 * R], at + 3 * R
            src_len, target, at = row[at], row[at + 1:at + 1 + R], at + 1 + R
            seq = row[at:]
            per_rule = []
            for r, (_, rule) in enumerate(self.rules):
                hyps = []
                for k in range(K):
                    i = r * K + k
                    if score[i] == NEG_INF:
                        break
                    tokens = _tokens(seq[i * T1 + 1:(i + 1) * T1], self.eos)
                    hyps.append((score[i], log_prob[i], tokens))
                n_kept = len(hyps)
                if not hyps:  # every hypothesis scored -inf: answer the top item
                    hyps.append((NEG_INF, NEG_INF, items[rows[j], 0, 1:].tolist()))
                hyps += [hyps[-1]] * (K - len(hyps))  # the toolkit expects n_best answers
                best = hyps[0]
                ended = bool(best[2]) and best[2][-1] == self.eos
                per_rule.append({
                    "hypotheses": [(h[0], h[2]) for h in hyps],
                    "kept": n_kept,
                    "steps": int(stop[3 * r]),
                    "stop_reason": self._reason(int(stop[3 * r + 1]), rule),
                    "score": best[0],
                    "log_prob": best[1],
                    "length": len(best[2]) - ended,
                    "target_length": target[r] if self._targeted[r] else None,
                    "src_length": int(src_len),
                    "completed": int(stop[3 * r + 2]),
                    "tokens": best[2][:-1] if ended else best[2],
                })
            out.append(per_rule)
        return out

    @staticmethod
    def _reason(code: int, stop: StoppingRule) -> str:
        return {MAX_LENGTH: "max_length", ALL_FINISHED: "all_finished", PREDICTED: "predicted_bound"}.get(
            code, stop.reason)

    def keep(self, rows: torch.Tensor) -> None:
        """Only the examples at batch rows ``rows`` (a long tensor) go on, in that order."""
        self.facts = self.facts[rows]
        self._memo = {}
        self.src_len = self.facts[:, 0]
        self.live = self.live[rows]
        if self.items is not None:
            self.items = self.items[rows]
        self.kept = self.kept.select(rows)
        self.completions = self.completions[rows]
        if self.width is not None:
            self.width = self.width[rows]
        if self.stop_step is not None:
            self.stop_step = self.stop_step[rows]
            self.stop_code = self.stop_code[rows]
            self.stop_completed = self.stop_completed[rows]


def _constants(beam: int, device) -> tuple:
    """``(slots, first, one, all_finished)``: ``arange(beam)``, the (1, beam) mask of each beam's first item,
    a 0-d one and the 0-d code of an example with no live item left, made once per beam size and device."""
    def make():
        slots = torch.arange(beam, device=device)
        return (slots, (slots == 0).view(1, beam), torch.ones((), device=device),
                torch.tensor(float(ALL_FINISHED), device=device))
    return constants.once(("beam", beam, device), make)


def _pack(tensors: list[torch.Tensor]) -> torch.Tensor:
    """``tensors``, in that order, side by side as one 1-D tensor of bytes: a ``cat`` of views, one operation (a
    conversion to a common dtype would cost one more per tensor). Their elements must not grow in size along
    the list, so that every tensor starts at an offset its dtype can be viewed at (``_unpack``)."""
    sizes = [x.element_size() for x in tensors]
    if sizes != sorted(sizes, reverse=True):
        raise ValueError("pack tensors with larger elements first")
    # (``view``, not ``reshape``, where it may: one dispatch a tensor instead of two)
    return torch.cat([(x.view(-1) if x.is_contiguous() else x.reshape(-1)).view(torch.int8) for x in tensors])


def _unpack(packed: torch.Tensor, like: list[torch.Tensor]) -> list[torch.Tensor]:
    """The tensors ``_pack(like)`` packed, as views of ``packed`` (wherever it now lives) with ``like``'s dtypes and
    shapes."""
    pieces = packed.split([x.numel() * x.element_size() for x in like])
    return [piece.view(x.dtype).view(x.shape) for piece, x in zip(pieces, like)]


def _tokens(row: list[float], eos: int) -> list[int]:
    """A kept hypothesis's tokens from its padded row: up to its EOS, which ends it, or the whole row (it was
    completed at ``max_length``: no other item completes without an EOS)."""
    end = row.index(eos) + 1 if eos in row else len(row)
    return [int(x) for x in row[:end]]
