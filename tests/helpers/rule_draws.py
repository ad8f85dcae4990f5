"""The scoring rules the certificate bounds, drawn for the property tests on ``SyntheticModel``: the strategies of
a rule by name and of the synthetic model it decodes, and the rule built from its name and parameters."""
from __future__ import annotations

from hypothesis import strategies as st

from onmt_optimal.search.scoring import BoundedWordReward, BPNorm, StockScore, WordReward

#: a rule by name, the synthetic model's seed, sharpness and end-of-sentence bias, the length, OpenNMT's alpha
RULE_AND_MODEL = dict(
    rule=st.sampled_from(["none", "avg", "wu", "reward", "wreward", "bp"]),
    seed=st.integers(0, 10**6),
    sharpness=st.sampled_from([0.3, 2.0, 8.0]),
    eos_bias=st.floats(-3, 3),
    T=st.integers(1, 5),
    alpha=st.sampled_from([0.2, 0.6, 1.0, 2.0]),
)


def scoring(rule: str, alpha: float, reward: float, ratio: float):
    """The rule named ``rule``: ``reward`` the bounded length reward (``reward``, ``ratio``), ``wreward`` the
    unbounded one, ``bp`` BP-norm (``ratio``), any other name OpenNMT's length penalty of that name (``alpha``)."""
    if rule == "reward":
        return BoundedWordReward(reward, ratio)
    if rule == "wreward":
        return WordReward(reward)
    if rule == "bp":
        return BPNorm(ratio)
    return StockScore(rule, alpha)
