"""The model catalogue (catalogue.yaml): what each model family accepts, the named
OpenAI-compatible services, and per-model prices.

What a model takes in a request is data, not code: the providers ask `openai_family` or
`anthropic_family` and follow the answer, so a newly released model of a known family, or a
rule the vendor changes, is one line of the YAML.
"""

from __future__ import annotations

import datetime
import fnmatch
import re
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field

from common.yaml_files import FileModel
from contestants.calls.budget import Price

CATALOGUE = Path(__file__).with_name("catalogue.yaml")

Sampling = Literal["always", "effort_none", "never"]
Structured = Literal["json_schema", "tool", "json_object"]


class _Entry(FileModel):
    """An entry of the catalogue, or a price a tournament file gives."""


class OpenAIFamily(_Entry):
    """What an OpenAI-compatible endpoint's model accepts (see catalogue.yaml for each field)."""

    efforts: tuple[str, ...] | None = None
    chat_efforts: tuple[str, ...] | None = None
    default_effort: str | None = None
    sampling: Sampling
    chat_tools: Sampling
    role: Literal["system", "developer"]
    token_field: Literal["max_completion_tokens", "max_tokens"]
    seed_field: Literal["seed", "random_seed"] | None
    structured: tuple[Structured, ...]
    strict: bool
    json_object_schema: bool
    context: int | None = Field(None, ge=1, le=10**9)

    def efforts_for(self, api: str) -> tuple[str, ...] | None:
        """The reasoning efforts the API accepts for this model; None: not known."""
        return self.chat_efforts if api == "chat" and self.chat_efforts is not None else self.efforts

    def allows(self, rule: Sampling, effort: str | None) -> bool:
        """Whether a field under `rule` (sampling, chat_tools) may be sent at this effort
        (None: the model's default)."""
        return rule == "always" or (
            rule == "effort_none" and (effort or self.default_effort or "none") == "none"
        )


class AnthropicFamily(_Entry):
    """What an Anthropic model accepts (see catalogue.yaml); None: not known, passed on."""

    forced_tool: bool
    thinking: tuple[Literal["adaptive", "enabled", "disabled"], ...] | None = None
    efforts: tuple[str, ...] | None = None
    structured: tuple[Literal["tool", "json_schema"], ...]
    context: int | None = Field(None, ge=1, le=10**9)


class Preset(_Entry):
    base_url: str
    api_key_env: str | None
    family: dict[str, Any] = Field(default_factory=dict)


class _Families(_Entry):
    default: dict[str, Any]
    models: list[dict[str, Any]]


class Catalogue(_Entry):
    checked: datetime.date
    families: dict[str, _Families]
    presets: dict[str, Preset]
    prices: dict[str, Price]


@cache
def catalogue() -> Catalogue:
    return Catalogue.model_validate(yaml.safe_load(CATALOGUE.read_text(encoding="utf-8")))


def _family_fields(provider: str, model: str, otherwise: str | None = None) -> dict[str, Any]:
    """The fields of the first family of `provider` whose patterns match `model`, over the
    provider's default; a model none matches gets the default of `otherwise` (default: the
    provider's)."""
    families = catalogue().families[provider]
    for entry in families.models:
        if any(fnmatch.fnmatchcase(model, pattern) for pattern in entry["match"]):
            return {**families.default, **{k: v for k, v in entry.items() if k != "match"}}
    return dict(catalogue().families[otherwise or provider].default)


@cache
def openai_family(model: str, preset: str | None = None, own_api: bool = True) -> OpenAIFamily:
    """The family of `model` at a named service (`preset`: one family for all its models), or
    else as OpenAI's families know it wherever it is served (a gateway in front of OpenAI
    passes its rules on); a model they do not know follows OpenAI's default at its own API
    and `compatible` at any other server."""
    if preset is not None:
        return OpenAIFamily.model_validate(
            {**catalogue().families["compatible"].default, **catalogue().presets[preset].family}
        )
    return OpenAIFamily.model_validate(_family_fields("openai", model, None if own_api else "compatible"))


@cache
def anthropic_family(model: str) -> AnthropicFamily:
    return AnthropicFamily.model_validate(_family_fields("anthropic", model))


_SNAPSHOT = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2})$")


def catalogue_price(label: str) -> Price | None:
    """The catalogue's price of "provider/model", of a dated snapshot through its alias
    ("claude-haiku-4-5-20251001" costs what "claude-haiku-4-5" costs)."""
    prices = catalogue().prices
    return prices.get(label) or prices.get(_SNAPSHOT.sub("", label))
