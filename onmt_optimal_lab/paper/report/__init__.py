"""The paper's tables, figures and findings from a reproduction's result files (``make reproduce``).

``write.write_report(DIR)`` reads ``DIR/dev_sweep.json`` (and ``test_eval.json``, ``test_sentences.json`` and the
test outputs ``hyps/`` where present) and writes Tables 2-3, the length table, Figures 1-2 and ``README.md`` into
``DIR``; ``write.check_report(DIR)`` compares instead. Every output is a function of those files (no clock, no
network, fixed bootstrap seeds), so a rerun on the same files gives byte-identical outputs. One job a module:

* ``paper``: the paper's numbers, its baseline and the decoder families' names;
* ``results``: the result files and their rows;
* ``significance``: sacrebleu's paired bootstrap, the interval of the difference, the labelling rule, and length
  buckets;
* ``stats``: the per-sentence outputs and references the statistics read, and the test scores;
* ``cells``: how a number is written (each rounded once);
* ``tables``, ``lengths``, ``figures``, ``claims``, ``readme``: the outputs;
* ``write``: all of them rendered, then written into the folder or checked against it.
"""
