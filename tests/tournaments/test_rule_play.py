"""Rule merchants inline decide together from the market's view, and must come out exactly
as the same merchants asked one by one from their Observations (as when hosted); matches of
them alone are played side by side, each exactly as alone."""

from __future__ import annotations

import io
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_examples import examples

from contestants.baselines import CostPlus, RuleMerchant
from contestants.kinds import contestant_class, kinds
from market.equilibrium import equilibria
from market.scenario import load_scenario
from results.storage.daylog_codec import pack
from tests.doubles import CHAOS, LATENCY
from tournaments.config import ContestantEntry
from tournaments.instant import group_instant
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_contestants
from tournaments.schedule import MatchSpec

INSTANT = [
    "fixed_price",
    "reorder_point",
    "undercut",
    "cost_plus",
    "random",
    "best_response",
    "tit_for_tat",
    "grim_trigger",
]


class Moody(CostPlus):
    """cost_plus, except that its rule raises on even days."""

    kind: ClassVar[str] = "moody_for_tests"

    @classmethod
    def rule(cls, team, view):
        if view.day % 2 == 0:
            raise RuntimeError("even day")
        return super().rule(team, view)


MOODY = f"{__name__}:Moody"  # a kind of the tests' own, named by where it is
SCENARIOS = ["price_war", "multi_product", "seasonal", "logit_game"]


def play(scenario, kinds_in_seats: list[str]):
    names = [f"{kind.rpartition(':')[2]}{i}" for i, kind in enumerate(kinds_in_seats)]  # Moody1, random2
    entries = {name: ContestantEntry(name=name, kind=kind) for name, kind in zip(names, kinds_in_seats)}
    spec = MatchSpec(
        key=f"rules-{scenario.name}",
        index=0,
        scenario=scenario.name,
        seed=3,
        days=scenario.days,
        seats=tuple(entries),
    )
    return play_here(
        [Match(spec, scenario, MatchRules(seed=11, recall_every=3), plan_contestants(entries.values()))]
    )[0]


def test_the_rule_kinds_decide_from_the_view_but_those_that_misbehave_on_purpose():
    assert all(contestant_class(kind).decides_from_view for kind in INSTANT)
    assert not any(contestant_class(kind).decides_from_view for kind in (LATENCY, CHAOS))
    built_in = [
        cls for cls in kinds().values() if cls.__module__.startswith("contestants.")
    ]  # not the tests' own kinds
    assert all(issubclass(cls, RuleMerchant) == cls.remembers_the_record for cls in built_in)
    assert not any(cls.decides_from_view for cls in built_in if not issubclass(cls, RuleMerchant))


@pytest.mark.parametrize("name", SCENARIOS)
def test_deciding_from_the_view_is_deciding_from_observations(monkeypatch, name):
    scenario = load_scenario(name)
    seats = [
        *INSTANT,
        "random",
        "cost_plus",
        "best_response",
    ]  # one undercut: it becomes the cheapest, and must not undercut itself
    by_view = play(scenario, seats)
    for kind in INSTANT:
        monkeypatch.setattr(contestant_class(kind), "decides_from_view", False)
    observed = play(scenario, seats)

    assert list(by_view.days_played) == list(observed.days_played)
    assert by_view.recalls == observed.recalls and by_view.recalls
    assert all(p.relative_error == 0.0 for p in by_view.recalls)  # their books are the records
    assert by_view.merchants == observed.merchants
    assert by_view.metrics == observed.metrics
    moved = {r.merchant for r in by_view.days_played if any(op["op"] == "set_price" for op in r.operations)}
    assert any(m.startswith("undercut") for m in moved) and any(m.startswith("random") for m in moved)


