"""Property tests: the certificate's answer is the best hypothesis the same beam completes if never stopped.

The BeamSearch objects are driven directly with controlled log-probabilities (``synthetic.SyntheticModel``)
through OpenNMT-py's decode-loop protocol, and compared with (a) the same beam run with ``Exhaustive``
stopping and (b) an independent plain-Python beam (``synthetic.reference_beam``).
"""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from helpers.tiers import examples

from onmt_optimal.opennmt.beam_search import CertifiedBeamSearch
from onmt_optimal.search.scoring import BoundedWordReward, BPNorm, StockScore, WordReward
from onmt_optimal.search.stopping import STOPPING_RULES
from onmt_optimal.search.top_k import TopK
from helpers.synthetic import (BOS, DEVICE, EOS, PAD, UNK, SyntheticModel, best_of, make_scorer, reference_beam,
                       reference_score, reference_shrinking, run_strategy)

SETTINGS = settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])

RULES = ["none", "avg", "wu", "reward", "wreward", "bp"]


def scoring_rule(rule, reward, ratio, alpha, bound="exact"):
    if rule == "reward":
        return BoundedWordReward(reward, ratio)
    if rule == "wreward":
        return WordReward(reward)
    if rule == "bp":
        return BPNorm(ratio, bound)
    return StockScore(rule if rule in ("avg", "wu") else "none", alpha, bound=bound, ratio=ratio)


def build(rule, stop, beam, batch, n_best, max_length, reward=0.0, ratio=1.0, alpha=1.0, bound="exact",
          group=None, block_ngram_repeat=0, host=None):
    """``group``: the top-k's group size, with every problem on its two-pass path; None: its defaults (the
    vocabularies here are tiny, so ``torch.topk``). ``host``: where the core's bookkeeping lives."""
    scorer = make_scorer(rule if rule in ("avg", "wu") else "none", alpha)
    scoring = scoring_rule(rule, reward, ratio, alpha, bound)
    return CertifiedBeamSearch(
        beam, batch_size=batch, pad=PAD, bos=BOS, eos=EOS, unk=UNK, start=BOS, n_best=n_best,
        global_scorer=scorer, min_length=0, max_length=max_length, return_attention=False,
        block_ngram_repeat=block_ngram_repeat, exclusion_tokens=set(), stepwise_penalty=False, ratio=0.0,
        ban_unk_token=False, rules=[(scoring, STOPPING_RULES[stop]())],
        top_k=TopK(group, 0) if group else TopK(), host=host,
    )


@st.composite
def cases(draw, rules=tuple(RULES)):
    beam = draw(st.integers(1, 4))
    batch = draw(st.integers(1, 4))
    return dict(
        rule=draw(st.sampled_from(rules)),
        seed=draw(st.integers(0, 10**6)),
        vocab=draw(st.integers(6, 10)),
        eos_bias=draw(st.floats(-2.0, 2.0)),
        sharpness=draw(st.sampled_from([0.5, 2.0, 6.0])),
        beam=beam,
        batch=batch,
        n_best=draw(st.integers(1, beam)),
        max_length=draw(st.integers(1, 9)),
        src_lens=draw(st.lists(st.integers(1, 8), min_size=batch, max_size=batch)),
        reward=draw(st.sampled_from([0.0, 0.5, 1.0, 1.3, 3.0])),
        ratio=draw(st.sampled_from([0.5, 1.0, 1.27, 2.0])),
        alpha=draw(st.sampled_from([0.6, 1.0, 2.0])),
        group=draw(st.sampled_from([1, 2, None])),  # top_k's group size: 1 and 2 take its two-pass path
    )


