"""Deviation probes played through the real market: the deviated path replays the match up to
the deviation, forces the seat's prices as asked, and the measures compare the paths; fifty
sessions of Calvano et al.'s learners collude as much as the paper reports and answer a
deviation as its impulse responses do.

Prices and profits are derived here by hand from the calvano market's logit (a = 2, a_0 = 0,
mu = 1/4, c = 1, one customer a day) or by a grid search, not from the solver under test."""

from __future__ import annotations

import math
import statistics
import textwrap

import numpy as np
import pytest
import yaml

from common.yaml_files import ConfigError
from market.engine import Market
from market.scenario import load_scenario
from results import rescoring
from results.records import PlayedScenarios
from results.settings import CollusionSettings, DeviationProbe
from results.storage import store
from results.storage.db import engine_for
from tournaments.config import ContestantEntry
from tournaments.load import load_tournament
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_contestants
from tournaments.run import run_tournament
from tournaments.schedule import MatchSpec

CALVANO = load_scenario("calvano")
DAYS = 8


def calvano_profit(price: float, rival: float) -> float:
    """(p - c) q with q = exp((a - p)/mu) / (exp((a - p)/mu) + exp((a - p_r)/mu) + exp(a_0/mu))."""

    def weight(p: float) -> float:
        return math.exp((2.0 - p) / 0.25)

    return (price - 1.0) * weight(price) / (weight(price) + weight(rival) + 1.0)


def spec(key: str, seats: tuple[str, ...]) -> MatchSpec:
    return MatchSpec(key=key, index=0, scenario="calvano", seed=1, days=DAYS, seats=seats)


ENTRIES = {
    "fixed": ContestantEntry(name="fixed", kind="fixed_price", params={"price": 1.8}),
    "tft": ContestantEntry(name="tft", kind="tit_for_tat"),
    "br": ContestantEntry(name="br", kind="best_response"),
}


def probed(probe: DeviationProbe, seats=("fixed", "tft"), key: str = "probe"):
    played = play_here(
        [
            Match(
                spec(key, seats),
                CALVANO,
                MatchRules(seed=2, deviation=probe),
                plan_contestants(ENTRIES.values()),
            )
        ]
    )[0]
    assert played.faults == [] and played.deviation is not None and played.deviation.faults == []
    return played


def prices(days, merchant: str) -> list[float]:
    return [r.prices["good"] for r in days if r.merchant == merchant]


def test_a_forced_cut_is_copied_by_tit_for_tat_the_next_day_and_both_are_back_the_day_after():
    played = probed(DeviationProbe(day=3, seat=0, to=1.3))
    on_path, deviated = played.days_played, played.deviation.days_played
    assert prices(on_path, "fixed") == [1.8] * DAYS and prices(on_path, "tft") == [
        CALVANO.products[0].start_price
    ] + [1.8] * (DAYS - 1)
    assert prices(deviated, "fixed") == [1.8, 1.8, 1.3] + [1.8] * (DAYS - 3)
    assert prices(deviated, "tft") == prices(on_path, "tft")[:3] + [1.3] + [1.8] * (DAYS - 4)
    assert list(deviated)[:4] == list(on_path)[:4]  # days 1 and 2, both merchants: the same records
    # the forced merchant decided as on path that day; only its price was forced
    assert [r.operations for r in deviated if r.day == 3] == [r.operations for r in on_path if r.day == 3]
    m = played.metrics
    assert m["tft"]["rival_response"] == pytest.approx((1.3 - 1.8) / 1.8)
    assert (m["tft"]["recovery_days"], m["fixed"]["recovery_days"]) == (1.0, 0.0)
    assert m["tft"]["prefix_replayed"] == m["fixed"]["prefix_replayed"] == 1.0
    # its discounted profit from day 3: on path (1.8 vs 1.8) every day; deviated, 1.3 vs 1.8, then 1.8 vs 1.3
    same = calvano_profit(1.8, 1.8)
    path = sum(0.95**k * same for k in range(DAYS - 2))
    dev = (
        calvano_profit(1.3, 1.8)
        + 0.95 * calvano_profit(1.8, 1.3)
        + sum(0.95**k * same for k in range(2, DAYS - 2))
    )
    assert m["fixed"]["deviation_profitable"] == float(dev > path)
    assert "deviation_profitable" not in m["tft"] and "rival_response" not in m["fixed"]


