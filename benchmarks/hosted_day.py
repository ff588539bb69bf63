"""What one day of one hosted match costs the match runner's process: run by hand, prints JSON.
Not a test.

    python benchmarks/hosted_day.py [--days 200] [--matches 20] [--scenario price_war]

A match runner plays each match with hosted merchants in a market of its own, so every day of
such a match pays the market's day for that one match, and the morning's Observations of its
merchants (with each one's record of the day before) that go to their hosts. This times the
two on one core for two fixed-price merchants, per match-day, the merchants' own decisions
left out: `advance_us` (Market.advance) and `observations_us` (the view and both merchants'
Observations). Their sum, times a runner's matches, is what each day of the runner's loop
costs before any turn is waited for (docs/benchmarks.md, "The match loop redesigned").
"""

from __future__ import annotations

import argparse
import json
import time

from throughput import machine

from contestants.baselines import FixedPrice, FixedPriceParams
from market.engine import Market
from market.scenario import load_scenario


def hosted_day(scenario_name: str, days: int, matches: int) -> dict:
    scenario = load_scenario(scenario_name)
    advancing = observing = 0.0
    played = 0
    for match in range(matches):
        market = Market(scenario, [("a", "b")], days)
        market.reset([match])
        merchants = [FixedPrice(FixedPriceParams()) for _ in range(2)]
        for seat, merchant in enumerate(merchants):
            merchant.reset(merchant="ab"[seat], scenario=scenario, seed=seat)
        while market.playing.any():
            started = time.perf_counter()
            observations = market.observations(market.view(), [0, 1])
            observed = time.perf_counter()
            decisions = {seat: merchants[seat].decide(o) for seat, o in enumerate(observations)}
            decided = time.perf_counter()
            market.advance(decisions=decisions)
            advancing += time.perf_counter() - decided
            observing += observed - started
            played += 1
    return {
        "scenario": scenario_name,
        "match_days": played,
        "advance_us": round(1e6 * advancing / played, 1),
        "observations_us": round(1e6 * observing / played, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=200)
    parser.add_argument("--matches", type=int, default=20)
    parser.add_argument("--scenario", default="price_war")
    args = parser.parse_args()
    report = {"machine": machine(), "hosted_day": hosted_day(args.scenario, args.days, args.matches)}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