def decode(case, stop, examples=None, n_best=None, bound="exact", host=None, free_reads=None):
    """``free_reads``: ``LineageBeamSearch.free_reads`` (None: its quiet steps where the bookkeeping lives on the CPU)."""
    examples = list(range(case["batch"])) if examples is None else examples
    src_lens = [case["src_lens"][e] for e in examples]
    model = SyntheticModel(case["vocab"], case["seed"], case["eos_bias"], case["sharpness"],
                           case.get("impossible", ()), case.get("eos_after", 0))
    strategy = build(case["rule"], stop, case["beam"], len(examples), n_best or case["n_best"],
                     case["max_length"], case["reward"], case["ratio"], case["alpha"], bound, case.get("group"),
                     case.get("block", 0), host)
    strategy.free_reads = free_reads
    run_strategy(strategy, model, examples, src_lens)
    return strategy


def answers(strategy):
    return [
        [(score, pred.tolist()) for score, pred in zip(strategy.scores[b], strategy.predictions[b])]
        for b in range(strategy.batch_size)
    ]


@SETTINGS
@given(cases())
def test_certificate_equals_exhaustive_run_of_the_same_beam(case):
    optimal, exhaustive = decode(case, "optimal"), decode(case, "exhaustive")
    assert answers(optimal) == answers(exhaustive)
    for o, e in zip(optimal.search_stats, exhaustive.search_stats):
        assert o["steps"] <= e["steps"]
        assert o["score"] == e["score"] and o["log_prob"] == e["log_prob"] and o["length"] == e["length"]


STOPS = st.sampled_from(["default", "optimal", "exhaustive", "shrinking"])


@SETTINGS
@given(cases(), STOPS)
def test_impossible_tokens_and_beams_wider_than_the_vocabulary(case, stop):
    """-inf tokens (EOS among them for two steps) and a beam wider than the vocabulary, so that -inf items,
    children of unreal items and items masked as completed fill the beam: every example still gets n_best
    answers, sorted, and the certificate still answers as the exhaustive run of the same beam."""
    case = dict(case, vocab=5, impossible=(PAD, BOS, 4), eos_after=2, beam=4 + case["beam"],
                max_length=2 + case["max_length"])
    strategy = decode(case, stop)
    for b in range(case["batch"]):
        scores = strategy.scores[b]
        assert len(scores) == case["n_best"] and scores == sorted(scores, reverse=True)
    if stop == "optimal":
        assert answers(strategy) == answers(decode(case, "exhaustive"))


def case_model(case) -> SyntheticModel:
    """The synthetic model a drawn case decodes."""
    return SyntheticModel(case["vocab"], case["seed"], case["eos_bias"], case["sharpness"])


def reference_scorer(case, b: int):
    """The case's rule as the reference scores a completed hypothesis ``(log p, tokens, length, ...)`` of example
    ``b`` (its length target: the case's ratio times the example's source length)."""
    target = case["ratio"] * case["src_lens"][b]
    return lambda h: reference_score(case["rule"], h[0], h[2], h[3], alpha=case["alpha"], reward=case["reward"],
                                     target=target)


def references(case, reference):
    """Per example ``b`` of the case: ``b``, the plain-Python ``reference(model, b, beam, max_length)`` (its
    completed hypotheses, or a tuple that starts with them) and ``reference_scorer``'s score of one."""
    model = case_model(case)
    for b in range(case["batch"]):
        yield b, reference(model, b, case["beam"], case["max_length"]), reference_scorer(case, b)


def assert_best_score(strategy, b: int, completed: list, score):
    """The strategy's 1-best score of example ``b`` is the best ``score`` of ``completed`` (float32 against the
    reference's float64: within 1e-4); returns that best hypothesis."""
    best = best_of(completed, score)
    assert math.isclose(strategy.scores[b][0], score(best), rel_tol=1e-4, abs_tol=1e-4)
    return best


