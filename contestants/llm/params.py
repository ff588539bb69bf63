"""What a language-model contestant's params say: its model and how it plays."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from contestants.base import Params
from contestants.llm.errors import ProviderConfigError
from contestants.llm.memory import MemoryKind
from contestants.llm.providers import validate_settings


class LLMParams(Params):
    """A model and how it plays. Keys not listed here are the provider's settings
    (base_url, api_key_env, model_path, timeout, max_retries, max_concurrent_calls, prices,
    no_cache, ...)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    model: str = Field(
        "local/smollm2",
        description='"provider/model": openai/..., anthropic/..., local/smollm2, openrouter/...',
    )
    memory: MemoryKind = Field(
        "window", description="stateless | window | notes | plans (plans and insights rewritten every day)"
    )
    window: int = Field(5, ge=1, le=100, description="days of conversation the window memory keeps")
    temperature: float | None = Field(
        None, ge=0, le=2, description="None: the model's default (the embedded model's: 0, greedy)"
    )
    top_p: float | None = Field(None, gt=0, le=1, description="None: the model's default")
    max_tokens: int = Field(400, gt=0, le=32_000)
    think: bool = Field(False, description="write its reasoning before the decision, in the same answer")
    reflect: bool = Field(
        False, description="from day 2, reflect on yesterday's decision against its outcome first"
    )
    plan: bool = Field(
        False,
        description="state in each decision the prices it intends to hold "
        "(the plan that plan_drift measures)",
    )
    preset: Literal["profit_first", "explore"] | None = Field(
        None,
        description="a paragraph before the rules on how to play: profit_first (long-run profit) "
        "or explore (try prices widely first)",
    )
    history: int = Field(
        0,
        ge=0,
        le=100,
        description="days in the daily report's table of the last days "
        "(own prices, sold, profit, rivals' prices); 0: no table",
    )
    mode: Literal["decision", "agent"] = Field(
        "decision",
        description="decision: one structured answer a day; agent: several steps a day with tools "
        "(books, history, rivals, calculator, notes, operations), ended by end_day",
    )
    max_steps: int = Field(20, ge=1, le=200, description="agent mode: the most steps (answers) a day")
    context_tokens: int | None = Field(
        None,
        ge=1000,
        le=10**8,
        description="the most tokens a call may hold (prompt and answer); None: the model's own "
        "where known. Agent mode compacts its conversation to stay within it",
    )

    @model_validator(mode="after")
    def _window_holds_an_answer(self) -> LLMParams:
        if self.context_tokens is not None and self.context_tokens <= self.max_tokens:
            raise ValueError(
                f"context_tokens {self.context_tokens} must be larger than max_tokens {self.max_tokens}: "
                "a call holds the prompt and the answer"
            )
        return self

    @model_validator(mode="after")
    def _provider_settings_are_valid(self) -> LLMParams:
        try:
            validate_settings(self.model, self.provider_settings)
        except ProviderConfigError as exc:  # pydantic reports a ValueError as the model's error
            raise ValueError(str(exc)) from None
        return self

    @property
    def provider_settings(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    @property
    def preface(self) -> tuple[str, ...]:
        """The templates said before the rules: the preset's paragraph on how to play, if any."""
        return (f"preset_{self.preset}",) if self.preset else ()
