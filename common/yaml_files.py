"""The YAML files users write (scenarios; tournaments and --weights files in tournaments.config),
read strictly: every mistake becomes one `ConfigError` naming the file and the field.
"""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from common.errors import UserError, first_problem

_Model = TypeVar("_Model", bound=BaseModel)

MAX_SEED = 2**31 - 1  # the largest seed a file may give: what a database's integer column holds


class FileModel(BaseModel):
    """The base of every model a file is read into (a scenario, a tournament and each of its
    sections, a contestant's parameters, a provider's settings): unknown keys are errors, and
    every number is finite (no .nan, .inf or 1e309) and a number, not true or false, which
    pydantic would otherwise read as 1 or 0. The range of each number is its field's own
    (tests/market/test_file_numbers.py checks that every numeric field states one)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_flag_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        if info.field_name is not None:
            _refuse_flags(cls.model_fields[info.field_name].annotation, value)
        return value


def _refuse_flags(annotation: Any, value: Any) -> None:
    """ValueError where `value`, read for a field of type `annotation`, holds true or false in
    place of a number: the value itself, or an item of its list or mapping."""
    annotation = _bare(annotation)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        if isinstance(value, bool):
            members = [_bare(arg) for arg in args]
            if bool not in members and Any not in members and (int in members or float in members):
                raise ValueError(f"Input should be a number, not {str(value).lower()}")
            return
        for member in args:
            _refuse_flags(member, value)
    elif annotation in (int, float):
        if isinstance(value, bool):
            raise ValueError(f"Input should be a number, not {str(value).lower()}")
    elif origin in (list, tuple, Sequence) and isinstance(value, (list, tuple)):
        each = args[:1] * len(value) if len(args) == 1 or args[-1:] == (Ellipsis,) else args
        for item_type, item in zip(each, value):
            _refuse_flags(item_type, item)
    elif origin in (dict, Mapping) and isinstance(value, dict) and len(args) == 2:
        for item in value.values():
            _refuse_flags(args[1], item)


def _bare(annotation: Any) -> Any:
    """`annotation` without the constraints Annotated adds to it."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


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
