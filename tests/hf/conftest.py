"""The Hugging Face tier: the transformers adapter (``onmt_optimal.hf``) against real transformers, in the main
environment (``.venv``; ``make setup-hf`` installs requirements-hf.txt there, ``make test-hf`` runs this tier
alone, ``make test`` with the rest).

Fixtures: ``encoder_decoder`` and ``decoder_only`` (a tiny Marian and a tiny GPT-2, trained once per run with a
tokenizer trained by ``tokenizers``: ``toy_hf``). Tests that use them are ``slow`` (``make test-fast`` leaves
them out); the tests on ``fixed_lm`` (a real transformers model with the core's synthetic distributions) and
on the scoring rule are fast.
"""
import importlib.util

import pytest

# an environment without transformers (``make setup`` alone, as ``make test-fast`` sets up) collects nothing here;
# ``make test`` and ``make test-hf`` install it first (``make setup-hf``)
if importlib.util.find_spec("transformers") is None:
    collect_ignore_glob = ["*.py"]

TRAINED = {"encoder_decoder", "decoder_only", "trained"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark the tests that train a model ``slow`` (before tests/conftest.py deselects slow tests in the fast
    tier)."""
    for item in items:
        if TRAINED & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def encoder_decoder():
    from helpers import toy_hf

    return toy_hf.train("encoder_decoder")


@pytest.fixture(scope="session")
def decoder_only():
    from helpers import toy_hf

    return toy_hf.train("decoder_only")


@pytest.fixture(scope="session", params=["encoder_decoder", "decoder_only"])
def trained(request):
    """Each test that takes ``trained`` runs on both models."""
    return request.getfixturevalue(request.param)
