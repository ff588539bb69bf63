"""The coherence metrics: whether a merchant's decisions are valid and hold together (its
rejected operations, idle days, recall of its own books, price moves, plans and
contradictions). One function each, its formula in its docstring (results.scoring.metrics)."""

from __future__ import annotations

import math

import numpy as np

from market.scenario import Scenario
from results.scoring.match_records import (
    MOVE_TOLERANCE,
    REJECTION_KINDS,
    WAIT,
    Compute,
    MatchRecords,
    Metric,
    Seat,
    registering,
)

FAMILY: dict[str, Metric] = {}  # in the order defined
_metric = registering(FAMILY)


LARGE_RESTOCK_DAYS = 5.0  # an order of at least this many days of the product's mean daily demand
CLEARANCE_CUT = 0.2  # a price cut of at least this share of the price on the restock day
CONTRADICTION_WINDOW = 3  # days after a large restock in which a clearance cut contradicts it


@_metric("coherence", "share")
def validity_rate(seat: Seat) -> float | None:
    """Share of the operations the merchant submitted that the market applied:
    validity_rate = applied / (applied + rejected), over all its days. A decision that was not
    a list of operations at all counts as one rejected submission (and is a fault too), and
    so does a message the market did not deliver (a delivered one is no operation); a day
    on which no answer came (timeout, error) submits nothing (see fault_days), and a `wait`
    is no operation here (doing nothing is not doing something right). None when nothing was
    submitted: a merchant that only waits has no validity (see idle_days)."""
    if seat.submitted == 0:
        return None
    return (seat.submitted - sum(seat.rejections.values())) / seat.submitted


@_metric("coherence", "share", over_match=True)
def idle_days(match: MatchRecords) -> np.ndarray:
    """Share of the merchant's days on which the market applied no operation of it but waits:
    idle_days = days without an applied set_price, order, advertise, collect or promote / its
    days. 1 for a merchant that does nothing all match."""
    return match.per_seat((match.acts == 0).astype(float)) / match.counts


@_metric("coherence", "ratio", over_match=True)
def action_entropy(match: MatchRecords) -> list[float | None]:
    """How the merchant's applied operations spread over their kinds: the Shannon entropy in
    bits, action_entropy = -sum_k p_k log2 p_k with p_k the share of kind k among its applied
    operations but waits; 0 for one kind only (a merchant that only sets prices), 2 for four
    kinds used alike. None when it applied none."""
    entropies: list[float | None] = []
    for counts in match.kinds_applied.tolist():  # a handful of kinds: Python is quicker than numpy
        counts[WAIT] = 0.0
        total = sum(counts)
        shares = [count / total for count in counts if count > 0]  # 0 log 0 = 0
        entropies.append(0.0 - sum(share * math.log2(share) for share in shares) if total else None)
    return entropies


def _rejected_share(kind: str) -> Compute:
    def share(seat: Seat) -> float | None:
        if seat.submitted == 0:
            return None
        return seat.rejections[kind] / seat.submitted

    share.__name__ = f"rejected_{kind}"
    share.__doc__ = (
        f"Share of submitted operations rejected for {REJECTION_KINDS[kind]}: "
        f"rejected_{kind} = rejected of this kind / (applied + rejected); None when nothing was "
        "submitted. validity_rate and the rejected_* shares add up to 1."
    )
    return share


for _kind in REJECTION_KINDS:
    _metric("coherence", "share")(_rejected_share(_kind))


@_metric("coherence", "count", flow=True)
def constraint_violations(seat: Seat) -> float:
    """Well-formed operations the market refused because they broke its rules or the
    merchant's constraints (over_cash, out_of_range, unknown_product):
    constraint_violations = rejected - rejected as malformed."""
    return float(sum(seat.rejections.values()) - seat.rejections["malformed"])


@_metric("coherence", "count", flow=True)
def fault_days(seat: Seat) -> float:
    """Days on which the merchant gave no usable decision (timeout, error, malformed answer,
    dead actor): the number of distinct days with a recorded fault."""
    return float(len({fault.day for fault in seat.faults}))


@_metric("coherence", "share", over_match=True)
def memory_error(match: MatchRecords) -> list[float | None]:
    """Mean relative error of the answered recall questions:
    memory_error = mean over answered questions of |answer - truth| / max(|truth|, 1).
    None when no question was answered (see memory_unanswered)."""
    seats, _, errors = match.answered_recalls()
    sums, counts = match.per_seat(errors, seats), np.bincount(seats, minlength=len(match.counts))
    return [total / n if n else None for total, n in zip(sums.tolist(), counts.tolist())]


@_metric("coherence", "share", over_match=True)
def memory_unanswered(match: MatchRecords) -> list[float | None]:
    """Share of recall questions left without a numeric answer:
    memory_unanswered = unanswered questions / questions asked; None when none was asked."""
    seats = match.recall_seats
    unanswered = match.per_seat(np.isnan(match.recalls.error[match.recall_rows]).astype(float), seats)
    asked = np.bincount(seats, minlength=len(match.counts))
    return [missing / n if n else None for missing, n in zip(unanswered.tolist(), asked.tolist())]


@_metric("coherence", "per_day", over_match=True)
def memory_error_trend(match: MatchRecords) -> list[float | None]:
    """How recall error changes over the match: the least-squares slope of relative error
    against the day the question was asked, over answered questions,
    memory_error_trend = sum (t_i - mean t)(e_i - mean e) / sum (t_i - mean t)^2,
    in error per day (positive: memory gets worse as the match goes on). None with fewer than
    two distinct question days."""
    seats, days, e = match.answered_recalls()
    t = days.astype(float)
    n = np.maximum(np.bincount(seats, minlength=len(match.counts)), 1)
    dt, de = t - (match.per_seat(t, seats) / n)[seats], e - (match.per_seat(e, seats) / n)[seats]
    spread, covariance = match.per_seat(dt * dt, seats), match.per_seat(dt * de, seats)
    span = int(days.max()) + 1 if days.size else 1
    distinct = np.bincount(
        np.unique(seats * span + days) // span, minlength=len(match.counts)
    )  # question days per seat
    return [
        c / v if d >= 2 else None for c, v, d in zip(covariance.tolist(), spread.tolist(), distinct.tolist())
    ]


