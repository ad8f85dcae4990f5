"""The paper's numbers and the names of the decoders it compares (Huang, Zhao & Ma 2017, Section 5).

The paper's rows are Chinese-English, NIST 06 dev / NIST 08 test, 4 references. Its baseline is the search of
OpenNMT-py, the PyTorch port of OpenNMT, as it was in early 2017 (Section 2 and 5.1 of the paper: the search stops
when the top hypothesis of a step is completed and returns it); here that is ``HISTORICAL`` (``-stopping
opennmt2017``), so the paper's "OpenNMT-py default" row of Table 3 is set against it. OpenNMT-py 3.5.1's default
(``default``, which keeps every completed hypothesis and returns the best) came later and is a second baseline.
``FAMILIES`` orders the decoder families in every table; ``LABELS`` names them.
"""
from __future__ import annotations

HISTORICAL = "opennmt2017"
BASELINE = HISTORICAL  # the paper's baseline
FAMILIES = [HISTORICAL, "default", "default_avg", "shrinking_norm", "shrinking_reward", "optimal", "optimal_reward"]
REWARD_FAMILIES = {"shrinking_reward", "optimal_reward"}
LABELS = {
    HISTORICAL: "OpenNMT-py of early 2017 (the paper's baseline)",
    "default": "OpenNMT-py 3.5.1 default (log-prob)",
    "default_avg": "OpenNMT-py 3.5.1 default, avg length norm.",
    "shrinking_norm": "shrinking, len. norm.",
    "shrinking_reward": "shrinking, reward",
    "optimal": "optimal beam search (r=0)",
    "optimal_reward": "optimal beam search, bounded reward",
}
PAPER_TABLE2 = {  # r -> (BLEU, length ratio, best b); r = 0.5 is in the paper's grid but not in its table
    0.0: (32.2, 0.88, 4), 1.0: (34.6, 0.95, 17), 1.1: (34.6, 0.96, 17), 1.2: (34.7, 0.97, 15),
    1.3: (34.6, 0.98, 20), 1.4: (34.6, 0.98, 20), 1.5: (34.6, 0.99, 17),
}
PAPER_TABLE3 = {  # family -> (b, r, dev BLEU, test BLEU); its "OpenNMT-py default" row is the paper's baseline
    HISTORICAL: (16, None, 33.60, 29.75),
    "shrinking_norm": (17, None, 33.71, 30.11),
    "shrinking_reward": (15, 1.3, 34.42, 30.37),
    "optimal_reward": (15, 1.2, 34.70, 30.61),
}
PAPER_MOSES = (70, 30.14, 29.41)

LENGTH_FIXES = ["default_avg", "shrinking_norm", "shrinking_reward", "optimal_reward"]
PAPER_B = 16  # the beam of the paper's baseline row (its Table 3), tuned on its dev set
PAPER_NAME = "Huang et al. (2017)"
