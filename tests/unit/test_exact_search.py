"""The exact-search oracle (``onmt_optimal.tools.exact_search``) on ``SyntheticModel``.

With a tiny vocabulary and ``T <= 5`` the oracle's score equals the maximum over a brute-force enumeration of
*every* hypothesis of length <= T (computed here, level by level, with the same float32 arithmetic), for every
exact scoring rule; it is never below its seed (the beam's answer); budgets report themselves. The oracle on a
trained OpenNMT-py model: ``tests/e2e/test_exact_search_opennmt.py``.
"""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from helpers import synthetic as syn
from helpers.tiers import examples
from onmt_optimal.tools.exact_search import STOP_NODE_BUDGET, STOP_OPTIMAL, STOP_TIME_BUDGET, exact_search, rescore
from onmt_optimal.search.scoring import BoundedWordReward, BPNorm, StepView, StockScore, WordReward

EOS = syn.EOS
RULES = ["none", "avg", "wu", "reward", "wreward", "bp"]


class SyntheticScorer:
    """The ``Scorer`` interface over ``SyntheticModel``: a state is the prefix itself."""

    def __init__(self, model: syn.SyntheticModel, example: int):
        self.model, self.example, self.calls = model, example, 0

    def initial(self):
        return ()

    def log_probs(self, state):
        self.calls += 1
        return self.model.log_probs(self.example, state)

    def extend(self, state, token):
        assert token != EOS
        return state + (token,)


def make_rule(name, alpha=1.0, reward=0.0, ratio=1.0):
    if name in ("none", "avg", "wu"):
        return StockScore(name, alpha)
    if name == "reward":
        return BoundedWordReward(reward, ratio)
    if name == "wreward":
        return WordReward(reward)
    return BPNorm(ratio, "exact")


def brute_force(model, example, T, rule, src_len):
    """Every complete hypothesis of length <= T: ``(best score, all argmax tokens, number of hypotheses)``.

    Level ``k`` holds every live prefix of ``k`` tokens; its children's cumulative log-probabilities are
    ``prev + token_logp`` in float32 (as the beam adds); the EOS child completes (``|y| = k``), and at
    ``k + 1 == T`` every child completes (cut: ``|y| = T``).
    """
    V = model.vocab_size
    prefixes, cum = [()], torch.zeros(1, dtype=torch.float32)
    best, argmax, count = -math.inf, [], 0
    for k in range(T):
        lp = torch.stack([model.log_probs(example, p) for p in prefixes])  # (N, V)
        child = cum.unsqueeze(1) + lp  # (N, V) float32
        step = k + 1
        eos = torch.zeros((len(prefixes), V), dtype=torch.bool)
        eos[:, EOS] = True  # |y| = step - 1 (else step, cut at T)
        view = StepView(log_prob=child.reshape(1, -1), eos=eos.reshape(1, -1),
                        src_len=torch.tensor([float(src_len)]), t=step, max_length=T)
        final = rule.final(view).view(len(prefixes), V)
        complete = torch.zeros(V, dtype=torch.bool)
        complete[EOS] = True
        if step == T:
            complete[:] = True
        for i, prefix in enumerate(prefixes):
            for tok in complete.nonzero().view(-1).tolist():
                count += 1
                score = float(final[i, tok])
                hyp = list(prefix) + ([] if tok == EOS else [tok])
                if score > best:
                    best, argmax = score, [hyp]
                elif score == best:
                    argmax.append(hyp)
        if step == T:
            break
        live = [(i, tok) for i in range(len(prefixes)) for tok in range(V) if tok != EOS]
        cum = torch.stack([child[i, tok] for i, tok in live])
        prefixes = [prefixes[i] + (tok,) for i, tok in live]
    return best, argmax, count


def beam_answer(model, example, beam, T, rule_name, src_len, **kw):
    """The reference beam's best completed hypothesis under the rule (tokens incl. EOS, score in float64)."""
    completed = syn.reference_beam(model, example, beam, T)

    def key(h):
        return syn.reference_score(rule_name, h[0], h[2], h[3], target=kw["ratio"] * src_len, **{
            k: v for k, v in kw.items() if k in ("alpha", "reward")})

    best = syn.best_of(completed, key)
    return list(best[1]), key(best)


# ------------------------------------------------------------------------------------------ synthetic
def every_rule_once(test):
    """``test`` with one explicit example a rule of ``RULES`` (seeds 0, 1, ...; 7 tokens, T = 5, beam 2), run
    before the drawn ones."""
    for seed, rule_name in enumerate(RULES):
        test = example(vocab=7, T=5, seed=seed, eos_bias=-1.0, sharpness=1.0, rule_name=rule_name, alpha=0.7,
                       reward=1.0, ratio=1.3, src_len=3, beam=2)(test)
    return test


