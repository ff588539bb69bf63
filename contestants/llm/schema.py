"""Tightening a pydantic JSON schema before a model is asked to fill it.

Two things go wrong with a schema straight from `model_json_schema()`, most visibly with a
small model decoding under a grammar:

- pydantic leaves fields with defaults optional, among them a discriminated union's tag
  (`op` in the market's operations), yet its validator needs the tag: an answer can fit the
  schema and still fail validation;
- arrays and strings are unbounded, so a model that starts repeating itself ("wait", "wait",
  ...) runs into max_tokens and leaves JSON that does not parse.
"""

from __future__ import annotations

import copy
from typing import Any


def constrained_schema(schema: dict[str, Any], *, max_items: int = 8, max_length: int = 300) -> dict[str, Any]:
    """A copy of `schema` with every object property required, and arrays and strings bounded
    (`maxItems`, `maxLength`) where the schema sets no bound of its own."""
    result = copy.deepcopy(schema)
    _tighten(result, max_items, max_length)
    return result


def _tighten(node: Any, max_items: int, max_length: int) -> None:
    if isinstance(node, list):
        for item in node:
            _tighten(item, max_items, max_length)
        return
    if not isinstance(node, dict):
        return
    if isinstance(node.get("properties"), dict):
        node["required"] = list(node["properties"])
    if node.get("type") == "array":
        node.setdefault("maxItems", max_items)
    if node.get("type") == "string" and "const" not in node and "enum" not in node:
        node.setdefault("maxLength", max_length)
    for key, value in node.items():
        if key in ("properties", "$defs"):
            for child in value.values():
                _tighten(child, max_items, max_length)
        elif isinstance(value, (dict, list)):
            _tighten(value, max_items, max_length)
