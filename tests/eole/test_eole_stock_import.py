"""With the hook installed, importing eole is stock's: ``import eole`` loads the modules stock loads (ours aside:
the hook's own two), and importing the ``eole`` command's modules prints stock's warnings, no fewer."""
from __future__ import annotations

import json
import os
import subprocess
import sys

LOADED = "import json, sys; import eole; print(json.dumps(sorted(sys.modules)))"


def python(code: str, stock: bool) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for name in ("ONMT_OPTIMAL_DISABLE", "PYTHONWARNINGS"):
        env.pop(name, None)
    if stock:
        env["ONMT_OPTIMAL_DISABLE"] = "1"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_import_eole_loads_what_stock_loads():
    ours = set(json.loads(python(LOADED, stock=False).stdout))
    stock = set(json.loads(python(LOADED, stock=True).stdout))
    assert ours - stock == {"onmt_optimal.eole", "onmt_optimal.eole.hook"}
    assert stock <= ours and "torch" not in ours


def test_the_eole_command_warns_as_stock():
    code = "import eole.bin.main, eole.predict, sys; assert ('onmt_optimal.eole.patch' in sys.modules) == {}"
    ours = python(code.format(True), stock=False).stderr
    stock = python(code.format(False), stock=True).stderr
    assert ours == stock and "RuntimeWarning" in stock
