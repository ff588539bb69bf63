"""Scripted competitors: the scenario's rivals that are no contestants (market.scenario.Competitor).

Each sells from unlimited stock at the prices its rule sets each morning, and customers choose
it by the same logit as the merchants (market/demand.py): it is one more column of the
choice, with its own reputation and quality, that never sells out. Arrays are [match,
competitor, product]; a product it does not sell has price NaN and utility -inf.
"""

from __future__ import annotations

import math

import numpy as np

from market.demand import utilities
from market.scenario import Choice, Scenario


class Competitors:
    """The scenario's scripted competitors, as arrays [competitor, product]."""

    def __init__(self, scenario: Scenario):
        listed = scenario.competitors
        reference = np.array([p.reference_price for p in scenario.products])
        self.names = tuple(c.name for c in listed)
        self.choice = scenario.choice
        self.reference = reference
        self.sells = np.array(
            [[not c.products or p.id in c.products for p in scenario.products] for c in listed], dtype=bool
        ).reshape(len(listed), len(reference))
        self.standing = np.array([c.price_ratio for c in listed])[:, None] * reference  # the fixed rule's
        self.undercutting = np.array([c.rule == "undercut" for c in listed], dtype=bool)
        self.kept = 1.0 - np.array([c.undercut for c in listed])  # of the cheapest merchant's price
        self.floor_ratio = np.array([c.floor_ratio for c in listed])
        self.reputation = np.array([c.reputation for c in listed])
        self.quality = np.array(
            [[p.quality if c.quality is None else c.quality for p in scenario.products] for c in listed]
        ).reshape(self.sells.shape)
        self.cuts = [c.cuts for c in listed]

    def __len__(self) -> int:
        return len(self.names)

    def prices(self, day: int, posted: np.ndarray, selling: np.ndarray, unit_cost: np.ndarray) -> np.ndarray:
        """Their prices on `day` [match, competitor, product], from what the merchants of each
        match posted the day before, `posted` [match, seat, product], those `selling` [match,
        seat] (not bankrupt), and the products' unit costs today [product]."""
        matches = len(posted)
        prices = np.broadcast_to(self.standing, (matches, *self.standing.shape)).copy()
        if self.undercutting.any():
            cheapest = np.min(np.where(selling[:, :, None], posted, math.inf), axis=1)  # [match, product]
            under = np.maximum(
                self.kept[None, :, None] * cheapest[:, None, :],
                self.floor_ratio[None, :, None] * unit_cost,
            )
            reacting = self.undercutting[None, :, None] & np.isfinite(cheapest)[:, None, :]
            prices = np.where(reacting, under, prices)
        cut = np.array([math.prod(c.multiplier for c in cuts if c.running(day)) for cuts in self.cuts])
        return np.where(self.sells, prices * cut[:, None], math.nan)

    def utilities(self, prices: np.ndarray, choice: Choice | None = None) -> np.ndarray:
        """Customers' utility of buying from each [match, competitor, product] at `prices`
        (market.demand.utilities, by `choice`: default the scenario's); -inf where it does
        not sell."""
        utility = utilities(
            choice or self.choice, prices, self.reference, self.reputation[:, None], self.quality
        )
        return np.where(self.sells, utility, -np.inf)


def reacting(scenario: Scenario) -> list[str]:
    """The competitors whose prices depend on the merchants' (a fixed price game has none)."""
    return [c.name for c in scenario.competitors if c.rule == "undercut"]


def price_game_choice(scenario: Scenario, product: int) -> Choice:
    """The scenario's choice of `product` for the price game (market.equilibrium): buying from
    no merchant, the no-purchase option and the competitors at their standing prices, is one
    option of utility log(exp(u_0) + sum_c exp(u_c)); by the logit's independence of
    irrelevant alternatives the merchants' shares are the same as with the options apart.
    Cuts are left out, as the demand events are."""
    competitors = Competitors(scenario)
    if not len(competitors):
        return scenario.choice
    utility = competitors.utilities(competitors.standing[None])[0, :, product]
    outside = np.logaddexp.reduce(np.append(utility, scenario.choice.no_purchase_utility))
    return scenario.choice.model_copy(update={"no_purchase_utility": float(outside)})
