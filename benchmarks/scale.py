"""How arena scales: run by hand, prints JSON. Not a test. Linux only (it reads /proc).

    python benchmarks/scale.py                       # everything, about 5 minutes
    python benchmarks/scale.py --only day            # (a), 20 s
    python benchmarks/scale.py --only matches        # (b), 1,000 then 10,000 matches: under a minute
    python benchmarks/scale.py --only hosts          # (c), 64 hosted contestants: 2-3 minutes

(a) day: one market day of 1,000 merchants and 100,000 customers (price_war with
    base_demand 100,000; every merchant starts with 2,000 units, more than it sells in the
    days measured, and does nothing), each figure the median over --days days from the start
    in a market of its own, the best of --runs runs:
    - allocation_ms: the stochastic logit allocation alone (market.demand.allocate_markets
      on the day's utilities and stock, with a generator of its own);
    - advance_ms: Market.advance, the whole market day;
    - step_ms: MarketEnv.step, the PettingZoo step, nobody reading the observations;
    - step_reading_all_ms: MarketEnv.step, then every merchant's Observation and record read.
(b) matches: a free-for-all tournament of two rule merchants (fixed_price, undercut) on
    price_war, 3 days a match, --matches of them (1,000 and 10,000) through run_tournament
    into SQLite, 64 at once; each count in a fresh process with a Ray of its own, as `arena
    run` plays it. Peak RSS (VmHWM) of the driver when the last match is recorded and after
    the table is written, and of every Ray worker of the run, read before Ray shuts down.
(c) hosts: throughput.py's parallel efficiency of a round robin of --hosts `latency`
    merchants (--latency 0.2 s a decision) in pairs, each contestant in a ContestantHost
    actor of its own, --at-once matches at once (64 hosts: 2,016 matches, 64 at once),
    --host-days days a match (5); with each host's memory (RSS, its peak, and PSS and USS
    from /proc/PID/smaps_rollup) when the last match is recorded, and the CPU time each host
    and match runner used to start (until all actors were ready) and in play.

The parallel efficiency at the benchmark's own shape is throughput.py's (--only efficiency).
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import os
import tempfile
import time
from collections.abc import Callable

import numpy as np
from throughput import Clock, local_ray, machine, parallel_efficiency, tournament

from market.demand import allocate_markets, utilities
from market.env import MarketEnv
from market.scenario import Scenario, load_scenario
from results.storage.db import engine_for
from tournaments.run import run_tournament

CITY_MERCHANTS = 1_000
CITY_CUSTOMERS = 100_000
MEMORY_COUNTS = (1_000, 10_000)
HOSTS = 64
RAY_AGENTS = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")  # Ray's own processes, not the run's workers


# --- (a) one market day ----------------------------------------------------------------------


def city(days: int) -> Scenario:
    """price_war with CITY_CUSTOMERS customers a day, and stock for more days than `days`."""
    spec = load_scenario("price_war").model_dump()
    (product,) = spec["products"]
    product.update(base_demand=CITY_CUSTOMERS, initial_stock=2_000)
    return Scenario.model_validate({**spec, "days": days + 1})


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def market_day(days: int) -> dict:
    """The day's figures of one run, each from a market of its own playing `days` days from
    the start (one after another, so that no market's garbage is collected in another's day)."""
    scenario = city(days)
    product, outside = scenario.products[0], scenario.choice.no_purchase_utility
    rng = np.random.default_rng(2)

    def allocation(env: MarketEnv) -> float:
        market = env.market
        utility = utilities(
            scenario.choice, market.prices, market.reference, market.reputation[:, None], market.quality
        )[None, :, 0]
        customers = np.array([float(rng.poisson(product.base_demand))])
        seconds = timed(
            lambda: allocate_markets(customers, utility, outside, market.inventory[None, :, 0], [rng])
        )
        market.advance(decisions={})
        return seconds

    def step_reading_all(env: MarketEnv) -> float:
        def step_and_read() -> None:
            observations, _, _, _, infos = env.step({})
            for agent in env.agents:
                observations[agent], infos[agent]["record"]

        return timed(step_and_read)

    figures: dict[str, Callable[[MarketEnv], float]] = {
        "allocation_ms": allocation,
        "advance_ms": lambda env: timed(lambda: env.market.advance(decisions={})),
        "step_ms": lambda env: timed(lambda: env.step({})),
        "step_reading_all_ms": step_reading_all,
    }
    result = {}
    for name, day in figures.items():
        env = MarketEnv(scenario, CITY_MERCHANTS)
        env.reset(seed=1)
        gc.collect()
        result[name] = round(1000 * float(np.median([day(env) for _ in range(days)])), 3)
    return result


def best_day(runs: int, days: int) -> dict:
    """Each figure the lowest of `runs` runs (the machine is shared: slower runs measure the neighbours)."""
    results = [market_day(days) for _ in range(runs)]
    best = {name: min(r[name] for r in results) for name in results[0]}
    return {
        "merchants": CITY_MERCHANTS,
        "customers": CITY_CUSTOMERS,
        "days": days,
        "runs": runs,
        **best,
        "all_runs": results,
    }


# --- memory of processes, from /proc -----------------------------------------------------------


def memory_mb(pid: int | str = "self") -> dict:
    """A process's resident memory now (rss), its peak (hwm: VmHWM), and where the kernel
    tells, its proportional (pss) and unique (uss: private pages) shares, in MiB."""
    fields: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[{"VmRSS": "rss", "VmHWM": "hwm"}[name]] = int(value.split()[0]) / 1024
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            kb = {
                line.split(":")[0]: int(line.split()[1])
                for line in rollup
                if line.split(":")[0] in ("Pss", "Private_Clean", "Private_Dirty")
            }
        fields["pss"], fields["uss"] = kb["Pss"] / 1024, (kb["Private_Clean"] + kb["Private_Dirty"]) / 1024
    except (OSError, KeyError):
        pass
    return {name: round(value, 1) for name, value in fields.items()}


def workers() -> list[tuple[int, str]]:
    """(pid, title) of this process's Ray workers: its descendants whose title Ray set to
    "ray::" and what they run (ray::IDLE, ray::ContestantHost, ...), Ray's agents left out.
    Only a Ray this process started has its processes among its descendants."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except OSError:  # gone meanwhile
                continue
    found, frontier = [], [os.getpid()]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    titled = []
    for pid in sorted(found):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                title = cmdline.read().split(b"\0")[0].decode(errors="replace").strip()
        except OSError:
            continue
        if title.startswith("ray::") and title not in RAY_AGENTS:
            titled.append((pid, title))
    return titled


