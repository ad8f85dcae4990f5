"""The Hub folder ``hub/optimal-beam-search`` (transformers' convention for shared decoding methods:
``custom_generate/generate.py``) as a user with torch and transformers alone loads it: in an interpreter where
``onmt_optimal`` cannot be imported (``hub_user.py``), on the trained Marian and GPT-2, in both layouts
transformers documents (a method repository: ``generate(custom_generate=<folder>, trust_remote_code=True)``; a
model repository with ``custom_generate/``: plain ``generate()`` after ``from_pretrained(...,
trust_remote_code=True)``), each by a local path and by a Hub id (read offline from huggingface_hub's cache, as a
download leaves it), its answers are ``custom_generate=optimal_beam_search``'s (sequences, scores,
statistics) and, where docs/hf.md says so, transformers' ``early_stopping="never"``'s. Without
``trust_remote_code`` the method repository is refused, the model repository keeps transformers' own
``generate``, and nothing is written to the modules cache. The folder's copies of the package are what
``make hub`` writes, and its README's example runs."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import torch

from helpers import toy_hf
from onmt_optimal.hf import optimal_beam_search

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "hub" / "optimal-beam-search"
HUB_USER = Path(__file__).resolve().parent / "hub_user.py"
SOURCES = toy_hf.sources(12, seed=5)
COMMON = dict(max_new_tokens=24, return_dict_in_generate=True)
#: (generate's settings, whether transformers' early_stopping="never" answers the same: docs/hf.md)
RUNS = [
    (dict(num_beams=5, length_penalty=0.0), True),
    (dict(num_beams=5, length_penalty=1.0, num_return_sequences=2), True),
    (dict(num_beams=4, length_penalty=0.0, length_reward=1.0, length_ratio=1.5, stopping=["optimal", "exhaustive"]),
     False),
]
#: the Hub ids the test gives the folder and the model (from huggingface_hub's cache, offline)
HUB_METHOD, HUB_MODEL = "onmt-optimal/optimal-beam-search", "onmt-optimal/toy-model"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _alone(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -S`` with this environment's site-packages alone on its path (no ``.pth`` file read: neither the
    package's editable path nor its import hook), or the interpreter ``ONMT_OPTIMAL_HUB_PYTHON`` names (an
    environment of its own without the package, e.g. with another transformers), run in an empty folder with an
    empty stdin; transformers offline, its modules cache in ``tmp_path / "modules"``, huggingface_hub's cache in
    ``tmp_path / "hub"``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(HF_MODULES_CACHE=str(tmp_path / "modules"), HF_HUB_CACHE=str(tmp_path / "hub"), HF_HUB_OFFLINE="1")
    other = os.environ.get("ONMT_OPTIMAL_HUB_PYTHON")
    if not other:
        paths = sysconfig.get_paths()
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([paths["purelib"], paths["platlib"]]))
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    command = [other] if other else [sys.executable, "-S"]
    return subprocess.run(command + list(args), cwd=work, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)


def _published(tmp_path: Path, repo_id: str, folder: Path) -> None:
    """``folder`` as huggingface_hub's cache holds a download of the Hub repository ``repo_id`` (its files in a
    snapshot, ``refs/main`` naming it), which transformers offline reads as the repository."""
    base = tmp_path / "hub" / ("models--" + repo_id.replace("/", "--"))
    shutil.copytree(folder, base / "snapshots" / COMMIT, ignore=shutil.ignore_patterns("__pycache__"))
    (base / "refs").mkdir()
    (base / "refs" / "main").write_text(COMMIT)


def _layouts(toy, tmp_path: Path) -> tuple[str, dict, dict]:
    """The saved model, the method repositories (a copy of the folder, by path and by Hub id) and the model
    repositories (the model's files and ``custom_generate/``, by path and by Hub id)."""
    model, repo, method = tmp_path / "model", tmp_path / "repo", tmp_path / "method"
    toy.model.save_pretrained(model)
    toy.tokenizer.save_pretrained(model)
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(model, repo)
    shutil.copytree(FOLDER / "custom_generate", repo / "custom_generate", ignore=ignore)
    shutil.copytree(FOLDER, method, ignore=ignore)
    _published(tmp_path, HUB_METHOD, method)
    _published(tmp_path, HUB_MODEL, repo)
    return str(model), {"method": str(method), "hub method": HUB_METHOD}, {"repo": str(repo), "hub repo": HUB_MODEL}


#: where transformers copies each layout's files in its modules cache (a local folder: by its name; a Hub id: by
#: owner and name, ``-`` spelled ``_hyphen_``)
CACHED = {"method": "transformers_modules/method/", "repo": "transformers_modules/repo/",
          "hub method": "transformers_modules/onmt_hyphen_optimal/optimal_hyphen_beam_hyphen_search/",
          "hub repo": "transformers_modules/onmt_hyphen_optimal/toy_hyphen_model/"}


def _same(a: dict, b) -> None:
    assert torch.equal(a["sequences"], b.sequences)
    assert torch.equal(a["sequences_scores"], b.sequences_scores)
    assert a["search_stats"] == b.search_stats and a["rule_results"] == b.rule_results


def _copied(cache: list[str], layout: str) -> set[str]:
    """The modules transformers copied into its modules cache for ``layout``."""
    return {Path(f).name for f in cache if f.startswith(CACHED[layout]) and "/custom_generate/" in f
            and f.endswith(".py") and not f.endswith("/__init__.py")}


def test_the_folder_alone_answers_as_the_package(trained, tmp_path):
    model, methods, repos = _layouts(trained, tmp_path)
    torch.save(trained.inputs(SOURCES), tmp_path / "inputs.pt")
    job = dict(model=model, methods=methods, repos=repos, kind=trained.kind, inputs=str(tmp_path / "inputs.pt"),
               out=str(tmp_path / "seen.pt"), runs=[[dict(COMMON, **settings), never] for settings, never in RUNS])
    (tmp_path / "job.json").write_text(json.dumps(job))
    proc = _alone(tmp_path, str(HUB_USER), str(tmp_path / "job.json"))
    assert proc.returncode == 0, proc.stderr
    seen = torch.load(tmp_path / "seen.pt", weights_only=False)

    assert not seen["onmt_optimal"]
    assert set(seen["refusals"]) == {(name, trust) for name in methods for trust in (False, True)}
    for refusal, cache in seen["refusals"].values():
        assert "trust_remote_code=True" in refusal
        assert cache == []  # nothing written before the refusal
    assert seen["untrusted"] == {name: (True, []) for name in repos}  # transformers' own generate, nothing written
    folder = {p.name for p in (FOLDER / "custom_generate").glob("*.py")}
    for layout in (*methods, *repos):
        assert _copied(seen["cache"], layout) == folder, layout  # each file of the folder, and no other

    reference = type(trained.model).from_pretrained(model)
    inputs = trained.inputs(SOURCES)
    for (settings, never), run in zip(RUNS, seen["runs"]):
        mine = reference.generate(**inputs, custom_generate=optimal_beam_search, **COMMON, **settings)
        by_position = [f"{name}, input ids by position" for name in repos]
        assert set(run) == {*methods, *repos, *by_position} | ({"never"} if never else set())
        for layout in (*methods, *repos, *by_position):
            _same(run[layout], mine)
        if never:
            assert torch.equal(run["never"]["sequences"], mine.sequences)
            assert torch.equal(run["never"]["sequences_scores"], mine.sequences_scores)


def test_the_copies_are_what_make_hub_writes():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_hub.py"), "--check"], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_requirements_are_installable_from_an_index():
    lines = (FOLDER / "custom_generate" / "requirements.txt").read_text().split()
    assert {re.split("[<>=!~]", line)[0] for line in lines} == {"torch", "transformers"}


def test_the_readme_example_runs(encoder_decoder, tmp_path):
    """The README's example as it stands, its repository id read from huggingface_hub's cache, with the trained
    Marian (saved) in place of its model."""
    readme = (FOLDER / "README.md").read_text()
    example = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    model, methods, _ = _layouts(encoder_decoder, tmp_path)
    names = re.findall(r'^(model_id|repo_id) = "([^"]+)"', example, re.M)
    assert [name for name, _ in names] == ["model_id", "repo_id"] and names[1][1] == HUB_METHOD
    example = example.replace(f'model_id = "{names[0][1]}"', f"model_id = {model!r}")
    (tmp_path / "example.py").write_text(example)
    proc = _alone(tmp_path, str(tmp_path / "example.py"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and all(re.search(r"\((certificate|all_finished|max_length) after \d+ steps", line)
                                   for line in lines), proc.stdout
