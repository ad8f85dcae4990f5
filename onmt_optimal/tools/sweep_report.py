"""What a sweep's rows say: a table, the best setting, the options that use it, and a figure.

``summarize`` makes the row of one decode of the transformers and vLLM sweeps (the OpenNMT-py and eole sweep's:
``sweep.summarize``, with the same keys).
``best`` is the row of highest BLEU (the first such row, in the sweep's order, on a tie). ``settings`` turns a
row into the options of the toolkit that decode with it: OpenNMT-py's and eole's YAML keys (``yaml_snippet``);
``reward_options`` is a reward's options in every sweep's settings, as the scoring rules spell them.
``plot`` draws BLEU, length ratio and mean steps against the beam size, one line per decoder and reward, into a
PNG (matplotlib, ``requirements-plots.txt``).
"""
from __future__ import annotations

import collections
import math

from onmt_optimal.errors import Fault

# family -> (stopping, length_penalty, whether r is a bounded reward (with length_ratio))
FAMILIES = {
    "default": ("default", "none", False),
    "opennmt2017": ("opennmt2017", "none", False),
    "default_avg": ("default", "avg", False),
    "optimal": ("optimal", "none", False),
    "optimal_reward": ("optimal", "none", True),
    "shrinking_norm": ("shrinking", "avg", False),
    "shrinking_reward": ("shrinking", "none", False),
}


class PlotError(Fault, RuntimeError):
    """``--plot`` cannot be drawn (matplotlib missing); the message is one line."""

    status = 2


def _mean(values) -> float | None:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return sum(finite) / len(finite) if finite else None


def summarize(family: str, beam: int, reward: float | None, records: list[dict], refs: list[list[str]]) -> dict:
    """The row of one decode whose ``records`` are dicts of a ``Record``'s fields with ``text`` (the transformers
    and vLLM sweeps), with ``sweep.summarize``'s keys (mean scores over the finite ones; None where none is)."""
    from onmt_optimal.tools.evaluate import corpus_score

    score = corpus_score([r["text"] for r in records], refs)
    n = len(records)
    return {
        "family": family, "beam": beam, "reward": reward,
        "bleu": round(score.bleu, 4), "length_ratio": round(score.length_ratio, 5),
        "mean_log_prob": _mean(r["log_prob"] for r in records),
        "mean_score": _mean(r["score"] for r in records),
        "mean_steps": sum(r["steps"] for r in records) / n,
        "mean_length": sum(r["length"] for r in records) / n,
        "sentences": n,
        "stop_reasons": dict(collections.Counter(r["stop_reason"] for r in records).most_common()),
        "signature": score.signature,
    }


def best(rows: list[dict]) -> dict:
    """The row of highest BLEU; the first in ``rows``' order on a tie."""
    return max(rows, key=lambda row: row["bleu"])


def reward_options(reward: float, ratio: float | None = None) -> dict:
    """The options (by name) of a decode with length reward ``reward``: the bounded reward at length ratio
    ``ratio``, or without one the per-word reward (``ScoringRule.setting`` of the rule they ask for), the
    same names in every toolkit (OpenNMT-py's and eole's keys, transformers' and vLLM's keyword arguments)."""
    from onmt_optimal.search.scoring import BoundedWordReward, WordReward

    return (WordReward if ratio is None else BoundedWordReward).setting(reward, ratio)


def settings(row: dict, ratio: float) -> dict:
    """The options (OpenNMT-py's and eole's names) that decode as ``row`` did."""
    stopping, penalty, bounded = FAMILIES[row["family"]]
    out = {"beam_size": row["beam"], "length_penalty": penalty, "stopping": stopping}
    if row["reward"] is not None:
        out.update(reward_options(row["reward"], round(ratio, 4) if bounded else None))
    return out


def yaml_snippet(row: dict, ratio: float) -> str:
    """``settings`` as YAML lines for ``onmt_translate -config`` / ``eole predict -config``."""
    head = (f"# best on the sweep's dev set: {label(row)}, BLEU {row['bleu']:.2f}, "
            f"length ratio {row['length_ratio']:.3f}, mean steps {row['mean_steps']:.2f}\n")
    return head + "".join(f"{key}: {value}\n" for key, value in settings(row, ratio).items())


def label(row: dict) -> str:
    return f"{row['family']} b={row['beam']}" + ("" if row["reward"] is None else f" r={row['reward']:g}")


def table(rows: list[dict]) -> str:
    """One line a row: decoder, b, r, BLEU, length ratio (hypothesis / reference), mean steps."""
    width = max(len("decoder"), *(len(row["family"]) for row in rows))
    lines = [f"{'decoder':<{width}} {'b':>4} {'r':>5} {'BLEU':>7} {'len ratio':>9} {'steps':>7}"]
    for row in rows:
        reward = "-" if row["reward"] is None else f"{row['reward']:g}"
        lines.append(f"{row['family']:<{width}} {row['beam']:>4} {reward:>5} {row['bleu']:>7.2f} "
                     f"{row['length_ratio']:>9.3f} {row['mean_steps']:>7.2f}")
    return "\n".join(lines) + "\n"


def check_plot() -> None:
    """A ``PlotError`` line when matplotlib cannot be imported (checked before any decode)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise PlotError("--plot needs matplotlib: pip install -r requirements-plots.txt") from None


def plot(rows: list[dict], path: str) -> None:
    """BLEU, length ratio and mean steps against b, a line per decoder and reward, into the PNG ``path``."""
    check_plot()
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    series: dict[str, list[dict]] = {}
    for row in rows:
        series.setdefault(label(row).replace(f" b={row['beam']}", ""), []).append(row)
    figure, axes = pyplot.subplots(1, 3, figsize=(15, 4.5))
    for axis, key, name in zip(axes, ("bleu", "length_ratio", "mean_steps"), ("BLEU", "length ratio", "mean steps")):
        for name_of_series, points in series.items():
            points = sorted(points, key=lambda row: row["beam"])
            axis.plot([p["beam"] for p in points], [p[key] for p in points], marker=".", label=name_of_series)
        axis.set_xlabel("beam size b")
        axis.set_ylabel(name)
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, format="png")
    pyplot.close(figure)
