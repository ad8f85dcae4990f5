"""onmt-optimal: optimal beam search (modulo beam size) for OpenNMT-py.

Huang, Zhao & Ma (2017), "When to Finish? Optimal Beam Search for Neural Text Generation (modulo beam
size)". The package reads as the algorithm does:

* ``search``     the search itself, torch only: scoring rules and their bounds, stopping rules, the batched
                 beam bookkeeping, the kept hypotheses, the exact top-k, the registry of rules;
* ``opennmt``    the adapter to OpenNMT-py 3.5.1: its beam search driven by ``search``, the translator
                 (statistics, empty lines), the ``onmt_translate`` flags, the one module that patches
                 OpenNMT-py (``patch``) and the import hook that applies it;
* tools          ``session`` (decode in-process), ``sweep`` (r x b on a dev set), ``length_ratio``,
                 ``exact_search`` (the global-optimum oracle), ``evaluate`` (sacrebleu), ``profiling``.

This module stays import-light: it is imported at start-up of every Python process of the environment.
"""
__version__ = "0.1.0"
