"""How fast arena plays: run by hand, prints JSON. Not a test.

    python benchmarks/throughput.py            # everything
    python benchmarks/throughput.py --only engine --runs 5

(a) parallel efficiency: a round robin of 8 `latency` merchants (each answer takes 0.2 s,
    each merchant in its own Ray actor) over 20 days, all 28 matches at once. The critical
    path is days x latency for each round of concurrent matches; efficiency = critical path /
    wall time of play (from all actors ready to the last match recorded), at most 1.0; with
    its parts: the per-day overhead inside a match, and the time outside the matches.
    (benchmarks/scale.py measures it with 64 such merchants.)
(b) throughput in merchant-days per second with instant baselines (fixed_price,
    reorder_point, undercut, cost_plus, random in turn), each figure the best of --runs:
    - market: the bare env.step loop, no agents (everyone does nothing), every observation read;
    - engine_one_core: whole matches (baseline decisions, market days, day records, scoring,
      metrics) in this process on one core, in the runner's groups played side by side;
    - tournament_ray_no_db: a free-for-all tournament of --merchants instant merchants per
      match (default 16), price_war and multi_product x 40 seeds, all 80 matches at once,
      its matches run as the runner runs them (Ray tasks on every core, each a group of
      matches played side by side) and fetched by the driver, nothing saved (the engine
      figure);
    - tournament_ray_sqlite: the same tournament through run_tournament, each match written
      to SQLite by the driver, from the start of play to the last match recorded.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Iterator

import ray

from market import parallel_env
from market.scenario import load_scenario
from results.records import MerchantResult
from results.storage.db import engine_for
from results.storage.store import list_matches, match_detail
from tests.doubles import LATENCY
from tournaments.cluster import cluster_cpus, init_ray
from tournaments.config import Tournament, TournamentSpec
from tournaments.instant import group_instant, play_instant_matches, unpickle_matches
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_tournament
from tournaments.run import run_tournament
from tournaments.schedule import schedule

# The rule baselines that answer in microseconds; best_response (a numerical search, about
# 0.14 ms a decision) is left out of the throughput figures.
INSTANT = ["fixed_price", "reorder_point", "undercut", "cost_plus", "random"]
HEADLINE_MERCHANTS = 16  # instant merchants per match in the tournament figures
TOURNAMENT_SEEDS = 40  # 80 matches: price_war and multi_product, 40 seeds each
AT_ONCE = 80  # max_concurrent_matches of the tournament figures: all 80 at once, in groups of 20 on 2 CPUs


def instant_merchants(n: int) -> list[dict]:
    return [{"name": f"{INSTANT[i % len(INSTANT)]}{i}", "kind": INSTANT[i % len(INSTANT)]} for i in range(n)]


def tournament(spec: dict, scenario_names: list[str]) -> Tournament:
    scenarios = {name: load_scenario(name) for name in scenario_names}
    return Tournament(
        spec=TournamentSpec.model_validate({**spec, "scenarios": scenario_names}),
        scenarios=scenarios,
        path="<benchmark>",
        text=json.dumps(spec),
    )


class Clock:
    """An observer that notes when play starts (actors ready) and when the last match is recorded."""

    def started(self, tournament_id: int, matches: int, days: int, skipped: int) -> None:
        self.start, self.matches = time.perf_counter(), matches

    def advanced(self, matches_done: int, days_done: int) -> None:
        if matches_done == self.matches and not hasattr(self, "end"):
            self.end = time.perf_counter()

    def lost(self, match_key: str, reason: str) -> None:
        pass  # a match played again (a node lost): its replay is in the figures


def parallel_efficiency(
    db_dir: str,
    latency: float = 0.2,
    days: int = 20,
    contestants: int = 8,
    at_once: int | None = None,
    clock: Clock | None = None,
) -> dict:
    """Efficiency and its parts, for a round robin of `contestants` latency merchants in pairs,
    `at_once` matches at once (default: all of them), timed by `clock`. A match's own wall time
    runs from its start to the end of its last day; what it adds to days x latency is the
    per-day overhead of the hosted path. The rest of the play time is outside the matches:
    starting them, and recording them."""
    spec = {
        "name": "efficiency",
        "days": days,
        "max_concurrent_matches": at_once or contestants * (contestants - 1) // 2,
        "decision_timeout_s": 30,
        "contestants": [
            {"name": f"slow{i}", "kind": LATENCY, "params": {"latency_s": latency}}
            for i in range(contestants)
        ],
    }
    t = tournament(spec, ["price_war"])
    matches = len(schedule(t))
    engine = engine_for(f"sqlite:///{db_dir}/efficiency-{time.monotonic_ns()}.db")
    clock = clock or Clock()
    started = time.perf_counter()
    summary = run_tournament(t, engine, observer=clock)
    rounds = -(-matches // spec["max_concurrent_matches"])
    critical = rounds * days * latency
    wall = clock.end - clock.start
    walls = [m.wall_seconds for m in list_matches(engine, summary.tournament_id)]
    longest = max(walls)
    return {
        "matches": matches,
        "concurrent": spec["max_concurrent_matches"],
        "critical_path_s": critical,
        "play_wall_s": round(wall, 3),
        "efficiency": round(critical / wall, 3),
        "longest_match_s": round(longest, 3),
        "mean_match_s": round(sum(walls) / len(walls), 3),
        "overhead_per_match_day_ms": round(1000 * (longest - days * latency) / days, 1),
        "outside_matches_s": round(wall - rounds * longest, 3),
        "actor_startup_s": round(clock.start - started, 3),
    }


def market_only(merchants: int = 8, days: int = 3000) -> dict:
    env = parallel_env("logit_game", merchants, days=days)
    env.reset(seed=1)
    nothing = {a: None for a in env.agents}
    start = time.perf_counter()
    for _ in range(days):
        observations = env.step(nothing)[0]
        for agent in env.agents:  # every observation read, as agents would: each is made when read
            observations[agent]
    seconds = time.perf_counter() - start
    return {"merchants": merchants, "days": days, "merchant_days_per_s": round(merchants * days / seconds)}


def free_for_all(merchants: int, seeds: int) -> Tournament:
    """`merchants` instant baselines in one market, on price_war and multi_product, `seeds` times."""
    spec = {
        "name": "throughput",
        "format": "free_for_all",
        "repetitions": seeds,
        "max_concurrent_matches": AT_ONCE,
        "contestants": instant_merchants(merchants),
    }
    return tournament(spec, ["price_war", "multi_product"])


def played(days: int, results: list[MerchantResult]) -> int:
    """The merchant-days a match of `days` days played: a merchant that went bankrupt played
    to that day."""
    return sum(r.bankrupt_day or days for r in results)


def rules_of(t: Tournament) -> MatchRules:
    """The rules `run_tournament` plays the tournament's matches by (recall questions included)."""
    return MatchRules.of(t.spec, scenarios=t.scenarios)


