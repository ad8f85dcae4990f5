"""Post-import hook, run at interpreter start by ``onmt_optimal.pth``: patch OpenNMT-py when it is imported.

When the module ``onmt`` finishes executing, ``onmt_optimal.opennmt.patch.apply`` runs; when
``onmt.bin.translate`` does, ``apply_cli`` runs (``onmt_optimal.import_hook``, which the eole adapter shares).
Nothing happens in processes that never import OpenNMT-py. Set ``ONMT_OPTIMAL_DISABLE=1`` to get stock
OpenNMT-py in a process: only a true value (``1``, ``true``, ``yes``, ``on``, any case) disables it; ``0``,
``false``, ``no``, ``off`` or an empty value keep the plugin on.
"""
import warnings

from onmt_optimal.import_hook import disabled, install

__all__ = ["disabled"]


def _patch():
    from onmt_optimal.opennmt import patch

    return patch


def _quiet():
    # OpenNMT-py 3.5.1 decorates with torch.cuda.amp.custom_fwd, deprecated since torch 2.4: noise on every run
    # (and before every one-line error message) on a modern torch
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"onmt(\.|$)")


install({"onmt": "apply", "onmt.bin.translate": "apply_cli"}, _patch, _quiet)
