"""The provider interface and the lazy registry of providers by name.

A model is named "provider/model" ("openai/gpt-5.4-mini", "anthropic/claude-sonnet-5-5",
"local/smollm2", or a named OpenAI-compatible service: "openrouter/anthropic/claude-...",
"ollama/llama3"). The registry maps a provider name to "module:Class" and imports the module
only when that provider is asked for; provider modules in turn import their SDK only when a
call is made, so a missing SDK matters only to whoever uses it.

`Provider.complete` is the one path of every call: it checks in with the run's call
coordinator (the response cache, the endpoint's limits, the budget; see
contestants.calls.coordinator), runs the retry policy within the time the caller has left,
and reports back. A concrete provider only turns
a request into one attempt (`_attempt`) and says which of its exceptions are call failures
(`_failure`).

How big a request is, as the model will count it, is the provider's to say
(`most_prompt_tokens`, `most_turn_tokens`, `window`): arena's own count, made tighter by what
the server's refusals for length taught (`Counting`).
"""

from __future__ import annotations

import json
import math
import os
import time
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from pkgutil import resolve_name
from typing import Any, ClassVar

from pydantic import Field, ValidationError, field_validator

from common.errors import first_problem
from common.yaml_files import FileModel
from contestants.base import DeadlinePassed
from contestants.calls.budget import Price
from contestants.calls.cache import request_key
from contestants.calls.coordinator import (
    SLACK_S,
    Admission,
    CallCoordinator,
    CallsStopped,
    Failed,
    Limits,
    Ticket,
    local_call_coordinator,
)
from contestants.calls.types import Answer, Completion, CompletionRequest, Message, parse_object
from contestants.llm.catalogue import catalogue
from contestants.llm.errors import MissingCredentialsError, ProviderConfigError, ProviderError
from contestants.llm.pricing import cost
from contestants.llm.retry import Failure, RetryPolicy, call_with_retries
from contestants.llm.too_long import TooLong

CHARS_PER_TOKEN = 4  # English prose and JSON run at three to five characters a token in today's tokenizers
SHORTEST_TOKEN_CHARS = 3  # what a request that must fit a window assumes of a tokenizer it does not have
MARGIN = 1.05  # room kept above a server's own count of a refused request: the next one's text differs
GROWTH = 1.25  # how much tighter a refusal makes the count where the server gives none, or a lower bound
TURN_TOKENS = 4  # what a turn of a request takes besides its text: its role and the chat template's marks


def written(message: Message) -> int:
    """The characters a turn sends: the turn as its provider's own items where it carries
    them (signed thinking, reasoning items among them), else its text and its tool calls."""
    if message.carried:
        return sum(len(json.dumps(item)) for item in message.carried)
    return len(message.content) + sum(len(call.name) + len(call.arguments) for call in message.tool_calls)


def approximate_tokens(request: CompletionRequest, chars_per_token: int = CHARS_PER_TOKEN) -> int:
    """The request's prompt tokens at `chars_per_token`: the messages with the tool calls they
    carry, and the schema or the tools, which the APIs put into the prompt too, plus
    TURN_TOKENS a turn."""
    characters = sum(written(m) for m in request.messages)
    offered = (
        request.json_schema if request.json_schema is not None else [t.model_dump() for t in request.tools]
    )
    characters += len(json.dumps(offered, separators=(",", ":")))
    return characters // chars_per_token + TURN_TOKENS * len(request.messages)


DAY_S = 86_400.0  # the longest time a setting may give, in seconds


@dataclass
class Counting:
    """How a contestant's model counts its requests, as far as the server's refusals for length
    have taught arena: how many of the server's tokens each token of arena's own count stands
    for (`scale`, 1 until a refusal) and the window a refusal named (`window`). Every count of
    a request that must fit goes through it (Provider.most_prompt_tokens, most_turn_tokens).
    It belongs to one provider, so to one merchant in one match: what one match learns never
    changes another's requests."""

    scale: float = 1.0
    window: int | None = None

    def tokens(self, counted: int) -> int:
        """The most tokens of the server's that `counted` of arena's may be."""
        return math.ceil(counted * self.scale)

    def learn(self, said: TooLong, counted: int, max_tokens: int, window: int | None) -> int:
        """Take in the refusal of a request that arena counted `counted` tokens (unscaled) and
        sent with room for `max_tokens` under `window` (None: no window known), and return the
        window a request must fit from now on. The window is the server's where it names a
        smaller one, and less than what was sent where none is known; the count is the server's
        own (with MARGIN to spare) where it gives it, and GROWTH times tighter than before where
        it gives none or only a lower bound. Either way the refused request no longer fits as
        counted now, so a request made again to fit is never the one refused."""
        counted = max(counted, 1)
        if said.window is not None:
            self.window = said.window if self.window is None else min(self.window, said.window)
        known = [w for w in (window, self.window) if w is not None]
        if not known:  # the window is less than what was sent
            self.window = self.tokens(counted) + max_tokens - 1
            known = [self.window]
        scale = self.scale
        if said.prompt is not None:
            scale = max(scale, said.prompt / counted * MARGIN)
        stopped_counting = said.window is not None and said.prompt == said.window - max_tokens + 1
        if said.prompt is None or said.at_least or stopped_counting:
            scale = max(scale, self.scale * GROWTH)
        self.scale = max(scale, (min(known) - max_tokens + 1) / counted)
        return min(known)


