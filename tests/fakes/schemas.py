"""JSON schemas in the stand-ins: an answer that fits a schema, and the check that it does."""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema


def instance_of(schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """A small value that fits `schema`: every property of an object (in order), the fewest
    items an array allows, the first branch of an anyOf/oneOf, the first enum value, the
    lower bound of a number. `$ref`s are resolved against `root` (default: `schema`)."""
    root = schema if root is None else root
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            if part:
                target = target[part]
        return instance_of(target, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return instance_of(schema[key][0], root)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        return {name: instance_of(child, root) for name, child in schema.get("properties", {}).items()}
    if kind == "array":
        return [instance_of(schema.get("items", {}), root) for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        return "x" * schema.get("minLength", 0)
    if kind in ("number", "integer"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        return (
            int(low) + (1 if "exclusiveMinimum" in schema else 0)
            if kind == "integer"
            else float(low) + (0.5 if "exclusiveMinimum" in schema else 0.0)
        )
    if kind == "boolean":
        return False
    return None


def fits(instance: Any, schema: dict[str, Any]) -> str | None:
    """None when `instance` fits `schema`, else what is wrong (one line): the error
    jsonschema.validate would raise."""
    error = jsonschema.exceptions.best_match(_validator(json.dumps(schema)).iter_errors(instance))
    return None if error is None else error.message


@functools.cache
def _validator(schema_text: str) -> Any:
    """A validator of the schema, checked against its meta-schema once: jsonschema.validate
    checks it at every call, some 70 times the cost of the validation itself."""
    schema = json.loads(schema_text)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)