def cpu_seconds(pid: int) -> float:
    """The CPU time a process has used so far (user and system)."""
    with open(f"/proc/{pid}/stat") as stat:
        utime, stime = stat.read().rsplit(")", 1)[1].split()[11:13]
    return (int(utime) + int(stime)) / os.sysconf("SC_CLK_TCK")


class Peaks(Clock):
    """A Clock that notes the CPU time of every Ray worker when play starts (all actors
    ready), and when the last match is recorded (the run's workers and actors still up) the
    driver's memory and every worker's, with the CPU time each used in play."""

    def started(self, tournament_id: int, matches: int, days: int, skipped: int) -> None:
        super().started(tournament_id, matches, days, skipped)
        self.ready_cpu = {pid: cpu_seconds(pid) for pid, _ in workers()}

    def advanced(self, matches_done: int, days_done: int) -> None:
        super().advanced(matches_done, days_done)
        if hasattr(self, "end") and not hasattr(self, "workers"):
            self.driver = memory_mb()
            self.workers = [
                {
                    "pid": pid,
                    "title": title,
                    **memory_mb(pid),
                    "cpu_to_ready_s": self.ready_cpu.get(pid),
                    "cpu_in_play_s": round(cpu_seconds(pid) - self.ready_cpu.get(pid, 0.0), 2),
                }
                for pid, title in workers()
            ]


# --- (b) many instant matches ---------------------------------------------------------------------


