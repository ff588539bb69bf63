"""The deviation measures on hand-made paths, each expected value worked out by hand."""

from __future__ import annotations

import pytest

from market.daylog import DayLog
from results.scoring import deviation
from results.settings import DeviationProbe

DAYS = 6


def path(
    day_record,
    prices: dict[str, list[float]],
    revenue: dict[str, list[float]] | None = None,
    sold: dict[str, list[float]] | None = None,
) -> DayLog:
    """A match of merchants m0 and m1 over DAYS days with these prices (and revenues, units sold)
    by day; a day's profit is its revenue (nothing else is paid)."""
    records = []
    for day in range(1, DAYS + 1):
        for merchant in ("m0", "m1"):
            earned = (revenue or {}).get(merchant, [0.0] * DAYS)[day - 1]
            units = (sold or {}).get(merchant, [0.0] * DAYS)[day - 1]
            records.append(
                day_record(
                    merchant=merchant,
                    day=day,
                    prices={"tea": prices[merchant][day - 1]},
                    revenue=earned,
                    units_sold={"tea": units},
                    net_worth=earned,
                )
            )
    return DayLog.of(records)


FLAT = {"m0": [2.0] * DAYS, "m1": [2.0] * DAYS}


def test_the_rival_s_cut_and_the_days_until_both_are_back(day_record):
    # m0 is forced to 1.5 on day 3; m1 answers with 1.6 on day 4, then 1.985 (within 1% of 2) and 2;
    # m0 plays 1.7 on day 4 and is back on day 5
    deviated = path(day_record, {"m0": [2, 2, 1.5, 1.7, 2, 2], "m1": [2, 2, 2, 1.6, 1.985, 2]})
    measured = deviation.compute(path(day_record, FLAT), deviated, DeviationProbe(day=3, seat=0))
    assert measured["m1"]["rival_response"] == pytest.approx((1.6 - 2.0) / 2.0)
    assert "rival_response" not in measured["m0"]  # the deviator is no rival of itself
    assert measured["m1"]["recovery_days"] == 1.0  # away on day 4 only
    assert measured["m0"]["recovery_days"] == 1.0
    assert measured["m0"]["prefix_replayed"] == measured["m1"]["prefix_replayed"] == 1.0


def test_a_merchant_that_never_moved_took_no_days_and_one_still_away_at_the_end_is_not_back(day_record):
    deviated = path(day_record, {"m0": [2, 2, 1.5, 2, 2, 2], "m1": [2, 2, 2, 1.9, 2, 1.5]})
    measured = deviation.compute(path(day_record, FLAT), deviated, DeviationProbe(day=3, seat=0))
    assert measured["m0"]["recovery_days"] == 0.0
    assert measured["m1"]["recovery_days"] is None  # back on day 5, away again on the last day
    assert measured["m1"]["rival_response"] == pytest.approx(-0.05)


def test_a_longer_deviation_is_answered_the_day_after_it_ends(day_record):
    deviated = path(day_record, {"m0": [2, 1.5, 1.5, 1.5, 2, 2], "m1": [2, 2, 1.8, 1.8, 1.5, 2]})
    measured = deviation.compute(path(day_record, FLAT), deviated, DeviationProbe(day=2, days=3, seat=0))
    assert measured["m1"]["rival_response"] == pytest.approx(-0.25)  # day 5
    assert measured["m1"]["recovery_days"] == 1.0  # away on day 5, back on day 6


@pytest.mark.parametrize(
    ("discount", "profitable"),
    [
        # on path: 10 a day from day 3; deviated: 14, 6, 9, 10.
        # δ = 0.95: 10 (1 + .95 + .9025 + .857375) = 37.09 > 14 + 5.7 + 8.1225 + 8.57375 = 36.40
        (0.95, 0.0),
        # δ = 0.5: 10 (1 + .5 + .25 + .125) = 18.75 < 14 + 3 + 2.25 + 1.25 = 20.5
        (0.5, 1.0),
    ],
)
def test_a_deviation_pays_when_its_discounted_profit_from_its_day_on_is_higher(
    day_record, discount, profitable
):
    on_path = path(day_record, FLAT, revenue={"m0": [10.0] * DAYS})
    deviated = path(
        day_record, {"m0": [2, 2, 1.5, 2, 2, 2], "m1": FLAT["m1"]}, revenue={"m0": [10, 10, 14, 6, 9, 10]}
    )
    measured = deviation.compute(on_path, deviated, DeviationProbe(day=3, seat=0, discount=discount))
    assert measured["m0"]["deviation_profitable"] == profitable
    assert "deviation_profitable" not in measured["m1"]


def test_a_prefix_that_differs_is_not_replayed_for_that_merchant_alone(day_record):
    deviated = path(
        day_record, {"m0": [2, 2, 1.5, 2, 2, 2], "m1": FLAT["m1"]}, sold={"m1": [0, 1, 0, 0, 0, 0]}
    )
    measured = deviation.compute(path(day_record, FLAT), deviated, DeviationProbe(day=3, seat=0))
    assert measured["m1"]["prefix_replayed"] == 0.0  # day 2's units differ
    assert measured["m0"]["prefix_replayed"] == 1.0
    later = deviation.compute(
        path(day_record, FLAT),
        path(day_record, FLAT, sold={"m1": [0, 0, 0, 3, 0, 0]}),
        DeviationProbe(day=3, seat=0),
    )
    assert later["m1"]["prefix_replayed"] == 1.0  # day 4 is after the deviation began


def test_the_settings_name_their_target_and_last_day():
    assert DeviationProbe(day=4, days=3, to=1.25).last_day == 6
    assert DeviationProbe(day=4, to=1.25).target == "1.25"
    assert DeviationProbe(day=4).target == "best_response"
    with pytest.raises(ValueError):
        DeviationProbe(day=4, to="cartel")
    with pytest.raises(ValueError):
        DeviationProbe(day=4, to=0)


def test_a_price_exactly_one_percent_away_is_back(day_record):
    deviated = path(day_record, {"m0": [2, 2, 1.5, 2, 2, 2], "m1": [2, 2, 2, 1.98, 1.98, 1.98]})
    assert (
        deviation.compute(path(day_record, FLAT), deviated, DeviationProbe(day=3, seat=0))["m1"][
            "recovery_days"
        ]
        == 0.0
    )
