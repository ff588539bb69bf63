"""The tournament layer talks to contestants through their protocol (contestants.base), the
registry of kinds (contestants.kinds) and what a run's model calls share (contestants.calls),
never through a kind's own module: a kind of one's own plays as arena's do."""

from __future__ import annotations

import ast
from pathlib import Path

TOURNAMENTS = Path(__file__).resolve().parents[2] / "tournaments"
SHARED = ("contestants.base", "contestants.kinds", "contestants.calls")


def imported(path: Path) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            modules.add(node.module)
    return modules


def test_the_tournament_layer_imports_no_kind_s_module():
    crossing = {
        f"{path.name}: {module}"
        for path in sorted(TOURNAMENTS.glob("*.py"))
        for module in imported(path)
        if module.split(".")[0] == "contestants"
        and not any(module == shared or module.startswith(f"{shared}.") for shared in SHARED)
    }
    assert crossing == set()