@SETTINGS
@given(cases())
def test_answer_is_the_best_completed_hypothesis_of_a_brute_force_beam(case):
    strategy = decode(case, "optimal")
    for b, completed, score in references(case, reference_beam):
        best = assert_best_score(strategy, b, completed, score)
        got_pred = strategy.predictions[b][0].tolist()
        if got_pred != list(best[1]):  # only a float32-vs-float64 near-tie may pick another hypothesis
            runner_up = [score(h) for h in completed if list(h[1]) == got_pred]
            assert runner_up and math.isclose(runner_up[0], score(best), rel_tol=1e-4, abs_tol=1e-4)


@SETTINGS
@given(cases(rules=("none",)))
def test_raw_log_prob_never_stops_later_than_default_and_agrees_on_the_1_best(case):
    case = dict(case, n_best=1)
    optimal, default = decode(case, "optimal"), decode(case, "default")
    for b in range(case["batch"]):
        assert optimal.search_stats[b]["steps"] <= default.search_stats[b]["steps"]
        assert optimal.scores[b][0] == default.scores[b][0]
        assert optimal.predictions[b][0].tolist() == default.predictions[b][0].tolist()


@SETTINGS
@given(cases())
def test_shrinking_beam_matches_a_plain_shrinking_beam(case):
    strategy = decode(case, "shrinking")
    for b, (completed, steps), score in references(case, reference_shrinking):
        assert_best_score(strategy, b, completed, score)
        assert strategy.search_stats[b]["steps"] == steps
        assert strategy.search_stats[b]["completed"] == len(completed)


@SETTINGS
@given(cases(), st.booleans())
def test_a_shrinking_beam_stops_when_no_item_is_live(case, wide):
    """``Shrinking``'s proof: whenever an example's width reaches 0, none of its items is live, so its stop is
    reported as ``all_finished`` (with all ``beam`` slots spent) or ``max_length``. ``wide``: a beam wider than
    the vocabulary, with impossible tokens, so that unreal items fill slots."""
    from onmt_optimal.search import step as module

    if wide:
        case = dict(case, vocab=5, impossible=(PAD, BOS, 4), eos_after=2, beam=4 + case["beam"],
                    max_length=2 + case["max_length"])
    spent_with_live, inner = [], module.step

    def checked(**kwargs):
        done = inner(**kwargs)
        state = kwargs["state"]
        spent_with_live.append(bool(state.live[(state.width <= 0).view(-1)].any()))
        return done

    module.step = checked
    try:
        strategy = decode(case, "shrinking")
    finally:
        module.step = inner
    assert not any(spent_with_live)
    for stats in strategy.search_stats:
        assert stats["stop_reason"] in ("all_finished", "max_length")
        if stats["stop_reason"] == "all_finished":
            assert stats["completed"] == case["beam"]


def test_stop_reasons_cross_as_codes_and_serialize_as_their_names():
    """``state.CODES``/``answers.reason``: each reason the search gives comes back from its float32 code, a rule's own
    code gives the rule's reason, every rule's reason is a ``StopReason``, and a ``StopReason`` is its name in
    JSON and text."""
    import json

    from onmt_optimal.search import state as stops
    from onmt_optimal.search.answers import reason
    from onmt_optimal.search.stopping import StopReason

    rule = STOPPING_RULES["optimal"]()
    for why, code in stops.CODES.items():
        assert reason(float(torch.tensor(code)), rule) is why
    assert reason(stops.OWN, rule) is StopReason.CERTIFICATE
    assert len(set(stops.CODES.values()) | {stops.OWN, 0.0}) == len(stops.CODES) + 2
    assert all(isinstance(cls.reason, StopReason) for cls in STOPPING_RULES.values())
    assert json.dumps({"stop_reason": StopReason.MAX_LENGTH}) == '{"stop_reason": "max_length"}'
    assert f"{StopReason.CERTIFICATE}" == str(StopReason.CERTIFICATE) == "certificate"


