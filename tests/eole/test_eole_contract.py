"""The toolkit contract (``adapter.contract``) on eole 0.6.4: a beam search or predictor that lacks a member the
adapter uses is refused when the search is built, in one line naming eole's class, the member and the version
followed, through the project's one-line failures."""
from __future__ import annotations

import pytest
from eole.predict.beam_search import BeamSearch

from onmt_optimal import failures
from onmt_optimal.adapter.contract import EOLE, ContractError
from onmt_optimal.search.registry import Decoder

OPTIMAL = [Decoder("optimal", "optimal", "logprob").rule(None)]


class NoTextTokens(BeamSearch):
    """eole's ``BeamSearch`` with ``n_text_tokens`` under another name."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.text_tokens = self.__dict__.pop("n_text_tokens")


@pytest.fixture(scope="module")
def session(encoder_decoder):
    from onmt_optimal.eole.session import EoleSession

    return EoleSession(["-model_path", str(encoder_decoder), "-max_length", "10"])


def _refusal(capsys, decode) -> tuple[int, str]:
    """``decode()`` run as ``eole predict`` ends a command (``failures.run``): its exit status and stderr."""
    with pytest.raises(SystemExit) as ended:
        failures.run("eole predict", decode)
    return ended.value.code, capsys.readouterr().err


def test_a_beam_search_lacking_a_member_is_one_line(session, src, monkeypatch, capsys):
    from onmt_optimal.eole import translator
    from onmt_optimal.eole.beam_search import CertifiedBeamSearch

    class Certified(CertifiedBeamSearch, NoTextTokens):
        pass

    monkeypatch.setattr(translator, "CertifiedBeamSearch", Certified)
    status, err = _refusal(capsys, lambda: session.decode(src, 3, OPTIMAL))
    assert status == ContractError.status == 1
    assert err == ("eole predict: error: eole's BeamSearch (eole.predict.beam_search) has no n_text_tokens, which "
                   f"onmt-optimal uses: it follows eole 0.6.4 (installed: {EOLE.installed()})\n")


def test_a_predictor_lacking_a_member_is_one_line(session, src, monkeypatch, capsys):
    monkeypatch.delattr(session.translator, "_exclusion_idxs")
    status, err = _refusal(capsys, lambda: session.decode(src, 3, OPTIMAL))
    assert status == 1
    assert err.startswith("eole predict: error: eole's Translator (eole.predict.translator) has no _exclusion_idxs, "
                          "which onmt-optimal uses: it follows eole 0.6.4"), err
