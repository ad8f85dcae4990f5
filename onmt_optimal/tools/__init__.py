"""The tools around the search, apart from what a user's decode runs: they load a model once and decode with it
many times, or measure what a decode returned. One job a module:

* ``length_ratio``   the length ratio rho of Section 4 (``python -m onmt_optimal ratio``);
* ``sweep``          the r x b sweep, one decode per beam size for every decoder that shares it (``... sweep``);
* ``hf_sweep``       the sweep of a transformers checkpoint (``... sweep --tokenizer MODEL_DIR``);
* ``vllm_sweep``     the sweep of a vLLM model on one engine (``... sweep --vllm MODEL``);
* ``sweep_report``   what the sweeps' rows say: the table, the best row, its setting, the figure;
* ``args``           the two tools' own arguments, checked before a model loads;
* ``session``        a loaded model of either toolkit, for the tools that decode many times;
* ``exact_search``   the oracle: the exact global argmax of a scoring rule for one source sentence;
* ``search_errors``  the beam's answers against the oracle's, sentence by sentence;
* ``evaluate``       corpus BLEU and length ratio (sacrebleu);
* ``text``           the training data's cleaning and Moses detokenization for BLEU;
* ``hub_folder``     the Hub folder of transformers' loop, built from the clone (``make hub``).
"""