def test_every_stopping_rule_gives_a_stop_reason():
    """One type for ``stop_reason``: the rules of every toolkit (transformers' own among them) give a ``StopReason``,
    whose JSON is its name (``early_stopping`` for transformers')."""
    import json

    pytest.importorskip("transformers")
    from onmt_optimal.hf.stopping import TransformersRule
    from onmt_optimal.search.stopping import StoppingRule, StopReason

    def subclasses(cls):
        return [cls] + [sub for child in cls.__subclasses__() for sub in subclasses(child)]

    rules = subclasses(StoppingRule)[1:]
    assert TransformersRule in rules
    assert all(isinstance(rule.reason, StopReason) for rule in rules)
    assert json.dumps(TransformersRule.reason) == '"early_stopping"'


@SETTINGS
@given(cases(rules=("avg", "wu", "bp")))
def test_predicted_bound_is_reported_as_a_heuristic(case):
    strategy = decode(case, "optimal", bound="predicted")
    assert "certificate" not in {s["stop_reason"] for s in strategy.search_stats}


@SETTINGS
@given(cases(), st.sampled_from(["default", "optimal", "exhaustive", "shrinking"]))
# found by this test: a beam of one item under -length_penalty wu kept stock's drifting score * penalty as
# its sum on steps where nothing in the batch completed, so the sums depended on the batch's other examples
@example(dict(rule="wu", seed=127151, vocab=6, eos_bias=0.03125, sharpness=2.0, beam=1, batch=3, n_best=1,
              max_length=2, src_lens=[1, 1, 1], reward=0.0, ratio=0.5, alpha=0.6, group=1), "optimal")
def test_each_example_alone_or_in_a_mixed_batch_gives_the_same_output(case, stop):
    together = decode(case, stop)
    for b in range(case["batch"]):
        alone = decode(case, stop, examples=[b])
        assert answers(alone)[0] == answers(together)[b]
        assert alone.search_stats[0] == together.search_stats[b]


@SETTINGS
@given(cases())
def test_the_1_best_never_depends_on_n_best(case):
    one = decode(case, "optimal", n_best=1)
    many = decode(case, "optimal", n_best=case["beam"])
    for b in range(case["batch"]):
        assert one.scores[b][0] == many.scores[b][0]
        assert one.predictions[b][0].tolist() == many.predictions[b][0].tolist()


def test_n_best_list_is_sorted_and_complete():
    case = dict(rule="none", seed=3, vocab=9, eos_bias=1.0, sharpness=2.0, beam=4, batch=3, n_best=3, max_length=8,
                src_lens=[3, 4, 5], reward=0.0, ratio=1.0, alpha=1.0)
    strategy = decode(case, "optimal")
    for b in range(3):
        assert len(strategy.scores[b]) == 3
        assert strategy.scores[b] == sorted(strategy.scores[b], reverse=True)


@pytest.mark.parametrize("stop", ["default", "optimal", "exhaustive", "shrinking"])
@pytest.mark.parametrize("beam", [1, 3])
def test_n_best_above_the_beam_size(beam, stop):
    """OpenNMT-py accepts an -n_best above -beam_size: every example still gets n_best answers, sorted, the
    last one repeated where fewer completed (a beam of one item completes exactly one), and under a rule whose
    stop does not depend on n_best the 1-best is the one of -n_best 1."""
    case = dict(rule="none", seed=5, vocab=9, eos_bias=1.0, sharpness=2.0, beam=beam, batch=3, n_best=beam + 2,
                max_length=8, src_lens=[3, 4, 5], reward=0.0, ratio=1.0, alpha=1.0)
    many, one = answers(decode(case, stop)), answers(decode(case, stop, n_best=1))
    for b in range(3):
        assert len(many[b]) == beam + 2
        assert [score for score, _ in many[b]] == sorted((score for score, _ in many[b]), reverse=True)
        if beam == 1:
            assert many[b] == [one[b][0]] * 3
        if stop != "default":  # OpenNMT-py's rule waits for n_best completed hypotheses
            assert many[b][0] == one[b][0]


