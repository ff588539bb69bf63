"""Hand-built scenarios, observations and day records for contestant tests.

The builders are handed to tests as fixtures (`observe`, `record`) rather than imported, so
this conftest never clashes with another test folder's.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

from market.scenario import Product, Scenario
from market.types import DayRecord, EventNotice, Observation, ProductState, PublicMerchant

ME = "me"


def make_scenario(*products: Product, **fields: Any) -> Scenario:
    """A scenario with one product 'widget' (cost 10, reference price 20) unless products are given."""
    if not products:
        products = (
            Product(id="widget", unit_cost=10.0, reference_price=20.0, base_demand=50.0, lead_time=2),
        )
    return Scenario(name="test", products=products, **fields)


@pytest.fixture
def two_products() -> Scenario:
    """Products a (cost 10, reference 20, lead time 1) and b (cost 7, reference 12, lead time 0)."""
    return make_scenario(
        Product(id="a", unit_cost=10.0, reference_price=20.0, base_demand=50.0, lead_time=1),
        Product(id="b", unit_cost=7.0, reference_price=12.0, base_demand=80.0, lead_time=0),
    )


def make_observation(
    scenario: Scenario,
    *,
    day: int = 1,
    cash: float = 10_000.0,
    reputation: float = 0.6,
    price: dict[str, float] | None = None,
    unit_cost: dict[str, float] | None = None,
    inventory: float | dict[str, float] = 0.0,
    in_transit: float | dict[str, float] = 0.0,
    rivals: dict[str, dict[str, float] | None] | None = None,
    rival_reputation: float | None = 0.6,
    bankrupt: tuple[str, ...] = (),
    receivables_due: float = 0.0,
    yesterday: DayRecord | None = None,
    events: list[EventNotice] | None = None,
    fixed_daily_cost: float = 0.0,
) -> Observation:
    """The observation of merchant ME. `rivals` maps a rival's name to its visible prices
    (None: hidden); by default one rival 'r1' posts every reference price."""

    def per_product(value: float | dict[str, float], pid: str) -> float:
        return value[pid] if isinstance(value, dict) else value

    price, unit_cost = price or {}, unit_cost or {}
    if rivals is None:
        rivals = {"r1": {p.id: p.reference_price for p in scenario.products}}
    products = [
        ProductState(
            product=p.id,
            price=price.get(p.id, p.start_price),
            unit_cost=unit_cost.get(p.id, p.unit_cost),
            inventory=per_product(inventory, p.id),
            in_transit=per_product(in_transit, p.id),
            lead_time=p.lead_time,
            holding_cost=p.holding_cost,
        )
        for p in scenario.products
    ]
    me = PublicMerchant(
        merchant=ME,
        prices={s.product: s.price for s in products},
        reputation=reputation,
        units_sold=None,
        bankrupt=False,
    )
    others = [
        PublicMerchant(
            merchant=name,
            prices=prices,
            reputation=rival_reputation,
            units_sold=None,
            bankrupt=name in bankrupt,
        )
        for name, prices in rivals.items()
    ]
    return Observation(
        merchant=ME,
        day=day,
        days=30,
        cash=cash,
        reputation=reputation,
        receivables_due=receivables_due,
        receivables_pending=0.0,
        products=products,
        yesterday=yesterday,
        market=[me, *others],
        events=events or [],
        fixed_daily_cost=fixed_daily_cost,
    )


def make_record(
    day_record,
    day: int,
    *,
    cash_end: float,
    prices: dict[str, float],
    inventory: dict[str, float],
    ordered: dict[str, float],
) -> DayRecord:
    """A day record of ME with the facts recall questions ask about; money fields are zero."""
    return day_record(
        merchant=ME,
        day=day,
        prices=prices,
        ordered=ordered,
        inventory=inventory,
        cash_start=cash_end,
        cash_end=cash_end,
        reputation=0.6,
        net_worth=cash_end,
    )


@pytest.fixture
def scenario() -> Scenario:
    return make_scenario()


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(7)


@pytest.fixture
def observe():
    return make_observation


@pytest.fixture
def record(day_record):
    return functools.partial(make_record, day_record)
