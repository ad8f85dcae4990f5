"""The registry of scoring rules (``search.scoring.SCORING_RULES``): each rule declares its options (rows of
``option_table``), when they select it and how it is made from them; validation (``flags.check_search``) and
construction (``search.registry.rules``) go through it, so a rule's option names are spelled in few modules,
and a rule registered elsewhere (here, a toy one) is chosen by its options without any other module knowing it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from onmt_optimal.flags import Flags, score_switches
from onmt_optimal.option_table import BY_NAME, OPENNMT
from onmt_optimal.search import registry, scoring
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


def _modules_spelling(name: str) -> list[str]:
    pattern = re.compile(rf"\b{re.escape(name)}\b")
    return sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                  if pattern.search(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", sorted({rule.switch() for rule in scoring.SCORING_RULES.values()}
                                        - {"length_reward"}))
def test_a_rules_own_option_is_spelled_in_few_modules(name):
    modules = _modules_spelling(name)
    assert len(modules) <= MOST_MODULES, f"{name} is spelled in {len(modules)} package modules: {modules}"
