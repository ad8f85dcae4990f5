"""Post-import hook, run at interpreter start by ``onmt_optimal.pth``: patch eole when it is imported.

When the module ``eole`` finishes executing, ``onmt_optimal.eole.patch.apply`` runs; when
``eole.bin.run.predict`` does (the ``eole predict`` command), ``apply_cli`` runs (``onmt_optimal.import_hook``,
shared with the OpenNMT-py adapter). Nothing happens in processes that never import eole.
``ONMT_OPTIMAL_DISABLE`` set to a true value (``1``, ``true``, ``yes``, ``on``) gives stock eole.
"""
import warnings

from onmt_optimal.import_hook import install

#: what eole 0.6.4 prints on import without its compiled extension or flash-attn (harmless on CPU)
QUIET = (r"Could not import flash_attn", r"Could not import eole\._ops")


def _patch():
    from onmt_optimal.eole import patch

    return patch


def _quiet():
    for message in QUIET:
        warnings.filterwarnings("ignore", message=message, category=RuntimeWarning)


install({"eole": "apply", "eole.bin.run.predict": "apply_cli"}, _patch, _quiet)
