"""How long the viewer's pages take on a big record: run by hand, prints JSON. Not a test.

    python benchmarks/viewer_pages.py                       # builds the record once (minutes)
    python benchmarks/viewer_pages.py --db /tmp/big.db      # another record, or the same again

The record holds two tournaments: one of --matches matches (two seats each, 30 days, twelve
contestants drawn by a seeded generator, prices and ranks drawn too) and one match of an agent
that worked a year of days at --steps steps a day (benchmarks/agent_year.py's scripted agent
against a fixed-price rival: every step kept in its transcript). It is built on the first run
and kept at --db. The viewer then serves it on loopback (uvicorn, in a thread) and each page is
fetched --repeat times over HTTP; the JSON gives each page's fastest and slowest time in
seconds and its size. The leaderboard is computed on a tournament page's first load and kept
until the record changes: the first load is reported apart.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks"), str(ROOT)]

from agent_year import script  # noqa: E402
from conftest import day_record  # noqa: E402
from fakes.agents import agent  # noqa: E402
from fakes.openai_api import FakeOpenAI  # noqa: E402

from contestants.kinds import create  # noqa: E402
from contestants.llm.merchant import LLMMerchant  # noqa: E402
from market.engine import Market  # noqa: E402
from market.scenario import load_scenario  # noqa: E402
from results.recording import save_matches  # noqa: E402
from results.records import FinishedMatch, MerchantResult, ModelCallRecord, TranscriptRecord  # noqa: E402
from results.storage.db import engine_for  # noqa: E402
from results.storage.store import start_tournament  # noqa: E402
from viewer.app import InThread, open_for_reading  # noqa: E402

CONTESTANTS = [f"contestant_{n:02d}" for n in range(12)]
DAYS = 30
BATCH = 500


def synthetic(rng: np.random.Generator, index: int) -> FinishedMatch:
    """A two-seat match of 30 days whose prices wander and whose better seat wins."""
    names = rng.choice(CONTESTANTS, size=2, replace=False).tolist()
    paths = 10 + np.cumsum(rng.normal(0, 0.3, size=(2, DAYS)), axis=1)
    sold = rng.poisson(20, size=(2, DAYS)).astype(float)
    worth = 2000 + np.cumsum(sold * (paths - 6), axis=1)
    ranks = [1, 2] if worth[0, -1] >= worth[1, -1] else [2, 1]
    days = [
        day_record(
            merchant=f"m{s}",
            day=d + 1,
            prices={"widget": float(paths[s, d])},
            units_sold={"widget": float(sold[s, d])},
            cash_end=float(worth[s, d]),
            net_worth=float(worth[s, d]),
        )
        for d in range(DAYS)
        for s in range(2)
    ]
    return FinishedMatch(
        key=f"bench/{index}",
        index=index,
        scenario="price_war",
        seed=index,
        days=DAYS,
        wall_seconds=1.0,
        merchants=[
            MerchantResult(
                merchant=f"m{s}",
                contestant=names[s],
                final_cash=float(worth[s, -1]),
                net_worth=float(worth[s, -1]),
                profit=float(worth[s, -1] - 2000),
                rank=ranks[s],
                market_share=float(sold[s].sum() / sold.sum()),
                bankrupt_day=None,
                faults=0,
                rejected_operations=0,
            )
            for s in range(2)
        ],
        days_played=days,
        faults=[],
    )


def agent_year(days: int, steps: int) -> FinishedMatch:
    """benchmarks/agent_year.py's year, as a stored match with every step."""
    scenario = load_scenario("price_war")
    with FakeOpenAI() as fake:
        os.environ["ARENA_BENCHMARK_KEY"] = str(fake.api_key)
        fake.answer = agent(script(steps))
        merchant = create(
            "llm",
            {
                "model": "openai/gpt-4.1-mini",
                "mode": "agent",
                "max_steps": steps,
                "context_tokens": 8_000,
                "base_url": fake.base_url,
                "api_key_env": "ARENA_BENCHMARK_KEY",
                "no_cache": True,
            },
        )
        assert isinstance(merchant, LLMMerchant)
        market = Market(scenario, [["agent", "rival"]], days=days)
        market.reset([1])
        merchant.reset(merchant="agent", scenario=scenario, seed=1)
        rival = create("fixed_price", {})
        rival.reset(merchant="rival", scenario=scenario, seed=2)
        while market.playing.any():
            agent_sees, rival_sees = market.observations(market.view(), [0, 1])
            market.advance(decisions={0: merchant.decide(agent_sees), 1: rival.decide(rival_sees)})
    log = market.logs[0].build()
    worth = {m: float(log.scalar("net_worth")[log.rows_of(m)][-1]) for m in ("agent", "rival")}
    return FinishedMatch(
        key="agent/year",
        index=0,
        scenario="price_war",
        seed=1,
        days=days,
        wall_seconds=1.0,
        merchants=[
            MerchantResult(
                merchant=m,
                contestant=m,
                final_cash=worth[m],
                net_worth=worth[m],
                profit=0.0,
                rank=1 + (worth[m] < max(worth.values())),
                market_share=0.5,
                bankrupt_day=None,
                faults=0,
                rejected_operations=0,
            )
            for m in ("agent", "rival")
        ],
        days_played=log,
        faults=[],
        calls=[
            ModelCallRecord(merchant="agent", contestant="agent", **c.model_dump()) for c in merchant.calls()
        ],
        transcript=[TranscriptRecord(merchant="agent", **s.model_dump()) for s in merchant.transcript()],
    )


