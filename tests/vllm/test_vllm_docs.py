"""docs/vllm.md's offline example, pasted into a script as a user would, runs: the script is the doc's block with
its ``MODEL`` set to the toy model (trained in this run, ``toy`` fixture), started as ``python script.py`` in
vLLM's environment (vLLM starts its engine in a spawned process, which imports the script again)."""
import os
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "vllm.md"
MODEL_LINE = 'MODEL = "path/to/model"'


def offline_example() -> str:
    """The doc's Python block that calls ``optimal_beam_search`` on an ``LLM`` (exactly one)."""
    blocks = [b for b in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S) if "LLM(" in b]
    assert len(blocks) == 1, blocks
    return blocks[0]


def test_the_offline_example_runs_as_a_script(toy, model_dir, tmp_path):
    code = offline_example()
    assert MODEL_LINE in code and 'if __name__ == "__main__":' in code
    script = tmp_path / "example.py"
    script.write_text(code.replace(MODEL_LINE, f"MODEL = {str(model_dir)!r}"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=900,
                          cwd=tmp_path, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert done.returncode == 0, done.stderr[-3000:]
    printed = re.findall(r"^'.*' (\d+) (\w+)$", done.stdout, re.M)  # vLLM's log shares the standard output
    assert len(printed) == 2, done.stdout  # one a prompt: the 1-best's text, its steps, its stop reason
    for steps, reason in printed:
        assert 1 <= int(steps) <= 32 and reason in ("certificate", "all_finished", "max_length")
