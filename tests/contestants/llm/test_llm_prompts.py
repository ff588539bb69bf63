"""What a language-model merchant reads each day: compact, rounded, and complete."""

from __future__ import annotations

from contestants.llm.prompts import daily_report, system_prompt
from market.scenario import Competitor, Promotions, Satisfaction
from market.types import EventNotice, PublicCompetitor


def test_the_daily_report_states_the_day_own_position_and_rivals_compactly(scenario, observe, record):
    yesterday = record(
        3, cash_end=1987.9, prices={"widget": 19.5}, inventory={"widget": 42.0}, ordered={"widget": 0.0}
    )
    observation = observe(
        scenario,
        day=4,
        cash=1987.904,
        price={"widget": 19.5},
        inventory=42.0,
        rivals={"r1": {"widget": 18.0}, "r2": None},
        yesterday=yesterday,
        events=[
            EventNotice(name="holiday", kind="demand", product=None, start_day=5, end_day=6, multiplier=1.5)
        ],
    )
    report = daily_report(observation)
    assert report.startswith("Day 4 of 30. Cash 1987.9. Reputation 0.60")
    assert "widget: your price 19.5, unit cost 10, in stock 42" in report
    assert "- r1: prices widget 18; reputation 0.60" in report
    assert "- r2: reputation 0.60" in report  # prices hidden by the scenario
    assert "Event 'holiday': demand of every product x1.5, days 5 to 6." in report
    assert ".00" not in report and "," not in report.split("\n")[0]


def test_money_is_never_shown_as_minus_zero(scenario, observe):
    assert daily_report(observe(scenario, cash=-0.001)).startswith("Day 1 of 30. Cash 0. ")


def test_the_rules_say_what_share_of_credit_sales_is_never_paid_where_some_is(scenario):
    on_credit = scenario.model_copy(
        update={"finance": scenario.finance.model_copy(update={"credit_share": 0.3, "credit_days": 2})}
    )
    unpaid = on_credit.model_copy(
        update={"finance": on_credit.finance.model_copy(update={"bad_debt_share": 0.1})}
    )
    assert "30% of every sale is on credit" in system_prompt(on_credit, "m0", 30, notes=False)
    assert "never paid" not in system_prompt(on_credit, "m0", 30, notes=False)
    assert "- 10% of credit sales are never paid" in system_prompt(unpaid, "m0", 30, notes=False)


def test_the_rules_and_the_report_name_the_scripted_competitors(scenario, observe):
    with_shops = scenario.model_copy(
        update={"competitors": (Competitor(name="bigbox"), Competitor(name="corner", rule="undercut"))}
    )
    assert "Other shops" not in system_prompt(scenario, "m0", 30, notes=False)
    assert "- Other shops that are not players sell here too (bigbox, corner)" in system_prompt(
        with_shops, "m0", 30, notes=False
    )
    observation = observe(with_shops)
    observation.competitors = [
        PublicCompetitor("bigbox", {"widget": 18.5}, 0.6),
        PublicCompetitor("corner", None, None),
    ]
    report = daily_report(observation)
    assert (
        "Other shops today:\n- bigbox: prices widget 18.5; reputation 0.60\n- corner: nothing visible"
        in report
    )
    assert "Other shops" not in daily_report(observe(scenario))


def test_the_report_tells_a_trend_from_a_step(scenario, observe):
    trend = EventNotice("downturn", "demand", "widget", 10, 40, 0.8, shape="trend")
    report = daily_report(observe(scenario, events=[trend]))
    assert (
        "Trend 'downturn': demand of widget drifting to x0.8 from day 10 to day 40, then staying there."
        in report
    )


def test_perishable_stock_is_shown_with_the_last_day_it_can_be_sold(scenario, observe, record):
    fresh = scenario.model_copy(
        update={"products": (scenario.products[0].model_copy(update={"shelf_life": 3}),)}
    )
    assert "perishable: a unit can be sold for 3 days" in system_prompt(fresh, "m0", 30, notes=False)
    assert "perishable" not in system_prompt(scenario, "m0", 30, notes=False)
    observation = observe(
        fresh,
        day=4,
        inventory=13.0,
        yesterday=record(
            3, cash_end=100.0, prices={"widget": 19.0}, inventory={"widget": 13.0}, ordered={"widget": 0.0}
        ),
    )
    observation.products[0].spoiling = [5.0, 0.0, 8.0]
    observation.yesterday.spoiled["widget"] = 2.0
    report = daily_report(observation)
    assert "in stock 13 (5 sellable until day 4, 8 until day 6)," in report
    assert "Spoiled last night: widget 2." in report


def test_the_rules_describe_the_customer_segments(scenario):
    grouped = type(scenario).model_validate(
        {
            **scenario.model_dump(),
            "segments": [
                {"name": "bargain", "share": 0.3, "price_sensitivity": 9, "return_rate": 0.1},
                {"name": "loyal", "share": 0.7},
            ],
        }
    )
    rules = system_prompt(grouped, "m0", 30, notes=False)
    sensitivity = f"{scenario.choice.price_sensitivity:g}"
    assert (
        "- Customers come in groups (bargain: 30% of customers, price sensitivity 9, they return 10% of "
        f"what they buy (refunded); loyal: 70% of customers, price sensitivity {sensitivity})"
    ) in rules
    assert "groups" not in system_prompt(scenario, "m0", 30, notes=False)


def test_promotions_are_in_the_rules_and_the_report_where_the_market_runs_them(scenario, observe):
    sales = scenario.model_copy(update={"promotions": Promotions(max_discount=0.4, max_days=7)})
    assert "promote {product, discount, days}" in system_prompt(sales, "m0", 30, notes=False)
    assert "up to 0.4) for 1 to 7 days" in system_prompt(sales, "m0", 30, notes=False)
    assert "promote" not in system_prompt(scenario, "m0", 30, notes=False)
    observation = observe(sales, day=5)
    observation.products[0].discount, observation.products[0].discount_until = 0.2, 8
    assert "your price 20 (on promotion: 20% off until day 8), unit cost" in daily_report(observation)


def test_satisfaction_is_in_the_rules_and_the_report_where_it_is_kept(scenario, observe):
    kept = scenario.model_copy(update={"satisfaction": Satisfaction()})
    assert "satisfaction (1 to 5 stars) falls when you run out of stock" in system_prompt(
        kept, "m0", 30, notes=False
    )
    assert "satisfaction" not in system_prompt(scenario, "m0", 30, notes=False)
    observation = observe(kept)
    observation.satisfaction = 4.25
    assert daily_report(observation).split("\n")[0].endswith("Customer satisfaction 4.25 of 5.")
    assert "satisfaction" not in daily_report(observe(scenario))
