"""The provider interface and the lazy registry of providers by name.

A model is named "provider/model" ("openai/gpt-4o-mini", "anthropic/claude-3-5-haiku-latest",
"local/smollm2"). The registry maps a provider name to "module:Class" and imports the module
only when that provider is asked for; provider modules in turn import their SDK only when a
call is made, so a missing SDK matters only to whoever uses it.

`Provider.complete` is the one path of every call: cache lookup, a place among the
endpoint's calls in flight (`max_concurrent_calls`), the retry policy, timing, cost, cache
store. A concrete provider only turns a request into one attempt
(`_attempt`) and says which of its exceptions are call failures (`_failure`).
"""

from __future__ import annotations

import importlib
import os
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contestants.llm.cache import ResponseCache, request_key
from contestants.llm.concurrency import IN_FLIGHT
from contestants.llm.errors import MissingCredentialsError, ProviderConfigError
from contestants.llm.pricing import Price, cost, price_table
from contestants.llm.retry import Failure, RetryPolicy, call_with_retries
from contestants.llm.types import Answer, Completion, CompletionRequest, parse_object


class ProviderSettings(BaseModel):
    """Settings every provider has. Times are seconds; prices are merged over the defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_retries: int = Field(3, ge=0)
    timeout: float = Field(60.0, gt=0, description="per attempt")
    total_timeout: float = Field(300.0, gt=0, description="all attempts of one call together")
    backoff_initial: float = Field(1.0, ge=0)
    backoff_max: float = Field(30.0, ge=0)
    max_concurrent_calls: int = Field(8, ge=1, le=1024, description="calls in flight at once to this provider endpoint, per process")
    cache_dir: Path = Path(".arena-cache")
    no_cache: bool = Field(False, description="neither read nor write the response cache")
    prices: dict[str, Price] = Field(default_factory=dict)


class RemoteSettings(ProviderSettings):
    """A provider behind an HTTP API. `api_key_env` names the variable holding the key;
    None means the server needs none (a local OpenAI-compatible server)."""

    base_url: str | None = None
    api_key_env: str | None


class Provider(ABC):
    name: ClassVar[str]
    settings_model: ClassVar[type[ProviderSettings]] = ProviderSettings

    def __init__(self, model: str, settings: ProviderSettings | None = None):
        self.model = model
        self.settings = settings if settings is not None else self.settings_model()
        self._prices = price_table(self.settings.prices)
        self._cache = None if self.settings.no_cache else ResponseCache(self.settings.cache_dir)

    @property
    def label(self) -> str:
        return f"{self.name}/{self.model}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.label!r})"

    def check_credentials(self) -> None:
        """Raise MissingCredentialsError if a call could not authenticate. Call at validation."""

    def cache_identity(self) -> dict[str, Any]:
        """What about this provider changes the answer (part of the cache key)."""
        return {"provider": self.name, "model": self.model}

    def endpoint(self) -> tuple[str, ...]:
        """Where calls go: the calls in flight to one endpoint share `max_concurrent_calls`."""
        return (self.name,)

    def complete(self, request: CompletionRequest) -> Completion:
        start = time.perf_counter()
        key = request_key(self.cache_identity(), request)
        if self._cache is not None:
            hit = self._cache.get(key)
            if hit is not None:
                return hit.model_copy(update={"cached": True, "attempts": 0, "cost": 0.0, "latency": time.perf_counter() - start})
        self.check_credentials()
        policy = RetryPolicy(
            max_retries=self.settings.max_retries,
            timeout=self.settings.timeout,
            total_timeout=self.settings.total_timeout,
            backoff_initial=self.settings.backoff_initial,
            backoff_max=self.settings.backoff_max,
        )
        with IN_FLIGHT.slot(self.endpoint(), self.settings.max_concurrent_calls):
            answer, attempts = call_with_retries(
                lambda timeout: self._attempt(request, timeout),
                classify=self._failure,
                policy=policy,
                label=self.label,
                secrets=self._secrets(),
            )
        completion = Completion(
            provider=self.name,
            model=self.model,
            output=parse_object(answer.text),
            text=answer.text,
            usage=answer.usage,
            cost=cost(self.label, answer.usage, self._prices),
            latency=time.perf_counter() - start,
            attempts=attempts,
            request_hash=key,
        )
        if self._cache is not None:
            self._cache.put(key, completion)
        return completion

    @abstractmethod
    def _attempt(self, request: CompletionRequest, timeout: float) -> Answer:
        """One try at the call, bounded by `timeout` seconds where the backend allows."""

    def _failure(self, exc: BaseException) -> Failure | None:
        """The Failure an exception of `_attempt` stands for, or None if it is a bug."""
        return None

    def _secrets(self) -> tuple[str, ...]:
        """Values to mask out of every error message."""
        return ()


class RemoteProvider(Provider):
    """A provider reached over HTTP with a key from the environment.

    The key is read from the environment when the SDK client is built and is never stored on
    the provider, so no repr, pickle or log of the provider can show it.
    """

    settings: RemoteSettings

    def __init__(self, model: str, settings: RemoteSettings | None = None, *, http_client: Any = None):
        """`http_client` (an httpx2.Client) replaces the SDK's transport: proxies, tests."""
        super().__init__(model, settings)
        self._http_client = http_client
        self._client: Any = None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.label!r}, base_url={self.settings.base_url!r}, "
            f"api_key_env={self.settings.api_key_env!r})"
        )

    def __getstate__(self) -> dict[str, Any]:
        # The SDK client holds the key: rebuild it after unpickling (Ray) instead of shipping it.
        return {**self.__dict__, "_client": None}

    def check_credentials(self) -> None:
        variable = self.settings.api_key_env
        if variable is not None and not os.environ.get(variable):
            raise MissingCredentialsError(variable, self.label)

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "base_url": self.settings.base_url}

    def endpoint(self) -> tuple[str, ...]:
        return (self.name, self.settings.base_url or "")

    def _sdk_client(self) -> Any:
        """The SDK's client, built on first use with the SDK's own retries off."""
        if self._client is None:
            self._client = self._new_client(
                api_key=self._api_key(),
                base_url=self.settings.base_url,
                max_retries=0,  # the retry policy is ours alone
                timeout=self.settings.timeout,
                http_client=self._http_client,
            )
        return self._client

    @abstractmethod
    def _new_client(self, **options: Any) -> Any:
        """The SDK's client class called with `options` (imports the SDK)."""

    def _api_key(self) -> str:
        """The key, or a placeholder the SDKs accept when the server needs none."""
        variable = self.settings.api_key_env
        return os.environ[variable] if variable is not None else "unused"

    def _secrets(self) -> tuple[str, ...]:
        variable = self.settings.api_key_env
        value = os.environ.get(variable) if variable is not None else None
        return (value,) if value else ()


