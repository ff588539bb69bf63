"""Language-model providers behind one interface: OpenAI, the OpenAI-compatible services
(named presets such as openrouter/ or ollama/, or any server by its base_url), Anthropic, and
an embedded llama.cpp model. What each model accepts and costs is the catalogue's
(catalogue.yaml). Importing this package imports no SDK. What goes into a call and comes out
(CompletionRequest, Completion) lives in contestants.calls.types.

    provider = get_provider("local/smollm2", {"no_cache": True})
    request = CompletionRequest(messages=[...], json_schema=Decision.model_json_schema())
    completion = provider.complete(request)
    completion.output  # the JSON object, or None with the raw answer in completion.text
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contestants.llm.errors import (
        MissingCredentialsError,
        ProviderConfigError,
        ProviderError,
    )
    from contestants.llm.pricing import cost, price_of
    from contestants.llm.providers import (
        Provider,
        ProviderSettings,
        RemoteSettings,
        get_provider,
        provider_class,
        provider_names,
        register_provider,
        split_model,
        validate_settings,
    )
    from contestants.llm.retry import Failure, RetryPolicy
    from contestants.llm.schema import constrained_schema

# Each name's module, imported when the name is first read: a process that only needs, say,
# contestants.llm.errors does not build the providers and the catalogue.
_MODULE_OF = {
    "MissingCredentialsError": "errors",
    "ProviderConfigError": "errors",
    "ProviderError": "errors",
    "cost": "pricing",
    "price_of": "pricing",
    "Provider": "providers",
    "ProviderSettings": "providers",
    "RemoteSettings": "providers",
    "get_provider": "providers",
    "provider_class": "providers",
    "provider_names": "providers",
    "register_provider": "providers",
    "split_model": "providers",
    "validate_settings": "providers",
    "Failure": "retry",
    "RetryPolicy": "retry",
    "constrained_schema": "schema",
}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "Failure",
    "MissingCredentialsError",
    "Provider",
    "ProviderConfigError",
    "ProviderError",
    "ProviderSettings",
    "RemoteSettings",
    "RetryPolicy",
    "constrained_schema",
    "cost",
    "get_provider",
    "price_of",
    "provider_class",
    "provider_names",
    "register_provider",
    "split_model",
    "validate_settings",
]
