"""A loaded model of either toolkit, for the tools that decode many times (sweep, ratio, the Ray sweep).

``load(args)`` picks the toolkit from its arguments: ``eole predict``'s (``-model_path``, or a ``-config`` YAML
with ``model_path``) load an ``eole.session.EoleSession``, anything else ``onmt_translate``'s an
``opennmt.session.Session``. Both decode a source file with any set of rules sharing one beam
(``adapter.decoding.RuleDecoding.decode``) and count lengths in the tokens the model reads (``model_lengths``).
"""
from __future__ import annotations


def load(args: list[str]):
    """The model of ``args`` (a lone ``--`` dropped), loaded once."""
    from onmt_optimal.eole.session import is_eole

    args = [a for a in args if a != "--"]
    if is_eole(args):
        from onmt_optimal.eole.session import EoleSession

        return EoleSession(args)
    from onmt_optimal.opennmt.session import Session

    return Session(args)

