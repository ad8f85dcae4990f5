"""The eole tier: tests of the eole adapter against real eole 0.6.4, in the eole environment (``.venv-eole``,
``make test-eole``; ``make test`` runs it after the main suite). Run with ``--confcutdir=tests/eole``:
``tests/conftest.py`` imports OpenNMT-py, which that environment lacks (and ignores this directory).

Fixtures: ``encoder_decoder`` and ``decoder_only`` (one tiny model each per run, trained with the real
``eole build_vocab`` / ``eole train``: ``toy_eole``), ``ours`` / ``stock``: one long-lived ``eole predict``
process a side (``predict_worker``), and ``src``: 40 toy source lines. Every test here trains or starts a
process, so the whole tier is ``slow`` (``ONMT_OPTIMAL_TESTS=fast`` skips it).
"""
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", category=FutureWarning)

import pytest  # noqa: E402

from helpers import tiers  # noqa: E402
from helpers import toy_eole  # noqa: E402
from helpers.predict_worker import Worker  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: trains a model or starts processes; left out of `make test-fast`")


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.slow)
    if tiers.FAST:
        config.hook.pytest_deselected(items=list(items))
        items[:] = []


@pytest.fixture(scope="session")
def encoder_decoder(tmp_path_factory) -> Path:
    return toy_eole.train(tmp_path_factory.mktemp("encoder_decoder"), "encoder_decoder")


@pytest.fixture(scope="session")
def decoder_only(tmp_path_factory) -> Path:
    return toy_eole.train(tmp_path_factory.mktemp("decoder_only"), "decoder_only")


@pytest.fixture(scope="session", params=["encoder_decoder", "decoder_only"])
def model(request) -> Path:
    """Each test that takes ``model`` runs on both kinds."""
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="session")
def src(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("data")
    toy_eole.write_pairs(d / "test", 40, seed=3, kind="encoder_decoder", max_len=12)
    return d / "test.src"


# ``ours.predict(*args)``: ``eole predict *args`` with the plugin; ``stock.predict(*args)``: stock eole 0.6.4's
ours, stock = Worker.session_fixtures("ours", "stock", "eole predict")
