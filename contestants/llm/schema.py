"""Tightening a pydantic JSON schema before a model is asked to fill it.

Two things go wrong with a schema straight from `model_json_schema()`, most visibly with a
small model decoding under a grammar:

- pydantic leaves fields with defaults optional, among them a discriminated union's tag
  (`op` in the market's operations), yet its validator needs the tag: an answer can fit the
  schema and still fail validation;
- arrays and strings are unbounded, so a model that starts repeating itself ("wait", "wait",
  ...) runs into max_tokens and leaves JSON that does not parse.

An API that decodes against the schema (OpenAI's and Anthropic's structured outputs, "strict")
takes a subset of JSON Schema: `strict_schema` is the decision's schema in that subset.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any


def constrained_schema(
    schema: dict[str, Any], *, max_items: int = 8, max_length: int = 300
) -> dict[str, Any]:
    """A copy of `schema` with every object property required, and arrays and strings bounded
    (`maxItems`, `maxLength`) where the schema sets no bound of its own."""

    def tighten(node: dict[str, Any]) -> None:
        if isinstance(node.get("properties"), dict):
            node["required"] = list(node["properties"])
        _bound(node, max_items, max_length, lambda bound, default: default if bound is None else bound)

    return _each_node(schema, tighten)


def capped_schema(schema: dict[str, Any], *, max_items: int, max_length: int) -> dict[str, Any]:
    """A copy of `schema` whose arrays hold at most `max_items` and whose free strings at most
    `max_length` characters, lowering any looser bound, so an answer to it also fits `schema`.
    For a small model, which fills whatever room it is given."""
    return _each_node(
        schema,
        lambda node: _bound(
            node, max_items, max_length, lambda bound, cap: cap if bound is None else min(bound, cap)
        ),
    )


def for_catalog(
    schema: dict[str, Any],
    products: list[str],
    whole_units: bool,
    suppliers: Sequence[Sequence[str]] = (),
    promotions: bool = False,
) -> dict[str, Any]:
    """A copy of `schema` whose `product` fields accept only the catalog's product ids, whose
    `supplier` fields only the names of the suppliers it lists (and are gone where it lists
    none), without the `promote` operation where the market runs no `promotions` and, when
    the market sells whole units, whose `quantity` fields accept only integers: a model that
    cannot write an unknown product or 15.08 units makes no operation the market rejects for
    it (a small model decoding under a grammar otherwise invents both)."""
    names = sorted({name for listed in suppliers for name in listed})
    if not promotions:
        schema = _without_operation(schema, "promote", "Promote")

    def tighten(node: dict[str, Any]) -> None:
        properties = node.get("properties")
        if not isinstance(properties, dict):
            return
        if properties.get("product", {}).get("type") == "string":
            properties["product"] = {**properties["product"], "enum": list(products)}
        if whole_units and properties.get("quantity", {}).get("type") == "number":
            properties["quantity"] = {**properties["quantity"], "type": "integer"}
        if "supplier" in properties and not names:
            del properties["supplier"]
            if "required" in node:
                node["required"] = [name for name in node["required"] if name != "supplier"]
        elif "supplier" in properties:
            field = dict(properties["supplier"])
            field["anyOf"] = [{"type": "string", "enum": names}, {"type": "null"}]
            properties["supplier"] = field

    return _each_node(schema, tighten)


# What the strict structured-output modes accept (OpenAI documents these as supported; a
# keyword outside this list, such as minLength, maxLength, default, oneOf or discriminator, is
# refused or not guaranteed).
STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "const",
        "$ref",
        "$defs",
        "description",
        "title",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    }
)


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of `schema` that strict structured outputs accept and that still validates the
    same answers where it matters: every object closed (additionalProperties false) with every
    property required, a oneOf (pydantic's tagged union) as the anyOf it is equivalent to for
    tagged branches, and every keyword outside STRICT_KEYWORDS dropped (string lengths and
    defaults: the market and the models' validation check what matters)."""

    def tighten(node: dict[str, Any]) -> None:
        if "oneOf" in node:
            node["anyOf"] = node.pop("oneOf")
        for keyword in [k for k in node if k not in STRICT_KEYWORDS]:
            del node[keyword]
        if node.get("type") == "object" or "properties" in node:
            node["additionalProperties"] = False
            node["required"] = list(node.get("properties", {}))

    return _each_node(schema, tighten)


def _without_operation(schema: dict[str, Any], op: str, model: str) -> dict[str, Any]:
    """A copy of a decision's `schema` whose operations leave out the kind `op` (its model's
    definition, its branch and its tag)."""
    result = copy.deepcopy(schema)
    result.get("$defs", {}).pop(model, None)
    reference = f"#/$defs/{model}"

    def drop(node: Any) -> None:
        if isinstance(node, dict):
            for key in ("oneOf", "anyOf"):
                if isinstance(node.get(key), list):
                    node[key] = [branch for branch in node[key] if branch.get("$ref") != reference]
            mapping = node.get("discriminator", {}).get("mapping")
            if isinstance(mapping, dict):
                mapping.pop(op, None)
            for value in node.values():
                drop(value)
        elif isinstance(node, list):
            for item in node:
                drop(item)

    drop(result)
    return result


def _bound(
    node: dict[str, Any], max_items: int, max_length: int, choose: Callable[[int | None, int], int]
) -> None:
    if node.get("type") == "array":
        node["maxItems"] = choose(node.get("maxItems"), max_items)
    if node.get("type") == "string" and "const" not in node and "enum" not in node:
        node["maxLength"] = choose(node.get("maxLength"), max_length)


def _each_node(schema: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """A copy of `schema` with `change` applied to each of its (sub)schemas."""
    result = copy.deepcopy(schema)

    def visit(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                visit(item)
        elif isinstance(node, dict):
            change(node)
            for key, value in node.items():
                if key in ("properties", "$defs"):
                    for child in value.values():
                        visit(child)
                elif isinstance(value, (dict, list)):
                    visit(value)

    visit(result)
    return result
