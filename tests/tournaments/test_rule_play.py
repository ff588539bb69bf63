"""Rule merchants inline decide together from the market's view, and must come out exactly
as the same merchants asked one by one from their Observations (as when hosted); matches of
them alone are played side by side, each exactly as alone."""

from __future__ import annotations

import io
from typing import ClassVar

import numpy as np
import pytest

from contestants.baselines import CostPlus, RuleMerchant
from contestants.kinds import contestant_class, kinds, register_kind
from market.scenario import load_scenario
from results.daylog_codec import pack
from tournaments.config import ContestantEntry
from tournaments.match import Match, MatchRules, play_here
from tournaments.runner import group_instant
from tournaments.schedule import MatchSpec

INSTANT = ["fixed_price", "reorder_point", "undercut", "cost_plus", "random", "best_response"]


class Moody(CostPlus):
    """cost_plus, except that its rule raises on even days."""

    kind: ClassVar[str] = "moody_for_tests"

    @classmethod
    def rule(cls, team, view):
        if view.day % 2 == 0:
            raise RuntimeError("even day")
        return super().rule(team, view)


register_kind(Moody.kind, f"{__name__}:Moody")
SCENARIOS = ["price_war", "multi_product", "seasonal", "logit_game"]


def play(scenario, kinds_in_seats: list[str]):
    entries = {f"{kind}{i}": ContestantEntry(name=f"{kind}{i}", kind=kind) for i, kind in enumerate(kinds_in_seats)}
    spec = MatchSpec(key=f"rules-{scenario.name}", index=0, scenario=scenario.name, seed=3, days=scenario.days, seats=tuple(entries))
    return play_here([Match(spec, scenario, MatchRules(seed=11, recall_every=3), entries, hosts={})])[0]


def test_the_rule_kinds_decide_from_the_view_but_those_that_misbehave_on_purpose():
    assert all(contestant_class(kind).decides_from_view for kind in INSTANT)
    assert not any(contestant_class(kind).decides_from_view for kind in ("latency", "chaos"))
    built_in = [cls for cls in kinds().values() if cls.__module__.startswith("contestants.")]  # not the tests' own kinds
    assert all(issubclass(cls, RuleMerchant) == cls.remembers_the_record for cls in built_in)
    assert not any(cls.decides_from_view for cls in built_in if not issubclass(cls, RuleMerchant))


@pytest.mark.parametrize("name", SCENARIOS)
def test_deciding_from_the_view_is_deciding_from_observations(monkeypatch, name):
    scenario = load_scenario(name)
    seats = [*INSTANT, "random", "cost_plus", "best_response"]  # one undercut: it becomes the cheapest, and must not undercut itself
    by_view = play(scenario, seats)
    for kind in INSTANT:
        monkeypatch.setattr(contestant_class(kind), "decides_from_view", False)
    observed = play(scenario, seats)

    assert list(by_view.days_played) == list(observed.days_played)
    assert by_view.probes == observed.probes and by_view.probes
    assert all(p.relative_error == 0.0 for p in by_view.probes)  # their books are the records
    assert by_view.merchants == observed.merchants
    assert by_view.metrics == observed.metrics
    moved = {r.merchant for r in by_view.days_played if any(op["op"] == "set_price" for op in r.operations)}
    assert any(m.startswith("undercut") for m in moved) and any(m.startswith("random") for m in moved)


def test_a_rule_that_raises_is_a_fault_and_does_nothing_that_day_as_when_asked_alone(monkeypatch):
    """Merchants whose kind's rule raises do nothing that day and each gets a fault, in the
    market's view as when asked one by one from observations; the others play on."""
    scenario = load_scenario("multi_product")
    seats = ["moody_for_tests", "random", "moody_for_tests", "undercut"]
    by_view = play(scenario, seats)
    for kind in ("moody_for_tests", "random", "undercut"):
        monkeypatch.setattr(contestant_class(kind), "decides_from_view", False)
    observed = play(scenario, seats)

    assert list(by_view.days_played) == list(observed.days_played)
    assert by_view.faults == observed.faults
    moody = [r for r in by_view.days_played if r.merchant.startswith("moody")]
    assert {(f.merchant, f.day) for f in by_view.faults} == {(r.merchant, r.day) for r in moody if r.day % 2 == 0}
    assert all(r.operations == [] for r in moody if r.day % 2 == 0) and any(r.operations for r in moody if r.day % 2)
    assert all(r.operations for r in by_view.days_played if r.merchant.startswith("random"))


@pytest.mark.parametrize("name", SCENARIOS)
def test_matches_side_by_side_come_out_as_each_alone(name):
    """Several matches in one set of arrays: different seeds, seats and kinds, some merchants
    going bankrupt; each must equal the same match played alone."""
    scenario = load_scenario(name)
    rosters = [INSTANT, ["random", "undercut", "undercut", "best_response", "cost_plus", "random"], ["fixed_price"] * 2 + ["random"] * 3 + ["best_response"]]
    # a merchant that spends its cash on stock it cannot sell goes bankrupt early
    params = {"fixed_price": {"price": scenario.products[0].reference_price * 60, "reorder_level": 400, "target_stock": 900}}
    entries = {f"{kind}{i}": ContestantEntry(name=f"{kind}{i}", kind=kind, params=params.get(kind, {})) for roster in rosters for i, kind in enumerate(roster)}

    def match(index: int) -> Match:
        seats = tuple(f"{kind}{i}" for i, kind in enumerate(rosters[index]))
        spec = MatchSpec(key=f"side-{index}", index=index, scenario=scenario.name, seed=index, days=scenario.days, seats=seats)
        return Match(spec, scenario, MatchRules(seed=5, recall_every=4), entries, hosts={})

    together = play_here([match(i) for i in range(len(rosters))])
    for index, played in enumerate(together):
        alone = play_here([match(index)])[0]
        assert list(played.days_played) == list(alone.days_played)
        stored = np.load(io.BytesIO(pack(played.days_played).columns))
        assert all(stored[name].flags.c_contiguous for name in stored.files)  # in the order older versions wrote, so alike matches store alike bytes
        assert (played.merchants, played.probes, played.metrics, played.faults) == (alone.merchants, alone.probes, alone.metrics, alone.faults)
    assert len({tuple(r.cash_end for r in m.days_played) for m in together}) == len(rosters)  # three different matches
    if scenario.demand.stock_limited:
        assert any(r.bankrupt for m in together for r in m.days_played)


def test_instant_matches_are_grouped_by_scenario_length_and_size():
    entries = {name: ContestantEntry(name=name, kind=kind) for name, kind in [("f", "fixed_price"), ("u", "undercut"), ("r", "random"), ("l", "latency")]}

    def spec(index: int, scenario: str, seats: tuple[str, ...], days: int = 30) -> MatchSpec:
        return MatchSpec(key=f"k{index}", index=index, scenario=scenario, seed=index, days=days, seats=seats)

    plan = [spec(i, "a", ("f", "u")) for i in range(7)] + [spec(7, "b", ("f", "u")), spec(8, "a", ("f", "u", "r")), spec(9, "a", ("f", "l")), spec(10, "a", ("u", "f"), days=20)]
    groups = group_instant(plan, entries, max_concurrent=8, cpus=2)  # at most 4 a group
    assert [[m.index for m in g] for g in groups] == [[0, 1, 2, 3], [4, 5, 6], [7], [8], [9], [10]]
    assert [len(g) for g in group_instant(plan, entries, max_concurrent=1024, cpus=1)][0] == 7  # up to GROUP_LIMIT
    assert all(len(g) == 1 for g in group_instant(plan, entries, max_concurrent=2, cpus=2))