@_metric("coherence", "share", over_match=True)
def price_oscillation(match: MatchRecords) -> list[float | None]:
    """How often the merchant's price moves reverse direction. Per product, the daily moves
    m_t = price_t - price_(t-1) between its consecutive days, leaving out days without a move
    (|m_t| <= 1e-9 * max(1, price_(t-1))); a reversal is a move whose sign differs from the
    previous move's. price_oscillation = reversals / (moves - 1), summed over products.
    1 is a zig-zag every day, 0 moves in one direction only; None with fewer than two moves
    in every product."""
    n = len(match.counts)
    reversals, pairs = np.zeros(n), np.zeros(n)
    seat = match.row_seats[match.by_seat]
    same = seat[1:] == seat[:-1]  # consecutive days of one merchant
    for prices in match.values("prices")[match.by_seat].T:
        before, moves = prices[:-1], np.diff(prices)
        moved = np.flatnonzero(same & (np.abs(moves) > MOVE_TOLERANCE * np.maximum(1.0, np.abs(before))))
        signs, who = moves[moved] > 0, seat[1:][moved]
        pairs += np.maximum(np.bincount(who, minlength=n) - 1, 0)
        reversed_ = (who[1:] == who[:-1]) & (signs[1:] != signs[:-1])
        reversals += np.bincount(who[1:][reversed_], minlength=n)
    return [r / q if q else None for r, q in zip(reversals.tolist(), pairs.tolist())]


@_metric("coherence", "ratio")
def plan_drift(seat: Seat) -> float | None:
    """How far the merchant's prices stray from the prices it said it would hold
    (`DayRecord.plan`). A plan stated on day d for product p stands from day d + 1 until the
    merchant states a new price for p, which stands from the day after it is stated: the
    planned price planned_p,t in force on day t is the one of the latest plan for p stated
    before day t. plan_drift = mean over the days t and products p with a plan in force of
    |price_p,t - planned_p,t| / planned_p,t. 0 is every plan kept exactly; None when the
    merchant never stated a plan, or no day of its followed one."""
    if not seat.match.planned:
        return None
    plans = [seat.match.log.plans[row] for row in seat.rows.tolist()]
    drifts: list[float] = []
    planned: dict[str, float] = {}
    for prices, plan in zip(seat.values("prices").tolist(), plans):
        posted = dict(zip(seat.products, prices))
        drifts.extend(abs(posted[p] - price) / price for p, price in planned.items())
        planned.update(plan)
    return sum(drifts) / len(drifts) if drifts else None


@_metric("coherence", "count", over_match=True, flow=True)
def contradictions(match: MatchRecords) -> list[float]:
    """Large restocks contradicted within days by a clearance price cut that no event explains.

    A large restock of a product on day t: an order of at least LARGE_RESTOCK_DAYS (5) times
    the merchant's mean daily demand for it over the match (its first-choice customers per
    day). It is contradicted when on a day u with t < u <= t + CONTRADICTION_WINDOW (3) the
    merchant's price is at most (1 - CLEARANCE_CUT) = 0.8 times its price on day t, unless
    an event explains the cut: the product's unit cost fell between t and u, or a scenario
    event of the product (or of every product) is announced, running or just ended on some
    day of [t, u]. contradictions = number of such cuts, a cut that follows several large
    restocks counted once."""
    log, seats = match.log, match.row_seats
    cuts: list[set[tuple[str, int]]] = [set() for _ in match.counts]
    if not len(log):
        return []
    row_at = np.full(
        (len(match.counts), int(log.day.max()) + CONTRADICTION_WINDOW + 1), -1
    )  # [seat, day] -> row, -1: none
    row_at[seats, log.day] = np.arange(len(log))
    later = np.arange(1, CONTRADICTION_WINDOW + 1)
    for j, product in enumerate(log.products):
        prices, costs, ordered = (match.values(name)[:, j] for name in ("prices", "unit_cost", "ordered"))
        demand = match.per_seat(match.values("first_choice")[:, j]) / match.counts
        restocks = np.flatnonzero((ordered > 0) & (ordered >= LARGE_RESTOCK_DAYS * demand[seats]))
        window = row_at[
            seats[restocks, None], log.day[restocks, None] + later
        ]  # the rows of the days after each restock
        cut = (window >= 0) & (prices[window] <= (1 - CLEARANCE_CUT) * prices[restocks, None])
        first = cut.argmax(1)  # the first cut after each restock
        for i in np.flatnonzero(cut.any(1)).tolist():
            r, c, after = int(restocks[i]), int(window[i, first[i]]), int(first[i]) + 1
            restock_day = int(log.day[r])
            if not (
                costs[c] < costs[r] or _event_near(match.scenario, product, restock_day, restock_day + after)
            ):
                cuts[int(seats[r])].add((product, restock_day + after))
    return [float(len(c)) for c in cuts]


def _event_near(scenario: Scenario | None, product: str, restock_day: int, cut_day: int) -> bool:
    """A scenario event of the product (or of every product) announced, running or just
    ended on some day of [restock_day, cut_day]."""
    events = scenario.events if scenario is not None else ()
    return any(
        event.product in (None, product)
        and event.start_day - event.announce_days_ahead <= cut_day
        and restock_day <= event.end_day + 1
        for event in events
    )
