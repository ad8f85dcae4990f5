"""The Hub-style folder ``hub/optimal-beam-search`` (transformers' convention for shared decoding methods:
``custom_generate/generate.py``), loaded by path as a user loads it: ``generate(custom_generate=<folder>,
trust_remote_code=True)`` answers what ``custom_generate=optimal_beam_search`` answers (sequences, scores,
statistics), and without ``trust_remote_code`` transformers refuses to run it. transformers copies the file into
its modules cache (``HF_MODULES_CACHE``) and puts that folder on ``sys.path``; both are redirected to the test's
own temporary folder and restored."""
from __future__ import annotations

import pathlib
import sys

import pytest
import torch

from helpers import toy_hf
from onmt_optimal.hf import optimal_beam_search

FOLDER = pathlib.Path(__file__).resolve().parents[2] / "hub" / "optimal-beam-search"
SOURCES = toy_hf.sources(12, seed=5)


@pytest.fixture
def modules_cache(tmp_path, monkeypatch):
    import transformers.dynamic_module_utils as dynamic

    monkeypatch.setattr(dynamic, "HF_MODULES_CACHE", str(tmp_path / "modules"))
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path / "modules"
    for name in [name for name in sys.modules if name.startswith("transformers_modules")]:
        del sys.modules[name]


def _generate(toy, **kwargs):
    return toy.model.generate(**toy.inputs(SOURCES), num_beams=5, max_new_tokens=24, length_penalty=0.0,
                              return_dict_in_generate=True, stopping="optimal", **kwargs)


def test_the_folder_runs_the_packages_loop(trained, modules_cache):
    by_path = _generate(trained, custom_generate=str(FOLDER), trust_remote_code=True)
    by_callable = _generate(trained, custom_generate=optimal_beam_search)
    assert torch.equal(by_path.sequences, by_callable.sequences)
    assert torch.equal(by_path.sequences_scores, by_callable.sequences_scores)
    assert by_path.search_stats == by_callable.search_stats
    assert (modules_cache / "transformers_modules").exists()  # loaded through transformers' own loader


def test_the_folder_needs_trust_remote_code(decoder_only, modules_cache):
    with pytest.raises(ValueError, match="trust_remote_code"):
        _generate(decoder_only, custom_generate=str(FOLDER))
    assert not any(modules_cache.rglob("generate.py"))  # nothing written before the refusal


def test_the_folder_holds_no_search_of_its_own():
    source = (FOLDER / "custom_generate" / "generate.py").read_text()
    assert "custom_generate=optimal_beam_search" in source
    assert "torch" not in source