_BUILTIN: dict[str, str] = {
    "openai": "contestants.llm.openai_provider:OpenAIProvider",
    "anthropic": "contestants.llm.anthropic_provider:AnthropicProvider",
    "local": "contestants.llm.local_provider:LocalProvider",
}
_TARGETS: dict[str, str] = dict(_BUILTIN)


def register_provider(name: str, target: str) -> None:
    """Make a provider available by name; `target` is "module:Class", imported on first use."""
    if name in _TARGETS:
        raise ValueError(f"provider {name!r} registered twice")
    _TARGETS[name] = target


def provider_names() -> list[str]:
    return sorted(_TARGETS)


def provider_class(name: str) -> type[Provider]:
    try:
        target = _TARGETS[name]
    except KeyError:
        raise ProviderConfigError(f"unknown provider {name!r} (known: {', '.join(provider_names())})", "model") from None
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def split_model(model: str) -> tuple[str, str]:
    """"openai/gpt-4o-mini" -> ("openai", "gpt-4o-mini"); a bare "local" -> ("local", "")."""
    provider, _, name = model.partition("/")
    return provider, name


def validate_settings(model: str, settings: dict[str, Any] | None = None) -> ProviderSettings:
    """Check a model name and its settings without building the provider."""
    cls = provider_class(split_model(model)[0])
    try:
        return cls.settings_model.model_validate(settings or {})
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or None
        raise ProviderConfigError(f"{model}: {field}: {error['msg']}" if field else f"{model}: {error['msg']}", field) from None


def get_provider(model: str, settings: dict[str, Any] | None = None, **options: Any) -> Provider:
    """Build the provider for "provider/model" with `settings` (a dict of its settings model).

    `options` go to the provider's constructor (e.g. http_client for remote providers).
    """
    provider, name = split_model(model)
    validated = validate_settings(model, settings)
    return provider_class(provider)(name, validated, **options)
