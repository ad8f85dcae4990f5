#!/usr/bin/env python3
"""Copy transformers' decoding loop (``onmt_optimal.hf``) and every package module it imports, at any depth, into
the Hub folder ``hub/optimal-beam-search/custom_generate/``, so that the folder runs where only torch and
transformers are installed (``make hub``).

transformers loads ``custom_generate/generate.py`` and copies beside it only the files that ``from .<name> import``
lines name (``get_relative_imports``, recursively, one folder deep), so the copies are flat: the package module
``onmt_optimal/search/answers.py`` becomes ``search_answers.py``, a package's ``__init__.py`` its folder's name
(``onmt_optimal/hf/__init__.py``: ``hf.py``, which ``generate.py`` imports). Each import of the package is
rewritten to a relative one:

    from onmt_optimal.search.state import Rules     ->  from .search_state import Rules
    from onmt_optimal.search import answers, step   ->  from . import search_answers as answers, search_step as step
                                                        from .search_answers import __name__ as _
                                                        from .search_step import __name__ as _

(``from . import`` binds the module, the ``from .<name> import __name__`` lines name its file for transformers'
loader, which is checked to reach every copy). Nothing else changes; each copy's first line says where it came
from, and a file with that line that no package module gives any more is removed.

    python scripts/make_hub.py            write the copies
    python scripts/make_hub.py --check    write nothing; exit 1 naming each copy that differs from what the
                                          first command would write
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "onmt_optimal"
FOLDER = ROOT / "hub" / "optimal-beam-search" / "custom_generate"
#: the package whose ``optimal_beam_search`` the folder's ``generate.py`` calls
ENTRY = f"{PACKAGE}.hf"
#: the first line of every copy (``{}``: the package file it was copied from)
HEADER = "# Copied from {} by `make hub` (scripts/make_hub.py): edit the package, not this file.\n"
#: files of the folder that are not copies
OWN = {"generate.py", "requirements.txt"}
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
    out = HEADER.format(path.relative_to(ROOT).as_posix()) + "".join(lines)
    ast.parse(out, flat(module))
    return out, needs


def copies() -> dict[str, str]:
    """File name in the folder -> text, for every package module the entry imports, at any depth."""
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
        out[name], needs = copy(module)
        todo += sorted(needs)
    missed = sorted(set(out) - reached({"generate.py": (FOLDER / "generate.py").read_text(), **out}))
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


def stale(wanted: dict[str, str]) -> list[Path]:
    """Earlier copies (they start with the header) that no package module gives any more."""
    prefix = HEADER.split("{}")[0]
    return [p for p in sorted(FOLDER.glob("*.py")) if p.name not in wanted and p.name not in OWN
            and p.read_text().startswith(prefix)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 naming what differs")
    args = ap.parse_args(argv)
    try:
        wanted = copies()
    except Unflattenable as e:
        print(f"make_hub: {e}", file=sys.stderr)
        return 1
    folder = FOLDER.relative_to(ROOT)
    differ = [name for name, text in wanted.items()
              if not (FOLDER / name).is_file() or (FOLDER / name).read_text() != text]
    old = stale(wanted)
    if args.check:
        for name in differ:
            print(f"{folder / name} differs from what `make hub` writes")
        for path in old:
            print(f"{folder / path.name} is no copy of the package any more: `make hub` removes it")
        return 1 if differ or old else 0
    for name in differ:
        (FOLDER / name).write_text(wanted[name])
    for path in old:
        path.unlink()
    print(f"{folder}: {len(wanted)} modules copied from {PACKAGE} ({len(differ)} written, {len(old)} removed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
