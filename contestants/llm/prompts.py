"""What a language-model merchant reads: the rules once, then a compact report each day.

Templates are files in templates/ whose first line is `version: NAME`; the version is stored
with the results so a change of wording is visible in the record. A template's version covers
the sections it includes (merchant.md and agent.md include market.md as `$market`): a change of
market.md bumps theirs (the stored prompts of tests/contestants/llm/prompts_unchanged.json
catch one that does not). Placeholders are `$name`
(string.Template), so JSON braces in a template need no escaping.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from string import Template as _Text

from contestants.base import OffPathQuestion, RecallQuestion
from market.accounting import day_trade_profit
from market.scenario import Scenario
from market.types import MESSAGE_LIMIT, DayRecord, EventNotice, Observation

TEMPLATES = Path(__file__).parent / "templates"


@dataclass(frozen=True)
class Template:
    name: str
    version: str
    body: str

    def render(self, **values: object) -> str:
        return _Text(self.body).substitute({k: str(v) for k, v in values.items()}).strip()


@cache
def template(name: str) -> Template:
    text = (TEMPLATES / f"{name}.md").read_text(encoding="utf-8")
    first, _, body = text.partition("\n")
    if not first.startswith("version:"):
        raise ValueError(f"template {name}.md must start with 'version: NAME'")
    return Template(name=name, version=first.removeprefix("version:").strip(), body=body)


def versions(*names: str) -> str:
    """The versions of the named templates, as stored with each call: "merchant-v1+recall-v1"."""
    return "+".join(template(name).version for name in names)


def system_prompt(
    scenario: Scenario,
    merchant: str,
    days: int,
    notes: bool,
    extras: tuple[str, ...] = (),
    unit_costs: list[float] | None = None,
    preface: tuple[str, ...] = (),
) -> str:
    """The rules of this match and the goal, as the merchant template words them, after the
    `preface` templates (a preset's paragraph on how to play) and followed by the `extras`
    templates in order: `think` asks to reason before deciding, `plan` to state the prices it
    intends to hold, `plans` to rewrite its plans and insights, `talk` says who reads its
    message and how long it may be. `unit_costs`: per product, what the supplier charges this
    merchant's seat (default: the products' own)."""
    notes_rule = (
        "\nWrite in the decision's `note` what you want to remember: your plan and what you learnt. "
        "You will be shown your notes, not your earlier reports."
        if notes
        else ""
    )
    rules = template("merchant").render(
        days=days,
        merchant=merchant,
        fractional_units="" if scenario.whole_units else " or fractions",
        market=market_section(scenario, days, unit_costs),
        notes_rule=notes_rule,
    )
    return "\n\n".join(
        [
            *(template(name).render() for name in preface),
            rules,
            *(template(name).render(message_limit=MESSAGE_LIMIT) for name in extras),
        ]
    )


def market_section(scenario: Scenario, days: int, unit_costs: list[float] | None = None) -> str:
    """The market's rules, the products and the goal, as every merchant's system prompt
    states them (`unit_costs`: see system_prompt)."""
    finance = scenario.finance
    # Only the id, which operations must use: a display name ("Widget") invites the model to
    # write that instead.
    products = "\n".join(
        f"- {p.id}: unit cost {_money(cost)}, usual price {_money(p.reference_price)}, "
        f"lead time {p.lead_time} days, holding cost {_money(p.holding_cost)} per unit per day"
        + (
            f"; perishable: a unit can be sold for {p.shelf_life} days from the day it arrives, "
            "then it spoils (the oldest sell first)"
            if p.shelf_life
            else ""
        )
        + "".join(
            f'; also from supplier {x.name} (order with "supplier": "{x.name}"): unit cost '
            f"{_money(x.unit_cost)}, lead time {x.lead_time} days"
            + (
                f", {x.reliability:.0%} of orders on time, the rest {x.late_days} days late"
                if x.reliability < 1
                else ""
            )
            for x in p.suppliers
        )
        for p, cost in zip(scenario.products, unit_costs or [p.unit_cost for p in scenario.products])
    )
    target = (
        f"; {_money(scenario.target_net_worth)} would be a good result" if scenario.target_net_worth else ""
    )
    return template("market").render(
        days=days,
        fixed_cost=_money(finance.fixed_daily_cost),
        market_rules="".join(f"- {line}\n" for line in market_rules(scenario)),
        products=products,
        target=target,
    )


def agent_prompt(
    scenario: Scenario,
    merchant: str,
    days: int,
    max_steps: int,
    operations: Sequence[str],
    unit_costs: list[float] | None = None,
    preface: tuple[str, ...] = (),
) -> str:
    """The system prompt of a merchant in agent mode: how its day goes with tools, then the
    market as `system_prompt` states it. `operations`: the names of the operation tools the
    scenario adds to the four every market has (promote, send_message)."""
    more = {"promote": ", put a product on promotion", "send_message": ", write to your rivals"}
    rules = template("agent").render(
        days=days,
        merchant=merchant,
        max_steps=max_steps,
        more_operations="".join(more[name] for name in operations),
        market=market_section(scenario, days, unit_costs),
    )
    return "\n\n".join([*(template(name).render() for name in preface), rules])


def market_rules(scenario: Scenario) -> list[str]:
    """The rules of the scenario's optional parts that are on, a sentence each."""
    finance, rules = scenario.finance, []
    if finance.credit_share > 0:
        rules.append(
            f"{finance.credit_share:.0%} of every sale is on credit: it can be collected "
            f"{finance.credit_days} days later with a collect operation, and not before."
        )
        if finance.bad_debt_share > 0:
            rules.append(
                f"{finance.bad_debt_share:.0%} of credit sales are never paid: they are lost as you sell."
            )
    if scenario.segments:
        groups = "; ".join(
            f"{g.name}: {g.share:.0%} of customers, price sensitivity "
            f"{scenario.choice.price_sensitivity if g.price_sensitivity is None else g.price_sensitivity:g}"
            + (f", they return {g.return_rate:.0%} of what they buy (refunded)" if g.return_rate else "")
            for g in scenario.segments
        )
        rules.append(
            f"Customers come in groups ({groups}); the market's price sensitivity is "
            f"{scenario.choice.price_sensitivity:g}, higher means a price rise loses more of them."
        )
    if scenario.promotions is not None:
        allowed = scenario.promotions
        rules.append(
            "You may put a product on promotion: promote {product, discount, days} lets customers pay "
            f"the price less the discount (a share, up to {allowed.max_discount:g}) for 1 to "
            f"{allowed.max_days} days from today; some customers are drawn to offers on promotion."
        )
    if scenario.satisfaction is not None:
        rules.append(
            "Your customers' satisfaction (1 to 5 stars) falls when you run out of stock, when they "
            "return goods and when your deliveries come late, and rises when none of it happens; "
            "more satisfied customers buy from you more readily."
        )
    if scenario.competitors:
        names = ", ".join(c.name for c in scenario.competitors)
        rules.append(
            f"Other shops that are not players sell here too ({names}), from stock that never runs out; "
            "customers compare them with you like any rival."
        )
    return rules


