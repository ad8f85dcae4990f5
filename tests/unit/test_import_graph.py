"""The package's import graph: no cycle anywhere (imports inside functions included), the search core
(``onmt_optimal/search/``) imports no toolkit, only torch and itself, and neither toolkit's adapter imports the
other's: what they share lives outside both. The lab (``onmt_optimal_lab/``: the benchmarks and the paper's
reproduction) imports the package, never the reverse."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "onmt_optimal"
LAB = PACKAGE.parent / "onmt_optimal_lab"
#: what the package may hold: the search, the adapters, the servers and the tools, not what measures them
MAX_PACKAGE_LINES = 15_500
#: the servers' modules: the serving layer both servers share, and each toolkit's server over it
SERVER_MODULES = ("serving.py", "opennmt/server.py", "opennmt/server_files.py", "eole/server.py")
#: what they may hold together (why each check is made lives in docs/serving.md, not in their docstrings)
MAX_SERVER_LINES = 1_170


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth of its code. ``from package import module`` imports the module
    alone (as ``import package.module`` does, the package's ``__init__`` runs first, but no name of it is read),
    so the package counts only where a name is taken from it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = {f"{node.module}.{alias.name}" for alias in node.names}
            found |= names if names <= MODULES else names | {node.module}
    return found


def sources():
    return [p for root in (PACKAGE, LAB) for p in root.rglob("*.py")]


#: the package's modules and the lab's
MODULES = {module_name(p) for p in sources()}


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in sources()}
    return {name: {m for m in imports(path) if m in modules and m != name} for name, path in modules.items()}


def test_no_import_cycle():
    edges = graph()
    state: dict[str, int] = {}

    def visit(node, trail):
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(trail + [node, nxt]))
            if nxt not in state:
                visit(nxt, trail + [node])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [])


def test_search_core_imports_no_toolkit():
    for path in (PACKAGE / "search").rglob("*.py"):
        for name in imports(path):
            top = name.split(".")[0]
            assert top in {"torch", "__future__", "dataclasses", "enum", "functools", "typing", "math", "json", "onmt_optimal"}, (path, name)
            assert not name.startswith("onmt_optimal.") or name.startswith("onmt_optimal.search"), (path, name)


#: what both adapters share: it imports neither adapter nor any toolkit
SHARED = ("options", "file_checks", "serving", "adapter", "search")


def test_adapters_share_only_what_lives_outside_both():
    edges = graph()
    for name, targets in edges.items():
        parts = name.split(".")
        adapter = parts[1] if len(parts) > 1 and parts[1] in ("opennmt", "eole") else None
        shared = len(parts) > 1 and parts[1] in SHARED
        for target in targets:
            other = target.split(".")[1] if target.count(".") else None
            if adapter is not None:
                assert other not in ({"opennmt", "eole"} - {adapter}), (name, target)
            if shared:
                assert other not in ("opennmt", "eole"), (name, target)
    for module in SHARED:
        path = PACKAGE / module if (PACKAGE / module).is_dir() else PACKAGE / f"{module}.py"
        for file in ([path] if path.is_file() else path.rglob("*.py")):
            assert not {m.split(".")[0] for m in imports(file)} & {"onmt", "eole"}, file


#: what a user's decode runs; the tools, the paper's reproduction and the benchmarks are apart from it
DECODE = ("search", "adapter", "opennmt", "eole", "hf", "vllm", "distributed")
APART = ("tools",)
#: the decode side's modules that serve the tools: a toolkit's loaded model for the tools' many decodes, and
#: the sweep on Ray
SERVE_TOOLS = {"onmt_optimal.opennmt.session", "onmt_optimal.eole.session", "onmt_optimal.distributed.sweep"}


def test_decode_imports_no_tool():
    """What ``onmt_translate``, ``eole predict``, ``generate`` and vLLM run with the new options (the package's
    top level but ``__main__``, and ``DECODE``) imports nothing of ``tools/``."""
    for name, targets in graph().items():
        parts = name.split(".")
        top_level = len(parts) == 2 and parts[1] not in APART + DECODE + ("__main__",)
        if parts[0] != "onmt_optimal" or name in SERVE_TOOLS or not (top_level or (len(parts) > 1 and parts[1] in DECODE)):
            continue
        for target in targets:
            assert target.split(".")[1:2] not in ([a] for a in APART), (name, target)


def test_the_package_never_imports_the_lab():
    for name, targets in graph().items():
        if name.startswith("onmt_optimal."):
            assert not [t for t in targets if t.startswith("onmt_optimal_lab")], name


def test_the_package_stays_small():
    """The lines a maintainer porting to a toolkit's next release reads (the lab apart)."""
    lines = sum(len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py"))
    assert lines <= MAX_PACKAGE_LINES, f"the package has {lines} lines"


def test_the_servers_stay_small():
    """The lines a maintainer reads to port a server: the serving layer and both toolkits' servers."""
    lines = {name: len((PACKAGE / name).read_text().splitlines()) for name in SERVER_MODULES}
    assert sum(lines.values()) <= MAX_SERVER_LINES, f"the servers' modules have {sum(lines.values())} lines: {lines}"
