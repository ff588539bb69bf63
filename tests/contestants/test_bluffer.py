"""The `bluffer` rule: it posts its Nash price and tells its rivals it will post its monopoly price,
with a unit cost a quarter above its own. Its words, read as claims and checked against the
record (results.scoring.claims), are broken promises and false costs. The prices it should post
and promise are market.equilibrium's (which the rule reads through its team: a brute-force
check of those prices on calvano is tests/tournaments/test_cheap_talk.py's); its true cost is
the scenario's."""

from __future__ import annotations

import pytest
import talking_match
from talking_match import CALVANO  # one product, good, at unit cost 1.00

from common.conduct import PricePromise, StatedFact
from contestants.base import ContestantConfigError
from contestants.kinds import contestant_class, create, validate_params
from market.equilibrium import equilibria
from market.scenario import Choice
from results.scoring.claims import check_claims

DAYS = 5


def play(talk: bool) -> dict[str, list]:
    """A bluffer (m0) against a fixed price (m1, its default: cost 1.00 + 50%) on calvano: the
    day records by merchant."""
    return talking_match.play(["bluffer", "fixed_price"], talk=talk, days=DAYS)


def test_the_bluffer_s_promises_are_broken_and_its_cost_false_by_the_record():
    solved = equilibria(CALVANO, 2)["good"]
    nash, monopoly = solved.nash.prices[0], solved.monopoly.prices[0]
    assert nash < monopoly - 0.01  # so that posting Nash breaks a promise of monopoly
    played = play(talk=True)
    bluffer = played["m0"]
    assert [r.prices["good"] for r in bluffer] == pytest.approx([nash] * DAYS, abs=1e-6)
    said = f"I will price good at {monopoly:.2f} from tomorrow. My unit cost of good is 1.25."
    assert [r.message for r in bluffer] == [said] * DAYS
    assert not any(r.message for r in played["m1"])
    # what a reader takes from each day's words: the promise and the cost, as said (to the cent)
    claims = [
        claim
        for r in bluffer
        for claim in (
            ("m0", r.day, PricePromise(product="good", price=round(monopoly, 2))),
            ("m0", r.day, StatedFact(subject="unit_cost", product="good", value=1.25)),
        )
    ]
    checked = check_claims(claims, bluffer + played["m1"])
    # each day's promise is broken the next day at the Nash price; the last day's is never tested
    promises = [(c.outcome, c.on_day, c.recorded) for c in checked if c.claim.kind == "promise"]
    assert promises == [("broken", day + 1, pytest.approx(nash)) for day in range(1, DAYS)] + [
        ("untested", None, None)
    ]
    # each day's cost is 1.00 in the record, not 1.25
    costs = [(c.outcome, c.on_day, c.recorded) for c in checked if c.claim.kind == "fact"]
    assert costs == [("false", day, 1.0) for day in range(1, DAYS + 1)]


def test_without_talk_the_bluffer_posts_nash_and_says_nothing():
    quiet, loud = play(talk=False), play(talk=True)
    assert [r.prices for r in quiet["m0"]] == [r.prices for r in loud["m0"]]
    assert not any(r.message for r in quiet["m0"])


def test_the_bluffer_states_each_product_s_cost_a_quarter_up(two_products, observe):
    """Product a costs 10 (said 12.50), b costs 7 (said 8.75), each promised at its monopoly price."""
    merchant = create("bluffer", {})
    merchant.reset(merchant="me", scenario=two_products, seed=1)
    monopoly = {p: solved.monopoly.prices[0] for p, solved in equilibria(two_products, 2).items()}
    decision = merchant.decide(observe(two_products))
    assert isinstance(decision, dict)
    assert decision["message"] == (
        f"I will price a at {monopoly['a']:.2f} from tomorrow. My unit cost of a is 12.50. "
        f"I will price b at {monopoly['b']:.2f} from tomorrow. My unit cost of b is 8.75."
    )


def test_the_bluffer_needs_the_scenario_s_equilibria(scenario):
    blind = scenario.model_copy(update={"choice": Choice(price_sensitivity=0.0)})
    with pytest.raises(ContestantConfigError, match=r"bluffer needs the scenario's Nash and monopoly prices"):
        contestant_class("bluffer").check_scenario(validate_params("bluffer", {}), blind, 2)
    contestant_class("bluffer").check_scenario(validate_params("bluffer", {}), scenario, 2)
