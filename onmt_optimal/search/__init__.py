"""The search, torch only: Huang, Zhao & Ma (2017)'s optimal beam search (modulo beam size), batched.

Read in this order:

* ``scoring``   what a completed hypothesis scores (Eq. 1, Eq. 4, length normalization, BP-norm) and an
                admissible bound on what any continuation of a live prefix can still score;
* ``stopping``  when an example may stop: OpenNMT's rule, the optimality certificate (Eq. 2, Eq. 5), the
                exhaustive run it is checked against, the shrinking beam;
* ``beam``      one sentence through the search: pick the beam, collect what completed, stop, leave;
* ``kept``      the kept hypotheses, the ``n_best`` best completed per example and rule;
* ``top_k``     the beam's exact top-k;
* ``constants`` the search's constant tensors, made once per device;
* ``registry``  the names of the rules, for the command line, the sweep, the benchmark and the tests.

Nothing here imports a toolkit: ``onmt_optimal.opennmt`` adapts OpenNMT-py's beam search to it.
"""
