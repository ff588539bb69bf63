"""Q-learning merchants in tournaments on Ray: each match's learners get the session their
lineup calls for (together, or each its self-play), the same as learnt here; their
convergence is stored with the metrics, shown, kept by rescore; scenarios they cannot
play are refused before anything runs."""

from __future__ import annotations

import textwrap

import pytest
from typer.testing import CliRunner

from arena.cli import app
from common.yaml_files import ConfigError
from contestants.qlearning import QLearningParams, Session, learn
from market.scenario import load_scenario
from results import rescoring
from results.records import PlayedScenarios
from results.storage import store
from results.storage.db import engine_for
from tournaments.load import load_tournament
from tournaments.run import run_tournament
from tournaments.schedule import repetition_seed

FAST = {"beta": 2e-4, "stable_periods": 2_000, "max_periods": 200_000}
OTHER = {**FAST, "alpha": 0.25}


@pytest.mark.usefixtures("ray_local")
def test_learners_in_a_tournament_learn_their_sessions_and_store_their_convergence(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(
        textwrap.dedent(
            f"""
            name: learners
            seed: 5
            scenarios: [calvano]
            repetitions: 2
            days: 6
            contestants:
              - {{name: q1, kind: qlearning, params: {FAST}}}
              - {{name: q2, kind: qlearning, params: {OTHER}}}
              - {{name: fixed, kind: fixed_price}}
            """
        )
    )
    db = f"sqlite:///{tmp_path}/t.db"
    engine = engine_for(db)
    tournament_id = run_tournament(load_tournament(path), engine).tournament_id
    params = {"q1": QLearningParams(**FAST), "q2": QLearningParams(**OTHER)}
    calvano = load_scenario("calvano")
    matches = store.list_matches(engine, tournament_id)
    assert len(matches) == 6
    for match in matches:
        seats = [r.merchant for r in store.match_detail(engine, match.id).results]
        seed = repetition_seed(5, match.seed)
        if "fixed" in seats:  # a learner meeting a rule brings its self-play
            expected = {
                name: Session(calvano, (params[name],) * 2, seed) for name in seats if name != "fixed"
            }
        else:  # learners alone learn together, in their seats
            expected = dict.fromkeys(seats, Session(calvano, tuple(params[name] for name in seats), seed))
        learnt = dict(zip(expected, learn(list(expected.values()))))
        stored = {(v.merchant, v.name): v.value for v in store.metrics(engine, match_id=match.id)}
        for name, session in learnt.items():
            assert stored[name, "learning_periods"] == session.periods
            assert stored[name, "converged"] == float(session.converged) == 1.0
        assert ("fixed", "converged") not in stored
    assert rescoring.rescore(engine, tournament_id, PlayedScenarios({})) == 6
    assert {
        (v.match_id, v.merchant, v.name)
        for v in store.metrics(engine, tournament_id)
        if v.name == "learning_periods"
    } == {(m.id, name, "learning_periods") for m in matches for name in ("q1", "q2") if name in m.key}
    shown = CliRunner().invoke(app, ["show", str(matches[0].id), "--db", db]).stdout
    assert "learning_periods" in shown and "converged" in shown


@pytest.mark.parametrize(
    "scenario, why",
    [
        ("multi_product", "learns the price game of one product"),
        ("price_war", "limits sales by stock"),
        (
            "dear.yaml",
            "above the market's ceiling 100 for good",
        ),  # p_M = 1 + m with m * 4 * share_0 = 1: about 498
    ],
)
def test_a_scenario_a_learner_cannot_play_is_refused_naming_the_contestant(tmp_path, scenario, why):
    # customers who value the good far above its reference price: its benchmarks lie above the ceiling
    (tmp_path / "dear.yaml").write_text(
        "name: dear\nproducts: [{id: good, unit_cost: 1, reference_price: 1, quality: 2, base_demand: 1}]\n"
        "choice: {price_sensitivity: 4, reputation_weight: 0, quality_weight: 1000, no_purchase_utility: 0}\n"
        "demand: {mode: expected, stock_limited: false}\n"
    )
    path = tmp_path / "t.yaml"
    path.write_text(
        textwrap.dedent(
            f"""
            name: refused
            scenarios: [calvano, {scenario}]
            contestants:
              - {{name: fixed, kind: fixed_price}}
              - {{name: q, kind: qlearning}}
            """
        )
    )
    with pytest.raises(ConfigError) as raised:
        load_tournament(path)
    assert (
        raised.value.field.startswith("contestants[1]")
        and f"cannot play scenario {scenario.removesuffix('.yaml')!r}" in raised.value.message
    )
    assert why in raised.value.message