def tournament_memory(matches: int) -> dict:
    """One tournament of `matches` instant matches in this process (see the module's (b))."""
    spec = {
        "name": "many",
        "format": "free_for_all",
        "repetitions": matches,
        "days": 3,
        "max_concurrent_matches": 64,
        "contestants": [{"name": "fixed", "kind": "fixed_price"}, {"name": "undercut", "kind": "undercut"}],
    }
    t = tournament(spec, ["price_war"])
    with tempfile.TemporaryDirectory() as folder, local_ray():
        engine = engine_for(f"sqlite:///{folder}/many.db")
        before = memory_mb()
        clock = Peaks()
        started = time.perf_counter()
        run_tournament(t, engine, observer=clock)
        seconds = time.perf_counter() - started
        after = memory_mb()
    return {
        "matches": matches,
        "seconds": round(seconds, 1),
        "play_s": round(clock.end - clock.start, 1),
        "driver_rss_before_mb": before["rss"],
        "driver_peak_in_play_mb": clock.driver["hwm"],
        "driver_peak_mb": after["hwm"],
        "workers": [{key: w[key] for key in ("title", "hwm", "rss")} for w in clock.workers],
    }


def in_fresh_process(measure: Callable, *args) -> dict:
    """`measure(*args)` in a new Python process, so that its peak memory is its own."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        outcome, value = pool.apply(_outcome, (measure, *args))
    if outcome == "failed":
        raise SystemExit(f"{measure.__name__}{args}: {value}")
    return value


def _outcome(measure: Callable, *args) -> tuple[str, object]:
    """("done", what measure(*args) gave), or ("failed", why) as text: not every exception
    pickles back. What the process and its children print goes to stderr (Ray warns on
    stdout), so that stdout is the report alone."""
    os.dup2(2, 1)
    try:
        return "done", measure(*args)
    except Exception as exc:
        return "failed", f"{type(exc).__name__}: {exc}"


# --- (c) many hosted merchants ------------------------------------------------------------------


def hosted(hosts: int, at_once: int, days: int, latency: float) -> dict:
    """throughput.py's parallel efficiency of a round robin of `hosts` latency merchants in
    pairs, `at_once` matches at once, with each host's memory and CPU time, and the runners'."""
    clock = Peaks()
    with tempfile.TemporaryDirectory() as folder, local_ray():
        figures = parallel_efficiency(
            folder, latency=latency, days=days, contestants=hosts, at_once=at_once, clock=clock
        )
    del figures[
        "outside_matches_s"
    ]  # wall - rounds x longest: for matches played all at once, not in rounds as here

    def spread(values: list[float]) -> dict:
        return {
            "min": min(values),
            "median": round(float(np.median(values)), 2),
            "max": max(values),
            "sum": round(sum(values), 1),
        }

    def summary(title: str) -> dict:
        chosen = [w for w in clock.workers if w["title"].startswith(title)]
        fields = ("rss", "hwm", "pss", "uss", "cpu_to_ready_s", "cpu_in_play_s")
        return {
            "count": len(chosen),
            **{
                key: spread([w[key] for w in chosen])
                for key in fields
                if chosen and all(w.get(key) is not None for w in chosen)
            },
        }

    return {
        **figures,
        "hosts_mb_and_cpu_s": summary("ray::ContestantHost"),
        "runners_mb_and_cpu_s": summary("ray::MatchRunner"),
        "driver_rss_mb": clock.driver["rss"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["day", "matches", "hosts"])
    parser.add_argument("--runs", type=int, default=3, help="(a) best of this many runs for each figure")
    parser.add_argument("--days", type=int, default=20, help="(a) market days of each run")
    parser.add_argument(
        "--matches", type=int, nargs="+", default=list(MEMORY_COUNTS), help="(b) the tournaments' sizes"
    )
    parser.add_argument("--hosts", type=int, default=HOSTS, help="(c) hosted merchants")
    parser.add_argument("--at-once", type=int, default=HOSTS, help="(c) matches at once")
    parser.add_argument("--host-days", type=int, default=5, help="(c) days a match")
    parser.add_argument("--latency", type=float, default=0.2, help="(c) seconds a decision takes")
    args = parser.parse_args()
    report: dict = {"machine": machine()}
    if args.only in (None, "day"):
        report["day"] = best_day(args.runs, args.days)
    if args.only in (None, "matches"):
        report["matches"] = [in_fresh_process(tournament_memory, n) for n in args.matches]
    if args.only in (None, "hosts"):
        report["hosts"] = in_fresh_process(hosted, args.hosts, args.at_once, args.host_days, args.latency)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
