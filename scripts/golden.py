"""The golden check: prove that a change decodes nothing differently (``make golden BASE=<rev>``).

Decodes the shipped OpenNMT-py models and the tests' toy models (OpenNMT-py, eole, transformers) under every
flag set with the working tree and with ``--base`` (default ``HEAD``), compares outputs, statistics files, logs
and exit statuses, prints ``golden-check: N files differ (of M compared)`` and the differing files, and exits 1
when N > 0. What is compared and normalised: ``tests/helpers/golden_check.py``. The check is built from the
tests' helpers, so it runs with ``tests`` on ``PYTHONPATH`` (``make golden`` sets it):

    PYTHONPATH=.:tests .venv/bin/python scripts/golden.py --base main
"""
import sys

from helpers.golden_check import main

if __name__ == "__main__":
    sys.exit(main())
