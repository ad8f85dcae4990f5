"""eole's own test suite, as its wheel ships it (``eole/tests``), gives every test the same outcome and reason with
the plugin installed as without (``ONMT_OPTIMAL_DISABLE=1``): with none of the plugin's options, eole is stock,
including for what eole's tests check beyond ``eole predict`` (``import eole`` loads no torch, warnings, configs,
the server, the web UI's Python side).

Both runs go in parallel, each a fresh ``python -m pytest`` (so the import hook is set up, or not, as at any
interpreter start) in its own directory, which holds the data those tests read relative to it
(``data/eole-tests``: copied from eole's repository, see its README). Tests that cannot run here fail or are
skipped alike in both runs; ``CANNOT_RUN_HERE`` gives each one's reason, and a stock outcome it does not explain
fails this test (a broken environment is not "the same as stock").
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
EOLE_TESTS = Path(importlib.util.find_spec("eole").origin).parent / "tests"

#: eole test module (or module::test) -> why it fails, errors or is skipped on this machine, stock and plugin alike
CANNOT_RUN_HERE = {
    "test_recipes": "a script, not a test: parses sys.argv (a recipes directory) when imported; not collected",
    "test_data_prepare": "needs eole's training corpus and vocabularies (eole/tests/data, 2.7 MB), not in the wheel",
    "test_livecodebench_recipe": "needs eole's recipes/ directory, not in the wheel",
    "test_runpod": "needs eole's recipes package, not in the wheel",
    "test_docker_build_scripts": "needs eole's docker/ directory, not in the wheel",
    "test_setup_cuda_archs": "needs eole's setup.py, not in the wheel",
    "test_model_lifecycle::test_browser_model_defaults": "needs eole/tests/web/*.cjs, not in the wheel",
    "test_ui_images::test_browser_image_helpers": "needs eole/tests/web/*.cjs, not in the wheel",
    "test_ui_knowledge::test_browser_renderer": "needs eole/tests/web/*.cjs, not in the wheel",
    "test_ui_ocr::test_preview_renderer": "needs eole/tests/web/*.cjs, not in the wheel",
    "test_audio_utils": "torchcodec's native library does not load here (no FFmpeg libraries)",
    "test_decoder_graph": "skipped by eole: needs CUDA",
    "test_decoder_graph_tensor_parallel": "skipped by eole: needs two GPUs",
    "test_quantized_tensor_parallel": "skipped by eole: needs two GPUs",
    "test_gdn_control_projection": "skipped by eole: needs CUDA",
    "test_marlin_fusion": "skipped by eole: needs CUDA",
    "test_fla_compile": "skipped by eole: flash-linear-attention (fla) is not installed",
    "test_knowledge_embedding": "skipped by eole: needs EOLE_TEST_RAG_MODEL",
    "test_trackio_integration": "skipped by eole: needs EOLE_RUN_TRACKIO_INTEGRATION=1",
    "test_ui_knowledge": "skipped by eole: its optional RAG packages are not installed",
    "test_ui_ocr": "skipped by eole: its optional PDF renderer is not installed",
}
NOT_COLLECTED = ["test_recipes.py"]


def run_suite(directory: Path, stock: bool) -> subprocess.Popen:
    """``python -m pytest`` on eole's tests in ``directory`` (their data under ``eole/tests/data``)."""
    data = directory / "eole" / "tests" / "data"
    data.mkdir(parents=True)
    for source in (HERE / "data" / "eole-tests").iterdir():
        if source.name != "README.md":
            shutil.copy(source, data / source.name)
    (directory / "pytest.ini").write_text("[pytest]\n")  # none of this repository's settings
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("ONMT_OPTIMAL_DISABLE", None)
    if stock:
        env["ONMT_OPTIMAL_DISABLE"] = "1"
    ignore = [f"--ignore={EOLE_TESTS / name}" for name in NOT_COLLECTED]
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(directory / "pytest.ini"),
         "--rootdir", str(directory), "--continue-on-collection-errors", f"--junitxml={directory / 'junit.xml'}",
         *ignore, str(EOLE_TESTS)],
        cwd=directory, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def outcomes(junit: Path, directory: Path) -> dict[str, tuple[str, str]]:
    """Test (``module::class::name``, or the module for a collection error) -> (outcome, reason's first line)."""
    result = {}
    for case in ET.parse(junit).iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        if classname:  # eole.tests.<module>.<class>, or eole.tests.<module> for a test function
            test = "::".join([*classname.rsplit("eole.tests.", 1)[-1].split("."), name])
        else:  # a module that could not be collected: its dotted path
            test = name.rsplit("eole.tests.", 1)[-1]
        outcome, reason = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = child.tag
                reason = (child.get("message") or "").splitlines()[0] if child.get("message") else ""
        reason = re.sub(r"0x[0-9a-f]+", "0x?", reason.replace(str(directory), "<dir>"))
        result[test] = (outcome, reason)
    return result


def explained(test: str) -> bool:
    module, _, rest = test.partition("::")
    name = rest.rsplit("::", 1)[-1]
    return module in CANNOT_RUN_HERE or f"{module}::{name}" in CANNOT_RUN_HERE


def test_eoles_own_tests_have_the_same_outcomes_with_the_plugin(tmp_path):
    runs = {}
    for side in ("plugin", "stock"):
        (tmp_path / side).mkdir()
        runs[side] = run_suite(tmp_path / side, stock=side == "stock")
    try:
        logs = {side: proc.communicate(timeout=900)[0] for side, proc in runs.items()}
    finally:
        for proc in runs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    found = {side: outcomes(tmp_path / side / "junit.xml", tmp_path / side) for side in runs}
    plugin, stock = found["plugin"], found["stock"]
    assert len(stock) > 600, logs["stock"][-3000:]
    differ = {test: (plugin.get(test), stock.get(test)) for test in plugin.keys() | stock.keys()
              if plugin.get(test) != stock.get(test)}
    assert not differ, f"outcome (plugin, stock) of eole's tests: {differ}\n{logs['plugin'][-3000:]}"
    unexplained = {test: got for test, got in stock.items() if got[0] != "passed" and not explained(test)}
    assert not unexplained, f"stock eole's tests that fail here for no listed reason: {unexplained}"
