"""Metrics stored with the match, read back per tournament or match, and recomputed."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from market.scenario import Scenario
from results.recording import save_match
from results.records import Fault, MetricNote, PlayedScenarios
from results.rescoring import rescore
from results.scoring.metrics import METRICS, compute
from results.settings import CollusionSettings
from results.storage.schema import DayLogRow, MetricRow
from results.storage.store import MetricValue, NotFound, match_detail, metrics, start_tournament

NONE = PlayedScenarios({})  # no scenario: the metrics that need one are left empty

CORNER_SHOP = Scenario(
    name="corner-shop",
    products=[{"id": "tea", "unit_cost": 2.0, "reference_price": 5.0, "base_demand": 30}],
    target_net_worth=2000.0,
)


def _metric_count(engine) -> int:
    with Session(engine) as session:
        return session.exec(select(func.count()).select_from(MetricRow)).one()


def test_saved_match_carries_its_metrics(engine, tournament, make_match):
    match = make_match("rr-0", 0, {"alpha": 1, "beta": 2})
    match_id = save_match(engine, tournament, match, scenario=CORNER_SHOP)

    stored = metrics(engine, tournament)
    computed = compute(match.days_played, match.recalls, match.faults, CORNER_SHOP)
    expected, notes = computed.merchants, {(n.merchant, n.name): n.note for n in computed.notes}
    assert stored == [
        MetricValue(match_id, seat, contestant, name, expected[seat][name], notes.get((seat, name)))
        for seat, contestant in (("m0", "alpha"), ("m1", "beta"))
        for name in METRICS
    ]
    assert notes  # its two seats' benchmarks are too close for a profit_gain: stored as why
    assert metrics(engine, match_id=match_id) == stored
    values = {(v.contestant, v.name): v.value for v in stored}
    assert values["alpha", "validity_rate"] == pytest.approx(2 / 3)  # two operations and one rejection a day
    assert values["beta", "memory_error"] is None  # no recall questions asked
    assert values["alpha", "fault_days"] == 1
    assert values["alpha", "goal_completion"] is not None


def test_the_reasons_stored_are_those_of_the_metrics_stored(engine, tournament, make_match):
    """Reasons given with the match's metrics are stored; where its metrics are computed as it is
    saved, or come without reasons, the computed ones' are (any given would be of other values)."""
    match = make_match("rr-0", 0, {"alpha": 1, "beta": 2})
    computed = compute(match.days_played, match.recalls, match.faults, CORNER_SHOP)
    given = [MetricNote(merchant="m0", name="memory_error", note="as given")]
    saved = {
        "with its metrics": (match.model_copy(update={"metrics": computed.merchants, "notes": given}), given),
        "without metrics": (match.model_copy(update={"notes": given}), computed.notes),
        "without reasons": (match.model_copy(update={"metrics": computed.merchants}), computed.notes),
    }
    for index, (how, (finished, reasons)) in enumerate(saved.items()):
        match_id = save_match(
            engine, tournament, finished.model_copy(update={"key": how, "index": index}), scenario=CORNER_SHOP
        )
        stored = {(v.merchant, v.name): v.note for v in metrics(engine, match_id=match_id) if v.note}
        assert stored == {(n.merchant, n.name): n.note for n in reasons if n.merchant}, how
    assert computed.notes and given[0].name not in {n.name for n in computed.notes}  # the two differ


def test_metrics_without_the_scenario_leave_its_metrics_empty(engine, tournament, make_match):
    save_match(engine, tournament, make_match("rr-0", 0, {"alpha": 1, "beta": 2}))
    values = {(v.merchant, v.name): v.value for v in metrics(engine, tournament)}
    assert values["m0", "goal_completion"] is None
    assert values["m0", "validity_rate"] is not None


def test_metrics_of_one_tournament_only(engine, tournament, make_match):
    other = start_tournament(engine, "other", "o.yaml", "", "hash-o", 1, [("alpha", "rule", {})], 1)
    save_match(engine, tournament, make_match("rr-0", 0, {"alpha": 1, "beta": 2}))
    save_match(engine, other, make_match("o-0", 0, {"alpha": 1, "gamma": 2, "beta": 3}))
    assert {v.contestant for v in metrics(engine, tournament)} == {"alpha", "beta"}
    assert {v.contestant for v in metrics(engine, other)} == {"alpha", "beta", "gamma"}
    assert len(metrics(engine)) == 5 * len(METRICS)
    with pytest.raises(NotFound):
        metrics(engine, 999)
    with pytest.raises(NotFound):
        metrics(engine, match_id=999)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_failed_save_leaves_no_metrics(engine, tournament, make_match):
    broken = Fault.model_construct(day=1, merchant="m0", kind="error", detail=None)
    with pytest.raises(IntegrityError):
        save_match(engine, tournament, make_match("rr-0", 0, {"alpha": 1, "beta": 2}, faults=[broken]))
    assert _metric_count(engine) == 0


def test_a_match_saved_twice_keeps_one_set_of_metrics(engine, tournament, make_match):
    save_match(engine, tournament, make_match("rr-0", 0, {"alpha": 1, "beta": 2}))
    save_match(engine, tournament, make_match("rr-0", 0, {"alpha": 1, "beta": 2}))
    assert _metric_count(engine) == 2 * len(METRICS)


def test_rescore_recomputes_from_the_stored_records(engine, tournament, make_match):
    first = save_match(engine, tournament, make_match("rr-0", 0, {"alpha": 1, "beta": 2}))
    second = save_match(engine, tournament, make_match("rr-1", 1, {"alpha": 2, "beta": 1}))
    saved = metrics(engine, tournament)
    with Session(engine) as session:  # a stale value and a missing row, as after a formula change
        session.exec(update(MetricRow).where(MetricRow.name == "validity_rate").values(value=0.0))
        session.exec(
            MetricRow.__table__.delete().where(MetricRow.match_id == second, MetricRow.name == "profit")
        )
        session.commit()

    assert rescore(engine, tournament, NONE) == 2
    assert metrics(engine, tournament) == saved

    assert (
        rescore(
            engine, tournament, PlayedScenarios({"": ({"corner-shop": CORNER_SHOP}, CollusionSettings())})
        )
        == 2
    )
    values = {(v.match_id, v.merchant, v.name): v.value for v in metrics(engine, tournament)}
    assert values[first, "m0", "goal_completion"] is not None
    assert _metric_count(engine) == 4 * len(METRICS)


def test_rescore_reads_the_stored_days(engine, tournament, make_match):
    match_id = save_match(
        engine, tournament, make_match("rr-0", 0, {"alpha": 1, "beta": 2})
    )  # plan 5 on day 1, price 4.5
    assert [v.value for v in metrics(engine, tournament) if v.name == "plan_drift"] == [
        pytest.approx(0.1)
    ] * 2
    with Session(engine) as session:  # the stored days now state no plan
        row = session.get(DayLogRow, match_id)
        decisions = json.loads(row.decisions)
        row.decisions = json.dumps({**decisions, "plans": [{} for _ in decisions["plans"]]})
        session.add(row)
        session.commit()

    assert all(record.plan == {} for record in match_detail(engine, match_id).days)
    assert rescore(engine, tournament, NONE) == 1
    assert [v.value for v in metrics(engine, tournament) if v.name == "plan_drift"] == [None] * 2
