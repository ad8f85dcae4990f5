"""Shared fixtures and the two test tiers.

Tiers: ``make test`` runs everything; ``make test-fast`` (``ONMT_OPTIMAL_TESTS=fast pytest``) leaves out every
test marked ``slow`` (it trains a model or starts processes; the environment variable alone deselects them) and
loads the Hypothesis profile ``fast`` (fewer examples; see ``tiers.examples``). A test is ``slow`` if its module
says so (``pytestmark``), if it uses a fixture that trains a model or starts a process (``PROCESS_FIXTURES``: the toy
model, the ``onmt_translate`` workers, the built Hub folder), or if its module is listed in ``SLOW_MODULES``
below (modules of other owners that start processes). In the fast tier starting a process is an error, so a test
that needs one and is not marked fails loudly instead of slowing the tier down.

Fixtures: ``toy_model`` (one tiny OpenNMT-py model per run, trained with the real ``onmt_build_vocab`` /
``onmt_train``; nothing here reads the shipped models), and ``our_worker`` / ``stock_worker``: one long-lived
``translate_worker`` process per side for the whole run.
"""
import subprocess
import warnings

warnings.filterwarnings("ignore", category=FutureWarning)

from onmt_optimal.opennmt import patch  # noqa: E402

patch.apply()


import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

from helpers import tiers  # noqa: E402
from helpers import toy  # noqa: E402
from helpers.translate_worker import Worker  # noqa: E402

settings.register_profile("full", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fast", settings.get_profile("full"), max_examples=tiers.FAST_EXAMPLES)
settings.load_profile("fast" if tiers.FAST else "full")

# tests/eole and tests/vllm run in their own environments (make test-eole, make test-vllm), each with its own
# conftest and without this one
collect_ignore = ["eole", "vllm"]

# test modules, owned elsewhere, whose every test starts a process (a single test says @pytest.mark.slow)
SLOW_MODULES = {"test_make_report"}
# fixtures that train a model or start a process: a test that uses one is slow
PROCESS_FIXTURES = {"toy_model", "our_worker", "stock_worker", "hub_folder"}


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: trains a model or starts processes; left out of `make test-fast`")


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.module.__name__ if item.module else ""
        if module in SLOW_MODULES or PROCESS_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    if tiers.FAST:
        slow = [item for item in items if "slow" in item.keywords]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if "slow" not in item.keywords]


@pytest.fixture(scope="session", autouse=True)
def _no_process_in_the_fast_tier():
    """The fast tier starts no process: a test that needs one and is not marked slow fails, naming itself."""
    if not tiers.FAST:
        yield
        return
    execute = subprocess.Popen._execute_child

    def refuse(self, args, *rest, **kwargs):
        raise RuntimeError(f"the fast tier starts no process (mark the test slow): {args!r}")

    subprocess.Popen._execute_child = refuse
    yield
    subprocess.Popen._execute_child = execute


@pytest.fixture(scope="session")
def toy_model(tmp_path_factory):
    """One tiny OpenNMT-py model per test run, trained with the real onmt_build_vocab / onmt_train."""
    return toy.train_toy_model(tmp_path_factory.mktemp("toy"), steps=300)


# ``our_worker.run(*args)``: ``onmt_translate *args`` with the plugin; ``stock_worker.run(*args)``: stock
# OpenNMT-py 3.5.1's
our_worker, stock_worker = Worker.session_fixtures("our_worker", "stock_worker", "onmt_translate")
