"""The toolkit contract (``adapter.contract``): an OpenNMT-py beam search or translator that lacks a member the
adapter uses (as a later release that renamed it would) is refused when the search is built, in one line naming
the toolkit's class, the member and the version followed, through the project's one-line failures."""
from __future__ import annotations

import pytest
from onmt.translate.beam_search import BeamSearch

from onmt_optimal import failures
from onmt_optimal.adapter.contract import OPENNMT_PY, ContractError
from onmt_optimal.opennmt import translator as opennmt_translator
from onmt_optimal.opennmt.beam_search import CertifiedBeamSearch
from onmt_optimal.opennmt.session import Session
from onmt_optimal.search.registry import Decoder

pytestmark = pytest.mark.slow

OPTIMAL = [Decoder("optimal", "optimal", "logprob").rule(None)]


class RenamedOffset(BeamSearch):
    """OpenNMT-py's ``BeamSearch`` with ``_batch_offset`` under another name."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.batch_offsets = self.__dict__.pop("_batch_offset")


class NoTopkLogProbs(BeamSearch):
    """OpenNMT-py's ``BeamSearch`` whose ``initialize`` leaves the items' scores under another name."""

    def initialize(self, *args, **kwargs):
        out = super().initialize(*args, **kwargs)
        self.item_scores = self.__dict__.pop("topk_log_probs")
        return out


@pytest.fixture(scope="module")
def session(toy_model, tmp_path_factory):
    from helpers import toy

    d = tmp_path_factory.mktemp("contract")
    toy.write_corpus(d / "dev", 4, seed=5, max_len=8)
    return Session(["-model", str(toy_model), "-max_length", "10", "-src", str(d / "dev.src")]), d / "dev.src"


def _refusal(capsys, decode) -> tuple[int, str]:
    """``decode()`` run as ``onmt_translate`` ends a command (``failures.run``): its exit status and stderr."""
    with pytest.raises(SystemExit) as ended:
        failures.run("onmt_translate", decode)
    return ended.value.code, capsys.readouterr().err


@pytest.mark.parametrize("toolkit_class, member", [(RenamedOffset, "_batch_offset"),
                                                   (NoTopkLogProbs, "topk_log_probs")])
def test_a_beam_search_lacking_a_member_is_one_line(session, monkeypatch, capsys, toolkit_class, member):
    """Checked when the search is built (``_batch_offset``, set by the constructor) and when its ``initialize``
    has run (``topk_log_probs``), before any step."""
    decoding, src = session

    class Certified(CertifiedBeamSearch, toolkit_class):
        pass

    monkeypatch.setattr(opennmt_translator, "CertifiedBeamSearch", Certified)
    status, err = _refusal(capsys, lambda: decoding.decode(src, 3, OPTIMAL))
    assert status == ContractError.status == 1
    assert err == (f"onmt_translate: error: OpenNMT-py's BeamSearch (onmt.translate.beam_search) has no {member}, "
                   f"which onmt-optimal uses: it follows OpenNMT-py 3.5.1 (installed: {OPENNMT_PY.installed()})\n")


def test_a_translator_lacking_a_member_is_one_line(session, monkeypatch, capsys):
    """The translator is checked before its certified search is built; a scorer's member is named by its path."""
    decoding, src = session
    monkeypatch.delattr(decoding.translator.global_scorer, "cov_penalty")
    monkeypatch.delattr(decoding.translator, "_exclusion_idxs")
    status, err = _refusal(capsys, lambda: decoding.decode(src, 3, OPTIMAL))
    assert status == 1
    assert err.startswith("onmt_translate: error: OpenNMT-py's Translator (onmt.translate.translator) has no "
                          "global_scorer.cov_penalty, _exclusion_idxs, which onmt-optimal uses: it follows "
                          "OpenNMT-py 3.5.1"), err
