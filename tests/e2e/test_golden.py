"""The golden check (``make golden``, ``helpers.golden_check``) on a reduced set: the toy OpenNMT-py model
under four flag sets, the working tree against a copy of its own package. The copy as it is gives no
difference (nothing a run prints depends on where the package lies, once ``normalise`` has run); the copy with
the shrinking rule broken by one text substitution gives differences, in the shrinking run's files only.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from helpers import golden_check, golden_jobs, golden_models

pytestmark = pytest.mark.slow

SETS = [s for s in golden_jobs.FLAG_SETS if s[0] in ("stock", "optimal", "shrinking", golden_jobs.BAD_VALUE)]
# the shrinking beam ends one completed hypothesis early
BROKEN = (Path("onmt_optimal/search/stopping.py"), "return view.width <= 0", "return view.width <= 1")


def package_copy(dest: Path, substitution=None) -> Path:
    shutil.copytree(golden_check.ROOT / "onmt_optimal", dest / "onmt_optimal",
                    ignore=shutil.ignore_patterns("__pycache__"))
    if substitution is not None:
        path, old, new = substitution
        text = (dest / path).read_text()
        assert text.count(old) == 1, f"{old!r} is not once in {path}"
        (dest / path).write_text(text.replace(old, new))
    return dest


def test_golden_check_passes_a_copy_and_catches_a_broken_rule(toy_model, tmp_path):
    jobs = {"opennmt": golden_jobs.toy_opennmt_jobs(toy_model, golden_models.toy_source(tmp_path), SETS)}
    pythons = {"opennmt": sys.executable}

    same = golden_check.check(package_copy(tmp_path / "copy"), golden_check.ROOT, jobs, pythons, tmp_path / "a")
    # stock: out, log, exit; optimal and shrinking: out, stats, log, exit; the bad value: log, exit
    assert same.line() == "golden-check: 0 files differ (of 13 compared)", same.differ

    broken = golden_check.check(package_copy(tmp_path / "broken", BROKEN), golden_check.ROOT, jobs, pythons,
                                tmp_path / "b")
    assert broken.differ, broken.line()
    assert all(name.startswith("opennmt/toy/shrinking.") for name in broken.differ), broken.differ
    assert "opennmt/toy/shrinking.stats.jsonl" in broken.differ
