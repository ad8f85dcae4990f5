"""A loaded model of either toolkit, for the tools that decode many times (sweep, ratio, the Ray sweep).

``load(args)`` picks the toolkit from its arguments: ``eole predict``'s (``-model_path``, or a ``-config`` YAML
with ``model_path``) load an ``eole.session.EoleSession``, anything else ``onmt_translate``'s an
``opennmt.session.Session``. Both decode a source file with any set of rules sharing one beam
(``adapter.decoding.RuleDecoding.decode``) and count lengths in the tokens the model reads (``model_lengths``).
"""
from __future__ import annotations


def load(args: list[str], writes=()):
    """The model of ``args`` (a lone ``--`` dropped), loaded once; ``writes``: ``(flag, path)`` pairs of the files
    the tool will write, refused before the model loads where the run reads them (``check``)."""
    from onmt_optimal.eole.session import is_eole

    args = [a for a in args if a != "--"]
    if is_eole(args):
        from onmt_optimal.eole.session import EoleSession

        return EoleSession(args, writes)
    from onmt_optimal.opennmt.session import Session

    return Session(args, writes)


def check(args: list[str], writes) -> None:
    """``OptionError`` where a file of ``writes`` (``(flag, path)`` pairs) is one the run of ``args`` reads,
    wherever it is named (the command line, its ``-config``, a model directory's files), without loading the
    model: for a tool whose model loads elsewhere (the Ray workers)."""
    from onmt_optimal.eole.session import is_eole

    args = [a for a in args if a != "--"]
    if is_eole(args):
        from onmt_optimal.eole.session import parse

        parse(args, writes)
    else:
        from onmt_optimal.opennmt.session import parse

        parse(args, writes, validate=False)