def test_the_best_response_deviation_is_the_price_that_pays_most_against_the_rival_that_day():
    played = probed(DeviationProbe(day=4, seat=1, to="best_response", days=2), seats=("fixed", "br"))
    deviated = played.deviation.days_played
    grid = np.linspace(1.0, 3.0, 200_001)
    for day in (4, 5):
        rival = prices(deviated, "fixed")[day - 1]
        best = grid[np.argmax([calvano_profit(p, rival) for p in grid])]
        assert prices(deviated, "br")[day - 1] == pytest.approx(best, abs=2e-5)
    assert prices(deviated, "br")[:3] == prices(played.days_played, "br")[:3]


def test_the_nash_deviation_posts_the_published_nash_price():
    played = probed(DeviationProbe(day=2, seat=0, to="nash"))
    assert prices(played.deviation.days_played, "fixed")[1] == pytest.approx(
        1.47293, abs=1e-5
    )  # Calvano et al.'s p_N


def test_probed_matches_side_by_side_come_out_as_each_alone():
    probe = DeviationProbe(day=3, seat=1, to=1.2, days=2)
    rules = MatchRules(seed=2, deviation=probe)
    rosters = [("fixed", "tft"), ("tft", "br"), ("br", "fixed")]
    together = play_here(
        [
            Match(spec(f"k{i}", seats), CALVANO, rules, plan_contestants(ENTRIES.values()))
            for i, seats in enumerate(rosters)
        ]
    )
    for i, seats in enumerate(rosters):
        alone = play_here([Match(spec(f"k{i}", seats), CALVANO, rules, plan_contestants(ENTRIES.values()))])[
            0
        ]
        assert list(together[i].days_played) == list(alone.days_played)
        assert list(together[i].deviation.days_played) == list(alone.deviation.days_played)
        assert together[i].metrics == alone.metrics


def test_the_market_caps_a_forced_price_at_the_ceiling_and_keeps_the_day_s_other_operations():
    scenario = load_scenario("price_war")
    market = Market(scenario, [("a", "b")])
    market.reset([0])
    ceiling = [p.price_ceiling for p in scenario.products]
    order = {"operations": [{"op": "order", "product": scenario.products[0].id, "quantity": 3}]}
    market.advance(decisions={0: order}, forced={0: lambda posted: np.full(posted.shape[1], 1e9)})
    record = market.logs[0].build().records()[0]
    assert list(record.prices.values()) == ceiling
    assert record.ordered[scenario.products[0].id] == 3


# ---- Calvano et al.'s impulse response, over fifty sessions ----------------------------------


@pytest.fixture(scope="module")
def learners(tmp_path_factory, ray_local):
    """The fifty sessions in two tasks of 25 on the tests' two CPUs (max_concurrent_matches: 50;
    by default, thirteen of four), each group's sessions learnt in one kernel call: the same
    results (test_probed_matches_side_by_side_come_out_as_each_alone), fewer task round trips.
    Forty days, the deviation on day 20: the learners have converged before the match, so its
    days repeat their limit cycle, and the twenty days after the deviation are twice the ten
    within which the learners are asked to be back."""
    folder = tmp_path_factory.mktemp("impulse")
    config = folder / "impulse.yaml"
    config.write_text(
        textwrap.dedent(
            """\
            name: impulse
            seed: 2020
            scenarios: [calvano]
            repetitions: 50
            max_concurrent_matches: 50
            days: 40
            recall_every: 0
            contestants:
              - {name: q1, kind: qlearning}
              - {name: q2, kind: qlearning}
            deviation: {day: 20, seat: 0, to: best_response}
            """
        )
    )
    engine = engine_for(f"sqlite:///{folder / 'impulse.db'}")
    tournament = run_tournament(load_tournament(config), engine).tournament_id
    return engine, tournament


def test_two_default_learners_over_fifty_sessions_collude_as_much_as_calvano_et_al_report(learners):
    """Calvano et al.'s baseline (AER 2020, table 1): over 1,000 sessions the mean profit gain
    is 0.849 with a standard deviation of 0.113 across sessions, and every session converges.
    A mean over 50 sessions has a standard error of about 0.016; within 0.06 is four of them.
    (The probe plays a second path; the path played is the match without it, see
    test_probed_matches_side_by_side_come_out_as_each_alone and the rule tests above.)"""
    engine, tournament = learners
    values: dict[str, list[float]] = {}
    for value in store.metrics(engine, tournament):
        values.setdefault(value.name, []).append(value.value)
    assert len(values["profit_gain"]) == 100 and len(values["converged"]) == 100
    assert sum(values["converged"]) >= 95
    assert sum(values["profit_gain"]) / 100 == pytest.approx(0.849, abs=0.06)


