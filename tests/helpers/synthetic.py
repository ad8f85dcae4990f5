"""A synthetic "model" and a brute-force beam search, to drive the BeamSearch objects without a network.

``SyntheticModel`` gives every (example, prefix) a fixed pseudo-random next-token distribution, so a given
example decodes identically alone or in any batch. ``reference_beam`` is an independent, plain-Python
implementation of the paper's beam (Section 2): B_i = top-b expansions of the live items of B_{i-1};
items ending in EOS (or reaching max_length) are completed and leave the beam. It returns every completed
hypothesis in the order the beam completes them.

``run_strategy`` runs the search on ``DEVICE``: the CPU, or what ``ONMT_OPTIMAL_TEST_DEVICE`` names (e.g.
``ONMT_OPTIMAL_TEST_DEVICE=cuda pytest tests/unit/test_certificate.py tests/unit/test_device_reads.py`` on a
machine with a GPU: the property tests then check the search on the accelerator against the same plain-Python
references).
"""
from __future__ import annotations

import hashlib
import math
import os
import random

import torch
from onmt.translate.beam_search import GNMTGlobalScorer

PAD, BOS, EOS, UNK = 1, 2, 3, 0

#: where ``run_strategy`` puts the search's tensors
DEVICE = torch.device(os.environ.get("ONMT_OPTIMAL_TEST_DEVICE", "cpu"))


class SyntheticModel:
    def __init__(self, vocab_size: int, seed: int, eos_bias: float = 0.0, sharpness: float = 2.0,
                 impossible: tuple = (), eos_after: int = 0):
        """``impossible``: token ids of log-probability -inf (PAD and BOS otherwise get a finite -1e9); EOS is
        impossible too after fewer than ``eos_after`` tokens."""
        self.vocab_size = vocab_size
        self.seed = seed
        self.eos_bias = eos_bias
        self.sharpness = sharpness
        self.impossible = list(impossible)
        self.eos_after = eos_after
        self._cache: dict = {}

    def log_probs(self, example: int, prefix: tuple) -> torch.Tensor:
        key = (example, prefix)
        if key not in self._cache:
            digest = hashlib.sha256(repr((self.seed, key)).encode()).digest()
            rng = random.Random(digest)
            logits = torch.tensor([rng.gauss(0, self.sharpness) for _ in range(self.vocab_size)])
            logits[EOS] += self.eos_bias + 0.3 * len(prefix)
            logits[PAD] = -1e9
            logits[BOS] = -1e9
            logits[self.impossible] = float("-inf")
            if len(prefix) < self.eos_after:
                logits[EOS] = float("-inf")
            self._cache[key] = torch.log_softmax(logits.double(), -1).float()
        return self._cache[key]


def make_scorer(length_penalty: str = "none", alpha: float = 1.0) -> GNMTGlobalScorer:
    return GNMTGlobalScorer(alpha, 0.0, length_penalty, "none")


def run_strategy(strategy, model: SyntheticModel, examples: list[int], src_lens: list[int]):
    """Run the OpenNMT-py decode loop (translator.py's _translate_batch_with_strategy, without a network)."""
    B = len(examples)
    enc_out = torch.zeros(B, max(src_lens), 1, device=DEVICE)
    strategy.initialize(enc_out, torch.tensor(src_lens, device=DEVICE))
    row_example = torch.tensor(examples).repeat_interleave(strategy.beam_size)
    steps = 0
    for _ in range(strategy.max_length):
        seqs = strategy.alive_seq.tolist()
        log_probs = torch.stack(
            [model.log_probs(int(row_example[r]), tuple(seq[1:])) for r, seq in enumerate(seqs)]
        ).to(DEVICE)
        strategy.advance(log_probs, None)
        steps += 1
        any_finished = any(any(sub) for sub in strategy.is_finished_list)
        if any_finished:
            strategy.update_finished()
            if strategy.done:
                break
        row_example = row_example[strategy.select_indices.cpu()]  # the harness's read, not the search's
    return steps


def _step(model: SyntheticModel, example: int, live: list, width: int, t: int, max_length: int):
    """One step of a plain beam: the top-``width`` expansions of ``live``, split into completed and live."""
    cands = []
    for lp, prefix in live:
        dist = model.log_probs(example, prefix).double()
        for tok in range(model.vocab_size):
            cands.append((lp + float(dist[tok]), prefix + (tok,)))
    cands.sort(key=lambda c: -c[0])
    completed, still_live = [], []
    for lp, seq in [c for c in cands[:width] if c[0] > -1e8]:
        if seq[-1] == EOS:
            completed.append((lp, seq, t - 1, t))
        elif t == max_length:
            completed.append((lp, seq, t, t))
        else:
            still_live.append((lp, seq))
    return completed, still_live


def reference_beam(model: SyntheticModel, example: int, beam: int, max_length: int):
    """All hypotheses the beam completes, in completion order: (log_prob, tokens incl. EOS, |y|, step)."""
    live, completed = [(0.0, ())], []
    for t in range(1, max_length + 1):
        done, live = _step(model, example, live, beam, t, max_length)
        completed += done
        if not live:
            break
    return completed


def reference_shrinking(model: SyntheticModel, example: int, beam: int, max_length: int):
    """RNNsearch's shrinking beam, plainly: each completed hypothesis removes one slot from the beam."""
    width, live, completed = beam, [(0.0, ())], []
    for t in range(1, max_length + 1):
        done, live = _step(model, example, live, width, t, max_length)
        completed += done
        width -= sum(1 for h in done if h[1][-1] == EOS)
        if width <= 0 or not live:
            return completed, t
    return completed, max_length


def reference_score(rule: str, log_prob: float, out_len: int, step: int, *, alpha=1.0, reward=0.0, target=0.0):
    if rule == "none":
        return log_prob
    if rule == "avg":
        return log_prob / (step + 1) ** alpha
    if rule == "wu":
        return log_prob / ((5 + step + 1) / 6.0) ** alpha
    if rule == "reward":
        return log_prob + reward * min(target, out_len)
    if rule == "wreward":
        return log_prob + reward * out_len
    if rule == "bp":
        n = max(out_len, 1)
        return min(0.0, 1.0 - target / n) + log_prob / n
    raise ValueError(rule)


def best_of(completed, key):
    best = None
    for hyp in completed:
        if best is None or key(hyp) > key(best):
            best = hyp
    return best


__all__ = ["SyntheticModel", "make_scorer", "run_strategy", "reference_beam", "reference_shrinking",
           "reference_score", "best_of",
           "PAD", "BOS", "EOS", "UNK", "math"]
