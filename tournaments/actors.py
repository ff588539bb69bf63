"""ContestantHost: the Ray actor of a contestant that needs isolation.

One process per such contestant (it holds a model, is slow, or may crash its process). It
keeps that contestant's state for every match it is in, keyed by (match key, merchant), and
serves the matches' calls on a pool of threads, so one slow contestant answers many matches
at once. Ray restarts it if its process dies; the match then resets its state.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import ray

from contestants.base import Contestant, ModelCall, RecallProbe, RunOptions, create
from market.scenario import Scenario
from market.types import Observation
from tournaments.config import ContestantEntry

HOST_THREADS = 64


@ray.remote(num_cpus=0, max_restarts=-1)
class ContestantHost:
    def __init__(self, entry: ContestantEntry, working_dir: str):
        # Relative paths in a contestant's settings (a response cache, a model file) mean the
        # folder `arena run` was started in, not wherever Ray starts its workers (with `uv run`
        # that is a per-session copy of the project). Skipped on a node that lacks the folder.
        if os.path.isdir(working_dir):
            os.chdir(working_dir)
        self.entry = entry
        self.instances: dict[tuple[str, str], Contestant] = {}

    def ready(self) -> bool:
        return True

    def reset(self, match_key: str, merchant: str, scenario: Scenario, seed: int, options: RunOptions) -> None:
        contestant = create(self.entry.kind, self.entry.params, options)
        contestant.reset(merchant=merchant, scenario=scenario, rng=np.random.default_rng(seed))
        self.instances[(match_key, merchant)] = contestant

    def decide(self, match_key: str, merchant: str, observation: Observation) -> Any:
        return self.instances[(match_key, merchant)].decide(observation)

    def recall(self, match_key: str, merchant: str, probe: RecallProbe) -> float | None:
        return self.instances[(match_key, merchant)].recall(probe)

    def finish(self, match_key: str, merchant: str) -> list[ModelCall]:
        """Forget the match; hand back the model calls made in it."""
        contestant = self.instances.pop((match_key, merchant), None)
        return contestant.calls() if contestant is not None else []


def start_host(entry: ContestantEntry) -> Any:
    return ContestantHost.options(max_concurrency=HOST_THREADS).remote(entry, os.getcwd())
