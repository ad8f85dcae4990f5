"""The paper's reproduction on public data (``make reproduce``), apart from the plugin and its tools:

* ``corpus``     a parallel corpus read, filtered, sampled and written for training, and its SentencePiece models;
* ``reproduce``  one corpus's experiments: the dev sweep, each decoder tuned on dev, the test decodes;
* ``report/``    the tables, figures, statistics and verdicts rendered from those decodes.
"""