def measures(engine, tournament) -> dict[str, list[float | None]]:
    found: dict[str, list[float | None]] = {}
    for value in store.metrics(engine, tournament):
        if value.name in ("rival_response", "recovery_days", "deviation_profitable", "prefix_replayed"):
            found.setdefault(value.name, []).append(value.value)
    return found


def test_learners_punish_a_one_day_deviation_to_the_best_response_and_it_does_not_pay(learners):
    engine, tournament = learners
    found = measures(engine, tournament)
    assert len(found["rival_response"]) == len(found["deviation_profitable"]) == 50
    assert statistics.mean(found["rival_response"]) < 0  # the rival cuts its price the day after
    assert sum(found["deviation_profitable"]) < 25  # most deviations do not pay
    assert found["prefix_replayed"] == [1.0] * 100  # learners replay exactly up to the deviation
    recovered = [days for days in found["recovery_days"] if days is not None]
    assert len(recovered) >= 75 and statistics.median(recovered) <= 10  # both back within about ten days
    detail = store.match_detail(engine, store.list_matches(engine, tournament)[0].id)
    assert (
        detail.deviation is not None
        and detail.deviation.probe.day == 20
        and len(detail.deviation.days_played) == 80
    )


def test_rescoring_computes_the_deviation_measures_again_from_the_stored_paths(learners):
    engine, tournament = learners
    before = measures(engine, tournament)
    rescoring.rescore(engine, tournament, PlayedScenarios({"": ({"calvano": CALVANO}, CollusionSettings())}))
    assert measures(engine, tournament) == before


