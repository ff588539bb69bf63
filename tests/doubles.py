"""Contestants that stand in for slow or fragile ones in the tests and benchmarks of the machinery
(deadlines, hosts, crashes, parallel efficiency), never on a leaderboard: `Latency` is slow on
purpose, `Chaos` misbehaves on purpose, `Between` waits between its matches for a file a test
writes. A tournament names them as any kind of one's own is named, by where the class is
(LATENCY, CHAOS, BETWEEN); every process of a run imports them alike.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from contestants.base import Params, RunOptions
from contestants.baselines import FixedPrice, FixedPriceParams
from market.scenario import MAX_DAYS, Scenario
from market.types import Observation, Operation

LATENCY = "tests.doubles:Latency"
CHAOS = "tests.doubles:Chaos"
BETWEEN = "tests.doubles:Between"


class LatencyParams(FixedPriceParams):
    latency_s: float = Field(0.2, ge=0, le=3600, description="seconds to sleep before every answer")


class Latency(FixedPrice):
    """A fixed-price merchant that sleeps `latency_s` seconds before each answer: a stand-in
    for a slow language model when benchmarking the runner (deadlines, actor overlap)."""

    kind: ClassVar[str] = "latency"
    params_model: ClassVar[type[Params]] = LatencyParams
    needs_actor: ClassVar[bool] = True
    decides_from_view: ClassVar[bool] = False
    params: LatencyParams

    @classmethod
    def overrun_seconds(cls, params: Params) -> float:
        assert isinstance(params, LatencyParams)
        return params.latency_s  # it sleeps whatever its deadline

    def decide(self, observation: Observation) -> list[Operation] | dict[str, Any]:
        time.sleep(self.params.latency_s)
        return super().decide(observation)


class BetweenParams(FixedPriceParams):
    played: str = Field(description="a file it writes on the first day it plays")
    then: str = Field(description="a file it waits for on the first day of each later match")
    wait_s: float = Field(60.0, ge=0, le=3600, description="the most it waits for `then`")


class Between(FixedPrice):
    """A fixed-price merchant that, from its second match on, waits on the first day (at most
    `wait_s`) until the file `then` exists: something a test must see happen between two
    matches happens, or the match goes on without it."""

    kind: ClassVar[str] = "between"
    params_model: ClassVar[type[Params]] = BetweenParams
    needs_actor: ClassVar[bool] = True
    decides_from_view: ClassVar[bool] = False
    params: BetweenParams

    @classmethod
    def overrun_seconds(cls, params: Params) -> float:
        assert isinstance(params, BetweenParams)
        return params.wait_s  # it waits whatever its deadline

    def decide(self, observation: Observation) -> list[Operation] | dict[str, Any]:
        played, then = Path(self.params.played), Path(self.params.then)
        if observation.day == 1 and played.exists():
            waited_until = time.monotonic() + self.params.wait_s
            while not then.exists() and time.monotonic() < waited_until:
                time.sleep(0.05)
        played.touch()
        return super().decide(observation)


class ChaosParams(FixedPriceParams):
    fault: Literal["raise", "hang", "garbage", "crash"] = Field("raise", description="how it misbehaves")
    every: int = Field(1, ge=1, le=MAX_DAYS, description="misbehave on days where day % every == 0")
    hang_s: float = Field(30.0, ge=0, le=3600, description="how long 'hang' sleeps before answering nothing")


_GARBAGE: tuple[Any, ...] = (
    "{not json",
    {"operations": [{"op": "teleport", "to": "moon"}, {"op": "set_price", "price": "cheap"}]},
)


class Chaos(FixedPrice):
    """A merchant that misbehaves on purpose, for robustness tests of the runner.

    On days where day % `every` == 0 it does its `fault`: "raise" raises RuntimeError,
    "hang" sleeps `hang_s` seconds then returns None, "garbage" returns something that is
    not a decision (alternately unparseable JSON text and a dict of bogus operations),
    "crash" kills its own process with os._exit(1) — hence it always runs in an actor. On
    other days it is a fixed-price merchant.
    """

    kind: ClassVar[str] = "chaos"
    params_model: ClassVar[type[Params]] = ChaosParams
    needs_actor: ClassVar[bool] = True
    decides_from_view: ClassVar[bool] = False
    params: ChaosParams

    def __init__(self, params: Params, options: RunOptions = RunOptions()):
        super().__init__(params, options)
        self._faults = 0

    @classmethod
    def overrun_seconds(cls, params: Params) -> float:
        assert isinstance(params, ChaosParams)
        return params.hang_s if params.fault == "hang" else 0.0  # it hangs whatever its deadline

    def reset(self, *, merchant: str, scenario: Scenario, seed: int) -> None:
        super().reset(merchant=merchant, scenario=scenario, seed=seed)
        self._faults = 0

    def decide(self, observation: Observation) -> Any:
        if observation.day % self.params.every != 0:
            return super().decide(observation)
        self._faults += 1
        fault = self.params.fault
        if fault == "raise":
            raise RuntimeError(f"chaos merchant {self.merchant!r} raises on day {observation.day}")
        if fault == "hang":
            time.sleep(self.params.hang_s)
            return None
        if fault == "garbage":
            return _GARBAGE[(self._faults - 1) % len(_GARBAGE)]
        os._exit(1)
