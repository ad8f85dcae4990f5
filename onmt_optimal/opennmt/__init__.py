"""The OpenNMT-py 3.5.1 adapter: the search of ``onmt_optimal.search`` in ``onmt_translate``.

* ``beam_search``  OpenNMT-py's ``BeamSearch`` driven by the search core;
* ``translator``   its ``Translator`` with that search, statistics, empty lines and the PRED report;
* ``options``      the ``onmt_translate`` flags and their validation;
* ``empty_lines``  empty source lines answered in place;
* ``output``, ``checkpoint``  ``-output`` opened on first use; one line for a file that is no checkpoint;
* ``run_files``    the files a run reads and writes, as ``(flag, path)`` pairs of its parsed options;
* ``option_reading``  which option a token or a ``-config`` key sets, as OpenNMT-py's parser reads it;
* ``server``       ``onmt_server`` with the plugin's options in a model's ``"opt"``;
* ``session``      a loaded model and its transforms, for the tools that decode many times (sweep, ratio);
* ``stock``        stock ``onmt_translate``, for comparisons (``python -m onmt_optimal stock-translate``);
* ``patch``        the one module that changes OpenNMT-py; ``hook`` applies it when ``onmt`` is imported
                   (installed by ``install``).

This file stays empty of imports: the hook imports this package at every interpreter start.
"""
