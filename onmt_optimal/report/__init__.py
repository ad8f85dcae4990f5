"""The paper's tables, figures and findings from a reproduction's result files (``make reproduce``).

``write.write_report(DIR)`` reads ``DIR/dev_sweep.json`` (and ``test_eval.json``, ``test_sentences.json`` and the
test outputs ``hyps/`` where present) and writes Tables 2-3, the length table, Figures 1-2 and ``README.md`` into
``DIR``. Every output is a function of those files (no clock, no network, a fixed bootstrap seed), so a rerun on
the same files gives byte-identical outputs. One job a module:

* ``paper``: the paper's numbers and the decoder families' names;
* ``results``: the result files and their rows;
* ``significance``: sacrebleu's paired bootstrap, with the interval of the difference, and length buckets;
* ``stats``: the per-sentence outputs and references the statistics read;
* ``cells``: how a number is written;
* ``tables``, ``lengths``, ``figures``, ``claims``, ``readme``: the outputs;
* ``write``: all of them into the folder.
"""