def test_bounded_reward_reaches_longer_outputs_than_raw_log_prob():
    base = dict(rule="reward", seed=11, vocab=8, eos_bias=1.5, sharpness=2.0, beam=4, batch=4, n_best=1, max_length=9,
                src_lens=[6, 6, 6, 6], ratio=1.0, alpha=1.0)
    short = decode(dict(base, reward=0.0), "optimal")
    long = decode(dict(base, reward=3.0), "optimal")
    assert sum(s["length"] for s in long.search_stats) > sum(s["length"] for s in short.search_stats)
    for s in long.search_stats:
        assert s["target_length"] == pytest.approx(6.0)
        assert s["score"] == pytest.approx(s["log_prob"] + 3.0 * min(6.0, s["length"]), rel=1e-5)


class TableModel:
    """A hand-written model: next-token probabilities per prefix (tokens 4='a', 5='b')."""

    vocab_size = 6
    TABLE = {
        (): {4: 0.6, EOS: 0.3, 5: 0.1},
        (4,): {EOS: 0.4, 5: 0.35, 4: 0.25},
    }

    def log_probs(self, example, prefix):
        probs = torch.full((self.vocab_size,), 1e-9)
        for tok, p in self.TABLE.get(prefix, {EOS: 0.9, 4: 0.1}).items():
            probs[tok] = p
        return torch.log(probs / probs.sum())


@pytest.mark.parametrize("rule,expected", [("none", []), ("avg", [4])])
def test_shrinking_beam_on_a_hand_built_case(rule, expected):
    # step 1: beam [a (.6), EOS (.3)]: "" completes (log .3), width 2 -> 1
    # step 2: only the top child of "a" is in the beam: "a EOS" (log .6*.4) completes, width 1 -> 0: stop.
    # raw log p prefers "" (-1.20 > -1.43); avg prefers "a" (-1.43/3 > -1.20/2)
    strategy = build(rule, "shrinking", 2, 1, 1, 10)
    run_strategy(strategy, TableModel(), [0], [3])
    assert strategy.predictions[0][0].tolist() == expected + [EOS]
    assert strategy.search_stats[0]["steps"] == 2
    assert strategy.search_stats[0]["completed"] == 2
    assert strategy.search_stats[0]["log_prob"] == pytest.approx(math.log(0.3) if rule == "none"
                                                                 else math.log(0.6 * 0.4), rel=1e-5)


@SETTINGS
@given(cases(rules=("none",)), st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.3, 3.0]), min_size=1, max_size=4),
       st.sampled_from([None, "cpu"]))
def test_many_rules_in_one_decode_answer_as_separate_decodes(case, rewards, host):
    """The sweep's premise: rules that share the beam can be evaluated from a single decode (with its
    bookkeeping next to the model or on the host)."""
    grid = [("none", "default", 0.0), ("none", "opennmt2017", 0.0), ("none", "optimal", 0.0), ("bp", "optimal", 0.0),
            ("wreward", "optimal", 0.7)] + [("reward", "optimal", r) for r in rewards]
    model = case_model(case)
    examples = list(range(case["batch"]))
    rules = [(scoring_rule(rule, reward, case["ratio"], case["alpha"]), STOPPING_RULES[stop]())
             for rule, stop, reward in grid]
    joint = CertifiedBeamSearch(
        case["beam"], batch_size=case["batch"], pad=PAD, bos=BOS, eos=EOS, unk=UNK, start=BOS, n_best=1,
        global_scorer=make_scorer("none"), min_length=0, max_length=case["max_length"], return_attention=False,
        block_ngram_repeat=0, exclusion_tokens=set(), stepwise_penalty=False, ratio=0.0, ban_unk_token=False,
        rules=rules, host=host)
    run_strategy(joint, model, examples, case["src_lens"])
    for r, (rule, stop, reward) in enumerate(grid):
        alone = decode(dict(case, rule=rule, reward=reward, n_best=1), stop)
        for b in examples:
            got = joint.rule_results[b][r]
            want = alone.search_stats[b].with_tokens([t for t in alone.predictions[b][0].tolist() if t != EOS])
            assert got == want, (rule, stop, reward)


