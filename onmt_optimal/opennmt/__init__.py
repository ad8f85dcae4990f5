"""The OpenNMT-py 3.5.1 adapter: the search of ``onmt_optimal.search`` in ``onmt_translate``.

* ``beam_search``  OpenNMT-py's ``BeamSearch`` driven by the search core;
* ``translator``   its ``Translator`` with that search, statistics, empty lines and the PRED report;
* ``options``      the ``onmt_translate`` flags and their validation;
* ``empty_lines``  empty source lines answered in place;
* ``output``, ``checkpoint``  ``-output`` opened on first use; one line for a file that is no checkpoint;
* ``patch``        the one module that changes OpenNMT-py; ``hook`` applies it when ``onmt`` is imported
                   (installed by ``install``).

This file stays empty of imports: the hook imports this package at every interpreter start.
"""
