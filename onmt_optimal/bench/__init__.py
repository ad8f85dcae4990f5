"""The benchmark of our search against stock OpenNMT-py's (``scripts/bench.py``) and the measuring tools beside it
(``scripts/op_breakdown.py``, ``scripts/top_k_timing.py``). One job a module:

* ``variants``: the one factory of search variants, by name;
* ``timers``: the clocks, the forward pass's timer and the timer of the search's parts;
* ``rounds``: one timed round, or one counted pass, of every variant;
* ``decoding``: every (batch, beam) configuration over rounds; ``sweep``: the sweep's one decode per beam size
  against one decode per configuration; ``measure``: a whole run over the models;
* ``models``: the models by name and their dev sets; ``render``: the Markdown report from a run's JSON;
* ``breakdown``: where a decoder call's operations come from; ``top_k``: the top-k's two paths timed.

Figures belong in ``benchmarks/``, written by these tools; nothing here asserts a timing.
"""