@SETTINGS
@given(cases(), st.integers(1, 3), st.sampled_from(["default", "optimal", "exhaustive", "shrinking"]))
# found by this test: stock OpenNMT-py keeps n-gram blocking state per path and does not re-index it when
# examples leave the batch, so a path inherited another path's blocked n-grams
@example(dict(rule="none", seed=4, vocab=6, eos_bias=0.0, sharpness=2.0, beam=3, batch=2, n_best=1,
              max_length=4, src_lens=[1, 1], reward=0.0, ratio=0.5, alpha=0.6, group=1), 2, "default")
def test_ngram_blocking_follows_its_paths(case, block, stop):
    """-block_ngram_repeat: each example decodes alone as in any batch (its blocking state follows its own
    paths when other examples leave), and the certificate still answers as the exhaustive run."""
    case = dict(case, block=block)
    together = decode(case, stop)
    for b in range(case["batch"]):
        alone = decode(case, stop, examples=[b])
        assert answers(alone)[0] == answers(together)[b]
        assert alone.search_stats[0] == together.search_stats[b]
    if stop == "optimal":
        assert answers(together) == answers(decode(case, "exhaustive"))


def test_opennmt2017_answers_the_top_item_where_3_5_1_answers_the_best_collected():
    # step 1: beam [a (.6), EOS (.3)]: "" completes at rank 1 (log .3 = -1.20); step 2: "a EOS" (log .24 = -1.43)
    # is the top item and completes: both rules stop; 3.5.1 returns the best collected (""), early 2017 the top
    # item ("a"): the gap of the paper's Fig. 1
    answers_of = {}
    for stop in ("default", "opennmt2017"):
        strategy = build("none", stop, 2, 1, 1, 10)
        run_strategy(strategy, TableModel(), [0], [3])
        answers_of[stop] = (strategy.predictions[0][0].tolist(), strategy.search_stats[0]["steps"])
    assert answers_of["default"] == ([EOS], 2)
    assert answers_of["opennmt2017"] == ([4, EOS], 2)


@SETTINGS
@given(cases(rules=("none",)))
def test_opennmt2017_stops_with_default_on_the_step_s_top_item(case):
    """With n_best 1 both rules stop where the top item of the beam completes; early 2017 answers that item (it
    ended at the stopping step, or is the top item at max_length), which never beats 3.5.1's best collected."""
    case = dict(case, n_best=1)
    old, new = decode(case, "opennmt2017"), decode(case, "default")
    for b in range(case["batch"]):
        assert old.search_stats[b]["steps"] == new.search_stats[b]["steps"]
        assert old.scores[b][0] <= new.scores[b][0]
        pred = old.predictions[b][0].tolist()
        assert len(pred) == old.search_stats[b]["steps"]  # it ended at the stopping step (EOS or max_length)


@SETTINGS
@given(cases(), st.sampled_from(["default", "optimal", "exhaustive", "shrinking", "opennmt2017"]), st.booleans())
def test_bookkeeping_on_the_host_answers_as_on_the_decode_s_device(case, stop, block):
    """``host``: the core's bookkeeping away from the model (on the CPU while the model runs on an accelerator),
    fed one packed transfer a step and keeping its own copy of the items' tokens, answers exactly as next to
    the model: the same hypotheses, scores and statistics for every rule, n-best, blocked n-grams and a
    shrinking beam (here both on the CPU: the packing, the copy of the tokens and the host-side leaving run)."""
    case = dict(case, block=2 if block else 0)
    near, away = decode(case, stop), decode(case, stop, host="cpu")
    assert answers(away) == answers(near)
    assert away.search_stats == near.search_stats


