"""Matches made by hand, each merchant given its rank (no tournament is played), for the tests
of the commands that read the record."""

from __future__ import annotations

from results.records import FinishedMatch, MerchantResult


def finished(key: str, index: int, scenario: str, ranks: dict[str, int]) -> FinishedMatch:
    """A match of three days in which each contestant of `ranks` takes its rank: the better the
    rank, the higher the profit and net worth."""
    return FinishedMatch(
        key=key,
        index=index,
        scenario=scenario,
        seed=index,
        days=3,
        wall_seconds=0.1,
        merchants=[
            MerchantResult(
                merchant=f"m{seat}",
                contestant=name,
                final_cash=0.0,
                net_worth=100.0 - rank,
                profit=10.0 * (3 - rank),
                rank=rank,
                market_share=0.5,
                bankrupt_day=None,
                faults=0,
                rejected_operations=0,
            )
            for seat, (name, rank) in enumerate(ranks.items())
        ],
        days_played=[],
        faults=[],
    )
