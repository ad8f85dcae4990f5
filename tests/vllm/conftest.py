"""The vLLM tier: ``onmt_optimal.vllm`` against real vLLM 0.32 (its CPU build), in the vLLM environment
(``.venv-vllm``, ``make test-vllm``; ``make test`` runs it after the other tiers). Run with
``--confcutdir=tests/vllm``: ``tests/conftest.py`` imports OpenNMT-py, which that environment lacks (and ignores
this directory).

Fixtures: ``toy`` (``toy_vllm``'s GPT-2, trained once per run and saved as a transformers folder) and ``llm``:
ONE vLLM engine for the whole run (its engine core starts in a spawned process and takes most of the tier's
time), with ``dtype="float32"``, eager mode and a small share of host memory. Tests that take either are
``slow`` (``ONMT_OPTIMAL_TESTS=fast`` leaves them out); the scoring rule's tests need neither.
"""
import warnings

warnings.filterwarnings("ignore", category=FutureWarning)

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

from helpers import tiers  # noqa: E402

settings.register_profile("full", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fast", settings.get_profile("full"), max_examples=tiers.FAST_EXAMPLES)
settings.load_profile("fast" if tiers.FAST else "full")

ENGINE = {"toy", "llm"}


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: trains a model or starts processes; left out of `make test-fast`")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if ENGINE & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    if tiers.FAST:
        slow = [item for item in items if item.get_closest_marker("slow")]
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("toy_vllm")


@pytest.fixture(scope="session")
def toy(model_dir):
    from helpers import toy_vllm

    return toy_vllm.train(model_dir)


@pytest.fixture(scope="session")
def llm(toy, model_dir):
    from vllm import LLM

    engine = LLM(model=str(model_dir), dtype="float32", enforce_eager=True, max_model_len=64,
                 gpu_memory_utilization=0.1)
    yield engine
    engine.llm_engine.engine_core.shutdown()
