"""Build the Hub folder of transformers' decoding loop (``make hub``): ``build/hub/optimal-beam-search/``, a
transformers ``custom_generate`` repository that runs where only torch and transformers are installed. It runs
from a clone (its sources are the clone's ``hub/``), on the standard library alone.

The folder is made, never committed: its hand-written files come from ``hub/optimal-beam-search/`` (``README.md``;
``generate.py`` and ``requirements.txt``, which go to ``custom_generate/``), and beside ``generate.py`` go copies
of the package modules the loop (``onmt_optimal.hf.generate``) imports, at any depth.

transformers loads ``custom_generate/generate.py`` and copies beside it only the files that ``from .<name> import``
lines name (``get_relative_imports``, recursively, one folder deep), so the copies are flat: the package module
``onmt_optimal/search/answers.py`` becomes ``search_answers.py``. Each import of the package is rewritten to a
relative one:

    from onmt_optimal.search.state import Rules     ->  from .search_state import Rules
    from onmt_optimal.search import answers, step   ->  from . import search_answers as answers, search_step as step
                                                        from .search_answers import __name__ as _
                                                        from .search_step import __name__ as _

(``from . import`` binds the module, the ``from .<name> import __name__`` lines name its file for transformers'
loader, which is checked to reach every copy). Nothing else changes; the folder's README lists where each copy
came from, and the package's LICENSE goes beside it.

    python -m onmt_optimal.tools.hub_folder              build into build/hub/optimal-beam-search
    python -m onmt_optimal.tools.hub_folder --out DIR    build into DIR (made anew: it must be empty, absent, or
                                                         an earlier build)
"""
from __future__ import annotations

import argparse
import ast
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "onmt_optimal"
#: the hand-written files: README.md at the folder's root, the others in custom_generate/
SOURCES = ROOT / "hub" / "optimal-beam-search"
OWN = {"README.md": "README.md", "generate.py": "custom_generate/generate.py",
       "requirements.txt": "custom_generate/requirements.txt"}
OUT = ROOT / "build" / "hub" / "optimal-beam-search"
#: the package module whose ``optimal_beam_search`` the folder's ``generate.py`` calls
ENTRY = f"{PACKAGE}.hf.generate"
#: the line of the hand-written README that ``make hub`` replaces by the list of copies (``listing``)
COPIES = "<!-- make hub: the copies -->"
#: the list's first line, by which a folder is known as an earlier build
LISTED = "Copied from the onmt-optimal package by `make hub` (imports made relative, nothing else changed):"
#: the lines by which transformers' loader finds the files to copy beside a module (``get_relative_imports``)
RELATIVE = re.compile(r"^\s*(?:import\s+\.(\S+)\s*$|from\s+\.(\S+)\s+import)", re.M)


class Unflattenable(Exception):
    """An import the flat copy cannot express."""


def source(module: str) -> Path | None:
    """The file of a package module (a package: its ``__init__.py``), or None."""
    base = ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def flat(module: str) -> str:
    """The copy's module name: the path below the package, joined by ``_`` (the package's own ``__init__.py``:
    its name)."""
    return "_".join(module.split(".")[1:]) or PACKAGE


def absolute(module: str, node: ast.ImportFrom) -> str:
    """The absolute module of ``from <module> import ...`` in ``module`` (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    package = module if source(module).name == "__init__.py" else module.rpartition(".")[0]
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{base}.{node.module}" if node.module else base


def ours(module: str) -> bool:
    return module == PACKAGE or module.startswith(PACKAGE + ".")


def relative(module: str, node: ast.stmt) -> tuple[list[str], set[str]]:
    """The statements that replace an import of the package, and the package modules they need."""
    binds, marks, needs = [], [], set()
    if isinstance(node, ast.Import):
        if not all(a.asname for a in node.names):
            raise Unflattenable(f"`import {PACKAGE}...` binds the package itself: write `from ... import ...`")
        pairs, names = [(a.name, a.asname) for a in node.names], []
    else:
        origin = absolute(module, node)
        pairs = [(f"{origin}.{a.name}", a.asname or a.name) for a in node.names if source(f"{origin}.{a.name}")]
        names = [a for a in node.names if not source(f"{origin}.{a.name}")]
        if names:
            needs.add(origin)
            listed = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in names)
            binds.append(f"from .{flat(origin)} import {listed}")
    if pairs:
        binds.append("from . import " + ", ".join(flat(m) + ("" if flat(m) == name else f" as {name}")
                                                  for m, name in pairs))
        marks = [f"from .{flat(m)} import __name__ as _" for m, _ in pairs]
        needs |= {m for m, _ in pairs}
    return binds + marks, needs


def copy(module: str) -> tuple[str, set[str]]:
    """The text of a module's copy and the package modules it imports."""
    path = source(module)
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    needs = set()
    edits = []
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Import) and any(ours(a.name) for a in node.names):
            if not all(ours(a.name) for a in node.names):
                raise Unflattenable(f"{path}:{node.lineno}: one `import` of the package and of something else")
        elif not (isinstance(node, ast.ImportFrom) and ours(absolute(module, node))):
            continue
        try:
            statements, wanted = relative(module, node)
        except Unflattenable as e:
            raise Unflattenable(f"{path.relative_to(ROOT)}:{node.lineno}: {e}") from None
        needs |= wanted
        edits.append((node, ("\n" + " " * node.col_offset).join(statements)))
    for node, replacement in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        first, last = lines[node.lineno - 1], lines[node.end_lineno - 1]
        replaced = first[:node.col_offset] + replacement + last[node.end_col_offset:]
        lines[node.lineno - 1:node.end_lineno] = [replaced]
    out = "".join(lines)
    ast.parse(out, flat(module))
    return out, needs


