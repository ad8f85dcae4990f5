"""Stock OpenNMT-py 3.5.1 ``onmt_translate``, for comparisons (``python -m onmt_optimal stock-translate ARGS``).

Nothing of onmt-optimal runs: the import hook is withdrawn before OpenNMT-py is imported, so no module of the
adapter patches it (checked before decoding). One change is made, without which stock OpenNMT-py 3.5.1 loads no
checkpoint on torch >= 2.6 (``torch.load`` unpickles with ``weights_only`` there, and every checkpoint stores its
training options as an ``argparse.Namespace``): that class is allowed to the unpickler. Everything else,
``-output`` handling and error reports included, is OpenNMT-py's own. ``ONMT_OPTIMAL_DISABLE=1 onmt_translate``
gives OpenNMT-py without even that change.
"""
from __future__ import annotations

import argparse
import sys


class AlreadyImported(RuntimeError):
    """OpenNMT-py was imported in this process before the hook could be withdrawn (it may be patched)."""


def main(argv: list[str]) -> None:
    if "onmt" in sys.modules:
        raise AlreadyImported("OpenNMT-py is already imported in this process; run stock-translate in a fresh one")
    from onmt_optimal import import_hook

    import_hook.withdraw()
    import torch

    if hasattr(torch.serialization, "add_safe_globals"):
        torch.serialization.add_safe_globals([argparse.Namespace])
    import onmt.bin.translate

    assert "onmt_optimal.opennmt.patch" not in sys.modules, "stock OpenNMT-py was patched"
    sys.argv = ["onmt_translate", *argv]
    onmt.bin.translate.main()
