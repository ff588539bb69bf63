"""Language-model providers behind one interface: OpenAI, the OpenAI-compatible services
(named presets such as openrouter/ or ollama/, or any server by its base_url), Anthropic, and
an embedded llama.cpp model. What each model accepts and costs is the catalogue's
(catalogue.yaml). Importing this package imports no SDK.

    provider = get_provider("local/smollm2", {"no_cache": True})
    request = CompletionRequest(messages=[...], json_schema=Decision.model_json_schema())
    completion = provider.complete(request)
    completion.output  # the JSON object, or None with the raw answer in completion.text
"""

from contestants.llm.cache import ResponseCache, request_key
from contestants.llm.errors import CallsStopped, MissingCredentialsError, ProviderConfigError, ProviderError
from contestants.llm.pricing import Price, cost, price_of
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
from contestants.llm.types import Completion, CompletionRequest, Message, TokenUsage

__all__ = [
    "CallsStopped",
    "Completion",
    "CompletionRequest",
    "Failure",
    "Message",
    "MissingCredentialsError",
    "Price",
    "Provider",
    "ProviderConfigError",
    "ProviderError",
    "ProviderSettings",
    "RemoteSettings",
    "ResponseCache",
    "RetryPolicy",
    "TokenUsage",
    "constrained_schema",
    "cost",
    "get_provider",
    "price_of",
    "provider_class",
    "provider_names",
    "register_provider",
    "request_key",
    "split_model",
    "validate_settings",
]