def engine_in_process(merchants: int, seeds: int = 10) -> dict:
    """Whole matches one group after another in this process, grouped as the runner groups
    them on 2 CPUs (each group played side by side)."""
    t = free_for_all(merchants, seeds)
    plans = plan_tournament(t.spec)
    rules = rules_of(t)
    merchant_days = 0
    start = time.perf_counter()
    for group in group_instant(schedule(t), plans, t.spec.max_concurrent_matches, 2):
        finished = play_here([Match(match, t.scenarios[match.scenario], rules, plans) for match in group])
        merchant_days += sum(played(match.days, match.merchants) for match in finished)
    seconds = time.perf_counter() - start
    return {
        "merchants_per_match": merchants,
        "merchant_days": merchant_days,
        "merchant_days_per_s": round(merchant_days / seconds),
    }


def ray_without_db(merchants: int, seeds: int) -> dict:
    """The tournament's instant matches as the runner plays them (Ray tasks
    `play_instant_matches`, one per group of `group_instant`, all at once: the groups hold
    max_concurrent_matches between them), each result fetched to the driver, unpickled and dropped."""
    t = free_for_all(merchants, seeds)
    plans = plan_tournament(t.spec)
    rules = rules_of(t)
    plan = schedule(t)
    start = time.perf_counter()
    groups = group_instant(plan, plans, t.spec.max_concurrent_matches, cluster_cpus())
    merchant_days = 0
    for blob in ray.get(
        [play_instant_matches.remote(group, t.scenarios[group[0].scenario], rules, plans) for group in groups]
    ):
        merchant_days += sum(played(match.days, match.merchants) for match in unpickle_matches(blob))
    seconds = time.perf_counter() - start
    return {
        "merchants_per_match": merchants,
        "matches": len(plan),
        "groups": len(groups),
        "merchant_days": merchant_days,
        "seconds": round(seconds, 3),
        "merchant_days_per_s": round(merchant_days / seconds),
    }


