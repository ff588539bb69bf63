"""The language-model merchant: kind `llm`.

It plays in one of two modes (`mode`): decision mode, one structured answer a day
(contestants.llm.decision_mode), or agent mode, several steps a day with tools
(contestants.llm.agent_mode). In both, every call goes through its `Caller`
(contestants.llm.caller): a call that fails for good (retries exhausted) raises, which the runner
records as an `error` fault for the day; a request the server refuses as too long is asked again
shorter, and only a conversation that cannot fit the window at its smallest stops the run.

Every call is logged with its purpose, tokens, latency, attempts, cost, the prompt
templates' versions, temperature and seed (`calls()`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from common.model_calls import ModelCall, TranscriptStep
from contestants.base import (
    CallsOutlook,
    Contestant,
    ContestantConfigError,
    OffPathQuestion,
    Params,
    Ping,
    RecallQuestion,
    RunOptions,
)
from contestants.calls.cache import request_key
from contestants.calls.coordinator import SLACK_S, CallsStopped
from contestants.calls.types import Message, Tool
from contestants.llm.agent import END_DAY
from contestants.llm.agent_mode import AgentMode
from contestants.llm.caller import Caller, completion_request
from contestants.llm.decision_mode import DECISION_SCHEMA, DecisionMode, decision_schema
from contestants.llm.errors import ProviderConfigError, ProviderError
from contestants.llm.params import LLMParams
from contestants.llm.pricing import is_free, price_of, prices_from
from contestants.llm.providers import Provider, get_provider, validate_settings
from contestants.llm.rehearsal import Outlook, Rehearsal
from market.scenario import Scenario
from market.types import Observation

TURN_CALLS = 3  # calls a turn makes at most, one after another: reflect, decide, repair


class LLMMerchant(Contestant):
    kind: ClassVar[str] = "llm"
    params_model: ClassVar[type[Params]] = LLMParams
    needs_actor: ClassVar[bool] = True  # holds a model or a client; may be slow
    calls_models: ClassVar[bool] = True

    params: LLMParams

    def __init__(self, params: LLMParams, options: RunOptions = RunOptions()):
        super().__init__(params, options)
        # The provider counts its requests as its model does (and learns from refusals); in a
        # rehearsal, the rehearsal answers them in its place.
        self.provider = provider_for(params, options)
        self.rehearsal = Rehearsal(self.provider, options.rehearse) if options.rehearse is not None else None
        self.caller = Caller(params, self.provider, self.rehearsal)

    @classmethod
    def check_scenario(cls, params: Params, scenario: Scenario, merchants: int) -> None:
        resets = [act.name for act in scenario.interventions if act.kind == "memory_reset"]
        if resets:
            raise ContestantConfigError(
                f"intervention {resets[0]!r} is a memory_reset, which resets learners (qlearning); "
                "a language model's memory cannot be reset yet"
            )

    @classmethod
    def preflight(cls, params: Params) -> None:
        """A missing API key or model file, or a request the model would refuse (a temperature
        it does not take, an effort it does not know), is a validation error, not a fault on
        day 1."""
        assert isinstance(params, LLMParams)
        if params.mode == "agent":
            check_callable(params, None, "step", (END_DAY,))
        else:
            check_callable(params, DECISION_SCHEMA, "decision")

    @classmethod
    def ping(cls, params: Params) -> Ping:
        """One call with the contestant's own settings and schema (no cache, one retry): what
        the model refuses (an unknown model, a refused key or parameter) it refuses here."""
        assert isinstance(params, LLMParams)
        settings = validate_settings(params.model, params.provider_settings)
        quick = {
            "no_cache": True,
            "max_retries": min(settings.max_retries, 1),
            "total_timeout": min(settings.total_timeout, 60.0),
        }
        provider = provider_for(type(params).model_validate({**params.model_dump(), **quick}))
        messages = (
            Message(
                role="system",
                content="You run a shop. Answer with today's decision in JSON: do nothing today.",
            ),
            Message(role="user", content="Day 1. Decide."),
        )
        request = completion_request(
            params,
            messages,
            decision_schema(
                think=params.think, plan=params.plan, plans_and_insights=params.memory == "plans"
            ),
            "decision",
            seed=0,
        )

        def call() -> str | None:
            try:
                provider.complete(request)
            except (ProviderError, ProviderConfigError, CallsStopped) as exc:
                return str(exc)
            return None

        base_url = getattr(settings, "base_url", None)  # a remote provider's (RemoteSettings)
        where = f" at {base_url}" if base_url else ""
        # a key of its own: a call of its own
        reached = {**provider.cache_identity(), "api_key_env": getattr(settings, "api_key_env", None)}
        return Ping(f"{provider.label}{where}", request_key(reached, request), call)

    @classmethod
    def unpriced_model(cls, params: Params, prices: dict[str, Any]) -> str | None:
        assert isinstance(params, LLMParams)
        own = validate_settings(params.model, params.provider_settings).prices
        label = params.model  # "provider/model", as prices are keyed
        return (
            None if is_free(label) or price_of(label, {**prices_from(prices), **own}) is not None else label
        )

    @classmethod
    def calls_outlook(cls, params: Params, prices: dict[str, Any]) -> CallsOutlook:
        assert isinstance(params, LLMParams)
        settings = validate_settings(params.model, params.provider_settings)
        return Outlook(
            model=params.model,
            cached=not settings.no_cache,
            steps=params.mode == "agent",
            max_tokens=params.max_tokens,
            prices={**prices_from(prices), **settings.prices},
        )

    @classmethod
    def turn_seconds(cls, params: Params) -> float:
        """A turn makes at most TURN_CALLS calls in a row (a reflection, the decision, its
        repair), or in agent mode twice max_steps (a compaction before each step at most), each
        of which may take the provider's total_timeout with its retries."""
        assert isinstance(params, LLMParams)
        calls = 2 * params.max_steps if params.mode == "agent" else TURN_CALLS
        return calls * validate_settings(params.model, params.provider_settings).total_timeout

    @classmethod
    def overrun_seconds(cls, params: Params) -> float:
        """Past its deadline a turn starts no call, no attempt and no wait for one: an attempt
        under way ends on its timeout, and then the call reports to the call coordinator,
        and a next call is told it is late, each answered within SLACK_S."""
        assert isinstance(params, LLMParams)
        return validate_settings(params.model, params.provider_settings).timeout + 2 * SLACK_S

    def begin_turn(self, deadline: float | None) -> None:
        self.caller.deadline = deadline

    def reset(self, *, merchant: str, scenario: Scenario, seed: int) -> None:
        if self.rehearsal is not None:
            self.rehearsal.reset(merchant=merchant, scenario=scenario, seed=seed)
        self.caller.reset(int(np.random.default_rng(seed).integers(2**31 - 1)))
        kind = AgentMode if self.params.mode == "agent" else DecisionMode
        self.mode: DecisionMode | AgentMode = kind(self.params, self.caller, merchant, scenario)
        self.last_day = 0  # of the last decision asked for

    def decide(self, observation: Observation) -> Any:
        self.last_day = observation.day
        if self.rehearsal is not None:  # its answers make the operations that fit the day
            self.rehearsal.observe(observation)
        return self.mode.decide(observation)

    def recall(self, question: RecallQuestion) -> float | None:
        return self.mode.recall(question, self.last_day + 1)  # asked in the morning, before the day's work

    def off_path(self, question: OffPathQuestion) -> float | None:
        return self.mode.off_path(question, self.last_day + 1)

    def calls(self) -> list[ModelCall]:
        return list(self.caller.calls)

    def transcript(self) -> list[TranscriptStep]:
        return list(self.caller.transcript)

    def reported_metrics(self) -> dict[str, float]:
        """In agent mode, how its days went (AgentMode.reported_metrics); none in decision mode."""
        return self.mode.reported_metrics() if isinstance(self.mode, AgentMode) else {}


def check_callable(params: LLMParams, schema: dict | None, name: str, tools: tuple[Tool, ...] = ()) -> None:
    """ContestantConfigError, before any call, where a model's calls could not be made: a
    missing API key or model file, or a request of `schema` (or `tools`) that the model would
    refuse (a temperature it does not take, an effort it does not know)."""
    try:
        provider = provider_for(params)
        provider.check_credentials()
        ping = (Message(role="user", content="ping"),)
        provider.check_request(completion_request(params, ping, schema, name, seed=0, tools=tools))
    except ProviderConfigError as exc:
        raise ContestantConfigError(str(exc), exc.field) from None


def provider_for(params: LLMParams, options: RunOptions = RunOptions()) -> Provider:
    """The contestant's provider under the run's options: its calls check in with the run's
    call coordinator under its name, with the tournament's prices under its own."""
    settings = params.provider_settings
    settings["prices"] = {**options.prices, **settings.get("prices", {})}
    if options.no_cache:
        settings["no_cache"] = True
    return get_provider(
        params.model, settings, coordinator=options.call_coordinator, contestant=options.contestant
    )
