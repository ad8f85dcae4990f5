"""The Hub folder (transformers' convention for shared decoding methods: ``custom_generate/generate.py``), built by
``make hub`` (``onmt_optimal.tools.hub_folder``) into a temporary folder, as a user with torch and transformers alone loads
it: in an interpreter where ``onmt_optimal`` cannot be imported (``hub_user.py``), on the trained Marian and GPT-2,
in both layouts transformers documents (a method repository: ``generate(custom_generate=<folder>,
trust_remote_code=True)``; a model repository with ``custom_generate/``: plain ``generate()`` after
``from_pretrained(..., trust_remote_code=True)``), each by a local path and by a Hub id (read offline from
huggingface_hub's cache, as a download leaves it), its answers are ``custom_generate=optimal_beam_search``'s
(sequences, scores, statistics) and, where docs/hf.md says so, transformers' ``early_stopping="never"``'s; loading
it registers no exit handler. Without ``trust_remote_code`` the method repository is refused, the model
repository keeps transformers' own ``generate``, and nothing is written to the modules cache. The folder holds
none of the package's process-level modules and at most ``MAX_LINES`` lines of Python, ``generate`` takes the
model first, the requirements are the supported transformers range, the README's metadata names the license and
the base model, and its example runs."""
from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import torch
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from helpers import toy_hf
from onmt_optimal.hf import optimal_beam_search

ROOT = Path(__file__).resolve().parents[2]
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
#: the most lines of Python the folder may hold (what a reviewer of the Hub repository reads); 2,701 today, the
#: option table's column of what a server's client may set and its -prune_dead row (with onmt_translate's help for
#: it), and the record's optional rows_skipped, included (one table and one record for every surface)
MAX_LINES = 2710
#: the package's modules that act on the process (signals, exit handlers, import hooks, file commits)
PROCESS_LEVEL = {"import_hook.py", "failures.py", "atomic.py"}
#: the transformers versions the folder supports (docs/hf.md, its README)
SUPPORTED = ("5.17.0", "5.23.0")


def make_hub(out: Path) -> subprocess.CompletedProcess:
    """``make hub``'s command, into ``out``."""
    return subprocess.run([sys.executable, "-m", "onmt_optimal.tools.hub_folder", "--out", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


@pytest.fixture(scope="module")
def hub_folder(tmp_path_factory) -> Path:
    """The folder as ``make hub`` builds it."""
    folder = tmp_path_factory.mktemp("build") / "optimal-beam-search"
    proc = make_hub(folder)
    assert proc.returncode == 0, proc.stderr
    return folder


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


def _layouts(hub_folder: Path, toy, tmp_path: Path) -> tuple[str, dict, dict]:
    """The saved model, the method repositories (a copy of the folder, by path and by Hub id) and the model
    repositories (the model's files and ``custom_generate/``, by path and by Hub id)."""
    model, repo, method = tmp_path / "model", tmp_path / "repo", tmp_path / "method"
    toy.model.save_pretrained(model)
    toy.tokenizer.save_pretrained(model)
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(model, repo)
    shutil.copytree(hub_folder / "custom_generate", repo / "custom_generate", ignore=ignore)
    shutil.copytree(hub_folder, method, ignore=ignore)
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


def test_the_folder_alone_answers_as_the_package(hub_folder, trained, tmp_path):
    model, methods, repos = _layouts(hub_folder, trained, tmp_path)
    torch.save(trained.inputs(SOURCES), tmp_path / "inputs.pt")
    job = dict(model=model, methods=methods, repos=repos, kind=trained.kind, inputs=str(tmp_path / "inputs.pt"),
               out=str(tmp_path / "seen.pt"), runs=[[dict(COMMON, **settings), never] for settings, never in RUNS])
    (tmp_path / "job.json").write_text(json.dumps(job))
    proc = _alone(tmp_path, str(HUB_USER), str(tmp_path / "job.json"))
    assert proc.returncode == 0, proc.stderr
    seen = torch.load(tmp_path / "seen.pt", weights_only=False)

    assert not seen["onmt_optimal"]
    assert seen["atexit"][0] == seen["atexit"][1]  # loading and running the folder registered no exit handler
    assert set(seen["refusals"]) == {(name, trust) for name in methods for trust in (False, True)}
    for refusal, cache in seen["refusals"].values():
        assert "trust_remote_code=True" in refusal
        assert cache == []  # nothing written before the refusal
    assert seen["untrusted"] == {name: (True, []) for name in repos}  # transformers' own generate, nothing written
    folder = {p.name for p in (hub_folder / "custom_generate").glob("*.py")}
    for layout in (*methods, *repos):
        assert _copied(seen["cache"], layout) == folder, layout  # each file of the folder, and no other

    reference = type(trained.model).from_pretrained(model)
    inputs = trained.inputs(SOURCES)
    for (settings, never), run in zip(RUNS, seen["runs"]):
        mine = reference.generate(**inputs, custom_generate=optimal_beam_search, **COMMON, **settings)
        assert set(run) == {*methods, *repos} | ({"never"} if never else set())
        for layout in (*methods, *repos):
            _same(run[layout], mine)
        if never:
            assert torch.equal(run["never"]["sequences"], mine.sequences)
            assert torch.equal(run["never"]["sequences_scores"], mine.sequences_scores)


def test_the_folder_is_small_and_leaves_the_process_alone(hub_folder):
    """At most ``MAX_LINES`` lines of Python, none of the package's process-level modules, no module that
    registers an exit handler, installs a signal handler or an import hook."""
    modules = {p.name: p.read_text() for p in (hub_folder / "custom_generate").glob("*.py")}
    assert sum(text.count("\n") for text in modules.values()) <= MAX_LINES
    assert not PROCESS_LEVEL & set(modules)
    for name, text in modules.items():
        imported = {a.name.split(".")[0] for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Import)
                    for a in node.names}
        imported |= {(node.module or "").split(".")[0] for node in ast.walk(ast.parse(text))
                     if isinstance(node, ast.ImportFrom) and not node.level}
        assert not imported & {"atexit", "signal", "onmt_optimal"}, name
        assert "sys.meta_path" not in text, name


def test_generate_takes_the_model_first(hub_folder):
    tree = ast.parse((hub_folder / "custom_generate" / "generate.py").read_text())
    generate = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "generate")
    assert [a.arg for a in generate.args.args][:1] == ["model"]


