"""The new ``onmt_translate`` flags, their validation, and the search they select.

``add_options`` adds one argument group to any OpenNMT-py translate parser (CLI and YAML alike, since
OpenNMT-py's configargparse reads YAML keys through the same parser). ``SearchConfig.from_opt`` turns the
parsed options into a scoring rule and a stopping rule, or says that stock OpenNMT-py search is asked for.
Every impossible combination raises ``OptionError`` with a one-line message.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from onmt_optimal.scoring import BoundedWordReward, ScoringRule, StockScore
from onmt_optimal.stopping import STOPPING_RULES, StoppingRule

GROUP_TITLE = "Optimal stopping (onmt-optimal)"


class OptionError(ValueError):
    """A flag value or combination that cannot be honoured; the message is one line, fit for the user."""


def add_options(parser) -> None:
    """Register the flags on an OpenNMT-py ``ArgumentParser`` (idempotent)."""
    if any(getattr(a, "dest", None) == "stopping" for a in parser._actions):
        return
    group = parser.add_argument_group(
        GROUP_TITLE,
        "Huang, Zhao & Ma (2017), 'When to Finish? Optimal Beam Search for Neural Text Generation'. "
        "With none of these flags onmt_translate is stock OpenNMT-py.",
    )
    group.add(
        "--stopping",
        "-stopping",
        default="default",
        metavar="{" + ",".join(STOPPING_RULES) + "}",
        help="When beam search stops. 'default': OpenNMT-py's rule (the top item of the beam is finished). "
        "'optimal': the optimality certificate (Sec. 3 and 4): stop once the n_best-th best completed "
        "hypothesis scores at least the best bound any live item could still reach; returns the best "
        "hypotheses the beam could ever complete. 'exhaustive': never stop early (to max_length or until "
        "no live item is left); the reference the certificate is checked against.",
    )
    group.add(
        "--length_reward",
        "-length_reward",
        type=float,
        default=0.0,
        metavar="R",
        help="Bounded length reward r (Sec. 4): score(y) = log p(y|x) + r * min(l, |y|), l = "
        "length_ratio * |x|. |y| counts output tokens without EOS, |x| source tokens as the model sees "
        "them (after transforms). Needs -length_ratio and -length_penalty none.",
    )
    group.add(
        "--length_ratio",
        "-length_ratio",
        type=float,
        default=None,
        metavar="RHO",
        help="Estimated output/source length ratio rho (e.g. 1.27 in the paper; estimate it on a dev set "
        "with 'python -m onmt_optimal ratio'). Sets l = rho * |x| for -length_reward.",
    )
    group.add(
        "--stats_file",
        "-stats_file",
        default=None,
        metavar="PATH",
        help="Write one JSON line per input sentence, in input order: decoding steps, stop reason, "
        "final score, raw log-probability, output length |y|, l, source length, completed hypotheses.",
    )


@dataclass
class SearchConfig:
    """What to run: ``scoring``/``stopping`` rules, or stock OpenNMT-py search when ``stock`` is True."""

    stock: bool
    scoring: ScoringRule | None
    stopping: StoppingRule | None
    stats_file: str | None

    @classmethod
    def from_opt(cls, opt, global_scorer) -> "SearchConfig":
        validate(opt)
        stopping_name = getattr(opt, "stopping", "default")
        reward = getattr(opt, "length_reward", 0.0)
        stats_file = getattr(opt, "stats_file", None)
        if stopping_name == "default" and reward == 0 and not stats_file:
            return cls(stock=True, scoring=None, stopping=None, stats_file=None)
        ratio = getattr(opt, "length_ratio", None)
        if reward > 0:
            scoring = BoundedWordReward(reward, ratio)
        elif ratio is not None and not global_scorer.has_len_pen and not global_scorer.has_cov_pen:
            scoring = BoundedWordReward(0.0, ratio)  # raw log p, and l is reported in the statistics
        else:
            scoring = StockScore(global_scorer)
        return cls(stock=False, scoring=scoring, stopping=STOPPING_RULES[stopping_name](), stats_file=stats_file)


def validate(opt) -> None:
    """Raise ``OptionError`` for any value or combination the search cannot honour."""
    stopping = getattr(opt, "stopping", "default")
    reward = getattr(opt, "length_reward", 0.0)
    ratio = getattr(opt, "length_ratio", None)
    if stopping not in STOPPING_RULES:
        raise OptionError(
            f"-stopping must be one of {', '.join(STOPPING_RULES)} (got {stopping!r})"
        )
    if reward is None or math.isnan(reward) or math.isinf(reward) or reward < 0:
        raise OptionError(f"-length_reward must be a finite number >= 0 (got {reward})")
    if ratio is not None and (math.isnan(ratio) or math.isinf(ratio) or ratio <= 0):
        raise OptionError(f"-length_ratio must be a finite number > 0 (got {ratio})")
    if reward > 0 and ratio is None:
        raise OptionError("-length_reward needs -length_ratio RHO (> 0): the reward is bounded by l = RHO * |x|")
    if reward > 0 and getattr(opt, "length_penalty", "none") != "none":
        raise OptionError(
            "-length_reward replaces length normalization: add -length_penalty none "
            f"(got -length_penalty {opt.length_penalty})"
        )
    sampling = getattr(opt, "random_sampling_topk", 0) != 0 or getattr(opt, "random_sampling_topp", 0.0) != 0
    if sampling and (stopping != "default" or reward > 0):
        raise OptionError("-stopping/-length_reward apply to beam search, not to random sampling "
                          "(-random_sampling_topk/-random_sampling_topp)")
    if stopping != "default":
        if getattr(opt, "coverage_penalty", "none") != "none" or getattr(opt, "stepwise_penalty", False):
            raise OptionError(
                f"-stopping {stopping} needs a score that never rises as a hypothesis grows; "
                "a coverage penalty can, so use -coverage_penalty none"
            )
        if getattr(opt, "ratio", 0.0) > 0:
            raise OptionError(f"-stopping {stopping} replaces OpenNMT-py's -ratio stopping rule; drop -ratio")
