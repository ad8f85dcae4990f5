"""Exact search: the global argmax of a scoring rule over every output of length <= T, for one source sentence.

Beam search is optimal only *modulo beam size*: a hypothesis whose prefix fell out of the beam is never seen.
This module finds the true optimum, as Stahlberg & Byrne (2019, "On NMT search errors and model errors")
did with depth-first branch and bound, for any scoring rule of ``onmt_optimal.search.scoring`` whose bound is a
proof (``rule.bound_is_proof``). It is an *oracle* for measuring search errors, not a decoder: its cost is
exponential in the worst case, so it has node and time budgets.

Two parts, kept apart:

* ``Scorer`` — the model, SGNMT-style: ``initial() -> state``, ``log_probs(state) -> (V,) float32``,
  ``extend(state, token) -> state``. The search knows nothing else about the model (no OpenNMT).
  ``OpenNMTScorer`` implements it for a real OpenNMT-py 3.5.1 model; the tests implement it for a synthetic
  model.
* ``exact_search(scorer, rule, ...)`` — depth-first branch and bound over the model's output tree.

The hypothesis space is the beam's (``beam_search.py``): at step ``t`` (tokens generated so far, this one
included) a prefix either emits EOS (a complete hypothesis with ``|y| = t - 1``), or, at ``t == T``, is cut
there (``|y| = T``), or stays live. Every token of the vocabulary may be chosen (the beam bans none unless
told to, e.g. ``-ban_unk_token``; a ``Scorer`` may ban tokens by giving them ``-inf``). ``min_length``,
``block_ngram_repeat``, coverage penalties and forced prefixes are outside this space.

Arithmetic is the beam's: the cumulative log-probability of a prefix is accumulated in float32 as
``prev + token_logp``, one token at a time, and every score and bound is computed by the rule objects on a
float32 ``StepView`` (``src_len = tensor([|x|])``, ``t``, ``max_length = T``), vectorised over the
``V`` children of a node. So on equal log-probabilities the oracle and the beam compute bit-identical scores.

Search invariants (``exact_search``):

1. *Incumbent.* ``best`` is always a complete hypothesis that the search (or the seed) actually scored; it
   only changes to a hypothesis with a strictly higher final score (ties keep the incumbent, as the beam's
   stable sort does), so ``best.score`` never falls and the answer is never worse than the seed.
2. *Pruning.* A live prefix is expanded only if ``rule.bound(prefix) > best.score`` at the moment it is
   reached (re-checked just before descending, since the incumbent may have risen meanwhile). By the rule's
   admissibility, no descendant of a pruned prefix can score above ``best.score``.
3. *Completeness.* Every complete hypothesis of length <= T is either scored (when its parent prefix is
   expanded: the EOS child at every node, and every child at ``t == T``) or has a pruned proper prefix.
   Hence, when the stack empties, ``best`` is a global argmax (``stop_reason == "optimal"``). When a budget
   runs out first, ``best`` is only the best found so far: a lower bound on the optimum, not a proof.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

import torch

from onmt_optimal.search.scoring import ScoringRule, StepView

STOP_OPTIMAL = "optimal"
STOP_NODE_BUDGET = "node_budget"
STOP_TIME_BUDGET = "time_budget"


class Scorer(Protocol):
    """A left-to-right model over a vocabulary of ``V`` tokens, for one source sentence.

    A *state* stands for a prefix ``y_1..y_t`` (none of them EOS); its type is the scorer's business. The
    search treats states as opaque values and may keep many of them alive at once (one per level of the
    depth-first stack), so ``extend`` must not change ``state`` in place.

    * ``initial()``: the state of the empty prefix (``t = 0``).
    * ``log_probs(state)``: ``log p(y_{t+1} = v | x, y_1..y_t)`` for every ``v``, a ``(V,)`` float32 tensor of
      log-softmax values (``-inf`` bans a token). Called once per expanded node.
    * ``extend(state, token)``: the state of the prefix ``y_1..y_t, token``; ``token`` is never EOS.
    """

    def initial(self) -> Any: ...

    def log_probs(self, state: Any) -> torch.Tensor: ...

    def extend(self, state: Any, token: int) -> Any: ...


@dataclass
class ExactResult:
    """The answer of ``exact_search``.

    ``tokens``: the output tokens without EOS (``None`` only if no hypothesis has a score above ``-inf``);
    ``ended_with_eos``: False when the answer was cut at ``max_length`` (then ``length == max_length``);
    ``score``: ``rule.final`` of the answer; ``log_prob``: its float32 cumulative log-probability (EOS
    included when it has one); ``length``: ``|y|``; ``nodes``: prefixes expanded (``log_probs`` calls of the
    search, seed rescoring not counted); ``stop_reason``: ``"optimal"`` (proof: no hypothesis of length
    <= T scores higher), ``"node_budget"`` or ``"time_budget"`` (best found so far, no proof);
    ``seed_score``: the seed's score as rescored here (``None`` without a seed); ``improved``: the answer
    scores strictly above the seed.
    """

    tokens: list[int] | None
    ended_with_eos: bool
    score: float
    log_prob: float
    length: int
    nodes: int
    stop_reason: str
    seconds: float
    seed_score: float | None = None
    seed_log_prob: float | None = None
    improved: bool = False
    max_depth: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def optimal(self) -> bool:
        """True when the answer is proved to be a global optimum."""
        return self.stop_reason == STOP_OPTIMAL

    @property
    def empty(self) -> bool:
        """True when the answer is the empty translation (EOS first, ``|y| = 0``)."""
        return self.tokens is not None and self.length == 0 and self.ended_with_eos

    def as_dict(self) -> dict:
        return {
            "tokens": self.tokens, "ended_with_eos": self.ended_with_eos, "score": self.score,
            "log_prob": self.log_prob, "length": self.length, "nodes": self.nodes,
            "stop_reason": self.stop_reason, "seconds": self.seconds, "seed_score": self.seed_score,
            "seed_log_prob": self.seed_log_prob, "improved": self.improved, "empty": self.empty,
            "optimal": self.optimal, "max_depth": self.max_depth,
        }


class _Frame:
    """One expanded prefix on the depth-first stack and its not yet visited children (best first)."""

    __slots__ = ("state", "prefix", "tokens", "cum", "bound", "next")

    def __init__(self, state, prefix, tokens, cum, bound):
        self.state = state
        self.prefix = prefix  # tuple of tokens y_1..y_t
        self.tokens = tokens  # children still to visit, by falling log-prob
        self.cum = cum  # their float32 cumulative log-probabilities (as Python floats, exact)
        self.bound = bound  # their bounds at expansion time
        self.next = 0


class _Views:
    """Builds the float32 ``StepView`` of all ``V`` children of a node at step ``t``."""

    def __init__(self, vocab_size: int, eos: int, src_len: float, max_length: int):
        self.V, self.eos, self.T = vocab_size, eos, max_length
        self.src_len = torch.tensor([float(src_len)], dtype=torch.float32)
        self.is_eos = torch.zeros((1, vocab_size), dtype=torch.bool)
        self.is_eos[0, eos] = True

    def view(self, cum: torch.Tensor, t: int) -> StepView:
        return StepView(log_prob=cum.view(1, -1), eos=self.is_eos, src_len=self.src_len, t=t,
                        max_length=self.T)


def rescore(scorer: Scorer, rule: ScoringRule, tokens: Sequence[int], *, src_len: float, max_length: int,
            eos: int) -> tuple[float, float, int, bool]:
    """Score one complete hypothesis exactly as the search would: ``(score, log_prob, |y|, ended_with_eos)``.

    ``tokens`` either ends with EOS (and has at most ``max_length`` tokens, EOS included) or has exactly
    ``max_length`` tokens and no EOS (cut at ``T``); EOS may appear only last.
    """
    tokens = [int(tok) for tok in tokens]
    if eos in tokens[:-1]:
        raise ValueError("EOS may only be the last token of a hypothesis")
    ended = bool(tokens) and tokens[-1] == eos
    if len(tokens) > max_length or (not ended and len(tokens) != max_length):
        raise ValueError(f"not a complete hypothesis under max_length {max_length}: {len(tokens)} tokens, "
                         f"{'with' if ended else 'without'} EOS")
    state = scorer.initial()
    cum = torch.zeros((), dtype=torch.float32)
    for i, tok in enumerate(tokens):
        cum = cum + scorer.log_probs(state).to(torch.float32)[tok]
        if i + 1 < len(tokens):
            state = scorer.extend(state, tok)
    t = len(tokens)
    length = t - 1 if ended else t
    view = StepView(log_prob=cum.view(1, 1), eos=torch.tensor([[ended]]),
                    src_len=torch.tensor([float(src_len)], dtype=torch.float32), t=t,
                    max_length=max_length)
    return float(rule.final(view)[0, 0]), float(cum), length, ended


def exact_search(scorer: Scorer, rule: ScoringRule, *, src_len: float, max_length: int, eos: int,
                 seed: Sequence[int] | None = None, max_nodes: int | None = None,
                 max_seconds: float | None = None) -> ExactResult:
    """Depth-first branch and bound: the argmax of ``rule.final`` over all hypotheses of length <= ``max_length``.

    ``src_len`` is ``|x|`` as the rule sees it; ``max_length`` is ``T``; ``eos`` the EOS token id. ``seed``
    (e.g. the beam's answer, as token ids, EOS included if it has one) is rescored with ``scorer`` and is the
    first incumbent. ``max_nodes`` / ``max_seconds`` bound the number of expanded prefixes / the wall time;
    when one runs out the result is the best found so far and says so in ``stop_reason``.
    Invariants: see the module docstring. Children of a node are visited by falling log-probability (ties:
    lower token id first), so the first descent is the greedy path.
    """
    if not rule.bound_is_proof:
        raise ValueError(f"exact search needs an admissible bound; {rule.describe()} has a heuristic one")
    if max_length < 1:
        raise ValueError("max_length must be >= 1")
    search = _BranchAndBound(scorer, rule, src_len=src_len, T=max_length, eos=eos, max_nodes=max_nodes,
                             max_seconds=max_seconds)
    if seed is not None:
        search.seed(seed)
    search.run()
    return search.result()


class _BranchAndBound:
    """``exact_search``'s depth-first branch and bound: the incumbent ``best`` (``(tokens, ended_with_eos,
    log_prob, |y|)`` scoring ``best_score``), the stack of expanded prefixes, and the budgets."""

    def __init__(self, scorer: Scorer, rule: ScoringRule, *, src_len: float, T: int, eos: int,
                 max_nodes: int | None, max_seconds: float | None):
        self.scorer, self.rule, self.src_len, self.T, self.eos = scorer, rule, src_len, T, eos
        self.max_nodes = max_nodes
        self.started = time.monotonic()
        self.deadline = None if max_seconds is None else self.started + max_seconds
        self.best_score = -math.inf
        self.best = None
        self.seed_score = self.seed_log_prob = None
        self.views = None
        self.nodes = self.max_depth = 0
        self.stop_reason = STOP_OPTIMAL

    def seed(self, seed: Sequence[int]) -> None:
        """The first incumbent: ``seed`` rescored."""
        self.seed_score, self.seed_log_prob, length, ended = rescore(
            self.scorer, self.rule, seed, src_len=self.src_len, max_length=self.T, eos=self.eos)
        body = [int(tok) for tok in seed][: length]
        self.best_score, self.best = self.seed_score, (body, ended, self.seed_log_prob, length)

    def expand(self, state, prefix: tuple, cum_prev: float) -> _Frame | None:
        """Score the completions among the children of ``prefix`` and return its live children, best first."""
        rule, eos, T = self.rule, self.eos, self.T
        log_probs = self.scorer.log_probs(state).to(torch.float32).view(-1)
        if self.views is None:
            self.views = _Views(log_probs.numel(), eos, self.src_len, T)
        t = len(prefix) + 1  # the step of the children
        cum = torch.tensor(cum_prev, dtype=torch.float32) + log_probs  # float32, as the beam adds
        view = self.views.view(cum, t)
        final = rule.final(view).view(-1)
        if t == T:  # every child is complete: EOS ones with |y| = T - 1, the others cut at T
            tok = int(torch.argmax(final))
        else:
            tok = eos
        score = float(final[tok])
        if score > self.best_score:
            ended = tok == eos
            body = list(prefix) if ended else list(prefix) + [tok]
            self.best_score, self.best = score, (body, ended, float(cum[tok]), len(body))
        if t == T:
            return None
        bound = rule.bound(view).view(-1)
        keep = (bound > self.best_score) & ~self.views.is_eos.view(-1)
        if not bool(keep.any()):
            return None
        ids = keep.nonzero().view(-1)
        order = torch.sort(cum[ids], descending=True, stable=True).indices
        ids = ids[order]
        return _Frame(state, prefix, ids.tolist(), cum[ids].tolist(), bound[ids].tolist())

    def budget_left(self) -> bool:
        if self.max_nodes is not None and self.nodes >= self.max_nodes:
            self.stop_reason = STOP_NODE_BUDGET
            return False
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.stop_reason = STOP_TIME_BUDGET
            return False
        return True

    def run(self) -> None:
        """Depth first from the empty prefix, children best first, until the stack empties or a budget ends."""
        stack: list[_Frame] = []
        if self.budget_left():
            self.nodes += 1
            frame = self.expand(self.scorer.initial(), (), 0.0)
            if frame is not None:
                stack.append(frame)
        while stack:
            frame = stack[-1]
            if frame.next >= len(frame.tokens):
                stack.pop()
                continue
            i = frame.next
            frame.next += 1
            if not frame.bound[i] > self.best_score:  # the incumbent rose since the node was expanded
                continue
            if not self.budget_left():
                break
            tok = frame.tokens[i]
            self.nodes += 1
            child = self.expand(self.scorer.extend(frame.state, tok), frame.prefix + (tok,), frame.cum[i])
            self.max_depth = max(self.max_depth, len(frame.prefix) + 1)
            if child is not None:
                stack.append(child)

    def result(self) -> ExactResult:
        seconds = time.monotonic() - self.started
        if self.best is None:
            return ExactResult(tokens=None, ended_with_eos=False, score=-math.inf, log_prob=-math.inf, length=0,
                               nodes=self.nodes, stop_reason=self.stop_reason, seconds=seconds,
                               max_depth=self.max_depth)
        body, ended, log_prob, length = self.best
        return ExactResult(tokens=body, ended_with_eos=ended, score=self.best_score, log_prob=log_prob,
                           length=length, nodes=self.nodes, stop_reason=self.stop_reason, seconds=seconds,
                           seed_score=self.seed_score, seed_log_prob=self.seed_log_prob,
                           improved=self.seed_score is not None and self.best_score > self.seed_score,
                           max_depth=self.max_depth)


# ---------------------------------------------------------------------------------------------- OpenNMT-py
class OpenNMTScorer:
    """``Scorer`` for one source sentence of a real OpenNMT-py 3.5.1 seq2seq model.

    The source is given as the tokens the model reads, i.e. *after* transforms (for a SentencePiece model:
    the pieces; for a model without transforms: the whitespace-split line). No transform is applied here.
    Unknown tokens map to ``<unk>`` as in OpenNMT-py's ``numericalize``.

    The encoder runs once. A state is ``(t, decoder state after reading BOS y_1..y_t, log-probs of y_{t+1})``;
    ``extend`` restores the parent's decoder state, runs one decoder step on ``token`` at ``step=t+1`` (as
    ``Translator._decode_and_generate``: ``model.decoder`` + ``model.generator`` + ``log_softmax``, batch 1)
    and snapshots the new decoder state. Snapshots are shallow copies: RNN decoders replace the tensors of
    ``decoder.state`` rather than writing into them, and so does the transformer decoder's key/value cache
    outside the CUDA flash-attention path. Supported: RNN decoders (tested) and transformer decoders on CPU
    or without flash attention (smoke-tested only); not supported: copy attention (``copy_attn``).
    """

    def __init__(self, model, vocabs, src_tokens: Sequence[str], device: str | torch.device = "cpu"):
        from onmt.constants import DefaultTokens

        if getattr(model.generator, "__class__", None).__name__ == "CopyGenerator":
            raise ValueError("copy-attention models are not supported by the exact search")
        if not src_tokens:
            raise ValueError("empty source")
        self.model = model
        self.device = torch.device(device)
        self.decoder = model.decoder
        tgt_vocab = vocabs["tgt"]
        self.tgt_vocab = tgt_vocab
        self.eos = tgt_vocab.lookup_token(DefaultTokens.EOS)
        start = vocabs.get("decoder_start_token", DefaultTokens.BOS)
        self.start = tgt_vocab.lookup_token(start)
        self.vocab_size = len(tgt_vocab)
        ids = vocabs["src"](list(src_tokens))
        self.src_len = len(ids)
        self.src = torch.tensor(ids, dtype=torch.long, device=self.device).view(1, -1, 1)
        self._src_len_t = torch.tensor([self.src_len], dtype=torch.long, device=self.device)
        with torch.no_grad():
            enc_out, enc_final_hs, src_len = model.encoder(self.src, self._src_len_t)
            if src_len is not None:
                self._src_len_t = src_len
            self.decoder.init_state(self.src, enc_out, enc_final_hs)
        self.enc_out = enc_out
        self._root = self._snapshot()

    # -- decoder state snapshots
    def _caches(self):
        for layer in getattr(self.decoder, "transformer_layers", []):
            for name in ("self_attn", "context_attn"):
                module = getattr(layer, name, None)
                if module is not None and hasattr(module, "layer_cache"):
                    yield module

    def _snapshot(self):
        state = dict(self.decoder.state)
        caches = [(m.layer_cache[0], dict(m.layer_cache[1])) for m in self._caches()]
        return state, caches

    def _restore(self, snap) -> None:
        state, caches = snap
        self.decoder.state.clear()
        self.decoder.state.update(state)
        for module, (flag, cache) in zip(self._caches(), caches):
            module.layer_cache = (flag, dict(cache))  # a fresh dict: attention writes into it

    def _step(self, snap, token: int, step: int):
        self._restore(snap)
        decoder_in = torch.tensor([[[token]]], dtype=torch.long, device=self.device)
        with torch.no_grad():
            dec_out, _ = self.decoder(decoder_in, self.enc_out, src_len=self._src_len_t, step=step)
            scores = self.model.generator(dec_out.squeeze(1))
            log_probs = torch.log_softmax(scores, dim=-1)
        return (step, self._snapshot(), log_probs.view(-1).to(torch.float32).cpu())

    # -- the Scorer interface
    def initial(self):
        return self._step(self._root, self.start, 0)

    def log_probs(self, state) -> torch.Tensor:
        return state[2]

    def extend(self, state, token: int):
        return self._step(state[1], int(token), state[0] + 1)

    # -- conveniences
    def token_ids(self, tokens: Sequence[str]) -> list[int]:
        return [self.tgt_vocab.lookup_token(tok) for tok in tokens]

    def token_strings(self, ids: Sequence[int]) -> list[str]:
        return [self.tgt_vocab.lookup_index(int(i)) for i in ids]


def load_model(model_path: str, gpu: int = -1):
    """Load an OpenNMT-py checkpoint for inference as ``onmt_translate`` does: ``(vocabs, model, model_opt)``."""
    from onmt_optimal.opennmt import patch

    patch.apply()
    import onmt.model_builder
    import onmt.opts
    from onmt.utils.parse import ArgumentParser

    parser = ArgumentParser()
    onmt.opts.translate_opts(parser)
    opt = parser.parse_args(["-model", str(model_path), "-src", "-", "-gpu", str(gpu)])
    from onmt_optimal.opennmt.checkpoint import one_line_loads

    with one_line_loads():
        return onmt.model_builder.load_test_model(opt)