def test_the_requirements_are_the_supported_range(hub_folder):
    """torch and transformers, each line one comparison (transformers' loader reads one a line), the
    transformers lines together the supported versions and no other."""
    lines = (hub_folder / "custom_generate" / "requirements.txt").read_text().split()
    requirements = [Requirement(line) for line in lines]
    assert {r.name for r in requirements} == {"torch", "transformers"}
    assert all(len(r.specifier) <= 1 for r in requirements)
    versions = SpecifierSet(",".join(str(r.specifier) for r in requirements if r.name == "transformers"))
    first, last = SUPPORTED
    assert all(v in versions for v in (first, last, last + ".1")), versions
    below, above = f"5.{int(first.split('.')[1]) - 1}.9", f"5.{int(last.split('.')[1]) + 1}.0"
    assert not any(v in versions for v in (below, above)), versions
    assert f"transformers {first[:-2]} to {last[:-2]}" in (hub_folder / "README.md").read_text()


def test_the_readme_metadata(hub_folder):
    """transformers' conventions for a custom_generate repository (``library_name``, the ``custom_generate``
    tag), the package's license and the example's model as ``base_model``."""
    readme = (hub_folder / "README.md").read_text()
    meta = yaml.safe_load(re.match(r"---\n(.*?)\n---\n", readme, re.S).group(1))
    assert meta["library_name"] == "transformers" and "custom_generate" in meta["tags"]
    assert meta["license"] == "mit" and 'license = "MIT"' in (ROOT / "pyproject.toml").read_text()
    assert (hub_folder / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    model_id = re.search(r'^model_id = "([^"]+)"', readme, re.M).group(1)
    assert meta["base_model"] == model_id


def test_make_hub_replaces_only_an_earlier_build(hub_folder, tmp_path):
    """A folder that holds other files is left as it was; an earlier build is made anew."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    proc = make_hub(mine)
    assert proc.returncode == 1 and "holds files no build wrote" in proc.stderr
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    again = tmp_path / "again"
    assert make_hub(again).returncode == 0
    (again / "custom_generate" / "stale.py").write_text("")
    assert make_hub(again).returncode == 0
    assert sorted(p.name for p in again.rglob("*")) == sorted(p.name for p in hub_folder.rglob("*"))


def test_the_readme_example_runs(hub_folder, encoder_decoder, tmp_path):
    """The README's example as it stands, with the trained Marian (saved) in place of its model and the built
    folder where it names the folder ``make hub`` builds."""
    readme = (hub_folder / "README.md").read_text()
    example = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    model = tmp_path / "model"
    encoder_decoder.model.save_pretrained(model)
    encoder_decoder.tokenizer.save_pretrained(model)
    names = re.findall(r'^(model_id|method) = "([^"]+)"', example, re.M)
    assert names == [("model_id", names[0][1]), ("method", "build/hub/optimal-beam-search")]
    example = example.replace(f'model_id = "{names[0][1]}"', f"model_id = {str(model)!r}")
    example = example.replace(f'method = "{names[1][1]}"', f"method = {str(hub_folder)!r}")
    (tmp_path / "example.py").write_text(example)
    proc = _alone(tmp_path, str(tmp_path / "example.py"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and all(re.search(r"\((certificate|all_finished|max_length) after \d+ steps", line)
                                   for line in lines), proc.stdout
