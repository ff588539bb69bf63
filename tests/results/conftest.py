"""Factories for finished matches, and a fresh SQLite database per test."""

from __future__ import annotations

import functools

import pytest

from market.types import DayRecord, Rejection, RejectionCode
from results.records import Fault, FinishedMatch, MerchantResult
from results.storage.db import engine_for
from results.storage.store import start_tournament


def _day(day_record, merchant: str, day: int, cash_start: float = 1000.0) -> DayRecord:
    revenue = 120.0 + day
    cash_end = cash_start + revenue - 80.0 - 5.0 - 1.5 - 10.0
    return day_record(
        merchant=merchant,
        day=day,
        operations=[
            {"op": "set_price", "product": "tea", "price": 4.5},
            {"op": "order", "product": "tea", "quantity": 40},
        ],
        rejections=[
            Rejection(
                index=2,
                operation={"op": "fly"},
                reason="malformed operation: op: unknown",
                code=RejectionCode.MALFORMED_OPERATION,
            )
        ],
        prices={"tea": 4.5},
        first_choice={"tea": 30.0},
        units_sold={"tea": 28.0},
        lost_sales={"tea": 2.0},
        arrived={"tea": 40.0},
        ordered={"tea": 40.0},
        inventory={"tea": 12.0},
        in_transit={"tea": 40.0},
        unit_cost={"tea": 2.0},
        revenue=revenue,
        revenue_cash=revenue,
        purchases=80.0,
        advertising=5.0,
        holding=1.5,
        fixed=10.0,
        cash_start=cash_start,
        cash_end=cash_end,
        reputation=0.51,
        net_worth=cash_end + 104.0,
        plan={"tea": 5.0} if day == 1 else {},
    )  # collected, receivables 0 and not bankrupt: the factory's


def _match(
    day_record, key: str, index: int, ranks: dict[str, int], days: int = 3, faults: list[Fault] | None = None
) -> FinishedMatch:
    """A match whose seats m0, m1, ... are played by the contestants of `ranks`, in order."""
    seats = [(f"m{i}", contestant, rank) for i, (contestant, rank) in enumerate(ranks.items())]
    return FinishedMatch(
        key=key,
        index=index,
        scenario="corner-shop",
        seed=1000 + index,
        days=days,
        wall_seconds=1.25,
        merchants=[
            MerchantResult(
                merchant=seat,
                contestant=contestant,
                final_cash=900.0 + 10 * rank,
                net_worth=1000.0 - 10 * rank,
                profit=100.0 - 10 * rank,
                rank=rank,
                market_share=1 / len(seats),
                bankrupt_day=None,
                faults=0,
                rejected_operations=days,
            )
            for seat, contestant, rank in seats
        ],
        days_played=[_day(day_record, seat, day) for day in range(1, days + 1) for seat, _, _ in seats],
        faults=faults
        if faults is not None
        else [Fault(day=2, merchant="m0", kind="timeout", detail="no answer in 30 s")],
    )


@pytest.fixture(scope="session")  # plain functions: shareable by fixtures of any scope
def make_day(day_record):
    return functools.partial(_day, day_record)


@pytest.fixture(scope="session")
def make_match(day_record):
    return functools.partial(_match, day_record)


@pytest.fixture
def engine(tmp_path):
    engine = engine_for(f"sqlite:///{tmp_path / 'arena.db'}")
    yield engine
    engine.dispose()


@pytest.fixture
def tournament(engine) -> int:
    return start_tournament(
        engine,
        name="spring",
        config_path="tournaments/spring.yaml",
        config_text="name: spring\nseed: 7\n",
        config_hash="hash-spring",
        seed=7,
        contestants=[
            ("alpha", "rule", {"markup": 1.5}),
            ("beta", "llm", {"model": "x/y"}),
            ("gamma", "rule", {}),
        ],
        planned_matches=4,
    )
