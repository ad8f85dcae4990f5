"""README's figures come from the files that make them: each number of its tables is in the report its row
links, to the figure's decimals (results READMEs are rendered by ``scripts/make_report.py`` from the committed
JSON, which ``make_report.py --check`` holds to it; benchmark reports are written whole by the command at their
top or foot)."""
from __future__ import annotations

import re

from helpers.doc_blocks import ROOT

NUMBER = re.compile(r"[+-]?\d+\.\d+")
LINK = re.compile(r"\]\(((?:results|benchmarks)/[^)]+)\)")


def _linked_rows() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return [line for line in readme.splitlines() if line.startswith("| ") and LINK.search(line)]


def _given(figure: str, numbers: set[str]) -> bool:
    """``figure`` is one of ``numbers`` rounded to its decimals (the sign kept)."""
    places = len(figure.split(".")[1])
    return any(f"{float(n):+.{places}f}" == f"{float(figure):+.{places}f}" for n in numbers)


def test_each_figure_of_the_readme_tables_is_in_its_report():
    rows = _linked_rows()
    assert len([r for r in rows if "](results/" in r]) >= 3 and any("](benchmarks/" in r for r in rows)
    for row in rows:
        link = LINK.search(row)[1]
        source = ROOT / link
        text = source.read_text(encoding="utf-8")
        cells = row.split("|")
        figures = NUMBER.findall("|".join(cells[2:]) if link.startswith("results/") else "|".join(cells[1:-2]))
        assert figures, row
        numbers = set(NUMBER.findall(text))
        missing = [f for f in figures if not _given(f, numbers)]
        assert not missing, f"{link} does not give {missing}: {row}"
