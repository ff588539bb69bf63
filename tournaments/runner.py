"""Play a tournament on Ray and record every finished match as it finishes.

Each finished match is written in its own transaction, so a run killed at any moment loses
only the matches in flight; `resume=True` continues the latest unfinished tournament made
from the same files and skips what it already holds. The Elo table is computed over
matches in schedule order, so it does not depend on which match happened to finish first.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import ray

from contestants.base import contestant_class
from results import store
from tournaments.actors import MatchWorker, start_host
from tournaments.config import Tournament
from tournaments.schedule import MatchSpec, schedule

POLL_SECONDS = 0.25


class RunObserver(Protocol):
    """What a front end is told while a tournament runs."""

    def started(self, tournament_id: int, matches: int, days: int, skipped: int) -> None: ...
    def advanced(self, matches_done: int, days_done: int) -> None: ...


class _Silent:
    def started(self, tournament_id: int, matches: int, days: int, skipped: int) -> None:
        pass

    def advanced(self, matches_done: int, days_done: int) -> None:
        pass


@dataclass(frozen=True)
class RunSummary:
    tournament_id: int
    played: int
    skipped: int
    resumed: bool


def run_tournament(
    tournament: Tournament,
    engine: Any,
    *,
    resume: bool = False,
    address: str | None = None,
    observer: RunObserver | None = None,
) -> RunSummary:
    observer = observer or _Silent()
    spec = tournament.spec
    plan = schedule(tournament)
    previous = store.find_resumable(engine, tournament.config_hash) if resume else None
    if previous is not None:
        tournament_id = previous.id
        done = store.finished_keys(engine, tournament_id)
    else:
        tournament_id = store.start_tournament(
            engine,
            name=spec.name,
            config_path=tournament.path,
            config_text=tournament.text,
            seed=spec.seed,
            contestants=[(c.name, c.kind, c.params) for c in spec.contestants],
            planned_matches=len(plan),
        )
        done = set()
    todo = [m for m in plan if m.key not in done]
    observer.started(tournament_id, len(plan), sum(m.days for m in plan), skipped=len(plan) - len(todo))
    if todo:
        done_days = sum(m.days for m in plan if m.key in done)
        with ray_session(address):
            _play(tournament, todo, engine, tournament_id, observer, done_matches=len(plan) - len(todo), done_days=done_days)
    store.finish_tournament(engine, tournament_id, "finished")
    return RunSummary(tournament_id, played=len(todo), skipped=len(plan) - len(todo), resumed=previous is not None)


def _play(
    tournament: Tournament,
    todo: list[MatchSpec],
    engine: Any,
    tournament_id: int,
    observer: RunObserver,
    done_matches: int,
    done_days: int,
) -> None:
    spec = tournament.spec
    entries = {c.name: c for c in spec.contestants}
    needed = {name for m in todo for name in m.seats}
    hosts = {
        name: start_host(entry)
        for name, entry in entries.items()
        if name in needed and (entry.isolate if entry.isolate is not None else contestant_class(entry.kind).needs_actor)
    }
    ray.get([host.ready.remote() for host in hosts.values()])
    cpus = int(ray.available_resources().get("CPU", 1))
    worker_count = max(1, min(spec.max_concurrent_matches, cpus, len(todo)))
    per_worker = -(-spec.max_concurrent_matches // worker_count)
    scenarios = {m.scenario: tournament.scenarios[m.scenario] for m in todo}
    workers = [
        MatchWorker.options(max_concurrency=per_worker + 1).remote(scenarios, entries, spec.seed, spec.decision_timeout_s)
        for _ in range(worker_count)
    ]
    load = [0] * worker_count
    in_flight: dict[Any, int] = {}
    queue: Iterator[MatchSpec] = iter(todo)

    def submit() -> bool:
        match = next(queue, None)
        if match is None:
            return False
        w = load.index(min(load))
        load[w] += 1
        in_flight[workers[w].play.remote(match, {n: hosts[n] for n in match.seats if n in hosts})] = w
        return True

    while len(in_flight) < spec.max_concurrent_matches and submit():
        pass
    try:
        while in_flight:
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=POLL_SECONDS)
            for ref in ready:
                load[in_flight.pop(ref)] -= 1
                store.save_match(engine, tournament_id, ray.get(ref))
                done_matches += 1
                submit()
            observer.advanced(done_matches, done_days + sum(ray.get([w.progress.remote() for w in workers])))
    finally:
        for actor in [*workers, *hosts.values()]:
            ray.kill(actor)


@contextmanager
def ray_session(address: str | None) -> Iterator[None]:
    """Join the cluster at `address` (or RAY_ADDRESS), or start a local one for this run."""
    if ray.is_initialized():
        yield
        return
    ray.init(
        address=address or os.environ.get("RAY_ADDRESS") or None,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.ERROR,
        configure_logging=True,
    )
    try:
        yield
    finally:
        ray.shutdown()
