"""``python -m onmt_optimal COMMAND``: the package's own entry points.

    translate ARGS   onmt_translate with the onmt-optimal flags (works even without the .pth hook)
    install-hook     (re)write onmt_optimal.pth into site-packages so stock onmt_translate gets the flags
"""
from __future__ import annotations

import sys


def translate(argv: list[str]) -> None:
    from onmt_optimal import patch

    patch.apply()
    import onmt.bin.translate

    patch.apply_cli()
    sys.argv = ["onmt_translate", *argv]
    onmt.bin.translate.main()


def install_hook(argv: list[str]) -> None:
    from onmt_optimal.install import install_pth

    print(install_pth())


COMMANDS = {"translate": translate, "install-hook": install_hook}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        sys.stderr.write(__doc__)
        raise SystemExit(2)
    COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    main()
