"""Property tests: skipping the dead rows (``search.dead``) answers as the unpruned search, exactly.

The certified beam is driven with controlled log-probabilities (``synthetic.SyntheticModel``) twice: as OpenNMT-py's
loop does (every row computed), and computing only the rows ``rows_to_decode`` names, every other row given
``dead.fill``'s log-probabilities (what ``CertifiedTranslator._decode_needed_rows`` does with the decoder). The
answers (n-best scores and tokens), the 1-best's score, log-probability, length and the steps are identical; the
record's ``completed`` may differ (either way) and so may ``stop_reason`` (``search.dead``'s docstring says why). The
proof's premise that a needed row's parent was decoded, which the translator's reordering relies on, is checked at
every step, and so is each record's count of the rows its decode skipped (``rows_skipped``). The option itself
(``-prune_dead``) and the statistic's form are checked at the end.
"""
from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from helpers.synthetic import BOS, EOS, PAD, UNK, SyntheticModel, make_scorer, run_strategy
from helpers.tiers import examples

from onmt_optimal.errors import OptionTypeError
from onmt_optimal.flags import Flags, check_search
from onmt_optimal.option_table import EOLE, OPENNMT
from onmt_optimal.opennmt.beam_search import CertifiedBeamSearch
from onmt_optimal.options import Options, Settings
from onmt_optimal.search import dead
from onmt_optimal.search.record import OPTIONAL_STATS, STATS, Record, with_rows_skipped
from onmt_optimal.search.scoring import BoundedWordReward, BPNorm, StockScore, WordReward
from onmt_optimal.search.stopping import STOPPING_RULES
from onmt_optimal.search.top_k import TopK

SETTINGS = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: the rules pruning holds for (``dead.monotone``)
PRUNABLE = ["none", "reward", "wreward", "bp"]


def scoring(rule, reward, ratio):
    return {"none": lambda: StockScore("none"), "reward": lambda: BoundedWordReward(reward, ratio),
            "wreward": lambda: WordReward(reward), "bp": lambda: BPNorm(ratio)}[rule]()


def build(case, prune: bool, batch: int):
    search = CertifiedBeamSearch(
        case["beam"], batch_size=batch, pad=PAD, bos=BOS, eos=EOS, unk=UNK, start=BOS, n_best=case["n_best"],
        global_scorer=make_scorer("none"), min_length=case["min_length"], max_length=case["max_length"],
        return_attention=False, block_ngram_repeat=case["block"], exclusion_tokens=set(), stepwise_penalty=False,
        ratio=0.0, ban_unk_token=False,
        rules=[(scoring(case["rule"], case["reward"], case["ratio"]), STOPPING_RULES["optimal"]())],
        top_k=TopK(case["group"], 0) if case["group"] else TopK())
    search.prune_dead = prune
    return search


def run_pruned(strategy, model, examples_, src_lens, least=1):
    """``synthetic.run_strategy``, computing only the rows ``rows_to_decode`` names (at least ``least`` a step)
    and spreading them over the last step's numbers as ``CertifiedTranslator._decode_needed_rows`` does
    (``dead.spread``); returns (steps, rows computed, rows in all)."""
    B = len(examples_)
    strategy.initialize(torch.zeros(B, max(src_lens), 1), torch.tensor(src_lens))
    prunes = strategy.prunes  # decided as the search starts (``LineageBeamSearch.will_prune``)
    row_example = torch.tensor(examples_).repeat_interleave(strategy.beam_size)
    rows = strategy.rows_to_decode("cpu", least)[0] if prunes else None
    steps = computed = total_rows = 0
    scores = None
    for _ in range(strategy.max_length):
        seqs = strategy.alive_seq.tolist()
        total = len(seqs)
        chosen = rows.tolist() if prunes else range(total)
        log_probs = torch.stack([model.log_probs(int(row_example[r]), tuple(seqs[r][1:])) for r in chosen])
        if prunes:
            log_probs = scores = dead.spread(scores, rows, log_probs, total)
        strategy.advance(log_probs, None)
        steps += 1
        computed, total_rows = computed + len(chosen), total_rows + total
        if any(any(sub) for sub in strategy.is_finished_list):
            strategy.update_finished()
            if strategy.done:
                break
        if prunes:
            decoded = set(chosen)
            rows, n = strategy.rows_to_decode("cpu", least)
            if least == 1:  # the needed rows alone: each one's parent was decoded
                parents = strategy.select_indices[rows].tolist()
                assert decoded.issuperset(parents), "a needed row's parent was not decoded"
        row_example = row_example[strategy.select_indices]
    return steps, computed, total_rows


