"""``docs/seams.md`` read as data, and the stock fingerprints the toolkit tiers compare against it.

``rows(toolkit)``: one ``Row`` a table row under the heading ``## <toolkit> ...``; ``resolve(dotted)``: the object
a row's first column names (the longest importable module prefix, then attributes); ``holder(dotted)``: that
module's name; ``fingerprint(module)``: the sha256 of its source file (``importlib.util.find_spec(...).origin``);
``mismatches(expected, tested)``: one message per module whose source differs from the tested release's, naming
the rows of the page to re-audit. Imports no toolkit itself (each tier's environment has only its own).
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "seams.md"
#: modules named in the tables that are not the toolkit's: Python's own, and torch (its version is the
#: environment's, not the toolkit's); their attributes are still resolved, their source is not fingerprinted
NOT_FINGERPRINTED = ("builtins", "torch.serialization")


@dataclass(frozen=True)
class Row:
    toolkit: str
    attribute: str
    where: str
    kind: str
    test: str


def rows(toolkit: str | None = None, page: Path = PAGE) -> list[Row]:
    """The table rows of ``page`` under the heading that starts with ``toolkit`` (every toolkit's: None)."""
    found, section = [], None
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if section is None or len(cells) != 6 or not cells[0].startswith("`"):
            continue
        if toolkit is None or section.startswith(toolkit):
            found.append(Row(section, cells[0].strip("`"), cells[1], cells[2], cells[5]))
    return found


def counts(toolkit: str, page: Path = PAGE) -> tuple[int, int]:
    """The ``Counts: **N seams, M repairs**`` the page states under ``toolkit``'s heading."""
    text = page.read_text(encoding="utf-8")
    section = re.search(rf"^## {re.escape(toolkit)}.*?(?=^## |\Z)", text, re.M | re.S).group(0)
    stated = re.search(r"Counts: \*\*(\d+) seams?, (\d+) repairs?\*\*", section)
    return int(stated.group(1)), int(stated.group(2))


def split(dotted: str) -> tuple[str, list[str]]:
    """``dotted`` as (its longest importable module, the attribute path after it); imports that module."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        return name, parts[cut:]
    raise ImportError(f"no module of {dotted!r} can be imported")


def resolve(dotted: str):
    """The object ``dotted`` names (AttributeError naming the missing part)."""
    module, attributes = split(dotted)
    thing = importlib.import_module(module)
    for i, name in enumerate(attributes):
        if not hasattr(thing, name):
            raise AttributeError(f"{dotted}: {module}.{'.'.join(attributes[:i + 1])} does not exist")
        thing = getattr(thing, name)
    return thing


def holder(dotted: str) -> str:
    return split(dotted)[0]


def fingerprint(module: str) -> str:
    """sha256 of ``module``'s source file, found without importing it."""
    origin = importlib.util.find_spec(module).origin
    return hashlib.sha256(Path(origin).read_bytes()).hexdigest()


def modules(toolkit: str) -> set[str]:
    """The modules holding an attribute of ``toolkit``'s table, fingerprinted ones only."""
    return {holder(row.attribute) for row in rows(toolkit)} - set(NOT_FINGERPRINTED)


def mismatches(toolkit: str, expected: dict, tested: str, extra_rows: dict | None = None,
               releases: dict | None = None) -> list[str]:
    """One line per module of ``expected`` (module -> sha256 in ``tested``, or in ``releases[module]`` where
    given) whose source differs, with the rows of ``docs/seams.md`` to re-audit (those whose attribute lies in it,
    or ``extra_rows[module]``'s prefixes)."""
    lines = []
    for module, digest in sorted(expected.items()):
        release = (releases or {}).get(module, tested)
        found = fingerprint(module)
        if found == digest:
            continue
        prefixes = (extra_rows or {}).get(module, (module + ".",))
        audit = [row.attribute for row in rows(toolkit) if row.attribute.startswith(tuple(prefixes))]
        lines.append(f"{module}: its source is not {release}'s (sha256 {found}, tested {digest}); re-audit the rows "
                     f"of docs/seams.md ({toolkit}): {', '.join(audit) or 'none (a module the search depends on)'}, "
                     f"then update this table")
    return lines


def cited_tests_missing(page: Path = PAGE) -> list[str]:
    """The cells of the page's test column that name a ``file::function`` that is not there."""
    missing = []
    for row in rows(page=page):
        match = re.fullmatch(r"([\w/]+\.py)::(\w+)", row.test)
        if match is None:
            continue  # "— (...)": the page says no test shows it
        path = ROOT / "tests" / match.group(1)
        if not path.exists() or not re.search(rf"^(async )?def {match.group(2)}\(", path.read_text(), re.M):
            missing.append(f"{row.attribute}: {row.test}")
    return missing


def marked(package: str) -> set[str]:
    """The dotted names, in the modules of ``package`` imported so far, of every module attribute and class
    member that holds one of our marked functions or classes (``import_hook.ours``)."""
    found = set()
    for name, module in list(sys.modules.items()):
        if not name.startswith(f"{package}.") or module is None:
            continue
        for attribute, value in list(vars(module).items()):
            if _ours(value):
                found.add(f"{name}.{attribute}")
            if isinstance(value, type) and value.__module__ == name:
                found |= {f"{name}.{attribute}.{key}" for key, member in vars(value).items()
                          if _ours(getattr(member, "__func__", member))}
    return found


def _ours(value) -> bool:
    """``import_hook.ours``, False for an object that cannot be asked (a proxy outside its context, such as
    Flask's ``request``)."""
    from onmt_optimal.import_hook import ours

    try:
        return bool(ours(value))
    except Exception:
        return False
