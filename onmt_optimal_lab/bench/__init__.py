"""The speed benchmarks: our search against stock OpenNMT-py's (``scripts/bench.py``), against transformers' and
vLLM's own beam search, and the measuring tools beside them (``scripts/op_breakdown.py``,
``scripts/top_k_timing.py``). One job a module:

* ``variants``: the one factory of search variants, by name;
* ``timers``: the clocks, the forward pass's timer and the timer of the search's parts;
* ``rounds``: one timed round, or one counted pass, of every variant;
* ``decoding``: every (batch, beam) configuration over rounds; ``sweep``: the sweep's one decode per beam size
  against one decode per configuration; ``measure``: a whole run over the models;
* ``models``: the models by name and their dev sets; ``render``: the Markdown report from a run's JSON;
* ``breakdown``: where a decoder call's operations come from; ``profiling``: the work per decoder call (aten
  ops, kernels, host reads); ``top_k``: the top-k's two paths timed;
* ``precision``: the decodes in other precisions;
* ``hf``, ``hf_models``: transformers' beam search against ``optimal_beam_search`` (``scripts/bench_hf.py``) and
  the models it decodes; ``vllm``: vLLM's ``LLM.beam_search`` against ``optimal_beam_search``
  (``scripts/bench_vllm.py``); ``vllm_serve``: beam requests to vLLM's server, stock and with the certificate.

Figures belong in ``benchmarks/``, written by these tools; nothing here asserts a timing.
"""