@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    vocab=st.integers(5, 7),
    T=st.integers(1, 5),
    seed=st.integers(0, 10_000),
    eos_bias=st.floats(-2.0, 2.0),
    sharpness=st.floats(0.5, 3.0),
    rule_name=st.sampled_from(RULES),
    alpha=st.floats(0.2, 1.5),
    reward=st.floats(0.0, 2.0),
    ratio=st.floats(0.3, 2.5),
    src_len=st.integers(1, 6),
    beam=st.integers(1, 3),
)
@every_rule_once
def test_oracle_equals_brute_force_and_beats_its_seed(vocab, T, seed, eos_bias, sharpness, rule_name, alpha,
                                                      reward, ratio, src_len, beam):
    model = syn.SyntheticModel(vocab, seed, eos_bias=eos_bias, sharpness=sharpness)
    rule = make_rule(rule_name, alpha, reward, ratio)
    best, argmax, count = brute_force(model, 0, T, rule, src_len)
    assert count == sum((vocab - 1) ** k for k in range(T)) + (vocab - 1) ** T

    res = exact_search(SyntheticScorer(model, 0), rule, src_len=src_len, max_length=T, eos=EOS)
    assert res.stop_reason == STOP_OPTIMAL and res.optimal
    assert res.score == best  # bit-identical: the same float32 operations
    assert res.tokens in argmax
    assert res.length == len(res.tokens) and (res.ended_with_eos or res.length == T)
    assert res.empty == (res.tokens == [] and res.ended_with_eos)
    full = res.tokens + ([EOS] if res.ended_with_eos else [])
    assert rescore(SyntheticScorer(model, 0), rule, full, src_len=src_len, max_length=T, eos=EOS)[:2] == (
        res.score, res.log_prob)
    assert syn.reference_score(rule_name, res.log_prob, res.length, len(full), alpha=alpha, reward=reward,
                               target=ratio * src_len) == pytest.approx(res.score, rel=1e-5, abs=1e-5)

    # seeded with the beam's answer: same optimum, never below the seed
    tokens, beam_score = beam_answer(model, 0, beam, T, rule_name, src_len, alpha=alpha, reward=reward,
                                     ratio=ratio)
    seeded = exact_search(SyntheticScorer(model, 0), rule, src_len=src_len, max_length=T, eos=EOS, seed=tokens)
    assert seeded.optimal and seeded.score == best
    assert seeded.score >= seeded.seed_score
    assert seeded.seed_score == pytest.approx(beam_score, rel=1e-5, abs=1e-4)
    assert seeded.improved == (best > seeded.seed_score)
    if not seeded.improved:  # ties keep the incumbent
        assert seeded.tokens + ([EOS] if seeded.ended_with_eos else []) == tokens


def test_oracle_finds_search_errors_of_greedy_search():
    """Not a trivial oracle: greedy search (beam 1) misses the optimum somewhere, and the oracle says so."""
    model = syn.SyntheticModel(6, 7, sharpness=1.0)
    rule = make_rule("none")
    improved = 0
    for sentence in range(30):
        tokens, _ = beam_answer(model, sentence, 1, 4, "none", 1, ratio=1.0)
        res = exact_search(SyntheticScorer(model, sentence), rule, src_len=1, max_length=4, eos=EOS, seed=tokens)
        assert res.optimal and res.score >= res.seed_score
        improved += res.improved
    assert improved > 0


def test_budgets_report_their_stop_reason():
    model = syn.SyntheticModel(7, 3, sharpness=0.5)
    rule = WordReward(2.0)  # a loose bound: the search must look at many prefixes
    full = exact_search(SyntheticScorer(model, 0), rule, src_len=3, max_length=5, eos=EOS)
    assert full.optimal and full.nodes > 10

    cut = exact_search(SyntheticScorer(model, 0), rule, src_len=3, max_length=5, eos=EOS, max_nodes=5)
    assert cut.stop_reason == STOP_NODE_BUDGET and not cut.optimal and cut.nodes == 5
    assert cut.score <= full.score and cut.tokens is not None

    tokens, _ = beam_answer(model, 0, 2, 5, "wreward", 3, reward=2.0, ratio=1.0)
    timed = exact_search(SyntheticScorer(model, 0), rule, src_len=3, max_length=5, eos=EOS, seed=tokens,
                         max_seconds=0.0)
    assert timed.stop_reason == STOP_TIME_BUDGET and timed.nodes == 0
    assert timed.score == timed.seed_score and timed.tokens + [EOS] == tokens[: len(timed.tokens) + 1]

    nothing = exact_search(SyntheticScorer(model, 0), rule, src_len=3, max_length=5, eos=EOS, max_seconds=0.0)
    assert nothing.tokens is None and nothing.score == -math.inf and not nothing.empty


def test_bad_seeds_and_heuristic_bounds_are_refused():
    model = syn.SyntheticModel(6, 1)
    scorer = SyntheticScorer(model, 0)
    rule = make_rule("none")
    for seed in ([4, EOS, 4], [4, 5], [4, 4, 4, 4, EOS]):  # EOS inside; too short without EOS; too long
        with pytest.raises(ValueError):
            exact_search(scorer, rule, src_len=2, max_length=4, eos=EOS, seed=seed)
    with pytest.raises(ValueError, match="admissible"):
        exact_search(scorer, BPNorm(1.0, "predicted"), src_len=2, max_length=4, eos=EOS)
    cut = exact_search(scorer, rule, src_len=2, max_length=2, eos=EOS, seed=[4, 5])  # cut at T: a valid seed
    assert cut.seed_score is not None and cut.score >= cut.seed_score
