"""README's figures come from the files that make them: each number of its results table is in the results
README its row links (rendered by ``scripts/make_report.py`` from the committed JSON, which
``make_report.py --check`` holds to it)."""
from __future__ import annotations

import re

from helpers.doc_blocks import ROOT

NUMBER = re.compile(r"[+-]?\d+\.\d+")


def _headline_rows() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return [line for line in readme.splitlines() if line.startswith("| ") and "](results/" in line]


def test_each_figure_of_the_results_table_is_in_its_results_readme():
    rows = _headline_rows()
    assert len(rows) == 2
    for row in rows:
        source = ROOT / re.search(r"\]\((results/[^)]+)\)", row)[1]
        text = source.read_text(encoding="utf-8")
        figures = NUMBER.findall(row.split("|", 2)[2])
        assert figures
        missing = [f for f in figures if f not in text]
        assert not missing, f"{source.relative_to(ROOT)} does not give {missing}: {row}"
