"""Plain play: a match of rule merchants alone is played from the market's arrays (Positions
and PlainDecisions), and must come out exactly as the same match played from Observations."""

from __future__ import annotations

import pytest

from contestants.base import contestant_class, kinds
from contestants.baselines import RuleMerchant
from tournaments.config import ContestantEntry, load_scenario
from tournaments.match import Match, MatchRules
from tournaments.schedule import MatchSpec

INSTANT = ["fixed_price", "reorder_point", "undercut", "cost_plus", "random"]
SCENARIOS = ["price_war", "multi_product", "seasonal", "logit_game"]


def play(scenario, kinds_in_seats: list[str]):
    entries = {f"{kind}{i}": ContestantEntry(name=f"{kind}{i}", kind=kind) for i, kind in enumerate(kinds_in_seats)}
    spec = MatchSpec(key=f"plain-{scenario.name}", index=0, scenario=scenario.name, seed=3, days=scenario.days, seats=tuple(entries))
    return Match(spec, scenario, MatchRules(seed=11, timeout_s=5.0, recall_every=3), entries, hosts={}).play_here()


def test_the_instant_kinds_play_plain_and_the_others_do_not():
    assert all(contestant_class(kind).plain for kind in INSTANT)
    # rule merchants that read observations or change decide; language models
    assert not any(contestant_class(kind).plain for kind in ("best_response", "latency", "chaos"))
    assert issubclass(contestant_class("best_response"), RuleMerchant)
    assert not any(cls.plain for cls in kinds().values() if not issubclass(cls, RuleMerchant))


@pytest.mark.parametrize("name", SCENARIOS)
def test_plain_play_is_observation_play(root, monkeypatch, name):
    scenario = load_scenario(root / "scenarios" / f"{name}.yaml")
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