def copies() -> dict[str, tuple[str, str]]:
    """File name in the folder -> (text, the package file it copies), for every package module the entry
    imports, at any depth."""
    out, origin, todo = {}, {}, [ENTRY]
    while todo:
        module = todo.pop()
        name = flat(module) + ".py"
        if name in origin:
            if origin[name] != module:
                raise Unflattenable(f"{origin[name]} and {module} would both be copied to {name}")
            continue
        if name in OWN:
            raise Unflattenable(f"{module} would be copied onto the folder's own {name}")
        origin[name] = module
        text, needs = copy(module)
        out[name] = text, source(module).relative_to(ROOT).as_posix()
        todo += sorted(needs)
    texts = {name: text for name, (text, _) in out.items()}
    missed = sorted(set(out) - reached({"generate.py": (SOURCES / "generate.py").read_text(), **texts}))
    if missed:
        raise Unflattenable(f"transformers would not copy {', '.join(missed)}: no `from .<name> import` line "
                            "names it")
    return dict(sorted(out.items()))


def reached(texts: dict[str, str]) -> set[str]:
    """The files transformers copies for ``generate.py``: those its relative imports name, recursively."""
    seen, todo = set(), ["generate.py"]
    while todo:
        name = todo.pop()
        if name not in seen and name in texts:
            seen.add(name)
            todo += [f"{a or b}.py" for a, b in RELATIVE.findall(texts[name])]
    return seen


def files() -> dict[str, str]:
    """Path in the folder -> text: the hand-written files (the README with the list of copies), the copies and
    the package's license."""
    copied = copies()
    own = {path: (SOURCES / name).read_text() for name, path in OWN.items()}
    if own["README.md"].count(COPIES) != 1:
        raise Unflattenable(f"{SOURCES.relative_to(ROOT)}/README.md must hold the line {COPIES} once")
    listing = "\n".join([LISTED, ""] + [f"- `custom_generate/{name}`: `{origin}`"
                                         for name, (_, origin) in copied.items()])
    own["README.md"] = own["README.md"].replace(COPIES, listing)
    return {**own, "LICENSE": (ROOT / "LICENSE").read_text(),
            **{f"custom_generate/{name}": text for name, (text, _) in copied.items()}}


def earlier_build(folder: Path) -> bool:
    """Whether ``folder`` is empty or holds an earlier build (its README lists the copies), which a new build
    may replace."""
    if not any(folder.iterdir()):
        return True
    readme = folder / "README.md"
    return ((folder / "custom_generate" / "generate.py").is_file() and readme.is_file()
            and LISTED in readme.read_text())


def build(out: Path) -> dict[str, str]:
    """Write the folder into ``out`` (replacing an earlier build there); its files, as ``files``."""
    wanted = files()
    if out.exists() and not (out.is_dir() and earlier_build(out)):
        raise Unflattenable(f"{out} holds files no build wrote: name an empty or new folder")
    if out.exists():
        shutil.rmtree(out)
    for path, text in wanted.items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_text(text)
    return wanted


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="make_hub", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT, help=f"the folder to build (default: {OUT.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    try:
        written = build(args.out)
    except Unflattenable as e:
        print(f"make_hub: {e}", file=sys.stderr)
        return 1
    python = [text for path, text in written.items() if path.endswith(".py")]
    print(f"{args.out}: {len(written)} files, {len(python)} Python modules "
          f"({sum(text.count(chr(10)) for text in python)} lines), "
          f"{len(python) - 1} of them copied from {PACKAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
