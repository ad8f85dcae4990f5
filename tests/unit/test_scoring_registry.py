"""The registry of scoring rules (``search.scoring.SCORING_RULES``): each rule declares its options (rows of
``option_table``), when they select it, the checks of their values, how it is made from them and the values
that ask for it in a sweep's setting; validation (``flags.check_search``) and construction
(``search.registry.rules``) go through it, so a rule's option names are spelled in few modules, and a rule
registered elsewhere (here, a toy one) is chosen and checked by its options without any other module knowing it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from onmt_optimal.errors import OptionError, OptionTypeError
from onmt_optimal.flags import Flags, check_search, score_switches
from onmt_optimal.option_table import BY_NAME, OPENNMT, VLLM
from onmt_optimal.search import limits, registry, scoring
from onmt_optimal.search.scoring import BoundedWordReward, BPNorm, ScoringRule, WordReward

PACKAGE = Path(__file__).resolve().parents[2] / "onmt_optimal"

#: the most package modules that may spell one rule's own option (its switch): the option table, the rule's
#: module, the registry, and the signatures of transformers' and vLLM's ``optimal_beam_search``, with one to spare
MOST_MODULES = 6


def test_every_rule_declares_options_of_the_table():
    assert list(scoring.SCORING_RULES) == ["bp_norm", "bounded_reward", "word_reward"]
    for name, rule in scoring.SCORING_RULES.items():
        assert rule.name == name
        assert rule.options and all(option in BY_NAME for option in rule.options), name
        assert all(option in BY_NAME for option, _ in rule.needs), name
    assert score_switches() == ("length_reward", "bp_norm")  # in the table's order, as the messages list them


@pytest.mark.parametrize("values, rule", [
    ({"length_reward": 1.0, "length_ratio": 1.2}, BoundedWordReward),
    ({"length_reward": 1.0}, WordReward),
    ({"bp_norm": True, "length_ratio": 1.2}, BPNorm),
    ({"bp_norm": True, "length_ratio": 1.2, "length_reward": 1.0}, BPNorm),  # precedence (refused by validation)
])
def test_options_select_a_rule_of_the_registry(values, rule):
    (made,) = registry.rules("optimal", lambda: pytest.fail("the toolkit's own score"), **values)
    assert type(made.scoring) is rule
    assert type(Flags.of(OPENNMT, **values).rules(lambda: None)[0].scoring) is rule


def test_no_option_is_the_toolkits_own_score():
    own = ScoringRule()
    assert registry.rules("optimal", lambda: own)[0].scoring is own
    assert registry.rules("optimal", lambda: own, length_reward=0.0, bp_norm=False)[0].scoring is own
    assert not Flags.of(OPENNMT).scores and not Flags.of(OPENNMT).active


class _Toy(ScoringRule):
    """A rule no module of the package knows: selected by its own option ``toy``."""

    name = "toy"
    options = ("toy",)

    def __init__(self, weight: float):
        self.weight = weight

    @classmethod
    def selected(cls, values):
        return values.get("toy") is not None

    @classmethod
    def from_options(cls, values):
        return cls(values["toy"])


def test_a_registered_rule_is_available_by_name(monkeypatch):
    monkeypatch.setattr(scoring, "SCORING_RULES", dict(scoring.SCORING_RULES))  # restored after the test
    assert scoring.register(_Toy) is _Toy
    assert scoring.SCORING_RULES["toy"] is _Toy
    (rule,) = registry.rules("optimal", lambda: pytest.fail("the toolkit's own score"), toy=0.5)
    assert isinstance(rule.scoring, _Toy) and rule.scoring.weight == 0.5
    assert "toy" in scoring.switches() and "toy" in scoring.option_names()
    with pytest.raises(ValueError, match="registered already"):
        scoring.register(_Toy)


def test_registering_in_a_test_leaves_the_registry_as_it_was():
    assert "toy" not in scoring.SCORING_RULES


def test_the_reward_rules_declare_its_check():
    assert scoring.option_checks() == (("length_reward", limits.reward_error),)  # declared by two rules, run once
    assert all(rule.checks == scoring.option_checks() for rule in (BoundedWordReward, WordReward))
    assert not BPNorm.checks


@pytest.mark.parametrize("toolkit, value, error, line", [
    (OPENNMT, -1.0, OptionError, "-length_reward must be a finite number >= 0 (got -1.0)"),
    (VLLM, "1", OptionTypeError, "length_reward must be a finite number >= 0 (got '1')"),
    (VLLM, 1e37, OptionError, "length_reward 1e+37 is too large for float32 scores: length_reward * max_length "
                              "(250) must stay below a quarter of float32's largest value, so at most 3.40282e+35"),
])
def test_validation_runs_the_rules_checks(toolkit, value, error, line):
    with pytest.raises(error) as caught:
        check_search(Flags.of(toolkit, length_reward=value), toolkit, max_length=250)
    assert str(caught.value) == line


def test_a_request_length_names_the_check_where_the_largest_length_is_not_known():
    assert limits.reward_error("length_reward", 1e308, None) is None
    assert limits.reward_error("length_reward", 1e308, None, per="max_tokens") == (
        "length_reward 1e+308 is too large for float32 scores at any max_tokens: at most 8.50706e+37 (divided by "
        "a request's max_tokens)")
    assert limits.reward_error("length_reward", 1.0, None, per="max_tokens") is None


class _Checked(_Toy):
    """A toy rule that declares a check of an option of the table (``length_ratio``): refuses 7."""

    name = "checked"
    checks = (("length_ratio", lambda name, value, T, per=None: f"{name} 7 is refused by the toy" if value == 7
               else None),)


def test_a_registered_rules_check_runs_without_another_module_knowing_it(monkeypatch):
    monkeypatch.setattr(scoring, "SCORING_RULES", dict(scoring.SCORING_RULES))
    check_search(Flags.of(OPENNMT, length_ratio=7.0))
    scoring.register(_Checked)
    with pytest.raises(OptionError, match="^-length_ratio 7 is refused by the toy$"):
        check_search(Flags.of(OPENNMT, length_ratio=7.0))
    check_search(Flags.of(OPENNMT, length_ratio=1.5))


@pytest.mark.parametrize("name", list(scoring.SCORING_RULES))
@pytest.mark.parametrize("reward, ratio", [(1.5, 1.2), (0.5, 0.9)])
def test_a_rules_setting_asks_for_it(name, reward, ratio):
    """``setting`` is ``from_options``' inverse: its values select the rule, first, and make it with them."""
    rule = scoring.SCORING_RULES[name]
    values = rule.setting(reward, ratio if rule is not WordReward else None)
    assert set(values) <= set(rule.options) and scoring.select(values)[0] is rule
    made = scoring.build(values, lambda: pytest.fail("the toolkit's own score"))
    assert type(made) is rule and getattr(made, "reward", reward) == reward
    assert getattr(made, "ratio", None) == (None if rule is WordReward else ratio)


@pytest.mark.parametrize("score, kind", [("bounded_reward", BoundedWordReward), ("word_reward", WordReward),
                                         ("bp_norm", BPNorm)])
def test_a_decoder_of_a_registered_score_gets_its_rule(score, kind):
    assert type(registry.Decoder("d", "optimal", score, 1.5).rule(1.2).scoring) is kind


def _modules_spelling(name: str) -> list[str]:
    pattern = re.compile(rf"\b{re.escape(name)}\b")
    return sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                  if pattern.search(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", scoring.switches())
def test_a_rules_own_option_is_spelled_in_few_modules(name):
    """A rule's own option (its switch: the others a rule reads, ``length_ratio`` and ``bound``, are the search's
    options that other parts read too) is spelled where the brief allows: ``MOST_MODULES``."""
    modules = _modules_spelling(name)
    assert len(modules) <= MOST_MODULES, f"{name} is spelled in {len(modules)} package modules: {modules}"
