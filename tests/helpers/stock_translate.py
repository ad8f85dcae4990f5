"""Stock OpenNMT-py 3.5.1 ``onmt_translate``, for comparisons: run with ONMT_OPTIMAL_DISABLE=1.

The only change is the torch >= 2.6 checkpoint-loading fix (allow argparse.Namespace), without which stock
OpenNMT-py cannot load any checkpoint on this torch.
"""
import argparse
import os
import sys

import torch

assert os.environ.get("ONMT_OPTIMAL_DISABLE"), "run with ONMT_OPTIMAL_DISABLE=1 to get stock OpenNMT-py"
torch.serialization.add_safe_globals([argparse.Namespace])

from onmt.bin.translate import main  # noqa: E402

assert "onmt_optimal.opennmt.patch" not in sys.modules
main()
