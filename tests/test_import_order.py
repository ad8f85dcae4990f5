"""Whichever module of ours a process imports first, OpenNMT-py ends up patched (the import hook of ``_hook``)."""
from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # each case is a fresh interpreter: that is what it tests

CHECK = (
    "import onmt.translate.translator as t, onmt.inputters.dynamic_iterator as d\n"
    "assert t.Translator.__name__ == 'CertifiedTranslator', t.Translator\n"
    "assert d.process.__module__ == 'onmt_optimal.empty_lines', d.process\n"
)


@pytest.mark.parametrize("first", ["onmt_optimal.beam_search", "onmt_optimal.translator",
                                   "onmt_optimal.empty_lines", "onmt_optimal.sweep", "onmt"])
def test_first_import_of_any_module_patches_opennmt(first):
    done = subprocess.run([sys.executable, "-c", f"import {first}\n" + CHECK], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