def daily_report(observation: Observation) -> str:
    """Today's situation in a few lines: numbers rounded, yesterday's results, rivals' public
    moves, and what rivals said yesterday where merchants talk."""
    o = observation
    lines = _own_lines(o)
    if o.yesterday is not None:
        lines += _yesterday_lines(o.yesterday)
    lines += _others_lines(o)
    lines += [event_line(e) for e in o.events]
    return "\n".join(lines)


def _own_lines(o: Observation) -> list[str]:
    """The report's lines on the merchant itself today: cash, reputation, receivables, products."""
    lines = [f"Day {o.day} of {o.days}. Cash {_money(o.cash)}. Reputation {o.reputation:.2f} (0 to 1)."]
    if o.satisfaction is not None:
        lines[0] += f" Customer satisfaction {o.satisfaction:.2f} of 5."
    if o.receivables_due or o.receivables_pending:
        lines.append(
            f"Receivables: {_money(o.receivables_due)} due now (collect them), "
            f"{_money(o.receivables_pending)} not yet due."
        )
    for p in o.products:
        lines.append(
            f"{p.product}: your price {_money(p.price)}{_promotion(p.discount, p.discount_until)}, "
            f"unit cost {_money(p.unit_cost)}, "
            f"in stock {p.inventory:g}{_spoiling(p.spoiling, o.day)}, arriving {p.in_transit:g}, "
            f"lead time {p.lead_time} days."
        )
    return lines


