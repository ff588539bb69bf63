"""What the retail world costs a market day: run by hand, prints JSON. Not a test.

    python benchmarks/retail.py             # about a minute
    python benchmarks/retail.py --runs 5

Plays --matches matches side by side in one market (as an instant runner plays them), each
of the same rule merchants (reorder_point, undercut and cost_plus restocking in days of
expected sales, and best_response), on retail_quarter (every part of the retail world on)
and on price_war (none on), each for its scenario's days, and reports per scenario the
microseconds per merchant-day of the market and the rules (Market.advance and
RulePlay.decide, nothing stored), the best of --runs runs, and their ratio, which issue 31
wants at most 2. Runs alternate between the scenarios, so a drift of the machine's speed
falls on both.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

from contestants.baselines import RulePlay
from contestants.kinds import create
from market.engine import Market
from market.scenario import load_scenario

KINDS = (
    ("reorder_point", {"reorder_days": 3, "target_days": 8}),
    ("undercut", {"reorder_days": 3, "target_days": 8}),
    ("cost_plus", {"reorder_days": 3, "target_days": 8}),
    ("best_response", {}),
)


def one_run(name: str, matches: int) -> float:
    """Seconds per merchant-day of `matches` matches of KINDS side by side."""
    scenario = load_scenario(name)
    rosters = [[f"{kind}-{b}" for kind, _ in KINDS] for b in range(matches)]
    market = Market(scenario, rosters)
    market.reset(list(range(matches)))
    merchants = []
    for roster in rosters:
        for (kind, params), merchant_name in zip(KINDS, roster):
            merchant = create(kind, params)
            merchant.reset(merchant=merchant_name, scenario=scenario, seed=0)
            merchants.append(merchant)
    play = RulePlay(merchants, np.arange(len(merchants)))
    start = time.perf_counter()
    while market.playing.any():
        decided, rows, _ = play.decide(market.view())
        market.advance(decided, rows)
    return (time.perf_counter() - start) / (len(merchants) * market.days)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    best = {"retail_quarter": float("inf"), "price_war": float("inf")}
    for _ in range(args.runs):
        for name in best:  # alternated
            best[name] = min(best[name], one_run(name, args.matches))
    print(
        json.dumps(
            {
                "machine": {
                    "processor": platform.processor() or platform.machine(),
                    "python": platform.python_version(),
                },
                "matches_side_by_side": args.matches,
                "merchants_per_match": len(KINDS),
                "us_per_merchant_day": {name: round(seconds * 1e6, 1) for name, seconds in best.items()},
                "retail_over_price_war": round(best["retail_quarter"] / best["price_war"], 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