def answers(strategy):
    return [[(score, pred.tolist()) for score, pred in zip(strategy.scores[b], strategy.predictions[b])]
            for b in range(strategy.batch_size)]


@st.composite
def cases(draw):
    beam = draw(st.integers(2, 6))
    batch = draw(st.integers(1, 4))
    return dict(
        rule=draw(st.sampled_from(PRUNABLE)), seed=draw(st.integers(0, 10**6)), vocab=draw(st.integers(6, 12)),
        eos_bias=draw(st.floats(-2.0, 3.0)), sharpness=draw(st.sampled_from([0.5, 2.0, 6.0])), beam=beam,
        batch=batch, n_best=draw(st.integers(1, beam)), max_length=draw(st.integers(1, 12)),
        min_length=draw(st.sampled_from([0, 0, 2])), block=draw(st.sampled_from([0, 0, 2])),
        src_lens=draw(st.lists(st.integers(1, 8), min_size=batch, max_size=batch)),
        reward=draw(st.sampled_from([0.0, 0.5, 1.3, 3.0])), ratio=draw(st.sampled_from([0.5, 1.0, 1.27, 2.0])),
        group=draw(st.sampled_from([1, 2, None])), least=draw(st.sampled_from([1, 1, dead.LEAST_ROWS])))


@SETTINGS
@given(cases())
def test_pruned_search_answers_as_the_unpruned_one(case):
    model = SyntheticModel(case["vocab"], case["seed"], case["eos_bias"], case["sharpness"])
    examples_ = list(range(case["batch"]))
    plain, pruned = build(case, False, case["batch"]), build(case, True, case["batch"])
    steps = run_strategy(plain, model, examples_, case["src_lens"])
    pruned_steps, computed, total = run_pruned(pruned, model, examples_, case["src_lens"], case["least"])
    assert not plain.prunes and pruned.prunes
    note(f"rows computed {computed} of {total}")
    event("rows skipped" if computed < total else "no row skipped")
    assert pruned_steps == steps
    assert answers(pruned) == answers(plain)
    for a, b in zip(plain.search_stats, pruned.search_stats):
        for key in ("steps", "score", "log_prob", "length", "target_length", "src_length"):
            assert a[key] == b[key], key
        # ``completed`` may differ either way: a dead item's EOS child is never made, and a needed item's child
        # that takes the freed slot may end
        assert a.rows_skipped is None and b.rows_skipped >= 0
    # each example's record counts the rows its decode skipped: together, every row not computed
    assert sum(b.rows_skipped for b in pruned.search_stats) == total - computed


def test_the_property_test_prunes_something():
    """One fixed case in which dead rows are skipped (so the property above does not pass vacuously)."""
    case = dict(rule="none", seed=7, vocab=10, eos_bias=2.0, sharpness=2.0, beam=5, batch=3, n_best=1,
                max_length=12, min_length=0, block=0, src_lens=[3, 4, 5], reward=0.0, ratio=1.0, group=None,
                least=1)
    model = SyntheticModel(case["vocab"], case["seed"], case["eos_bias"], case["sharpness"])
    plain, pruned = build(case, False, 3), build(case, True, 3)
    run_strategy(plain, model, [0, 1, 2], case["src_lens"])
    _, computed, total = run_pruned(pruned, model, [0, 1, 2], case["src_lens"])
    assert computed < total
    assert answers(pruned) == answers(plain)


@pytest.mark.parametrize("scoring_rule, ok", [
    (StockScore("none"), True), (BoundedWordReward(1.2, 1.3), True), (WordReward(0.5), True),
    (BPNorm(1.2), True), (BPNorm(1.2, "predicted"), False), (StockScore("avg"), False),
    (StockScore("wu"), False), (StockScore("none", coverage=True), False)])
def test_eligible_rules(scoring_rule, ok):
    assert dead.eligible([(scoring_rule, STOPPING_RULES["optimal"]())]) is ok
    for other in ("default", "exhaustive", "shrinking", "opennmt2017"):
        assert not dead.eligible([(scoring_rule, STOPPING_RULES[other]())])
    optimal = STOPPING_RULES["optimal"]()
    assert not dead.eligible([(scoring_rule, optimal), (StockScore("none"), optimal)])