class ProviderSettings(FileModel):
    """Settings every provider has. Times are seconds."""

    max_retries: int = Field(3, ge=0, le=100)
    timeout: float = Field(60.0, gt=0, le=DAY_S, description="per attempt")
    total_timeout: float = Field(300.0, gt=0, le=DAY_S, description="all attempts of one call together")
    backoff_initial: float = Field(1.0, ge=0, le=DAY_S)
    backoff_max: float = Field(30.0, ge=0, le=DAY_S)
    max_concurrent_calls: int = Field(
        8, ge=1, le=1024, description="calls in flight at once to this provider endpoint, across the run"
    )
    requests_per_minute: int | None = Field(
        None, ge=1, le=10**9, description="calls started per minute at this endpoint, across the run"
    )
    tokens_per_minute: int | None = Field(
        None,
        ge=1,
        le=10**15,
        description="tokens (prompt and answer) per minute at this endpoint, across the run",
    )
    cache_dir: Path = Path(".arena-cache")
    no_cache: bool = Field(False, description="neither read nor write the response cache")
    prices: dict[str, Price] = Field(
        default_factory=dict, description="USD per million tokens, by provider/model, over the catalogue's"
    )


class RemoteSettings(ProviderSettings):
    """A provider behind an HTTP API. `api_key_env` names the variable holding the key;
    None means the server needs none (a local OpenAI-compatible server). `request` holds
    extra fields sent with every request as they are (a JSON object; part of the cache key)."""

    base_url: str | None = None
    api_key_env: str | None
    reasoning_effort: str | None = Field(
        None, description="how hard a reasoning model thinks; None: the model's default"
    )
    request: dict[str, Any] = Field(default_factory=dict, description="extra request fields, passed through")

    @field_validator("request")
    @classmethod
    def _json(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"must be JSON: {exc}") from None
        return value


