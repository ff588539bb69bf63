"""The conformance kit (contestants.conformance): every kind arena ships keeps its rules, the kind
docs/contestants.md shows does, and each rule fails a kind made to break it."""

from __future__ import annotations

import threading
import time
from typing import Any, ClassVar

import numpy as np
import pytest
from pydantic import ConfigDict, model_validator

from common.model_calls import ModelCall
from contestants.base import DeadlinePassed, Params
from contestants.conformance import (
    DEADLINE,
    PARAMS,
    PICKLING,
    RESET,
    NonConformance,
    Trial,
    check_contestant,
    check_deadline,
    check_params,
    check_pickling,
    check_reset_determinism,
)
from contestants.kinds import kinds
from docs.examples.steady_markup import SteadyMarkup, SteadyMarkupParams
from market.scenario import Scenario
from market.types import Observation, SetPrice
from tests.packages import PACKAGES

SHIPPED = sorted(kind for kind, cls in kinds().items() if cls.__module__.split(".")[0] in PACKAGES)
KEY = "ARENA_CONFORMANCE_KEY"


@pytest.fixture
def quick(fake_openai, monkeypatch) -> dict[str, dict[str, Any]]:
    """Params that make a kind's trial quick and local, by kind (a kind not named: its defaults):
    a language model on the OpenAI stand-in, a learner's learning phase short."""
    monkeypatch.setenv(KEY, str(fake_openai.api_key))
    return {
        "llm": {"model": "openai/gpt-4.1-mini", "base_url": fake_openai.base_url, "api_key_env": KEY},
        "qlearning": {"stable_periods": 100, "max_periods": 2_000},
    }


