import sys
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", category=FutureWarning)
sys.path.insert(0, str(Path(__file__).parent))

from onmt_optimal import patch  # noqa: E402

patch.apply()


import pytest  # noqa: E402

import toy  # noqa: E402


@pytest.fixture(scope="session")
def toy_model(tmp_path_factory):
    """One tiny OpenNMT-py model per test run, trained with the real onmt_build_vocab / onmt_train."""
    return toy.train_toy_model(tmp_path_factory.mktemp("toy"), steps=300)
