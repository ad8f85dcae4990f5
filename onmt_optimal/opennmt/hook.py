"""Post-import hook, run at interpreter start by ``onmt_optimal.pth``: patch OpenNMT-py when it is imported.

When the module ``onmt`` finishes executing, ``onmt_optimal.opennmt.patch.apply`` runs; when
``onmt.bin.translate`` does, ``apply_cli`` runs; when the translation server's modules do (``onmt_server``),
``onmt_optimal.opennmt.server``'s patches run (``onmt_optimal.import_hook``, which the eole adapter shares).
Nothing happens in processes that never import OpenNMT-py. Set ``ONMT_OPTIMAL_DISABLE=1`` to get stock
OpenNMT-py in a process: only a true value (``1``, ``true``, ``yes``, ``on``, any case) disables it; ``0``,
``false``, ``no``, ``off`` or an empty value keep the plugin on. OpenNMT-py's own warnings (on a modern torch,
FutureWarnings about ``torch.cuda.amp`` decorators as its modules import) are left as they are.
"""
from onmt_optimal.import_hook import disabled, install

__all__ = ["disabled"]


def _patch():
    from onmt_optimal.opennmt import patch

    return patch


def _server():
    from onmt_optimal.opennmt import server

    return server


install({"onmt": "apply", "onmt.bin.translate": "apply_cli"}, _patch)
install({"onmt.translate.translation_server": "patch_translation_server", "onmt.bin.server": "patch_command"},
        _server)