@pytest.mark.parametrize("kind", SHIPPED)
def test_every_shipped_kind_conforms(kind, quick, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a model's response cache is written to the working folder
    check_contestant(kind, quick.get(kind))


def test_the_kind_the_docs_show_conforms():
    check_contestant(SteadyMarkup, {"markup": 1.3})


# ---- kinds that break a rule each


class Unseeded(SteadyMarkup):
    """Draws from a generator its seed does not make."""

    def reset(self, *, merchant: str, scenario: Scenario, seed: int) -> None:
        self.rng = np.random.default_rng()


class Unreset(SteadyMarkup):
    """Counts the days it priced, and a reset does not forget them."""

    days = 0

    def decide(self, observation: Observation) -> list[SetPrice]:
        self.days += 1
        return [SetPrice(product=p.product, price=p.unit_cost + self.days) for p in observation.products]


def test_a_kind_that_draws_unseeded_is_not_deterministic():
    with pytest.raises(NonConformance, match="a new contestant reset with the same seed decided") as failed:
        check_reset_determinism(Trial.of(Unseeded))
    assert failed.value.rule == RESET


def test_a_kind_that_a_reset_does_not_clear_is_not_deterministic():
    with pytest.raises(NonConformance, match="reset with its seed again, after a match") as failed:
        check_reset_determinism(Trial.of(Unreset))
    assert failed.value.rule == RESET


class LaxParams(SteadyMarkupParams):
    model_config = ConfigDict(extra="ignore")


class Lax(SteadyMarkup):
    params_model: ClassVar[type[Params]] = LaxParams


class AnythingParams(SteadyMarkupParams):
    note: Any = None


class Anything(SteadyMarkup):
    params_model: ClassVar[type[Params]] = AnythingParams


class VagueParams(SteadyMarkupParams):
    @model_validator(mode="before")
    @classmethod
    def _known(cls, data: Any) -> Any:
        if set(data) - set(cls.model_fields):
            raise ValueError("something is wrong")
        return data


class Vague(SteadyMarkup):
    params_model: ClassVar[type[Params]] = VagueParams


@pytest.mark.parametrize(
    "kind, refusal",
    [
        (Lax, "an unknown key 'no_such_parameter' is accepted"),
        (Anything, "'note' takes any of"),
        (Vague, "an unknown key 'no_such_parameter' is refused without naming it: something is wrong"),
    ],
)
def test_a_kind_whose_params_take_a_mistake_is_refused(kind, refusal):
    with pytest.raises(NonConformance, match=refusal) as failed:
        check_params(Trial.of(kind))
    assert failed.value.rule == PARAMS


class Locked(SteadyMarkup):
    """Holds a lock, which nothing can pickle."""

    def reset(self, *, merchant: str, scenario: Scenario, seed: int) -> None:
        super().reset(merchant=merchant, scenario=scenario, seed=seed)
        self.lock = threading.Lock()


class Reseeded(SteadyMarkup):
    """Pickles its params alone: a copy draws from a generator made anew."""

    def __getstate__(self) -> dict[str, Any]:
        return {"params": self.params}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.params, self.rng = state["params"], np.random.default_rng(0)


@pytest.mark.parametrize(
    "kind, refusal",
    [
        (Locked, "a contestant after day 1 cannot be copied with pickle: TypeError: cannot pickle"),
        (Reseeded, "a contestant copied with pickle after day 1 decided"),
    ],
)
def test_a_kind_that_does_not_survive_pickling_is_refused(kind, refusal):
    with pytest.raises(NonConformance, match=refusal) as failed:
        check_pickling(Trial.of(kind))
    assert failed.value.rule == PICKLING


class Slow(SteadyMarkup):
    """Declares turns of 20 ms and takes 50."""

    @classmethod
    def turn_seconds(cls, params: Params) -> float:
        return 0.02

    def decide(self, observation: Observation) -> list[SetPrice]:
        time.sleep(0.05)
        return super().decide(observation)


class Deaf(SteadyMarkup):
    """Calls its model every turn, its deadline passed or not."""

    def reset(self, *, merchant: str, scenario: Scenario, seed: int) -> None:
        super().reset(merchant=merchant, scenario=scenario, seed=seed)
        self.made: list[ModelCall] = []

    def decide(self, observation: Observation) -> list[SetPrice]:
        self.made.append(
            ModelCall(
                day=observation.day,
                purpose="decide",
                model="stand-in/model",
                input_tokens=100,
                output_tokens=10,
                cached_tokens=0,
                latency=0.0,
                attempts=1,
                cost=None,
                cached=False,
                request_hash="hash",
                prompt_version="v1",
                temperature=None,
                seed=None,
            )
        )
        return super().decide(observation)

    def calls(self) -> list[ModelCall]:
        return self.made


class Quitter(SteadyMarkup):
    """Gives up every turn, whatever time it has left."""

    def decide(self, observation: Observation) -> list[SetPrice]:
        raise DeadlinePassed("no time")


@pytest.mark.parametrize(
    "kind, refusal",
    [
        (Slow, r"its turn on day 1 took [\d.]+ s, past its deadline of 0\.02 s"),
        (Deaf, "told its deadline had passed, it called a model all the same"),
        (Quitter, r"it gave up on day 1 after .* s of its 1: no time"),
    ],
)
def test_a_kind_that_does_not_keep_its_deadline_is_refused(kind, refusal):
    with pytest.raises(NonConformance, match=refusal) as failed:
        check_deadline(Trial.of(kind))
    assert failed.value.rule == DEADLINE


class SlowUndeclared(SteadyMarkup):
    """Takes 50 ms a turn, and declares no turn seconds."""

    def decide(self, observation: Observation) -> list[SetPrice]:
        time.sleep(0.05)
        return super().decide(observation)


def test_a_kind_that_declares_no_turn_seconds_answers_at_once(monkeypatch):
    monkeypatch.setattr("contestants.conformance.AT_ONCE_S", 0.02)  # rather than a turn of a second slept
    with pytest.raises(NonConformance, match="a kind that declares no turn_seconds answers at once"):
        check_deadline(Trial.of(SlowUndeclared))
