"""The language-model merchant: kind `llm`.

Each day it renders its observation as a short report, shows the model the rules, what its
memory keeps and the report, and asks for a decision filling `Decision`'s JSON schema. An
answer that is not a valid decision gets one repair request (the error is shown to the
model); if that fails too, the raw text goes to the market, which rejects it as a malformed
decision and the runner records the fault. A call that fails for good (retries exhausted)
raises, which the runner records as an `error` fault for the day.

Every call is logged with its purpose, tokens, latency, attempts and cost (`calls()`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import ConfigDict, Field, ValidationError, model_validator

from contestants.base import Contestant, ContestantConfigError, ModelCall, Params, RecallProbe, register
from contestants.llm.errors import ProviderConfigError
from contestants.llm.memory import Memory, MemoryKind
from contestants.llm.schema import constrained_schema
from contestants.llm.prompts import daily_report, recall_question, system_prompt, template
from contestants.llm.providers import Provider, get_provider, validate_settings
from contestants.llm.types import Completion, CompletionRequest, Message
from market.scenario import Scenario
from market.types import Decision, Observation

# Tightened (every field required, lists and strings bounded): a small model decoding under
# a grammar otherwise answers `{}` or repeats one operation until it runs out of tokens.
DECISION_SCHEMA = constrained_schema(Decision.model_json_schema())
RECALL_SCHEMA = {
    "type": "object",
    "properties": {"value": {"type": ["number", "null"]}},
    "required": ["value"],
}


class LLMParams(Params):
    """A model and how it plays. Keys not listed here are the provider's settings
    (base_url, api_key_env, model_path, timeout, max_retries, prices, no_cache, ...)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    model: str = Field("local/smollm2", description='"provider/model": openai/..., anthropic/..., local/smollm2')
    memory: MemoryKind = "window"
    window: int = Field(5, ge=1, le=100, description="days of conversation the window memory keeps")
    temperature: float = Field(0.0, ge=0, le=2)
    max_tokens: int = Field(400, gt=0, le=32_000)

    @model_validator(mode="after")
    def _provider_settings_are_valid(self) -> LLMParams:
        validate_settings(self.model, self.provider_settings)
        return self

    @property
    def provider_settings(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


@register
class LLMMerchant(Contestant):
    kind: ClassVar[str] = "llm"
    params_model: ClassVar[type[Params]] = LLMParams
    needs_actor: ClassVar[bool] = True  # holds a model or a client; may be slow

    params: LLMParams

    def __init__(self, params: LLMParams):
        super().__init__(params)
        self.provider: Provider = get_provider(params.model, params.provider_settings)
        self._calls: list[ModelCall] = []

    @classmethod
    def preflight(cls, params: LLMParams) -> None:
        """A missing API key or model file is a validation error, not a fault on day 1."""
        try:
            get_provider(params.model, params.provider_settings).check_credentials()
        except ProviderConfigError as exc:
            raise ContestantConfigError(str(exc), exc.field) from None

    def reset(self, *, merchant: str, scenario: Scenario, rng: np.random.Generator) -> None:
        self.merchant, self.scenario = merchant, scenario
        self.seed = int(rng.integers(2**31 - 1))
        self.memory = Memory(self.params.memory, self.params.window)
        self.system: str | None = None
        self._calls = []

    def decide(self, observation: Observation) -> Any:
        if self.system is None:
            self.system = system_prompt(self.scenario, self.merchant, observation.days, notes=self.params.memory == "notes")
        report = daily_report(observation)
        messages = self.memory.messages(self.system, report)
        completion = self._ask("decide", observation.day, messages, DECISION_SCHEMA, "decision")
        decision, problem = _as_decision(completion)
        if decision is None:
            repair = (
                *messages,
                Message(role="assistant", content=completion.text),
                Message(role="user", content=f"That is not a valid decision ({problem}). Answer again, following the schema exactly."),
            )
            completion = self._ask("repair", observation.day, repair, DECISION_SCHEMA, "decision")
            decision, _ = _as_decision(completion)
        self.memory.remember(observation.day, report, completion.text, decision.note if decision else None)
        return decision if decision is not None else completion.text

    def recall(self, probe: RecallProbe) -> float | None:
        if self.system is None:
            return None
        messages = self.memory.messages(self.system, recall_question(probe))
        completion = self._ask("recall", probe.day, messages, RECALL_SCHEMA, "recall")
        value = (completion.output or {}).get("value")
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def calls(self) -> list[ModelCall]:
        return list(self._calls)

    @property
    def prompt_version(self) -> str:
        return f"{template('merchant').version}+{template('recall').version}"

    def _ask(self, purpose: str, day: int, messages: tuple[Message, ...], schema: dict, name: str) -> Completion:
        request = CompletionRequest(
            messages=messages,
            json_schema=schema,
            schema_name=name,
            temperature=self.params.temperature,
            seed=self.seed,
            max_tokens=self.params.max_tokens,
        )
        completion = self.provider.complete(request)
        self._calls.append(
            ModelCall(
                day=day,
                purpose=purpose,
                model=self.params.model,
                input_tokens=completion.usage.input_tokens,
                output_tokens=completion.usage.output_tokens,
                cached_tokens=completion.usage.cached_tokens,
                latency=completion.latency,
                attempts=completion.attempts,
                cost=completion.cost,
                cached=completion.cached,
                request_hash=completion.request_hash,
            )
        )
        return completion


def _as_decision(completion: Completion) -> tuple[Decision | None, str]:
    """The completion as a Decision, or None and what is wrong with it (one line)."""
    if completion.output is None:
        return None, "not a JSON object"
    try:
        return Decision.model_validate(completion.output), ""
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        return None, f"{where}: {error['msg']}" if where else error["msg"]
