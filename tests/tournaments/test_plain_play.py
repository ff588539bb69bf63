"""Plain play: a match of rule merchants alone is played from the market's arrays (Positions
and PlainDecisions), and must come out exactly as the same match played from Observations."""

from __future__ import annotations

import pytest

from contestants.baselines import RuleMerchant
from contestants.kinds import contestant_class, kinds
from market.scenario import load_scenario
from tournaments.config import ContestantEntry
from tournaments.match import Match, MatchRules, play_side_by_side
from tournaments.runner import group_instant
from tournaments.schedule import MatchSpec

INSTANT = ["fixed_price", "reorder_point", "undercut", "cost_plus", "random"]
SCENARIOS = ["price_war", "multi_product", "seasonal", "logit_game"]


def play(scenario, kinds_in_seats: list[str]):
    entries = {f"{kind}{i}": ContestantEntry(name=f"{kind}{i}", kind=kind) for i, kind in enumerate(kinds_in_seats)}
    spec = MatchSpec(key=f"plain-{scenario.name}", index=0, scenario=scenario.name, seed=3, days=scenario.days, seats=tuple(entries))
    return Match(spec, scenario, MatchRules(seed=11, recall_every=3), entries, hosts={}).play_here()


def test_the_instant_kinds_play_plain_and_the_others_do_not():
    assert all(contestant_class(kind).plain for kind in INSTANT)
    # rule merchants that read observations or change decide; language models
    assert not any(contestant_class(kind).plain for kind in ("best_response", "latency", "chaos"))
    assert issubclass(contestant_class("best_response"), RuleMerchant)
    assert not any(getattr(cls, "plain", False) for cls in kinds().values() if not issubclass(cls, RuleMerchant))


@pytest.mark.parametrize("name", SCENARIOS)
def test_plain_play_is_observation_play(monkeypatch, name):
    scenario = load_scenario(name)
    seats = [*INSTANT, "random", "cost_plus", "fixed_price"]  # one undercut: it becomes the cheapest, and must not undercut itself
    plain = play(scenario, seats)
    for kind in INSTANT:
        monkeypatch.setattr(contestant_class(kind), "plain", False)
    observed = play(scenario, seats)

    assert list(plain.days_played) == list(observed.days_played)
    assert plain.probes == observed.probes and plain.probes
    assert all(p.relative_error == 0.0 for p in plain.probes)  # their books are the records
    assert plain.merchants == observed.merchants
    assert plain.metrics == observed.metrics
    moved = {r.merchant for r in plain.days_played if any(op["op"] == "set_price" for op in r.operations)}
    assert any(m.startswith("undercut") for m in moved) and any(m.startswith("random") for m in moved)


@pytest.mark.parametrize("name", SCENARIOS)
def test_matches_side_by_side_come_out_as_each_alone(name):
    """Several matches in one set of arrays: different seeds, seats and kinds, some merchants
    going bankrupt; each must equal the same match played alone."""
    scenario = load_scenario(name)
    rosters = [INSTANT, ["random", "undercut", "undercut", "cost_plus", "random"], ["fixed_price"] * 2 + ["random"] * 3]
    # a merchant that spends its cash on stock it cannot sell goes bankrupt early
    params = {"fixed_price": {"price": scenario.products[0].reference_price * 60, "reorder_level": 400, "target_stock": 900}}
    entries = {f"{kind}{i}": ContestantEntry(name=f"{kind}{i}", kind=kind, params=params.get(kind, {})) for roster in rosters for i, kind in enumerate(roster)}

    def match(index: int) -> Match:
        seats = tuple(f"{kind}{i}" for i, kind in enumerate(rosters[index]))
        spec = MatchSpec(key=f"side-{index}", index=index, scenario=scenario.name, seed=index, days=scenario.days, seats=seats)
        return Match(spec, scenario, MatchRules(seed=5, recall_every=4), entries, hosts={})

    together = play_side_by_side([match(i) for i in range(len(rosters))])
    for index, played in enumerate(together):
        alone = match(index).play_here()
        assert list(played.days_played) == list(alone.days_played)
        assert (played.merchants, played.probes, played.metrics, played.faults) == (alone.merchants, alone.probes, alone.metrics, alone.faults)
    assert len({tuple(r.cash_end for r in m.days_played) for m in together}) == len(rosters)  # three different matches
    if scenario.demand.stock_limited:
        assert any(r.bankrupt for m in together for r in m.days_played)


def test_instant_matches_are_grouped_by_scenario_length_and_size():
    entries = {name: ContestantEntry(name=name, kind=kind) for name, kind in [("f", "fixed_price"), ("u", "undercut"), ("r", "random"), ("b", "best_response")]}

    def spec(index: int, scenario: str, seats: tuple[str, ...], days: int = 30) -> MatchSpec:
        return MatchSpec(key=f"k{index}", index=index, scenario=scenario, seed=index, days=days, seats=seats)

    plan = [spec(i, "a", ("f", "u")) for i in range(7)] + [spec(7, "b", ("f", "u")), spec(8, "a", ("f", "u", "r")), spec(9, "a", ("f", "b")), spec(10, "a", ("u", "f"), days=20)]
    groups = group_instant(plan, entries, max_concurrent=8, cpus=2)  # at most 4 a group
    assert [[m.index for m in g] for g in groups] == [[0, 1, 2, 3], [4, 5, 6], [7], [8], [9], [10]]
    assert [len(g) for g in group_instant(plan, entries, max_concurrent=1024, cpus=1)][0] == 7  # up to GROUP_LIMIT
    assert all(len(g) == 1 for g in group_instant(plan, entries, max_concurrent=2, cpus=2))