#: rare ends: most steps complete nothing
QUIET_CASE = dict(rule="none", seed=3, vocab=8, eos_bias=-2.0, sharpness=2.0, beam=4, batch=2, n_best=1,
                  max_length=9, src_lens=[5, 7], reward=0.0, ratio=1.0, alpha=1.0, group=None, block=0)


@SETTINGS
@given(cases(), st.sampled_from(["default", "optimal", "exhaustive", "shrinking", "opennmt2017"]), st.booleans(),
       st.sampled_from([None, "cpu"]))
@example(QUIET_CASE, "optimal", False, None)
def test_a_quiet_step_answers_as_a_merged_one(case, stop, block, host):
    """The quiet steps (nothing completed: no merge, no count, where reading that costs nothing) give
    the same hypotheses, scores and statistics as merging the empty set every step, as next to an accelerator
    (``QUIET_CASE`` checks that the skip is taken)."""
    from onmt_optimal.search import step as module

    case = dict(case, block=2 if block else 0)
    merges, inner = [0], module.collect

    def counted(**kwargs):
        merges[0] += 1
        return inner(**kwargs)

    module.collect = counted
    try:
        # free_reads=True: the skip is taken on any device (next to CUDA the default reads nothing, so as not
        # to wait for the device; the answers must not depend on that choice)
        quiet = decode(case, stop, host=host, free_reads=True)
        n_quiet = merges[0]
        loud = decode(case, stop, host=host, free_reads=False)
    finally:
        module.collect = inner
    assert merges[0] - n_quiet >= n_quiet  # the quiet decode merged no more often than the loud one
    assert answers(quiet) == answers(loud)
    assert quiet.search_stats == loud.search_stats
    if case == QUIET_CASE and stop == "optimal":  # (a case with quiet steps: the skip is taken)
        assert n_quiet < merges[0] - n_quiet



DTYPES = [torch.long, torch.int32, torch.float64, torch.float, torch.float16, torch.bfloat16, torch.bool]


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(DTYPES), st.integers(0, 5), st.integers(1, 7)), min_size=1, max_size=6),
       st.integers(0, 2 ** 31 - 1))
def test_the_step_s_facts_cross_as_one_tensor_of_bytes(pieces, seed):
    """``transfer.pack``/``unpack``: any tensors of any dtypes and shapes (odd sizes included, whose bytes end off
    the next piece's alignment) cross as one ``cat``, larger elements first, and come back as views bit for bit
    (compared as bytes: a NaN too); in another order the packing refuses them."""
    from onmt_optimal.search.transfer import pack, unpack

    g = torch.Generator().manual_seed(seed)
    sent = [torch.randint(-2 ** 31, 2 ** 31 - 1, (B, beam), generator=g, dtype=torch.long).to(dtype)
            if not dtype.is_floating_point else torch.randn((B, beam), generator=g).to(dtype)
            for dtype, B, beam in pieces]
    ordered = sorted(sent, key=lambda x: -x.element_size())
    packed = pack(ordered)
    assert packed.dim() == 1 and packed.dtype == torch.int8
    back = unpack(packed.clone(), ordered)
    for x, y in zip(ordered, back):
        assert y.dtype == x.dtype and y.shape == x.shape
        assert torch.equal(y.reshape(-1).view(torch.int8), x.reshape(-1).view(torch.int8))
    if len({x.element_size() for x in sent}) > 1:  # then some size grows along the reversed list
        with pytest.raises(ValueError):
            pack(ordered[::-1])


def test_the_bookkeeping_goes_to_the_host_next_to_a_cuda_model_only():
    """The default host, ``AUTO``: the CPU for a decode on a CUDA device, else next to the decode (on CPU, where
    this runs, the default place; on a CUDA test device, the host). An explicit place is kept."""
    from onmt_optimal.search.transfer import AUTO

    src_len = torch.tensor([3, 4], device=DEVICE)
    for host, expected in ((None, None), ("cpu", torch.device("cpu")),
                           (AUTO, torch.device("cpu") if DEVICE.type == "cuda" else None)):
        strategy = build("none", "optimal", beam=3, batch=2, n_best=1, max_length=6, host=host)
        strategy.initialize(torch.zeros(2, 4, 1, device=DEVICE), src_len)
        assert strategy.place.host == expected


