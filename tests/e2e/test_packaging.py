"""The package as pip and packagers see it, and the hook file's commands.

``python -m build`` (PyPA build, with build isolation: the backend comes from pip's configured index) makes the
sdist, then the wheel from that sdist; the tests check what each carries (the hook file at the wheel's root,
no tests), the metadata, and installs into fresh virtual environments made with ``--without-pip`` (pip of
this environment drives them through ``--python``; the wheel installs with ``--no-deps --no-index``). For the
OpenNMT-py check, a fresh environment reaches this environment's site-packages (torch, OpenNMT-py) through one
more ``.pth`` line, a plain path whose own ``.pth`` files Python does not run; onmt-optimal itself comes from
the fresh environment. ``pip install -e`` of the repository builds its editable wheel the same way.
The hook-file commands (``install-hook`` / ``uninstall-hook``) and ``stock-translate`` are checked too.
"""
from __future__ import annotations

import email.parser
import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

import onmt_optimal
from onmt_optimal import __main__ as cli
from onmt_optimal.opennmt import install

REPO = Path(__file__).resolve().parents[2]
NAME, VERSION = "onmt_optimal", onmt_optimal.__version__
#: the environment of every process started here: no PYTHONPATH reaching this checkout, the plugin on
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "ONMT_OPTIMAL_DISABLE")}
ENV.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONWARNINGS="ignore")
#: what ``onmt_translate -h`` runs, as OpenNMT-py's console script does (``python -m`` would skip its hook)
HELP = "import sys; sys.argv = ['onmt_translate', '-h']; from onmt.bin.translate import main; main()"


def run(args, check=True, **kwargs):
    done = subprocess.run([str(a) for a in args], env=kwargs.pop("env", ENV), capture_output=True, text=True,
                          **kwargs)
    if check:
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
    return done


def pip(venv: Path, *args, check=True):
    return run([sys.executable, "-m", "pip", "-q", "--python", venv / "bin" / "python", *args], check=check)


def fresh_venv(path: Path) -> tuple[Path, Path]:
    """A new virtual environment without pip: its interpreter and its site-packages."""
    run([sys.executable, "-m", "venv", "--without-pip", path])
    python = path / "bin" / "python"
    purelib = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    return python, Path(purelib)


def reach_this_environment(purelib: Path) -> Path:
    """Let a fresh environment import this one's packages (torch, OpenNMT-py); returns the file to remove."""
    link = purelib / "zz_test_packaging_parent.pth"
    link.write_text(sysconfig.get_paths()["purelib"] + "\n")
    return link


def leftovers(purelib: Path) -> list[str]:
    """What of onmt-optimal is left in site-packages (pip removes the directory itself once it is empty)."""
    return [p.name for p in purelib.iterdir() if "onmt" in p.name.lower()] if purelib.exists() else []


def onmt_help(python: Path, **env) -> str:
    return run([python, "-c", HELP], env=dict(ENV, **env)).stdout


# ------------------------------------------------------------------ in process: the hook file and its commands
def test_the_repository_pth_is_the_line_install_hook_writes():
    assert (REPO / install.PTH_NAME).read_text() == install.PTH_LINE
    assert install.PTH_LINE.startswith("import ") and install.PTH_LINE.count("\n") == 1  # one line site.py runs


def test_install_hook_writes_the_file_whole_and_uninstall_hook_removes_it(tmp_path, capsys):
    (tmp_path / install.PTH_NAME).write_text("import an older line\n")
    cli.main(["install-hook", "--site-packages", str(tmp_path)])
    assert capsys.readouterr().out.strip() == str(tmp_path / install.PTH_NAME)
    assert [p.name for p in tmp_path.iterdir()] == [install.PTH_NAME]  # replaced, no temporary file left
    assert (tmp_path / install.PTH_NAME).read_text() == install.PTH_LINE
    cli.main(["uninstall-hook", "--site-packages", str(tmp_path)])
    assert capsys.readouterr().out.strip() == f"removed {tmp_path / install.PTH_NAME}"
    assert list(tmp_path.iterdir()) == []
    cli.main(["uninstall-hook", "--site-packages", str(tmp_path)])
    assert "nothing removed" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["install-hook", "uninstall-hook"])
def test_hook_commands_report_a_bad_place_in_one_line(tmp_path, capsys, command):
    # not a directory; then a directory in the file's place, which neither a rename nor an unlink can replace
    (tmp_path / "file").write_text("")
    (tmp_path / "dir" / install.PTH_NAME).mkdir(parents=True)
    for where, why in ((tmp_path / "file", "is not a directory"), (tmp_path / "missing", "is not a directory"),
                       (tmp_path / "dir", "cannot")):
        with pytest.raises(SystemExit) as done:
            cli.main([command, "--site-packages", str(where)])
        err = capsys.readouterr().err
        assert done.value.code == 1 and err.count("\n") == 1 and why in err and f"onmt-optimal {command}" in err
    assert sorted(p.name for p in (tmp_path / "dir").iterdir()) == [install.PTH_NAME]  # no temporary file left
    assert (tmp_path / "dir" / install.PTH_NAME).is_dir()


