"""The eole adapter (eole 0.6.4, OpenNMT's maintained successor): the search of ``onmt_optimal.search`` in
``eole predict``, for encoder-decoder and decoder-only models.

* ``beam_search``  eole's ``BeamSearch`` and ``BeamSearchLM`` driven by the search core (with
                   ``onmt_optimal.adapter``, shared with the OpenNMT-py adapter);
* ``translator``   its ``Translator`` and ``GeneratorLM`` with that search, statistics, empty lines, PRED report;
* ``options``      the new options as pydantic fields of eole's ``PredictConfig``, and their validation;
* ``empty_lines``  empty source lines answered in place;
* ``files``        ``eole predict`` never writes a file it reads, nor two of its outputs into one file;
* ``server``       ``eole serve`` with the plugin's options in a model's ``config``;
* ``session``      a loaded model for the tools (``python -m onmt_optimal ratio|sweep``);
* ``run_outputs``  the outputs of the ``infer_file`` call running now, for eole's writers;
* ``patch``        the one module that changes eole; ``hook`` applies it when ``eole`` is imported (from
                   ``onmt_optimal.pth``).

This file stays empty of imports: the hook imports this package at every interpreter start.
"""
