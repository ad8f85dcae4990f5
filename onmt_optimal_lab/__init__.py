"""The lab: what measures and reproduces onmt-optimal, apart from what a user's decode runs.

``bench`` times the search against each toolkit's stock beam search (``scripts/bench*.py``, figures in
``benchmarks/``); ``paper`` reproduces Huang, Zhao & Ma (2017) on public data (``scripts/reproduce.py``,
``scripts/make_report.py``, ``results/``). Neither ships in the wheel: they import ``onmt_optimal`` and never the
reverse (tests/unit/test_layering.py), and run from a clone (``pip install -e .`` puts it on the path).
"""