def build(url: str, matches: int, days: int, steps: int) -> None:
    engine = engine_for(url)
    many = start_tournament(
        engine,
        name="many",
        config_path="many.yaml",
        config_text="name: many\n",
        config_hash="many",
        seed=1,
        contestants=[(name, "rule", {}) for name in CONTESTANTS],
        planned_matches=matches,
    )
    rng = np.random.default_rng(1)
    for first in range(0, matches, BATCH):
        batch = [(synthetic(rng, i), None) for i in range(first, min(first + BATCH, matches))]
        save_matches(engine, many, batch)
        print(f"stored {first + len(batch)} of {matches}", file=sys.stderr)
    year = start_tournament(
        engine,
        name="agent year",
        config_path="year.yaml",
        config_text="name: agent year\n",
        config_hash="year",
        seed=1,
        contestants=[("agent", "llm", {}), ("rival", "fixed_price", {})],
        planned_matches=1,
    )
    save_matches(engine, year, [(agent_year(days, steps), None)])
    engine.dispose()


def fetch(url: str) -> tuple[float, int]:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as answer:
        size = len(answer.read())
        assert answer.status == 200, url
    return time.perf_counter() - start, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="/tmp/arena-viewer-benchmark.db")
    parser.add_argument("--matches", type=int, default=10_000)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    url = f"sqlite:///{args.db}"
    if not Path(args.db).exists():
        start = time.perf_counter()
        build(url, args.matches, args.days, args.steps)
        print(f"built {args.db} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    engine = open_for_reading(url)
    serving = InThread(engine)
    pages = {
        "tournaments": "/",
        "tournament (its leaderboard)": "/tournaments/1",
        "tournament, a page of its matches halfway": f"/tournaments/1?page={args.matches // 100 + 1}",
        "match (30 days)": f"/matches/{args.matches // 2}",
        "match (a year of an agent)": f"/matches/{args.matches + 1}",
        "day of the agent (its steps)": f"/matches/{args.matches + 1}/days/{args.days // 2}",
        "chart data (CSV)": f"/matches/{args.matches + 1}/charts/1.csv",
        "progress": "/tournaments/1/progress.json",
        "changes": "/changes",
    }
    results = {}
    try:
        first, _ = fetch(serving.address + pages["tournament (its leaderboard)"])
        results["tournament, first load (computes the leaderboard)"] = {"seconds": round(first, 3)}
        for name, path in pages.items():
            times, size = zip(*(fetch(serving.address + path) for _ in range(args.repeat)), strict=True)
            results[name] = {
                "fastest": round(min(times), 3),
                "slowest": round(max(times), 3),
                "bytes": size[0],
            }
    finally:
        serving.stop()
        engine.dispose()
    machine = {"processor": platform.processor() or platform.machine(), "cpus": os.cpu_count()}
    print(json.dumps({"machine": machine, "matches": args.matches, "pages": results}, indent=2))


if __name__ == "__main__":
    main()
