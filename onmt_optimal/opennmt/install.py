"""Write or remove ``onmt_optimal.pth``, the file that installs the import hook, in a site-packages directory.

Python runs a ``.pth`` line that starts with ``import`` at the start of every process of the environment; ours
calls ``onmt_optimal.import_hook.boot`` inside ``try``/``except Exception``, so it never raises or prints, even
when the package was removed and the file left behind. The wheel and the editable install of onmt-optimal ship
the file themselves (``pip uninstall`` removes it); ``install_pth`` / ``remove_pth`` (``python -m onmt_optimal
install-hook`` / ``uninstall-hook``) serve installs made otherwise. ``PTH_LINE`` is the content of the
repository's ``onmt_optimal.pth``, which the build ships (``tests/e2e/test_packaging.py`` checks they agree).
"""
from __future__ import annotations

import os
import sysconfig
import tempfile
from pathlib import Path

PTH_NAME = "onmt_optimal.pth"
PTH_LINE = ('import sys; exec("try:\\n    import onmt_optimal.import_hook\\n    onmt_optimal.import_hook.boot()\\n'
            'except Exception:\\n    pass")\n')


class HookFileError(Exception):
    """The hook file cannot be written or removed there (one line: where, and why)."""


def site_packages(directory: str | None = None) -> Path:
    """``directory``, or this interpreter's purelib directory (site-packages); refused if it is no directory."""
    path = Path(directory or sysconfig.get_paths()["purelib"])
    if not path.is_dir():
        raise HookFileError(f"{path} is not a directory")
    return path


def install_pth(directory: str | None = None) -> Path:
    """Write ``onmt_optimal.pth`` into ``directory`` (default: site-packages), whole or not at all: a temporary
    file beside it (named so that Python never reads it as a ``.pth``), then an atomic rename."""
    target = site_packages(directory) / PTH_NAME
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".onmt_optimal-", suffix=".tmp")
    except OSError as err:
        raise HookFileError(f"cannot write {target}: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(PTH_LINE)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise HookFileError(f"cannot write {target}: {err.strerror or err}") from None
    return target


def remove_pth(directory: str | None = None) -> Path | None:
    """Remove ``onmt_optimal.pth`` from ``directory`` (default: site-packages); its path, or None if absent."""
    target = site_packages(directory) / PTH_NAME
    try:
        target.unlink()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise HookFileError(f"cannot remove {target}: {err.strerror or err}") from None
    return target
