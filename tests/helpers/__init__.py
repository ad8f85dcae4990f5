"""What the tests share: models without a network, tiny trained models, worker processes, tolerances, tiers.

The tests import these as ``from helpers import toy`` (``pytest.ini``'s ``pythonpath = tests``). This file
imports none of them: each tier's environment imports only what it has (``.venv-eole`` has no OpenNMT-py,
``toy_hf`` and ``fixed_lm`` need transformers).

Search without a toolkit pipeline (``tests/unit``, ``tests/hf``):

- ``synthetic``: ``SyntheticModel``, a fixed pseudo-random next-token distribution per (example, prefix), and
  ``reference_beam``, a plain-Python beam of the paper's Section 2, to drive the BeamSearch objects directly;
  ``run_strategy`` runs them on ``ONMT_OPTIMAL_TEST_DEVICE`` (the CPU by default).
- ``fixed_lm``: a real transformers ``PreTrainedModel`` whose logits are ``synthetic``'s, for ``generate``.

Tiny models trained in the run with each toolkit's own commands (``tests/e2e``, ``tests/eole``, ``tests/hf``,
``tests/vllm``):

- ``toy``: the synthetic translation task (letters ``a..p`` to upper-case letters) and ``onmt_build_vocab`` /
  ``onmt_train`` on it (the ``toy_model`` fixture of ``tests/conftest.py``).
- ``toy_eole``: an encoder-decoder and a decoder-only eole model on ``toy``'s task (``eole train``).
- ``toy_hf``: a tiny Marian and a tiny GPT-2 on ``toy``'s task, with a tokenizer trained by ``tokenizers``.
- ``toy_vllm``: ``toy_hf``'s GPT-2, 64 wide, saved in transformers' format for vLLM (``tests/vllm``).

Toolkit processes:

- ``translate_worker``: many ``onmt_translate`` runs in one long-lived process a side, ours (import hook on)
  and stock (``ONMT_OPTIMAL_DISABLE=1``): the ``our_worker`` / ``stock_worker`` fixtures.
- ``predict_worker``: the same for ``eole predict`` (the ``ours`` / ``stock`` fixtures of ``tests/eole``).
- ``generate_worker``: the same for transformers' ``generate`` on a saved ``toy_hf`` model (the golden check).
- ``stock_translate``: a script, stock OpenNMT-py 3.5.1 ``onmt_translate`` with only the torch >= 2.6
  checkpoint-loading fix, for comparisons in a fresh process.

The golden check (``make golden``, ``python -m helpers.golden_check``; ``tests/e2e/test_golden.py``):

- ``golden_jobs``: what it decodes (models, input slices, flag sets), ``golden_models``: the models and inputs,
  trained or prepared once, ``golden_check``: both sides' runs, the normalised logs, the comparison, the command.

Checks and tiers:

- ``float32``: how far two decodes of the same hypothesis may print its score apart (``score_tolerance``)
  and ``assert_same_answers``.
- ``precision``: the precisions a decode runs in as test parameters, the CUDA ones skipped where no CUDA device is
  (``cases``).
- ``tiers``: which tier runs (``ONMT_OPTIMAL_TESTS=fast``) and ``examples(n)``, a property test's Hypothesis
  example count in it.
"""