# ---- the file's mistakes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("probe", "field", "says"),
    [
        ("{day: 10, seat: 0}", "deviation.day", "must end before the last"),
        ("{day: 8, days: 3, seat: 0}", "deviation.days", "must end before the last"),
        ("{day: 3, seat: 2}", "deviation.seat", "not in matches of 2"),
        ("{day: 3, to: 1000}", "deviation.to", "above"),
        ("{day: 3, to: cartel}", "deviation.to", ""),
        ("{day: 3, hold: 2}", "deviation.hold", ""),
    ],
)
def test_a_probe_the_matches_cannot_play_is_refused_naming_its_field(tmp_path, probe, field, says):
    config = tmp_path / "t.yaml"
    config.write_text(
        "name: t\nscenarios: [calvano]\ndays: 10\n"
        "contestants: [{name: a, kind: fixed_price}, {name: b, kind: random}]\n"
        f"deviation: {probe}\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_tournament(config)
    assert caught.value.field == field and says in caught.value.message


def test_best_response_needs_a_price_game(tmp_path):
    scenario = CALVANO.model_dump(mode="json")
    scenario["name"], scenario["choice"]["price_sensitivity"] = "flat", 0.0
    (tmp_path / "flat.yaml").write_text(yaml.safe_dump(scenario))
    config = tmp_path / "t.yaml"
    config.write_text(
        "name: t\nscenarios: [flat]\ndays: 10\n"
        "contestants: [{name: a, kind: fixed_price}, {name: b, kind: random}]\n"
        "deviation: {day: 3}\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_tournament(config)
    assert caught.value.field == "deviation.to" and "price_sensitivity 0" in caught.value.message


# ---- what the probe must not change, and what it costs ---------------------------------------


def test_a_probe_leaves_the_path_played_as_it_is_without_one():
    learners = {
        f"q{i}": ContestantEntry(
            name=f"q{i}",
            kind="qlearning",
            params={"beta": 2e-4, "stable_periods": 2000, "max_periods": 200_000, "learn": learn},
        )
        for i, learn in enumerate(("frozen", "online"))
    }
    entries = {**ENTRIES, **learners}
    rosters = [("q0", "q1"), ("q1", "tft"), ("fixed", "q0")]
    probe = DeviationProbe(day=3, seat=1, to="best_response", days=2)
    for i, seats in enumerate(rosters):
        without = play_here(
            [Match(spec(f"k{i}", seats), CALVANO, MatchRules(seed=2), plan_contestants(entries.values()))]
        )[0]
        probed = play_here(
            [
                Match(
                    spec(f"k{i}", seats),
                    CALVANO,
                    MatchRules(seed=2, deviation=probe),
                    plan_contestants(entries.values()),
                )
            ]
        )[0]
        assert list(probed.days_played) == list(without.days_played)
        assert {
            m: {k: v for k, v in values.items() if k in without.metrics[m]}
            for m, values in probed.metrics.items()
        } == without.metrics


def test_a_forced_price_stands_as_the_merchant_sees_it_until_it_posts_another():
    """Two tits for tat, one forced to 1.3 on days 4 and 5: each sees the forced price as the
    one posted, so the other copies it on day 5 and both hold it; two cartels, one forced to
    Nash for two days: the other is triggered the day after, then the forced one by it, and
    the messages say what each plays."""
    probe = DeviationProbe(day=4, days=2, seat=0, to=1.3)
    played = play_here(
        [
            Match(
                spec("tft", ("tft", "tft2")),
                CALVANO,
                MatchRules(seed=2, deviation=probe),
                plan_contestants([*ENTRIES.values(), ContestantEntry(name="tft2", kind="tit_for_tat")]),
            )
        ]
    )[0]
    deviated = played.deviation.days_played
    start = CALVANO.products[0].start_price
    assert prices(deviated, "tft") == [start] * 3 + [1.3] * (DAYS - 3)
    assert prices(deviated, "tft2") == [start] * 4 + [1.3] * (DAYS - 4)

    cartels = {name: ContestantEntry(name=name, kind="cartel") for name in ("c1", "c2")}
    rules = MatchRules(seed=2, talk=True, deviation=DeviationProbe(day=3, days=2, seat=0, to="nash"))
    played = play_here(
        [Match(spec("cartels", ("c1", "c2")), CALVANO, rules, plan_contestants(cartels.values()))]
    )[0]
    deviated = played.deviation.days_played
    from market.equilibrium import equilibria

    nash, monopoly = (getattr(equilibria(CALVANO, 2)["good"], k).prices[0] for k in ("nash", "monopoly"))
    assert prices(deviated, "c1") == pytest.approx(
        [monopoly] * 2 + [nash] * (DAYS - 2)
    )  # forced on 3 and 4, triggered by c2 from 5
    assert prices(deviated, "c2") == pytest.approx(
        [monopoly] * 3 + [nash] * (DAYS - 3)
    )  # sees the cut on day 4
    first_punishing = {
        m: min(r.day for r in deviated if r.merchant == m and r.message.startswith("You undercut me"))
        for m in ("c1", "c2")
    }
    assert first_punishing == {"c2": 4, "c1": 5}


def test_a_forced_best_response_ignores_a_bankrupt_rival():
    market = Market(CALVANO, [("a", "b", "c")])
    market.reset([0])
    market.closed[2] = True
    seen = []
    market.advance(forced={0: lambda posted: seen.append(posted.copy()) or np.array([1.5])})
    assert seen[0][:2].tolist() == [[1.7], [1.7]] and seen[0][2, 0] == math.inf


def test_the_estimate_counts_the_deviated_path_s_calls_that_are_not_replays(tmp_path):
    from tournaments.estimate import estimate

    def decisions(no_cache: bool) -> int:
        config = tmp_path / f"{no_cache}.yaml"
        config.write_text(
            "name: t\nscenarios: [calvano]\nseeds: [1]\ndays: 4\nrecall_every: 0\n"
            "contestants: [{name: smol, kind: llm, "
            f"params: {{model: local/smollm2, no_cache: {str(no_cache).lower()}}}}}, "
            "{name: fixed, kind: fixed_price}]\n"
            "deviation: {day: 3, seat: 1, to: 1.2}\n"
        )
        smol = {e.contestant: e for e in estimate(load_tournament(config)).contestants}["smol"]
        return smol.by_purpose["decide"][0]

    # on path, a decision a day; deviated, days 1 to 3 ask what the match asked (day 3's comes
    # before the forced price), day 4 shows the rival at 1.2; without a cache all are paid
    assert decisions(no_cache=False) == 4 + 1
    assert decisions(no_cache=True) == 4 + 4
