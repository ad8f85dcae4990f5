"""onmt-optimal: optimal beam search (modulo beam size) for OpenNMT-py.

Huang, Zhao & Ma (2017), "When to Finish? Optimal Beam Search for Neural Text Generation (modulo beam
size)". The package reads as the algorithm does:

* ``scoring``      what a completed hypothesis scores, and an admissible bound for any continuation;
* ``stopping``     when an example may stop (OpenNMT-py's rule, the optimality certificate, exhaustive);
* ``beam_search``  the batched bookkeeping that applies both to OpenNMT-py's beam;
* ``top_k``        the beam's exact top-k, in two cheap passes instead of a partial sort;
* ``translator``   OpenNMT-py's Translator with that search plugged in, statistics, empty lines;
* ``options``      the ``onmt_translate`` flags;
* ``patch``        the one place where OpenNMT-py is changed (``_hook`` applies it on import).

This module stays import-light: it is imported at start-up of every Python process of the environment.
"""
__version__ = "0.1.0"
