"""What the OpenNMT-py and eole adapters share; it imports neither toolkit (a test checks).

Both toolkits descend from one code base: their ``BeamSearch`` keeps the same state and runs the same
decode-loop protocol, and their translators batch, sort and report alike. So one step serves both:

* ``beam_search``  ``LineageBeamSearch``: the decode-loop protocol (``advance``, ``update_finished``) and OpenNMT's
                   lineage of beam (pick, which items are real, who leaves) around the toolkit's own step, which
                   each adapter copies statement for statement (``opennmt/beam_search.py``,
                   ``eole/beam_search.py``), over the search core's ``step.step``;
* ``contract``     what the adapter uses of each toolkit's beam search and translator, and the step's hooks,
                   declared once (``Protocol``s) and checked when a search is built;
* ``batch_search`` a batch's search built as the toolkit builds its own, and the beam of one item;
* ``translator``   ``RecordKeeping``: each line's records, the progress count and the closing report;
* ``lines``        per-line keys and input order, the statistics file, empty source lines, the report's lines;
* ``totals``       the sums behind the closing ``PRED`` lines, over the decoded records;
* ``empty_lines``  each translation's empty source lines, marked by the toolkit's reader, taken by its translator;
* ``decoding``     ``RuleDecoding``: the sessions' decode of a whole file under many rules (sweep, ratio);
* ``source``       input lines that are not UTF-8, one line naming the file, the line and the byte;
* ``yaml_guard``   a ``-config`` file looked at before the toolkit reads it (alias bombs, size).
"""
