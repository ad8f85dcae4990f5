"""The search, torch only: Huang, Zhao & Ma (2017)'s optimal beam search (modulo beam size), batched.

Read in this order:

* ``scoring``   what a completed hypothesis scores (Eq. 1, Eq. 4, length normalization, BP-norm) and an
                admissible bound on what any continuation of a live prefix can still score;
* ``stopping``  when an example may stop: OpenNMT's rule, the optimality certificate (Eq. 2, Eq. 5), the
                exhaustive run it is checked against, the shrinking beam;
* ``state``     a batch's state: the rules it runs, the kept hypotheses, the completion counts, the shrinking
                width, where, why and with how many completed hypotheses each rule stopped;
* ``step``      the step every toolkit calls once it has chosen its beam: ``collect`` what completed, the
                ``bounds`` of the live items, ``decide`` who is done and why;
* ``kept``      the kept hypotheses, the ``n_best`` best completed per example and rule;
* ``answers``   the leaving examples' answers and statistics, read from one packed row each;
* ``record``    one sentence's ``Record`` under one rule, its stop reason and the statistics file's line;
* ``transfer``  where the bookkeeping lives (next to the decode, or on the host fed one transfer a step);
* ``top_k``     the beam's exact top-k;
* ``constants`` the search's constant tensors, made once per device;
* ``registry``  the names of the rules, for the command line, the sweep, the benchmark and the tests;
* ``limits``    the option values that keep every score and bound a finite float32 number;
* ``beam_of_one`` a beam of one item: the toolkit's own search answers, scored afterwards.

Nothing here imports a toolkit: ``onmt_optimal.adapter`` adapts OpenNMT's lineage of beam (OpenNMT-py's and
eole's beam search: pick the beam, follow which items are real, leave) to it,
``onmt_optimal.hf`` transformers', ``onmt_optimal.vllm`` vLLM's.
"""