@SETTINGS
@given(cases(rules=("none",)), st.booleans())
def test_a_beam_of_one_is_stock_s_search_scored_afterwards(case, shrinks):
    """``search.beam_of_one``: with one item of beam, stock OpenNMT-py's own ``BeamSearch``, its answer scored by
    ``beam_of_one.records``, gives every rule's record (steps, stop reason, score, log p, lengths, counts, tokens)
    as the core does when it runs the whole decode for all of them at once."""
    from onmt.translate.beam_search import BeamSearch

    from onmt_optimal.search import beam_of_one

    grid = [("none", 0.0), ("avg", 0.0), ("wu", 0.0), ("reward", case["reward"]), ("wreward", 0.7), ("bp", 0.0)]
    stops = [name for name, rule in STOPPING_RULES.items() if rule.shrinks == shrinks]
    rules = [(scoring_rule(rule, reward, case["ratio"], case["alpha"]), STOPPING_RULES[stop]())
             for rule, reward in grid for stop in stops]
    for rule, _ in rules:
        rule.own = False  # scored from log p, as on a shared beam (the decode ranks by log p)
    model = case_model(case)
    examples = list(range(case["batch"]))
    common = dict(batch_size=case["batch"], pad=PAD, bos=BOS, eos=EOS, unk=UNK, start=BOS, n_best=1,
                  global_scorer=make_scorer("none"), min_length=0, max_length=case["max_length"],
                  return_attention=False, block_ngram_repeat=0, exclusion_tokens=set(), stepwise_penalty=False,
                  ratio=0.0, ban_unk_token=False)
    core = CertifiedBeamSearch(1, rules=rules, **common)
    run_strategy(core, model, examples, case["src_lens"])
    stock = BeamSearch(1, **common)
    run_strategy(stock, model, examples, case["src_lens"])
    tokens = [stock.predictions[b][0].tolist() for b in examples]
    records = beam_of_one.records(rules, [float(stock.scores[b][0]) for b in examples], [len(t) for t in tokens],
                                  [t[-1] == EOS for t in tokens], case["src_lens"], case["max_length"], DEVICE)
    for b in examples:
        ended = tokens[b][-1] == EOS
        assert [r.with_tokens(tokens[b][:-1] if ended else tokens[b]) for r in records[b]] == core.rule_results[b]


@pytest.mark.skipif(DEVICE.type != "cuda", reason="compares CUDA's arithmetic with the host's imitation of it")
@SETTINGS
@given(cases(rules=("avg", "wu")))
def test_the_host_divides_as_the_cuda_device(case):
    """``StepView.like_cuda``: a normalized score and its bound computed on the host for a CUDA decode are the
    numbers the device computes, to the bit (``ONMT_OPTIMAL_TEST_DEVICE=cuda``, ``scripts/gpu_run.sh`` part 1)."""
    from onmt_optimal.search.scoring import StepView

    rule = StockScore(case["rule"], case["alpha"], own=False)
    x = torch.randn(64, 8, generator=torch.Generator().manual_seed(case["seed"])).abs().neg() * 30
    for t in range(1, case["max_length"] + 1):
        def view(log_prob, like_cuda):
            return StepView(log_prob=log_prob, eos=log_prob > 0, src_len=torch.ones(64, device=log_prob.device),
                            t=t, max_length=case["max_length"], like_cuda=like_cuda)
        device, host = view(x.to(DEVICE), False), view(x, True)
        assert torch.equal(rule.final(device).cpu(), rule.final(host))
        assert torch.equal(rule.bound(device).cpu(), rule.bound(host))
