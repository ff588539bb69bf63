"""The house's rules, read from the code itself: which room may import which, no circle between
files, the tournament layer blind to every contestant kind, and units a reader can hold.

docs/code.md draws the rooms these rules keep."""

from __future__ import annotations

import ast
import graphlib
from functools import cache
from pathlib import Path

import pytest

from tests.packages import PACKAGES

ROOT = Path(__file__).resolve().parent.parent

# What each package may import of ours (itself aside): arrows point down only.
MAY_IMPORT: dict[str, set[str]] = {
    "common": set(),
    "market": {"common"},
    "contestants": {"market", "common"},
    "results": {"market", "common"},
    "tournaments": {"contestants", "results", "market", "common"},
    "viewer": {"tournaments", "results", "market", "common"},
    "seats": {"contestants", "market", "common"},
    "arena": {"viewer", "seats", "tournaments", "contestants", "results", "market", "common"},
}

LONGEST_FUNCTION = 80
LONGEST_CLASS = 400
LONGEST_MODULE = 800


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _sources() -> dict[str, str]:
    """Every module of arena's packages, by dotted name."""
    return {
        _module_name(path): path.read_text()
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


@cache
def _modules() -> dict[str, ast.Module]:
    return {name: ast.parse(source, filename=name) for name, source in _sources().items()}


def _imports(name: str, tree: ast.Module) -> set[str]:
    """The modules of ours that `name` imports, anywhere in it (a function's own import too:
    it ties the two files as much as one at the top does), resolved to modules that exist."""
    modules = _modules()
    package = name if _is_package(name) else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            # `from package import module` names a module; `from module import name` a name in it
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _is_package(name: str) -> bool:
    return (ROOT / name.replace(".", "/") / "__init__.py").exists()


@cache
def _graph() -> dict[str, set[str]]:
    return {name: _imports(name, tree) for name, tree in _modules().items()}


def test_every_import_points_down():
    against = sorted(
        f"{name} imports {target}"
        for name, targets in _graph().items()
        for target in targets
        if (room := name.split(".")[0]) != (other := target.split(".")[0]) and other not in MAY_IMPORT[room]
    )
    assert against == []


def test_no_circle_between_files():
    # a package's __init__ importing its own modules is how a package shows its surface, not a circle
    edges = {
        name: {target for target in targets if not (_is_package(target) and name.startswith(target + "."))}
        for name, targets in _graph().items()
    }
    try:
        graphlib.TopologicalSorter(edges).prepare()
    except graphlib.CycleError as error:
        pytest.fail(f"a circle of imports: {' -> '.join(error.args[1])}")


def test_the_tournament_layer_imports_no_contestant_kind():
    """tournaments/ reaches contestants through their protocol (contestants.base), the registry
    of kinds, what a run's model calls share (contestants.calls) and the desks that carry a
    person's pages (contestants.desk), never through a kind's own module: a kind of one's own
    plays as arena's do."""
    shared = ("contestants.base", "contestants.kinds", "contestants.calls", "contestants.desk")
    crossing = sorted(
        f"{name} imports {target}"
        for name, targets in _graph().items()
        if name.startswith("tournaments")
        for target in targets
        if target.split(".")[0] == "contestants"
        and not any(target == room or target.startswith(room + ".") for room in shared)
    )
    assert crossing == []


def _units() -> list[tuple[str, str, int]]:
    """(kind, where, lines) of every module, class and function of arena's packages."""
    units = []
    for name, tree in _modules().items():
        units.append(("module", name, len(_sources()[name].splitlines())))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                kind = "class" if isinstance(node, ast.ClassDef) else "function"
                units.append((kind, f"{name}:{node.lineno} {node.name}", node.end_lineno - node.lineno + 1))
    return units


def test_every_unit_is_short_enough_to_hold():
    longest = {"function": LONGEST_FUNCTION, "class": LONGEST_CLASS, "module": LONGEST_MODULE}
    too_long = sorted(
        f"{kind} {where}: {lines} lines" for kind, where, lines in _units() if lines > longest[kind]
    )
    assert too_long == []


def test_the_rules_see_the_code():
    """The rules above read what they mean to: every package, imports between them, units of
    every kind (an empty reading would pass every rule)."""
    graph = _graph()
    assert {name.split(".")[0] for name in graph} == set(PACKAGES)
    rooms_imported = {
        target.split(".")[0] for name in graph if name.startswith("tournaments.") for target in graph[name]
    }
    assert {"contestants", "results", "market"} <= rooms_imported
    kinds_seen = {kind for kind, _, _ in _units()}
    assert kinds_seen == {"module", "class", "function"}


def test_one_errors_module_per_package_at_most():
    errors = [name for name in _modules() if name.rpartition(".")[2] == "errors"]
    by_package = {package: [name for name in errors if name.split(".")[0] == package] for package in PACKAGES}
    assert errors and all(len(names) <= 1 for names in by_package.values()), by_package