def _yesterday_lines(y: DayRecord) -> list[str]:
    """The report's lines on yesterday's results: sales, spending, losses, rejected operations."""
    sold = ", ".join(
        f"{k} {v:g}" + (f" (turned away {y.lost_sales[k]:g})" if y.lost_sales.get(k) else "")
        for k, v in y.units_sold.items()
    )
    lines = [
        f"Yesterday: sold {sold}; revenue {_money(y.revenue)}; spent {_money(y.purchases)} on stock, "
        f"{_money(y.advertising)} on ads, {_money(y.holding + y.fixed)} on holding and fixed costs."
    ]
    for title, table in (
        ("Spoiled last night", y.spoiled),
        ("Due yesterday but late", y.late),
        ("Returned by customers and refunded", y.returned),
    ):
        listed = ", ".join(f"{k} {v:g}" for k, v in table.items() if v)
        if listed:
            lines.append(f"{title}: {listed}.")
    for rejection in y.rejections:
        lines.append(f"Rejected yesterday: {rejection.reason}.")
    return lines


def _others_lines(o: Observation) -> list[str]:
    """The report's lines on the others: rivals as of yesterday, other shops, rivals' messages."""
    lines = []
    rivals = [m for m in o.market if m.merchant != o.merchant]
    if rivals:
        lines.append("Rivals as of yesterday:")
        for r in rivals:
            if r.bankrupt:
                lines.append(f"- {r.merchant}: bankrupt")
                continue
            parts = _public(r.prices, r.reputation)
            if r.units_sold is not None:
                parts.append("sold so far " + ", ".join(f"{k} {v:g}" for k, v in r.units_sold.items()))
            lines.append(f"- {r.merchant}: " + ("; ".join(parts) or "nothing visible"))
    if o.competitors:
        lines.append("Other shops today:")
        for c in o.competitors:
            lines.append(f"- {c.name}: " + ("; ".join(_public(c.prices, c.reputation)) or "nothing visible"))
    if o.messages:
        lines.append("Messages from rivals yesterday:")
        lines.extend(
            f"- {m.merchant}: {json.dumps(m.text, ensure_ascii=False)}" for m in o.messages
        )  # quoted and escaped: a rival's text cannot pose as lines of the report
    return lines


def event_line(e: EventNotice) -> str:
    """The report's line on an event: a regulator's price cap or order, a trend, a shock."""
    target = e.product or "every product"
    effect = "demand" if e.kind == "demand" else "unit cost"
    span = f"{e.start_day} to {e.end_day}"
    if e.kind == "price_cap":
        return (
            f"Price cap '{e.name}' set by the regulator: no price of {target} above {e.price:g}, days "
            f"{span}; a higher price is refused, and a price above it is lowered to it."
        )
    if e.kind == "forced_price":
        return (
            f"Price order '{e.name}' of the regulator: every merchant's price of {target} is "
            f"{e.price:g} on days {span}, whatever it posts."
        )
    return (
        f"Trend '{e.name}': {effect} of {target} drifting to x{e.multiplier:g} "
        f"from day {e.start_day} to day {e.end_day}, then staying there."
        if e.shape == "trend"
        else f"Event '{e.name}': {effect} of {target} x{e.multiplier:g}, days {span}."
    )


def _promotion(discount: float, until: int) -> str:
    """A promotion running today, as the report words it: " (on promotion: 20% off until day 12)"."""
    return f" (on promotion: {discount:.0%} off until day {until})" if discount else ""


def _spoiling(spoiling: list[float] | None, today: int) -> str:
    """Until when the units in stock can be sold, as the report words it:
    " (5 sellable until day 4, 8 until day 6)"."""
    when = [f"{units:g} until day {today + k}" for k, units in enumerate(spoiling or ()) if units]
    return f" ({', '.join(when).replace(' until', ' sellable until', 1)})" if when else ""


def _public(prices: dict[str, float] | None, reputation: float | None) -> list[str]:
    """A rival's visible prices and reputation, as parts of its line in the report."""
    parts = []
    if prices is not None:
        parts.append("prices " + ", ".join(f"{k} {_money(v)}" for k, v in prices.items()))
    if reputation is not None:
        parts.append(f"reputation {reputation:.2f}")
    return parts


@dataclass(frozen=True)
class HistoryRow:
    """One day of a merchant's past as it saw it the next morning: its prices, units sold and
    trade profit (market.accounting.trade_profit) that day, each rival's prices that day (None:
    hidden by the scenario) and the rivals out of the match by then."""

    day: int
    prices: dict[str, float]
    units_sold: dict[str, float]
    profit: float
    rivals: dict[str, dict[str, float] | None]
    bankrupt: frozenset[str]


