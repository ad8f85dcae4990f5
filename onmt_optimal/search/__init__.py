"""The search, torch only: Huang, Zhao & Ma (2017)'s optimal beam search (modulo beam size), batched.

Read in this order:

* ``scoring``   what a completed hypothesis scores (Eq. 1, Eq. 4, length normalization, BP-norm) and an
                admissible bound on what any continuation of a live prefix can still score;
* ``stopping``  when an example may stop: OpenNMT's rule, the optimality certificate (Eq. 2, Eq. 5), the
                exhaustive run it is checked against, the shrinking beam;
* ``beam``      one sentence through the search: pick the beam, collect what completed, stop, leave;
* ``kept``      the kept hypotheses, the ``n_best`` best completed per example and rule;
* ``stops``     the rules sharing a beam: which still collect, where and why each stopped;
* ``answers``   the leaving examples' answers and statistics, read from one packed row each;
* ``transfer``  where the bookkeeping lives (next to the decode, or on the host fed one transfer a step);
* ``top_k``     the beam's exact top-k;
* ``constants`` the search's constant tensors, made once per device;
* ``registry``  the names of the rules, for the command line, the sweep, the benchmark and the tests;
* ``beam_of_one`` a beam of one item: the toolkit's own search answers, scored afterwards.

Nothing here imports a toolkit: ``onmt_optimal.opennmt`` adapts OpenNMT-py's beam search to it.
"""
