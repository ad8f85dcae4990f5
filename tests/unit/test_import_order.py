"""Whichever module of ours a process imports first, OpenNMT-py ends up patched (the import hook of ``opennmt.hook``)."""
from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # each case is a fresh interpreter: that is what it tests

CHECK = (
    "import onmt.translate.translator as t, onmt.inputters.dynamic_iterator as d, onmt.opts as o\n"
    "assert hasattr(t.build_translator, '__wrapped__'), t.build_translator\n"
    "assert d.process.__module__ == 'onmt_optimal.opennmt.repairs', d.process\n"
    "from onmt.utils.parse import ArgumentParser\n"
    "p = ArgumentParser(); o.translate_opts(p)\n"
    "assert any(a.dest == 'stopping' for a in p._actions)\n"
)


@pytest.mark.parametrize("first", ["onmt_optimal.opennmt.beam_search", "onmt_optimal.opennmt.translator",
                                   "onmt_optimal.opennmt.empty_lines", "onmt_optimal.tools.sweep", "onmt"])
def test_first_import_of_any_module_patches_opennmt(first):
    done = subprocess.run([sys.executable, "-c", f"import {first}\n" + CHECK], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
