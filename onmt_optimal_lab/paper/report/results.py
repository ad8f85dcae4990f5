"""The result files of a reproduction and their rows.

``dev_sweep.json``: every decoder family x beam size x reward on dev (``Sweep``). ``test_eval.json``: each family
at its dev-tuned setting (``setting`` "tuned"; rows without a setting predate the fixed ones) and the fixed
settings (the two baselines at fixed beams, the steps-saved decodes), each naming its output
``hyps/test.KEY.txt``.
"""
from __future__ import annotations

import json
from pathlib import Path

from onmt_optimal_lab.paper.report.paper import BASELINE, FAMILIES, PAPER_B, REWARD_FAMILIES


def load(results: Path):
    dev = json.loads((results / "dev_sweep.json").read_text())
    test_path = results / "test_eval.json"
    test = json.loads(test_path.read_text()) if test_path.exists() else None
    return dev, test


def same_r(a, b) -> bool:
    return abs(float(a or 0.0) - float(b or 0.0)) < 1e-9


class Sweep:
    """The dev sweep's rows, indexed by family (and reward for the reward families)."""

    def __init__(self, dev: dict):
        self.meta = dev["meta"]
        self.rows = dev["rows"]
        self.beams = sorted(self.meta.get("beams") or {r["beam"] for r in self.rows})
        self.rewards = list(self.meta["rewards"])

    def series(self, family: str, reward=None) -> list[dict]:
        """Rows of one family sorted by beam; reward families are filtered to one reward."""
        rows = [r for r in self.rows if r["family"] == family
                and (family not in REWARD_FAMILIES or same_r(r["reward"], reward))]
        return sorted(rows, key=lambda r: r["beam"])

    def at(self, family: str, beam: int, reward=None) -> dict | None:
        return next((r for r in self.series(family, reward) if r["beam"] == beam), None)

    def table2_series(self, r) -> list[dict]:
        return self.series("optimal") if same_r(r, 0.0) else self.series("optimal_reward", r)

    def tuned_from_dev(self, family: str) -> dict | None:
        """The family's best (beam, reward) on dev over the whole sweep."""
        return best([r for r in self.rows if r["family"] == family])


def best(rows: list[dict]) -> dict | None:
    """Row with the highest BLEU; ties go to the smallest beam, then the smallest reward."""
    if not rows:
        return None
    return min(rows, key=lambda r: (-r["bleu"], r["beam"], float(r["reward"] or 0.0)))


def tuned_rows(test: dict | None) -> dict:
    """family -> its test row at the dev-tuned setting (rows without a ``setting`` predate the fixed ones)."""
    return {r["family"]: r for r in (test or {}).get("rows", []) if r.get("setting", "tuned") == "tuned"}


def fixed_rows(test: dict | None) -> list[dict]:
    """Test rows at fixed beam sizes (the two baselines at b = 5 and 16, the steps-saved decodes)."""
    return [r for r in (test or {}).get("rows", []) if r.get("setting") == "fixed"]


def fixed_row(test: dict | None, family: str, beam: int) -> dict | None:
    return next((r for r in fixed_rows(test) if r["family"] == family and r["beam"] == beam), None)


def baseline_row(test: dict | None, family: str = BASELINE) -> dict | None:
    """The test row a baseline family is compared at: its dev-tuned row (as the paper tuned its baseline), else
    its row at the paper's b (results made before the baseline was tuned)."""
    return tuned_rows(test).get(family) or fixed_row(test, family, PAPER_B)


def row_key(row: dict) -> str | None:
    """The output's key (``default.b16``) from its hypothesis file ``hyps/test.KEY.txt``."""
    hyp = row.get("hyp")
    return Path(hyp).name[len("test."):-len(".txt")] if hyp else None


def tuned_settings(sweep: Sweep, test: dict | None) -> dict:
    """family -> (beam, reward): from test_eval.json (the sweep's own dev tuning) or else the dev argmax."""
    out = {}
    test_rows = tuned_rows(test)
    for fam in FAMILIES:
        if fam in test_rows:
            out[fam] = (test_rows[fam]["beam"], test_rows[fam]["reward"])
        else:
            b = sweep.tuned_from_dev(fam)
            if b is not None:
                out[fam] = (b["beam"], b["reward"])
    return out

