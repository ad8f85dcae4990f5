import sys
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", category=FutureWarning)
sys.path.insert(0, str(Path(__file__).parent))

from onmt_optimal import patch  # noqa: E402

patch.apply()