class Provider(ABC):
    name: str  # the class's own, or the preset's that an instance serves (get_provider)
    settings_model: ClassVar[type[ProviderSettings]] = ProviderSettings

    def __init__(
        self,
        model: str,
        settings: ProviderSettings | None = None,
        *,
        coordinator: CallCoordinator | None = None,
        contestant: str | None = None,
    ):
        """`coordinator` is the call coordinator the calls check in with (default: this
        process's own); `contestant` names whose calls they are, for the coordinator's count of
        failures in a row."""
        self.model = model
        self.settings = settings if settings is not None else self.settings_model()
        self.coordinator = coordinator
        self.contestant = contestant
        self.counting = Counting()

    @property
    def label(self) -> str:
        return f"{self.name}/{self.model}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.label!r})"

    @classmethod
    def settings_for(cls, provider: str, settings: dict[str, Any]) -> dict[str, Any]:
        """The settings of a model named "`provider`/...", from what the contestant gives (a
        provider serving several names fills in what the name implies)."""
        return settings

    def check_credentials(self) -> None:
        """Raise MissingCredentialsError if a call could not authenticate. Call at validation.
        A hook: a provider that needs no credentials has none to check."""
        return None

    def check_request(self, request: CompletionRequest) -> None:
        """Raise ProviderConfigError (naming the setting) if this model would refuse what the
        request asks for (a temperature it does not take, say). Call at validation. A hook: a
        provider that knows no such limits refuses nothing."""
        return None

    def cache_identity(self) -> dict[str, Any]:
        """What about this provider changes the answer (part of the cache key)."""
        return {"provider": self.name, "model": self.model}

    def prompt_tokens(self, request: CompletionRequest) -> int:
        """About how many prompt tokens the request is, as this provider will count them."""
        return approximate_tokens(request)

    def counted_tokens(self, request: CompletionRequest) -> int:
        """The most prompt tokens the request may be by arena's own count: exact where this
        provider has the model's tokenizer, else at SHORTEST_TOKEN_CHARS a token."""
        return approximate_tokens(request, SHORTEST_TOKEN_CHARS)

    def most_prompt_tokens(self, request: CompletionRequest) -> int:
        """The most prompt tokens the request may be, as the model counts them: arena's count,
        as tight as the server's refusals have made it (`counting`)."""
        return self.counting.tokens(self.counted_tokens(request))

    def most_turn_tokens(self, characters: int) -> int:
        """The most tokens a turn of `characters` characters (`written`) may take in a request,
        counted as a request is (most_prompt_tokens): its text and TURN_TOKENS."""
        return self.counting.tokens(characters // SHORTEST_TOKEN_CHARS + TURN_TOKENS)

    def text_chars(self, tokens: int) -> int:
        """The characters of text that take at most `tokens` tokens, counted as a request is."""
        return int(tokens / self.counting.scale) * SHORTEST_TOKEN_CHARS

    def context_tokens(self) -> int | None:
        """The most tokens a call (prompt and answer) can hold, where this provider knows it
        (an embedded model's context, a hosted model's in the catalogue); None otherwise."""
        return None

    def window(self, limit: int | None = None) -> int | None:
        """The most tokens a call may hold: the least of `limit` (the contestant's own), the
        model's context where known and the window a refusal named; None: none is known."""
        known = [w for w in (limit, self.context_tokens(), self.counting.window) if w is not None]
        return min(known) if known else None

    def learn(self, said: TooLong, request: CompletionRequest, window: int | None) -> int:
        """Count tighter after the server refused `request` as too long for `window`, and return
        the window a request must fit from now on (Counting.learn)."""
        return self.counting.learn(said, self.counted_tokens(request), request.max_tokens, window)

    def stop(self, request: CompletionRequest, reason: str) -> Exception:
        """Stop the run's calls for `reason` (one line: what cannot be sent, as `request` is the
        smallest of it): told to the call coordinator as a failure that stops the run at once,
        naming this contestant. Returns the CallsStopped to raise."""
        coordinator = self.coordinator or local_call_coordinator()
        ticket = self._ticket(request, request_key(self.cache_identity(), request), patience=0.0)
        coordinator.report(
            ticket, None, Failed(reason, None, False, final=True)
        )  # never admitted: it holds nothing
        return CallsStopped(coordinator.status().stopped or reason)

    def answer_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The schema the model is held to, from the one the request asks for."""
        return schema

    def answer_tokens(self, text: str) -> int:
        """About how many tokens an answer of `text` is."""
        return max(1, len(text) // CHARS_PER_TOKEN)

    def endpoint(self) -> tuple[str, ...]:
        """Where calls go: the calls to one endpoint share its limits."""
        return (self.name,)

    def complete(self, request: CompletionRequest, deadline: float | None = None) -> Completion:
        """The model's answer to `request`; `deadline` (time.monotonic()) is when the caller
        stops waiting: no attempt or wait for a retry starts after it (one under way ends on
        its own timeout, so that the caller's next call does not overlap it).

        The call waits to be admitted at most its total timeout, and never past the deadline:
        then the turn is late (DeadlinePassed) or, with time left, the call fails as timed out
        (a ProviderError for which no request was sent)."""
        start = time.perf_counter()
        key = request_key(self.cache_identity(), request)
        ticket = self._ticket(request, key, self._patience(deadline))
        coordinator = self.coordinator or local_call_coordinator()
        admission: Admission = coordinator.admit(ticket)
        if admission.stopped is not None:
            raise CallsStopped(admission.stopped)
        if admission.late:
            if deadline is not None and time.monotonic() >= deadline:
                raise DeadlinePassed(f"{self.label}: the turn's deadline passed before the call was admitted")
            raise ProviderError(
                f"{self.label}: not admitted within its total timeout of {self.settings.total_timeout:g} s "
                "(the endpoint's limits were taken by other calls)",
                model=self.label,
                kind="timeout",
                status=None,
                attempts=0,
                retryable=True,
            )
        if admission.hit is not None:
            return admission.hit.model_copy(
                update={"cached": True, "attempts": 0, "latency": time.perf_counter() - start}
            )
        completion, failed = None, None
        try:
            completion = self._call(request, key, deadline, start)
            return completion
        except ProviderError as exc:
            failed = Failed(
                exc.detail, exc.status, exc.retryable, exc.code, too_long=exc.too_long is not None
            )
            raise
        except MissingCredentialsError as exc:
            failed = Failed(str(exc), None, False)
            raise
        finally:
            coordinator.report(ticket, completion, failed)

    def _call(self, request: CompletionRequest, key: str, deadline: float | None, start: float) -> Completion:
        self.check_credentials()
        policy = RetryPolicy(
            max_retries=self.settings.max_retries,
            timeout=self.settings.timeout,
            total_timeout=self.settings.total_timeout,
            backoff_initial=self.settings.backoff_initial,
            backoff_max=self.settings.backoff_max,
        )
        answer, attempts = call_with_retries(
            lambda timeout: self._attempt(request, timeout),
            classify=self._failure,
            policy=policy,
            label=self.label,
            secrets=self._secrets(),
            start_by=deadline,
        )
        return Completion(
            **answer.model_dump(),
            provider=self.name,
            model=self.model,
            output=parse_object(answer.text),
            cost=cost(self.label, answer.usage, self.settings.prices),
            latency=time.perf_counter() - start,
            attempts=attempts,
            request_hash=key,
        )

    def _patience(self, deadline: float | None) -> float:
        """How long a call may wait to be admitted: its total timeout, and never past the
        caller's `deadline` (time.monotonic())."""
        total = self.settings.total_timeout
        return total if deadline is None else max(0.0, min(total, deadline - time.monotonic()))

    def _ticket(self, request: CompletionRequest, key: str, patience: float) -> Ticket:
        settings = self.settings
        return Ticket(
            id=uuid.uuid4().hex,
            contestant=self.contestant,
            model=self.label,
            endpoint=self.endpoint(),
            limits=Limits(
                settings.max_concurrent_calls, settings.requests_per_minute, settings.tokens_per_minute
            ),
            tokens=approximate_tokens(request) + request.max_tokens,
            cache_key=None if settings.no_cache else key,
            cache_dir=str(settings.cache_dir),
            lease=settings.total_timeout + SLACK_S,
            patience=patience,
        )

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

    def __init__(
        self, model: str, settings: RemoteSettings | None = None, *, http_client: Any = None, **context: Any
    ):
        """`http_client` (an httpx2.Client) replaces the SDK's transport: proxies, tests."""
        super().__init__(model, settings, **context)
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
        return {
            **super().cache_identity(),
            "base_url": self.settings.base_url,
            "request": self.settings.request,
        }

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


def check_effort(label: str, effort: str | None, accepted: tuple[str, ...] | None, where: str = "") -> None:
    """Raise ProviderConfigError if the model does not take `effort` (`accepted` None: not
    known, any is passed on; empty: it takes none)."""
    if effort is not None and accepted is not None and effort not in accepted:
        takes = f"one of {', '.join(accepted)}" if accepted else "none"
        raise ProviderConfigError(
            f"{label} takes reasoning_effort {takes}{where}, not {effort!r}", "reasoning_effort"
        )


_BUILTIN: dict[str, str] = {
    "openai": "contestants.llm.openai_provider:OpenAIProvider",
    "anthropic": "contestants.llm.anthropic_provider:AnthropicProvider",
    "local": "contestants.llm.local_provider:LocalProvider",
    **{preset: "contestants.llm.openai_provider:OpenAIProvider" for preset in catalogue().presets},
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
        raise ProviderConfigError(
            f"unknown provider {name!r} (known: {', '.join(provider_names())})", "model"
        ) from None
    return resolve_name(target)


def split_model(model: str) -> tuple[str, str]:
    """ "openai/gpt-5.4-mini" -> ("openai", "gpt-5.4-mini"); "openrouter/openai/gpt-5" ->
    ("openrouter", "openai/gpt-5"); a bare "local" -> ("local", "")."""
    provider, _, name = model.partition("/")
    return provider, name


def validate_settings(model: str, settings: dict[str, Any] | None = None) -> ProviderSettings:
    """Check a model name and its settings without building the provider."""
    provider, name = split_model(model)
    cls = provider_class(provider)
    try:
        return cls.settings_model.model_validate(cls.settings_for(provider, settings or {}))
    except ValidationError as exc:
        problem = first_problem(exc)
        where = f"{problem.field}: " if problem.field else ""
        raise ProviderConfigError(f"{model}: {where}{problem.explained}", problem.field) from None


def get_provider(model: str, settings: dict[str, Any] | None = None, **options: Any) -> Provider:
    """Build the provider for "provider/model" with `settings` (a dict of its settings model).

    `options` go to the provider's constructor (coordinator, contestant; http_client for remote
    providers).
    """
    provider, name = split_model(model)
    cls = provider_class(provider)
    instance = cls(name, validate_settings(model, settings), **options)
    instance.name = provider  # a preset is the OpenAI provider under the preset's name
    return instance