def test_stock_translate_refuses_a_process_that_already_imported_opennmt(capsys):
    import onmt  # noqa: F401  (conftest imported and patched it)

    with pytest.raises(SystemExit) as done:
        cli.main(["stock-translate", "-model", "m.pt"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1 and "fresh" in err
    from onmt_optimal import import_hook

    assert any(isinstance(f, import_hook._Finder) for f in sys.meta_path)  # this process keeps its hook


# ------------------------------------------------------------------ the built distributions
@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict:
    """``python -m build``: the sdist, then the wheel built from that sdist."""
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", out, REPO])
    sdist, wheel = out / f"{NAME}-{VERSION}.tar.gz", out / f"{NAME}-{VERSION}-py3-none-any.whl"
    assert sorted(p.name for p in out.iterdir()) == sorted([sdist.name, wheel.name])
    return {"sdist": sdist, "wheel": wheel}


def package_files() -> set[str]:
    return {p.relative_to(REPO).as_posix() for p in (REPO / NAME).rglob("*.py") if "__pycache__" not in p.parts}


@pytest.mark.slow
def test_the_wheel_carries_the_package_and_the_hook_file_at_its_root(dists):
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        names = set(wheel.namelist())
        assert wheel.read(install.PTH_NAME).decode() == install.PTH_LINE
        info = f"{NAME}-{VERSION}.dist-info"
        assert "onmt-optimal = onmt_optimal.__main__:main" in wheel.read(f"{info}/entry_points.txt").decode()
        assert wheel.read(f"{info}/licenses/LICENSE") == (REPO / "LICENSE").read_bytes()
    assert package_files() <= names
    strays = {n for n in names if not n.startswith((f"{NAME}/", f"{info}/")) and n != install.PTH_NAME}
    assert not strays, strays  # no tests, scripts, models, set-up files
    assert not any(n.endswith(".pyc") for n in names)


@pytest.mark.slow
def test_the_sdist_carries_what_rebuilds_the_wheel_and_no_tests(dists):
    with tarfile.open(dists["sdist"]) as sdist:
        names = {m.name.split("/", 1)[1] for m in sdist.getmembers() if m.isfile()}
    wanted = {"pyproject.toml", "PKG-INFO", install.PTH_NAME, "LICENSE", "docs/summary.md", "README.md",
              "requirements.txt", "requirements-test.txt", "requirements-eole.txt", "requirements-plots.txt",
              "requirements-server.txt"}
    assert wanted | package_files() <= names, (wanted | package_files()) - names
    assert not [n for n in names if n.startswith(("tests/", "scripts/", "models/", "results/", "benchmarks/"))]
    assert "setup.py" not in names


def metadata(text: str):
    return email.parser.Parser().parsestr(text)


@pytest.mark.slow
def test_the_metadata(dists):
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        meta = metadata(wheel.read(f"{NAME}-{VERSION}.dist-info/METADATA").decode())
    assert meta["Name"] == "onmt-optimal" and meta["Version"] == VERSION
    assert meta["License-Expression"] == "MIT" and meta["Author"] == "onmt-optimal developers"
    classifiers = meta.get_all("Classifier")
    assert "Programming Language :: Python :: 3" in classifiers and len(classifiers) >= 5
    assert meta.get_payload().strip() == (REPO / "docs" / "summary.md").read_text().strip()
    assert len(meta.get_payload()) < 4000 and meta["Description-Content-Type"] == "text/markdown"
    requires = meta.get_all("Requires-Dist")
    # never torch or a toolkit outside an extra: OpenNMT-py's torch<2.3 pin would downgrade torch
    assert not [r for r in requires if r.split()[0].lower().startswith(("torch", "opennmt")) or
                (r.lower().startswith("eole") and "extra ==" not in r)], requires
    assert {"ray", "eole", "hf", "test", "plots"} <= set(meta.get_all("Provides-Extra"))
    assert any(r.startswith("build") and "extra == 'test'" in r for r in requires)
    with tarfile.open(dists["sdist"]) as sdist:
        pkg_info = metadata(sdist.extractfile(f"{NAME}-{VERSION}/PKG-INFO").read().decode())
    for key in ("Name", "Version", "License-Expression", "Author", "Requires-Python"):
        assert pkg_info[key] == meta[key], key


# ------------------------------------------------------------------ installs into fresh environments
@pytest.mark.slow
def test_the_wheel_installs_the_hook_and_pip_uninstall_removes_it(dists, tmp_path):
    python, purelib = fresh_venv(tmp_path / "venv")
    pip(tmp_path / "venv", "install", "--no-deps", "--no-index", dists["wheel"])
    assert (purelib / install.PTH_NAME).read_text() == install.PTH_LINE
    quiet = run([python, "-c", "import sys; print(sorted(m for m in sys.modules if m.startswith('onmt')))"])
    assert quiet.stdout.strip() == "['onmt_optimal', 'onmt_optimal.import_hook']" and quiet.stderr == ""
    link = reach_this_environment(purelib)
    where = run([python, "-c", "import onmt_optimal; print(onmt_optimal.__file__)"]).stdout
    assert where.startswith(str(purelib))
    assert "-stopping" in onmt_help(python)
    assert "-stopping" not in onmt_help(python, ONMT_OPTIMAL_DISABLE="1")
    link.unlink()
    pip(tmp_path / "venv", "uninstall", "-y", "onmt-optimal")
    assert not leftovers(purelib)


@pytest.mark.slow
def test_a_stale_or_broken_package_never_makes_the_hook_print_or_fail(dists, tmp_path):
    """The .pth line runs at every start of every process of the environment: whatever is wrong with the
    package behind it, a process starts silently (the previous line let anything but ImportError through)."""
    python, purelib = fresh_venv(tmp_path / "venv")
    pip(tmp_path / "venv", "install", "--no-deps", "--no-index", dists["wheel"])
    hook = purelib / NAME / "import_hook.py"
    hook.write_text("raise RuntimeError('a broken install')\n")
    done = run([python, "-c", "print('started')"])
    assert (done.stdout, done.stderr) == ("started\n", "")
    for path in sorted((purelib / NAME).rglob("*"), reverse=True):  # the package gone, the .pth left behind
        path.rmdir() if path.is_dir() else path.unlink()
    (purelib / NAME).rmdir()
    done = run([python, "-c", "print('started')"])
    assert (done.stdout, done.stderr) == ("started\n", "")


@pytest.mark.slow
def test_an_editable_install_ships_the_hook_and_pip_uninstall_removes_it(tmp_path):
    python, purelib = fresh_venv(tmp_path / "venv")
    pip(tmp_path / "venv", "install", "--no-deps", "-e", REPO)  # builds the editable wheel (isolated backend)
    assert (purelib / install.PTH_NAME).read_text() == install.PTH_LINE
    link = reach_this_environment(purelib)
    where = run([python, "-c", "import onmt_optimal; print(onmt_optimal.__file__)"]).stdout
    assert where.strip() == str(REPO / NAME / "__init__.py")
    assert "-stopping" in onmt_help(python)
    link.unlink()
    pip(tmp_path / "venv", "uninstall", "-y", "onmt-optimal")
    assert not leftovers(purelib)


# ------------------------------------------------------------------ stock OpenNMT-py for comparisons
@pytest.mark.slow
def test_stock_translate_is_stock_opennmt_py_with_checkpoints_loading(toy_model, tmp_path):
    from helpers import toy

    toy.write_corpus(tmp_path / "in", 12, seed=5)
    src = tmp_path / "in.src"
    args = ["-model", toy_model, "-src", src, "-length_penalty", "wu", "-alpha", "0.6", "-beam_size", "4"]
    ours = run([sys.executable, "-m", "onmt_optimal", "stock-translate", *args, "-output", tmp_path / "ours"])
    reference = run([sys.executable, REPO / "tests/helpers/stock_translate.py", *args, "-output", tmp_path / "ref"],
                    env=dict(ENV, ONMT_OPTIMAL_DISABLE="1"))
    assert ours.returncode == reference.returncode == 0
    assert (tmp_path / "ours").read_bytes() == (tmp_path / "ref").read_bytes()
    assert len((tmp_path / "ours").read_text().splitlines()) == 12
    new_flag = run([sys.executable, "-m", "onmt_optimal", "stock-translate", *args, "-output", tmp_path / "x",
                    "-stopping", "optimal"], check=False)
    assert new_flag.returncode != 0 and "unrecognized arguments: -stopping optimal" in new_flag.stderr
    # what it is for: the disabled plugin alone is stock OpenNMT-py 3.5.1, which loads no checkpoint on torch
    # >= 2.6 and has emptied -output by then
    (tmp_path / "old").write_text("kept?\n")
    disabled = run([Path(sys.executable).parent / "onmt_translate", *args, "-output", tmp_path / "old"],
                   env=dict(ENV, ONMT_OPTIMAL_DISABLE="1"), check=False)
    assert disabled.returncode != 0 and "weights_only" in disabled.stderr
    assert (tmp_path / "old").read_text() == ""