def test_a_rule_that_raises_is_a_fault_and_does_nothing_that_day_as_when_asked_alone(monkeypatch):
    """Merchants whose kind's rule raises do nothing that day and each gets a fault, in the
    market's view as when asked one by one from observations; the others play on."""
    scenario = load_scenario("multi_product")
    seats = [MOODY, "random", MOODY, "undercut"]
    by_view = play(scenario, seats)
    for kind in (MOODY, "random", "undercut"):
        monkeypatch.setattr(contestant_class(kind), "decides_from_view", False)
    observed = play(scenario, seats)

    assert list(by_view.days_played) == list(observed.days_played)
    assert by_view.faults == observed.faults
    moody = [r for r in by_view.days_played if r.merchant.startswith("Moody")]
    assert {(f.merchant, f.day) for f in by_view.faults} == {
        (r.merchant, r.day) for r in moody if r.day % 2 == 0
    }
    assert all(r.operations == [] for r in moody if r.day % 2 == 0) and any(
        r.operations for r in moody if r.day % 2
    )
    assert all(r.operations for r in by_view.days_played if r.merchant.startswith("random"))


@pytest.mark.parametrize("name", SCENARIOS)
def test_matches_side_by_side_come_out_as_each_alone(name):
    """Several matches in one set of arrays: different seeds, seats and kinds, some merchants
    going bankrupt; each must equal the same match played alone."""
    scenario = load_scenario(name)
    rosters = [
        INSTANT,
        [
            "random",
            "undercut",
            "grim_trigger",
            "undercut",
            "best_response",
            "cost_plus",
            "random",
            "tit_for_tat",
        ],
        ["fixed_price"] * 2 + ["random"] * 3 + ["best_response", "tit_for_tat", "grim_trigger"],
    ]
    # a merchant that spends its cash on stock it cannot sell goes bankrupt early
    params = {
        "fixed_price": {
            "price": scenario.products[0].reference_price * 60,
            "reorder_level": 400,
            "target_stock": 900,
        }
    }
    entries = {
        f"{kind}{i}": ContestantEntry(name=f"{kind}{i}", kind=kind, params=params.get(kind, {}))
        for roster in rosters
        for i, kind in enumerate(roster)
    }

    def match(index: int) -> Match:
        seats = tuple(f"{kind}{i}" for i, kind in enumerate(rosters[index]))
        spec = MatchSpec(
            key=f"side-{index}",
            index=index,
            scenario=scenario.name,
            seed=index,
            days=scenario.days,
            seats=seats,
        )
        return Match(spec, scenario, MatchRules(seed=5, recall_every=4), plan_contestants(entries.values()))

    together = play_here([match(i) for i in range(len(rosters))])
    for index, played in enumerate(together):
        alone = play_here([match(index)])[0]
        assert list(played.days_played) == list(alone.days_played)
        stored = np.load(io.BytesIO(pack(played.days_played).columns))
        assert all(
            stored[name].flags.c_contiguous for name in stored.files
        )  # in the order older versions wrote, so alike matches store alike bytes
        assert (played.merchants, played.recalls, played.metrics, played.faults) == (
            alone.merchants,
            alone.recalls,
            alone.metrics,
            alone.faults,
        )
    assert len({tuple(r.cash_end for r in m.days_played) for m in together}) == len(
        rosters
    )  # three different matches
    if scenario.demand.stock_limited:
        assert any(r.bankrupt for m in together for r in m.days_played)


def test_instant_matches_are_grouped_by_scenario_length_and_size():
    entries = {
        name: ContestantEntry(name=name, kind=kind)
        for name, kind in [("f", "fixed_price"), ("u", "undercut"), ("r", "random"), ("l", LATENCY)]
    }

    def spec(index: int, scenario: str, seats: tuple[str, ...], days: int = 30) -> MatchSpec:
        return MatchSpec(key=f"k{index}", index=index, scenario=scenario, seed=index, days=days, seats=seats)

    plan = [spec(i, "a", ("f", "u")) for i in range(7)] + [
        spec(7, "b", ("f", "u")),
        spec(8, "a", ("f", "u", "r")),
        spec(9, "a", ("f", "l")),
        spec(10, "a", ("u", "f"), days=20),
    ]
    groups = group_instant(
        plan, plan_contestants(entries.values()), max_concurrent=8, cpus=2
    )  # at most 4 a group
    assert [[m.index for m in g] for g in groups] == [[0, 1, 2, 3], [4, 5, 6], [7], [8], [9], [10]]
    assert [
        len(g) for g in group_instant(plan, plan_contestants(entries.values()), max_concurrent=1024, cpus=1)
    ][0] == 7  # up to GROUP_LIMIT
    assert all(
        len(g) == 1 for g in group_instant(plan, plan_contestants(entries.values()), max_concurrent=2, cpus=2)
    )