def test_fill_spread_and_needed():
    rows = torch.tensor([0, 2])
    out = dead.fill(rows, torch.tensor([[-1.0, -2.0], [-3.0, -4.0]]), 3)
    assert out.tolist() == [[-1.0, -2.0], [dead.FILL, dead.FILL], [-3.0, -4.0]]
    again = dead.spread(out, torch.tensor([1]), torch.tensor([[-5.0, -6.0]]), 2)
    assert again.tolist() == [[-1.0, -2.0], [-5.0, -6.0]] and again.data_ptr() == out.data_ptr()
    from onmt_optimal.search.scoring import StepView
    view = StepView(log_prob=torch.tensor([[-1.0, -2.0, -3.0]]), eos=torch.zeros(1, 3, dtype=torch.bool),
                    src_len=torch.tensor([2.0]), t=2, max_length=5)
    live = torch.tensor([[True, True, False]])
    got = dead.needed(scoring=StockScore("none"), view=view, live=live, kept_score=torch.tensor([[-1.5]]), n_best=1)
    assert got.tolist() == [[True, False, False]]


def test_off_by_default():
    case = dict(rule="none", beam=3, n_best=1, max_length=5, min_length=0, block=0, reward=0.0, ratio=1.0,
                group=None)
    search = CertifiedBeamSearch(
        3, batch_size=1, pad=PAD, bos=BOS, eos=EOS, unk=UNK, start=BOS, n_best=1, global_scorer=make_scorer("none"),
        min_length=0, max_length=5, return_attention=False, block_ngram_repeat=0, exclusion_tokens=set(),
        stepwise_penalty=False, ratio=0.0, ban_unk_token=False,
        rules=[(StockScore("none"), STOPPING_RULES["optimal"]())])
    search.initialize(torch.zeros(1, 2, 1), torch.tensor([2]))
    assert not search.prunes
    search = build(dict(case), True, 1)
    search.initialize(torch.zeros(1, 2, 1), torch.tensor([2]))
    assert search.prunes


@pytest.mark.parametrize("toolkit", [OPENNMT, EOLE])
def test_the_option(toolkit):
    """``-prune_dead``: a switch of the option table, off by default, carried by ``Options``; alone it asks for
    nothing (stock stays stock); where pruning does not apply it is taken and changes nothing (not refused)."""
    assert Flags.of(toolkit).prune_dead is False
    alone = Flags.of(toolkit, prune_dead=True)
    assert not alone.active and Options.from_records(Settings(), alone, make_scorer("none")).stock
    for stopping in ("optimal", "default", "exhaustive", "shrinking"):
        check_search(Flags.of(toolkit, stopping=stopping, prune_dead=True), toolkit)
    with pytest.raises(OptionTypeError, match="^-prune_dead must be True or False"):
        check_search(Flags.of(toolkit, stopping="optimal", prune_dead="yes"), toolkit)
    flags = Flags.of(toolkit, stopping="optimal", prune_dead=True)
    assert Options.from_records(Settings(), flags, make_scorer("none")).prune_dead
    assert not Options.from_records(Settings(), Flags.of(toolkit, stopping="optimal"),
                                    make_scorer("none")).prune_dead


def test_rows_skipped_in_the_statistics():
    """``rows_skipped`` is written only where a record has it (a run with ``-prune_dead``): without the option the
    statistics file's lines are what they were; with it every record has one (0 where nothing was skipped), and it
    crosses a process boundary (``Record.plain``) with the others."""
    record = Record.empty(0.0)
    assert list(json.loads(record.json(1))) == ["line", *STATS]
    assert with_rows_skipped([record], False) == [record]
    [[counted]] = with_rows_skipped([[record]], True)
    assert list(json.loads(counted.json(1))) == ["line", *STATS, *OPTIONAL_STATS] and counted.rows_skipped == 0
    seven = replace(record, rows_skipped=7)
    assert with_rows_skipped([seven, None], True) == [seven, None]
    assert Record.from_plain(seven.plain()).stats() == seven.stats()
    assert Record.from_plain(record.plain()).stats() == record.stats()
