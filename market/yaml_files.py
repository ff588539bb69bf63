"""The YAML files users write (scenarios; tournaments and --weights files in tournaments.config),
read strictly: every mistake becomes one `ConfigError` naming the file and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from market.errors import UserError, first_problem

_Model = TypeVar("_Model", bound=BaseModel)


class ConfigError(UserError):
    """A problem in a file the user wrote: `file: field: what is wrong`."""

    def __init__(self, file: str | Path, field: str | None, message: str):
        self.file, self.field, self.message = str(file), field, message
        where = f"{self.file}: {field}" if field else self.file
        super().__init__(f"{where}: {message}")


def load_model(path: str | Path, model: type[_Model]) -> _Model:
    path = Path(path)
    return validated(path, model, parse_yaml(path, read_text(path)))


def validated(path: Path, model: type[_Model], data: Any) -> _Model:
    """`data`, read from `path`, as a `model`; its first mistake raised as a ConfigError."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problem = first_problem(exc)
    raise ConfigError(path, problem.field, problem.explained)


def read_text(path: Path) -> str:
    """The text of a file the user named."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(path, None, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, None, f"cannot read: {exc}") from None


def parse_yaml(path: Path, text: str) -> dict[Any, Any]:
    """The mapping of settings that `text`, the contents of `path` (which errors name), holds."""
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506  (a SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(path, where, f"invalid YAML: {problem}") from None
    if not isinstance(data, dict):
        raise ConfigError(path, None, "expected a mapping of settings at the top level")
    return data


class _StrictLoader(yaml.SafeLoader):
    """safe_load, except that a key repeated in one mapping is an error, not a silent overwrite."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *anchor` keys may be overridden by design
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (str, int, float, bool)) or key is None:
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} appears twice in one mapping", key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)
