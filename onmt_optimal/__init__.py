"""onmt-optimal: optimal beam search (modulo beam size) for OpenNMT-py, eole, transformers and vLLM.

Huang, Zhao & Ma (2017), "When to Finish? Optimal Beam Search for Neural Text Generation (modulo beam
size)". The package reads as the algorithm does:

* ``search``       the search itself, torch only: scoring rules and their bounds, stopping rules, the step every
                   toolkit calls once it has chosen its beam, the kept hypotheses, the answers and their
                   records, the exact top-k, the registry of rules;
* ``adapter``      what the OpenNMT-py and eole adapters share: OpenNMT's lineage of beam around the toolkit's
                   own step, the translators' records, statistics and empty lines;
* ``opennmt``      the adapter to OpenNMT-py 3.5.1: its beam search on the core, the translator, the
                   ``onmt_translate`` flags, ``onmt_server``, the one module that patches OpenNMT-py
                   (``patch``) and the import hook that applies it;
* ``eole``         the adapter to eole 0.6.4 (``eole predict``, ``eole serve``), likewise;
* ``hf``           transformers' ``generate`` with ``custom_generate=optimal_beam_search``;
* ``vllm``         vLLM's ``LLM.beam_search`` and its server's beam search, on the core;
* ``distributed``  many workers with Ray (``-ray_workers``, the sweep's ``--ray-workers``);
* ``tools``        ``session`` (decode in-process), ``sweep`` (r x b on a dev set), ``length_ratio``,
                   ``exact_search`` (the global-optimum oracle), ``search_errors``, ``evaluate`` (sacrebleu);
* ``bench``        the speed benchmarks against each toolkit's own beam search; ``paper`` the paper's
                   reproduction and its report;
* beside them: ``option_table`` (every option declared once), ``options`` (what the options mean and select),
  ``failures`` (one line and a non-zero exit on a fault), ``atomic`` (outputs whole or not at all),
  ``import_hook`` (patch a toolkit when a process imports it), ``progress``.

This module stays import-light: it is imported at start-up of every Python process of the environment.
"""
__version__ = "0.1.0"
