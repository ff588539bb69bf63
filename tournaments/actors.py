"""The Ray actors a tournament runs on.

ContestantHost: one process per contestant that needs isolation (a model, slowness, or a
risk of crashing). It holds that contestant's state for every match it is in, keyed by
(match key, merchant), and serves the matches' calls on a pool of threads, so one slow
contestant answers many matches at once. Ray restarts it if its process dies.

MatchWorker: an asyncio actor that plays many matches at once. Matches of instant baselines
run straight through without a Ray call per day; matches with hosted contestants await
their answers, letting the worker's other matches proceed meanwhile.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import ray

from contestants.base import Contestant, RecallProbe, Usage, create
from market.scenario import Scenario
from market.types import Observation
from results.records import FinishedMatch
from tournaments.config import ContestantEntry
from tournaments.match import Match
from tournaments.schedule import MatchSpec

HOST_THREADS = 64


@ray.remote(num_cpus=0, max_restarts=-1)
class ContestantHost:
    def __init__(self, entry: ContestantEntry):
        self.entry = entry
        self.instances: dict[tuple[str, str], Contestant] = {}

    def ready(self) -> bool:
        return True

    def reset(self, match_key: str, merchant: str, scenario: Scenario, seed: int) -> None:
        contestant = create(self.entry.kind, self.entry.params)
        contestant.reset(merchant=merchant, scenario=scenario, rng=np.random.default_rng(seed))
        self.instances[(match_key, merchant)] = contestant

    def decide(self, match_key: str, merchant: str, observation: Observation) -> Any:
        return self.instances[(match_key, merchant)].decide(observation)

    def recall(self, match_key: str, merchant: str, probe: RecallProbe) -> float | None:
        return self.instances[(match_key, merchant)].recall(probe)

    def finish(self, match_key: str, merchant: str) -> Usage:
        contestant = self.instances.pop((match_key, merchant), None)
        return contestant.usage() if contestant is not None else Usage()


@ray.remote(num_cpus=1)
class MatchWorker:
    def __init__(self, scenarios: dict[str, Scenario], entries: dict[str, ContestantEntry], tournament_seed: int, timeout_s: float):
        self.scenarios, self.entries = scenarios, entries
        self.tournament_seed, self.timeout_s = tournament_seed, timeout_s
        self.days_played = 0

    async def play(self, spec: MatchSpec, hosts: dict[str, Any]) -> FinishedMatch:
        match = Match(spec, self.scenarios[spec.scenario], self.tournament_seed, self.entries, hosts, self.timeout_s)
        return await match.play(on_day=self._count_day)

    def _count_day(self) -> None:
        self.days_played += 1

    async def progress(self) -> int:
        """Days played by this worker so far, across all its matches."""
        return self.days_played


def start_host(entry: ContestantEntry) -> Any:
    return ContestantHost.options(max_concurrency=HOST_THREADS, name=None).remote(entry)
