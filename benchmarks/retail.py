"""What the retail world costs a market day: run by hand, prints JSON. Not a test.

    python benchmarks/retail.py             # about two minutes
    python benchmarks/retail.py --runs 5

Plays --matches matches side by side in one market (as an instant runner plays them), each
of the same rule merchants (reorder_point, undercut and cost_plus restocking in days of
expected sales, and best_response), on retail_quarter (every part of the retail world on)
and on price_war (none on), each for its scenario's days, and reports per scenario the
microseconds per merchant-day, the best of --runs runs, and the ratio of the two, which
issue 31 wants at most 2, measured two ways:
- `market_and_rules`: the market and the rules alone (Market.advance and RulePlay.decide);
- `whole_match`: the matches as a tournament's instant task plays them
  (tournaments.match.play_here: the same, plus the day logs, scoring and packing for
  storage; no Ray, no database).
Runs alternate between the scenarios, so a drift of the machine's speed falls on both.
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
from results.records import FinishedMatch
from tournaments.config import Tournament, TournamentSpec
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_tournament
from tournaments.schedule import schedule

KINDS = (
    ("reorder_point", {"reorder_days": 3, "target_days": 8}),
    ("undercut", {"reorder_days": 3, "target_days": 8}),
    ("cost_plus", {"reorder_days": 3, "target_days": 8}),
    ("best_response", {}),
)


def one_run(name: str, matches: int) -> float:
    """Seconds per merchant-day played of `matches` matches of KINDS side by side."""
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
    played = 0  # merchant-days: a bankrupt merchant stops playing
    start = time.perf_counter()
    while market.playing.any():
        played += int(market.playing.sum())
        decided, rows, _ = play.decide(market.view())
        market.advance(decided, rows)
    return (time.perf_counter() - start) / played


def whole_matches(name: str, matches: int) -> float:
    """Seconds per merchant-day played of `matches` matches of KINDS played as one instant group."""
    spec = TournamentSpec.model_validate(
        {
            "name": "retail-benchmark",
            "format": "free_for_all",
            "scenarios": [name],
            "repetitions": matches,
            "contestants": [{"name": kind, "kind": kind, "params": params} for kind, params in KINDS],
        }
    )
    scenario = load_scenario(name)
    tournament = Tournament(spec=spec, scenarios={name: scenario}, path="<benchmark>", text="")
    plans, rules = plan_tournament(spec), MatchRules.of(spec, scenarios=tournament.scenarios)
    start = time.perf_counter()
    finished = play_here([Match(match, scenario, rules, plans) for match in schedule(tournament)])
    seconds = time.perf_counter() - start
    played = 0  # merchant-days: a bankrupt merchant played to the day it went bankrupt
    for match in finished:
        assert isinstance(match, FinishedMatch), "a match stopped"
        played += sum(merchant.bankrupt_day or match.days for merchant in match.merchants)
    return seconds / played


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    names = ("retail_quarter", "price_war")
    measures = {"market_and_rules": one_run, "whole_match": whole_matches}
    best = {measure: dict.fromkeys(names, float("inf")) for measure in measures}
    for _ in range(args.runs):
        for measure, run in measures.items():
            for name in names:  # alternated
                best[measure][name] = min(best[measure][name], run(name, args.matches))
    print(
        json.dumps(
            {
                "machine": {
                    "processor": platform.processor() or platform.machine(),
                    "python": platform.python_version(),
                },
                "matches_side_by_side": args.matches,
                "merchants_per_match": len(KINDS),
                **{
                    measure: {
                        "us_per_merchant_day": {
                            name: round(seconds * 1e6, 1) for name, seconds in by.items()
                        },
                        "retail_over_price_war": round(by["retail_quarter"] / by["price_war"], 2),
                    }
                    for measure, by in best.items()
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
