"""The Ray actors of a run: a ContestantHost for each contestant that needs isolation, and a
few MatchRunners that play the matches those contestants are in.

A ContestantHost is one process per such contestant (it holds a model, is slow, or may crash
its process). It keeps that contestant's state for every match it is in, keyed by (match key,
merchant), and serves the matches' calls on a pool of threads, so one slow contestant answers
many matches at once. Ray restarts it if its process dies; the match then resets its state.

A MatchRunner plays matches with hosted contestants as coroutines on its event loop: such a
match mostly waits for its contestants' answers, so one process plays many side by side. A run
starts about one runner per CPU, so the market steps and Ray calls of many matches are spread
over the cores and the driver only hands out matches and records the results.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import ray

from contestants.base import Contestant, ModelCall, RecallProbe, RunOptions, contestant_class, create
from market.scenario import Scenario
from market.types import Observation
from results.records import FinishedMatch
from tournaments.config import ContestantEntry
from tournaments.match import Match, MatchRules, Turn, take_turn
from tournaments.schedule import MatchSpec

HOST_THREADS = 64


def _enter(working_dir: str) -> None:
    """Work in the folder `arena run` was started in, so relative paths in a contestant's
    settings (a response cache, a model file) mean what they meant there, not wherever Ray
    starts its workers (with `uv run` that is a per-session copy of the project). Skipped on
    a node that lacks the folder."""
    if os.path.isdir(working_dir):
        os.chdir(working_dir)


@ray.remote(num_cpus=0, max_restarts=-1)
class ContestantHost:
    def __init__(self, entry: ContestantEntry, working_dir: str):
        _enter(working_dir)
        # Import the contestant's code now, so that `ready` means ready to play: otherwise
        # every host imports it on its first call, all at once, inside the first day of play.
        contestant_class(entry.kind)
        self.entry = entry
        self.instances: dict[tuple[str, str], Contestant] = {}

    def ready(self) -> bool:
        return True

    def reset(self, match_key: str, merchant: str, scenario: Scenario, seed: int, options: RunOptions) -> None:
        contestant = create(self.entry.kind, self.entry.params, options)
        contestant.reset(merchant=merchant, scenario=scenario, rng=np.random.default_rng(seed))
        self.instances[(match_key, merchant)] = contestant

    def turn(self, match_key: str, merchant: str, observation: Observation, probe: RecallProbe | None, deadline: float) -> Turn:
        """The day's decision, and the answer to the day's memory probe if there is one:
        one call a day, probe or not (see tournaments.match.take_turn)."""
        return take_turn(self.instances[(match_key, merchant)], observation, probe, deadline)

    def finish(self, match_key: str, merchant: str) -> list[ModelCall]:
        """Forget the match; hand back the model calls made in it."""
        contestant = self.instances.pop((match_key, merchant), None)
        return contestant.calls() if contestant is not None else []


@ray.remote(num_cpus=0)
class MatchRunner:
    def __init__(self, working_dir: str):
        _enter(working_dir)  # inline contestants of its matches may read files too
        self.days = 0

    async def ready(self) -> bool:
        return True

    async def play(
        self, spec: MatchSpec, scenario: Scenario, rules: MatchRules, entries: dict[str, ContestantEntry], hosts: dict[str, Any]
    ) -> FinishedMatch:
        finished = await Match(spec, scenario, rules, entries, hosts).play(on_day=self._count_day)
        return finished.packed()

    async def days_played(self) -> int:
        """Days played by all matches of this runner so far (for the progress bar)."""
        return self.days

    def _count_day(self) -> None:
        self.days += 1


def start_host(entry: ContestantEntry) -> Any:
    return ContestantHost.options(max_concurrency=HOST_THREADS).remote(entry, os.getcwd())


def start_runners(count: int) -> list[Any]:
    return [MatchRunner.options(scheduling_strategy="SPREAD").remote(os.getcwd()) for _ in range(count)]
