"""arena's packages, as pyproject.toml ships them: the tests that walk every module (every
exception, every file model) read the one list."""

from __future__ import annotations

import tomllib
from pathlib import Path

_PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
PACKAGES: tuple[str, ...] = tuple(
    tomllib.loads(_PYPROJECT.read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
)
