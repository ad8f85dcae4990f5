"""Install ``onmt_optimal.pth`` into the environment's site-packages.

A ``.pth`` file whose line starts with ``import`` runs at interpreter start; ours installs the post-import
hook of ``onmt_optimal.opennmt.hook``, which patches OpenNMT-py only when a process imports it. ``pip install .``
ships the file inside the wheel; an editable install (``pip install -e .``) does not run our build step,
so ``python -m onmt_optimal install-hook`` (run by ``make setup``) writes it.
"""
from __future__ import annotations

import sysconfig
from pathlib import Path

PTH_NAME = "onmt_optimal.pth"
# one line, run by site.py at start-up; harmless if the package was uninstalled and the file left behind
# (the OpenNMT-py hook and the eole hook: each is inert where its toolkit is not installed)
PTH_LINE = ('import sys; exec("for _m in (\'onmt_optimal.opennmt.hook\', \'onmt_optimal.eole.hook\'):\\n'
            '    try:\\n        __import__(_m)\\n    except ImportError:\\n        pass")\n')


def install_pth(site_packages: str | None = None) -> Path:
    target = Path(site_packages or sysconfig.get_paths()["purelib"]) / PTH_NAME
    target.write_text(PTH_LINE)
    return target
