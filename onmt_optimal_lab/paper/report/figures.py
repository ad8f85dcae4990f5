"""The paper's Figures 1 (model score vs beam size) and 2 (BLEU and length ratio vs beam size) from the dev sweep,
drawn with matplotlib's Agg backend as PNG bytes; they carry no software version, so reruns are byte-identical."""
from __future__ import annotations

import io

from onmt_optimal_lab.paper.report.cells import fmt_r
from onmt_optimal_lab.paper.report.paper import FAMILIES, HISTORICAL, LABELS, REWARD_FAMILIES
from onmt_optimal_lab.paper.report.results import Sweep

STYLE = {  # colour, marker, line style of each family's curve
    "default": ("tab:blue", "o", "-"),
    "default_avg": ("tab:cyan", "v", "--"),
    "shrinking_norm": ("tab:green", "s", "-"),
    "shrinking_reward": ("tab:olive", "D", "--"),
    "optimal": ("tab:red", "^", "-"),
    "optimal_reward": ("tab:purple", "*", "-"),
    HISTORICAL: ("tab:gray", "x", ":"),
}


def _pyplot():
    """matplotlib's pyplot on the Agg backend (files only, no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plot_series(ax, sweep, fam, reward, key, label):
    rows = sweep.series(fam, reward)
    if not rows:
        return
    colour, marker, ls = STYLE[fam]
    ax.plot([r["beam"] for r in rows], [r[key] for r in rows], color=colour, marker=marker, linestyle=ls,
            markersize=5, linewidth=1.5, label=label)


def _beam_ticks(ax, beams):
    step = 1 if len(beams) <= 10 else 5
    ax.set_xticks([b for b in beams if b == beams[0] or b % step == 0])


def _png(plt, fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=150, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def fig1(sweep: Sweep) -> bytes:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.2))
    _plot_series(ax, sweep, "default", None, "mean_log_prob", LABELS["default"])
    _plot_series(ax, sweep, "optimal", None, "mean_log_prob", "optimal beam search")
    _plot_series(ax, sweep, HISTORICAL, None, "mean_log_prob", LABELS[HISTORICAL])
    ax.set_xlabel("beam size b")
    ax.set_ylabel("mean model score (log-probability of the 1-best)")
    ax.set_title(f"Model score vs beam size ({sweep.meta['dataset']} dev)")
    ax.grid(alpha=0.3)
    _beam_ticks(ax, sweep.beams)
    ax.legend()
    fig.tight_layout()
    return _png(plt, fig)


def fig2(sweep: Sweep, tuned: dict) -> bytes:
    plt = _pyplot()
    fig, (ax_b, ax_l) = plt.subplots(1, 2, figsize=(12, 5.4))
    for fam in FAMILIES:
        reward = tuned.get(fam, (None, None))[1] if fam in REWARD_FAMILIES else None
        label = LABELS[fam] + (f" r={fmt_r(reward)}" if fam in REWARD_FAMILIES else "")
        _plot_series(ax_b, sweep, fam, reward, "bleu", label)
        _plot_series(ax_l, sweep, fam, reward, "length_ratio", label)
    ax_l.axhline(1.0, color="gray", linestyle=":", linewidth=1)
    ax_b.set_title("(a) BLEU vs beam size")
    ax_l.set_title("(b) length ratio vs beam size")
    ax_b.set_ylabel("BLEU")
    ax_l.set_ylabel("length ratio (hypothesis / reference)")
    for ax in (ax_b, ax_l):
        ax.set_xlabel("beam size b")
        ax.grid(alpha=0.3)
        _beam_ticks(ax, sweep.beams)
    handles, labels = ax_b.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9, frameon=False)
    fig.suptitle(f"{sweep.meta['dataset']} dev")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return _png(plt, fig)