def ray_with_db(db_dir: str, merchants: int, seeds: int) -> dict:
    """The same tournament through `run_tournament`: every match saved to SQLite by the driver,
    from the start of play to the last match recorded."""
    t = free_for_all(merchants, seeds)
    plan = schedule(t)
    clock = Clock()
    engine = engine_for(f"sqlite:///{db_dir}/throughput-{time.monotonic_ns()}.db")
    summary = run_tournament(t, engine, observer=clock)
    seconds = clock.end - clock.start
    merchant_days = sum(
        played(m.days, match_detail(engine, m.id).results)
        for m in list_matches(engine, summary.tournament_id)
    )
    return {
        "merchants_per_match": merchants,
        "matches": len(plan),
        "merchant_days": merchant_days,
        "seconds": round(seconds, 3),
        "merchant_days_per_s": round(merchant_days / seconds),
    }


def best_of(runs: int, measure, *args) -> dict:
    """The fastest of `runs` measurements (the machine is shared: slower runs measure the neighbours)."""
    results = [measure(*args) for _ in range(runs)]
    best = max(results, key=lambda r: r["merchant_days_per_s"])
    return {**best, "runs": runs, "all_merchant_days_per_s": [r["merchant_days_per_s"] for r in results]}


def machine() -> dict:
    """The machine, its processor named as `lscpu` names it."""
    with open("/proc/cpuinfo") as cpuinfo:
        model = next(
            (line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")),
            platform.machine(),
        )
    return {"cpus": os.cpu_count(), "processor": model, "python": platform.python_version()}


@contextlib.contextmanager
def local_ray() -> Iterator[float]:
    """A Ray of this process's own (its own temporary folder, which goes with it), for the
    length of the block; gives the seconds ray.init took."""
    folder = tempfile.mkdtemp(prefix="arena-ray-", dir="/tmp")  # short: Ray's sockets live in it
    started = time.perf_counter()
    init_ray(_temp_dir=folder)
    try:
        yield round(time.perf_counter() - started, 3)
    finally:
        ray.shutdown()
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["efficiency", "market", "engine", "tournament"])
    parser.add_argument(
        "--runs", type=int, default=3, help="best of this many runs for each throughput figure"
    )
    parser.add_argument(
        "--merchants",
        type=int,
        default=HEADLINE_MERCHANTS,
        help="instant merchants per match in the tournament figures",
    )
    args = parser.parse_args()
    runs, size = args.runs, args.merchants
    report: dict = {"machine": machine()}
    with tempfile.TemporaryDirectory() as db_dir:
        if args.only in (None, "market"):
            report["market"] = {f"{n}_merchants": best_of(runs, market_only, n) for n in (8, size)}
        if args.only in (None, "engine"):
            report["engine_one_core"] = {
                f"{n}_merchants": best_of(runs, engine_in_process, n) for n in (2, 8, size)
            }
        if args.only in (None, "efficiency", "tournament"):
            with local_ray() as init_seconds:
                report["ray_init_s"] = init_seconds
                if args.only in (None, "tournament"):
                    report["tournament_ray_no_db"] = best_of(runs, ray_without_db, size, TOURNAMENT_SEEDS)
                    report["tournament_ray_sqlite"] = best_of(
                        runs, ray_with_db, db_dir, size, TOURNAMENT_SEEDS
                    )
                if args.only in (None, "efficiency"):
                    report["parallel_efficiency"] = parallel_efficiency(db_dir)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