def history_row(observation: Observation) -> HistoryRow | None:
    """Yesterday's row, from today's observation: its day record and the board as of the end
    of yesterday (the prices every merchant posted for yesterday's customers). None on day 1."""
    y = observation.yesterday
    if y is None:
        return None
    rivals = [r for r in observation.market if r.merchant != observation.merchant]
    bankrupt = frozenset(r.merchant for r in rivals if r.bankrupt)
    return HistoryRow(
        y.day,
        dict(y.prices),
        dict(y.units_sold),
        day_trade_profit(y),
        {r.merchant: r.prices for r in rivals},
        bankrupt,
    )


def history_table(rows: Sequence[HistoryRow]) -> str:
    """The rows as comma-separated lines under a header: day, own price and units sold per
    product, profit, then each rival's price per product. Commas and rounded numbers: a small
    model's tokenizer spends a token on every digit, point and separator."""
    # every rival of any row, in order of appearance: a new entrant joins the rows after its day
    products, rivals = list(rows[0].prices), list(dict.fromkeys(r for row in rows for r in row.rivals))
    header = [
        "day",
        *(f"price {p}" for p in products),
        *(f"sold {p}" for p in products),
        "profit",
        *(f"{r} {p}" for r in rivals for p in products),
    ]

    def rival_price(row: HistoryRow, rival: str, product: str) -> str:
        if rival in row.bankrupt:
            return "bankrupt"
        prices = row.rivals.get(rival)
        return _money(None if prices is None else prices.get(product))

    lines = [",".join(header)]
    for row in rows:
        cells = [
            str(row.day),
            *(_money(row.prices[p]) for p in products),
            *(_units(row.units_sold[p]) for p in products),
            _money(row.profit),
        ]
        cells += [rival_price(row, r, p) for r in rivals for p in products]
        lines.append(",".join(cells))
    return "\n".join(lines)


def with_history(report: str, rows: Sequence[HistoryRow]) -> str:
    """Today's report with the table of the last days (`rows`, oldest first) after it."""
    return template("history").render(report=report, count=len(rows), table=history_table(rows))


def with_plans(report: str, plans: str, insights: str) -> str:
    """Today's report (or question) after the plans and insights the model last wrote."""
    return template("plans_kept").render(
        report=report, plans=plans or "(none)", insights=insights or "(none)"
    )


def reflect_question(day: int, decision: str, report: str) -> str:
    """Asks to judge the decision of `day` (yesterday) against today's report of its outcome."""
    return template("reflect").render(day=day, decision=decision, report=report)


def with_reflection(report: str, reflection: str) -> str:
    """Today's report with the model's reflection on yesterday carried along."""
    return template("reflection").render(report=report, reflection=reflection)


def compaction_request(text: str, chars: int) -> str:
    """Asks for a summary of at most `chars` characters of the oldest part of an agent's
    conversation (`text`, written out as contestants.llm.agent.as_text writes it)."""
    return template("compact").render(text=text, chars=chars)


def repair_request(problem: str) -> str:
    return template("repair").render(problem=problem)


def recall_question(question: RecallQuestion, tool: str | None = None) -> str:
    """The question, answered in the recall schema or, in agent mode, with the `tool` named."""
    d, p = question.day, question.product
    text = {
        "cash": f"What was your cash at the end of day {d}?",
        "inventory": f"How many units of {p} did you have in stock at the end of day {d}?",
        "price": f"What was your price of {p} at the end of day {d}?",
        "ordered": f"How many units of {p} did you order on day {d}?",
    }[question.fact]
    if tool is not None:
        return template("recall_tool").render(question=text, tool=tool)
    return template("recall").render(question=text)


def off_path_question(question: OffPathQuestion, day: int, tool: str | None = None) -> str:
    """What it would charge on `day` in the case the question puts, answered in the recall
    schema or, in agent mode, with the `tool` named."""
    was = "" if question.posted is None else f" (it posted {_money(question.posted)})"
    text = (
        f"Today is day {day}. Suppose {question.rival} had posted {_money(question.price)} for "
        f"{question.product} yesterday{was}. What price would you post for {question.product} today?"
    )
    if tool is not None:
        return template("off_path_tool").render(question=text, tool=tool)
    return template("off_path").render(question=text)


def _units(value: float) -> str:
    """A number of units written as money is (a market that sells expected demand sells
    fractions of a unit): at most two decimals, no trailing zeros."""
    return _money(value)


def _money(value: float | None) -> str:
    """Cents at most, no trailing zeros, no thousands separator: every digit, point and comma
    is a token for a small model's tokenizer, so 1,987.90 costs 8 where 1987.9 costs 6."""
    return (
        "n/a" if value is None else f"{round(value, 2) + 0.0:.2f}".rstrip("0").rstrip(".")
    )  # + 0.0: no "-0"
