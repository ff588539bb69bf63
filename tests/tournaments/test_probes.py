"""Memory probes: asked on schedule, about the merchant's own past, scored against the record."""

from __future__ import annotations

from typing import ClassVar

import pytest

from contestants.base import Params, RecallProbe, register
from contestants.baselines import FixedPrice, FixedPriceParams
from tournaments.config import ContestantEntry, load_tournament
from tournaments.match import Match, MatchRules
from tournaments.schedule import MatchSpec


@register
class Forgetful(FixedPrice):
    """Remembers cash 10% too high and nothing else."""

    kind: ClassVar[str] = "forgetful_for_tests"
    params_model: ClassVar[type[Params]] = FixedPriceParams

    def recall(self, probe: RecallProbe) -> float | None:
        if probe.fact != "cash":
            return None
        value = super().recall(probe)
        return None if value is None else value * 1.1


@pytest.fixture(scope="module")
def multi_product(root):
    return load_tournament(root / "tournaments" / "round_robin.yaml").scenarios["multi_product"]


def play(scenario, recall_every: int, kinds=("fixed_price", "forgetful_for_tests"), days: int = 24):
    entries = {f"m{i}": ContestantEntry(name=f"m{i}", kind=kind) for i, kind in enumerate(kinds)}
    spec = MatchSpec(key="probe-test", index=0, scenario=scenario.name, seed=1, days=days, seats=tuple(entries))
    return Match(spec, scenario, MatchRules(seed=4, timeout_s=1.0, recall_every=recall_every), entries, hosts={}).play_here()


def test_probes_follow_the_schedule_and_the_record(multi_product):
    match = play(multi_product, recall_every=4)
    assert sorted({p.day for p in match.probes}) == [4, 8, 12, 16, 20, 24]
    records = {(r.merchant, r.day): r for r in match.days_played}
    for probe in match.probes:
        assert 1 <= probe.asked_day <= probe.day - 2  # never yesterday: that is in today's observation
        record = records[(probe.merchant, probe.asked_day)]
        truth = {"cash": record.cash_end}.get(probe.fact)
        if truth is None:
            table = {"inventory": record.inventory, "price": record.prices, "ordered": record.ordered}[probe.fact]
            truth = table[probe.product]
        assert probe.truth == truth
    # both merchants get the same question on a probe day
    by_day = {}
    for probe in match.probes:
        by_day.setdefault(probe.day, set()).add((probe.asked_day, probe.fact, probe.product))
    assert all(len(questions) == 1 for questions in by_day.values())
    assert len({q for qs in by_day.values() for q in qs}) > 1  # and the questions vary


def test_errors_are_relative_and_missing_answers_are_none(multi_product):
    match = play(multi_product, recall_every=2, days=40)
    exact = [p for p in match.probes if p.merchant == "m0"]
    assert exact and all(p.relative_error == 0.0 for p in exact)
    forgetful = [p for p in match.probes if p.merchant == "m1"]
    cash = [p for p in forgetful if p.fact == "cash"]
    other = [p for p in forgetful if p.fact != "cash"]
    assert cash and other
    for p in cash:
        assert p.relative_error == pytest.approx(0.1 * abs(p.truth) / max(abs(p.truth), 1.0))
    assert all(p.answer is None and p.relative_error is None for p in other)


def test_recall_every_zero_asks_nothing_and_probes_do_not_change_play(multi_product):
    silent, probed = play(multi_product, recall_every=0), play(multi_product, recall_every=3)
    assert silent.probes == []
    assert [r.cash_end for r in silent.days_played] == [r.cash_end for r in probed.days_played]