# Ten rosters of two to four, each played in two matches of 25 days, together and alone: a grim
# trigger's tolerance, random rivals' markups and the tit for tat's opening vary in each.
@settings(max_examples=examples(10), deadline=None)
@given(
    roster=st.lists(
        st.sampled_from(["grim_trigger", "tit_for_tat", "random"]), min_size=2, max_size=4
    ).filter(lambda r: "grim_trigger" in r),
    tolerance=st.floats(0.0, 0.1),
    cheapest=st.floats(0.3, 1.0),
    spread=st.floats(0.05, 1.0),
    opening=st.floats(1.2, 2.5),
    seeds=st.tuples(st.integers(0, 2**16), st.integers(0, 2**16)),
)
def test_the_repeated_game_strategies_decide_alone_as_in_a_team_and_by_their_rule(
    roster, tolerance, cheapest, spread, opening, seeds
):
    """Grim triggers and tits for tat among random rivals (markups from `cheapest`, some
    below the monopoly price, some not), in two matches side by side, the second with the
    seats reversed: asked one by one from their Observations (as when hosted) they decide as
    they do together from the market's view, a grim trigger's memory included; and their
    prices follow their rules, read off the record: a grim trigger posts its monopoly price
    until the day after a rival first posts below its own monopoly price times (1 - tolerance),
    then its Nash price; a tit for tat its opening price, then yesterday's cheapest rival's."""
    scenario, days = load_scenario("calvano"), 25
    params = {
        "grim_trigger": {"tolerance": tolerance},
        "tit_for_tat": {"opening_price": opening},
        "random": {"min_markup": cheapest, "max_markup": cheapest + spread},
    }
    entries = {
        f"{kind}{i}": ContestantEntry(name=f"{kind}{i}", kind=kind, params=params[kind])
        for i, kind in enumerate(roster)
    }

    def matches() -> list[Match]:
        orders = [tuple(entries), tuple(reversed(entries))]
        specs = [
            MatchSpec(key=f"game-{b}", index=b, scenario=scenario.name, seed=seeds[b], days=days, seats=seats)
            for b, seats in enumerate(orders)
        ]
        return [
            Match(spec, scenario, MatchRules(seed=seeds[b]), plan_contestants(entries.values()))
            for b, spec in enumerate(specs)
        ]

    together = play_here(matches())
    with pytest.MonkeyPatch.context() as patch:
        for kind in params:
            patch.setattr(contestant_class(kind), "decides_from_view", False)
        alone = play_here(matches())
    benchmarks = equilibria(scenario, len(roster))["good"]
    for played, by_observation in zip(together, alone):
        assert list(played.days_played) == list(by_observation.days_played)
        assert played.faults == []
        seats = played.days_played.merchants  # in seat order
        posted = {
            name: [r.prices["good"] for r in played.days_played if r.merchant == name] for name in seats
        }
        for i, name in enumerate(seats):
            rivals = [
                (posted[other], benchmarks.monopoly.prices[k]) for k, other in enumerate(seats) if k != i
            ]
            if name.startswith("grim_trigger"):
                cheated = [
                    any(
                        price < monopoly * (1 - tolerance)
                        for prices, monopoly in rivals
                        for price in prices[: d - 1]
                    )
                    for d in range(1, days + 1)
                ]
                assert posted[name] == [
                    benchmarks.nash.prices[i] if c else benchmarks.monopoly.prices[i] for c in cheated
                ]
            elif name.startswith("tit_for_tat"):
                assert posted[name] == [opening] + [
                    min(prices[d] for prices, _ in rivals) for d in range(days - 1)
                ]
