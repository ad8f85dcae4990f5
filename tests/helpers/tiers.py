"""Which test tier runs, and how many Hypothesis examples a property test gets in it.

``ONMT_OPTIMAL_TESTS=fast`` (set by ``make test-fast``) selects the fast tier; conftest.py loads the matching
Hypothesis profile. A profile cannot lower a count pinned in ``@settings(max_examples=n)``, so a property test
that wants its own count in the full tier writes ``max_examples=examples(n)``.
"""
from __future__ import annotations

import os

FAST = os.environ.get("ONMT_OPTIMAL_TESTS", "").lower() == "fast"
FAST_EXAMPLES = 10


def examples(n: int) -> int:
    """``n`` in the full tier, at most ``FAST_EXAMPLES`` in the fast tier."""
    return min(n, FAST_EXAMPLES) if FAST else n
