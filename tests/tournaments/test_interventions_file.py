"""A tournament file's own `interventions:` (tournaments.config.as_played): added to every
scenario's, checked against each, and part of the tournament's identity only when given."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from common.yaml_files import ConfigError
from market.equilibrium import by_seat
from market.scenario import load_scenario
from results.storage import store
from results.storage.db import engine_for
from results.storage.store import list_matches, match_detail
from tournaments.load import load_tournament
from tournaments.run import run_tournament

BASE = """
name: regulated
scenarios: [calvano, logit_game]
days: 40
contestants:
  - {name: a, kind: fixed_price}
  - {name: b, kind: cost_plus}
"""


def write(folder: Path, extra: str = "") -> Path:
    path = folder / "t.yaml"
    path.write_text(textwrap.dedent(BASE) + textwrap.dedent(extra))
    return path


def test_the_files_interventions_are_added_to_every_scenario(tmp_path):
    tournament = load_tournament(
        write(
            tmp_path, "interventions: [{name: cap, kind: price_cap, start_day: 5, end_day: 9, price: 1.5}]\n"
        )
    )
    for scenario in tournament.scenarios.values():
        assert [
            (act.name, act.kind, act.start_day, act.last_day, act.price) for act in scenario.interventions
        ] == [("cap", "price_cap", 5, 9, 1.5)]


@pytest.mark.parametrize(
    "extra, words",
    [
        (
            "interventions: [{name: cap, kind: price_cap, start_day: 5, price: 1.5, product: tea}]\n",
            "interventions: in scenario 'calvano': intervention 'cap' names unknown product 'tea'",
        ),
        (
            "interventions: [{name: late, kind: price_cap, start_day: 45, end_day: 46, price: 1.5}]\n",
            "days: intervention 'late' of scenario 'calvano' ends on day 46, after the last of its "
            "matches' 40 days",
        ),
        (
            "interventions: [{name: wipe, kind: memory_reset, start_day: 5, seats: [3]}]\n",
            "scenarios[0]: intervention 'wipe' names seat 3, but a match has seats 0 to 1",
        ),
        (
            "interventions: [{name: crowd, kind: entry, start_day: 5, seats: [0, 1]}]\n",
            "scenarios[0]: every seat enters later: a match needs a merchant open on day 1",
        ),
        (
            "interventions: [{name: late, kind: entry, start_day: 9, seats: [1]}]\n"
            "deviation: {day: 5, seat: 1, to: 1.5}\n",
            "deviation.seat: seat 1 of scenarios[0] ('calvano') opens on day 9, after the deviation's "
            "first day 5",
        ),
    ],
)
def test_an_intervention_a_scenario_cannot_have_is_one_line_naming_it(tmp_path, extra, words):
    path = write(tmp_path, extra)
    with pytest.raises(ConfigError) as raised:
        load_tournament(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: {words}") and "\n" not in message


def test_learners_cannot_play_a_match_with_an_entrant(tmp_path):
    path = write(tmp_path, "interventions: [{name: crowd, kind: entry, start_day: 5, seats: [1]}]\n")
    path.write_text(path.read_text().replace("{name: b, kind: cost_plus}", "{name: q, kind: qlearning}"))
    with pytest.raises(ConfigError) as raised:
        load_tournament(path)
    assert str(raised.value) == (
        f"{path}: contestants[1]: cannot play scenario 'calvano': qlearning learns the game of every "
        "seat before the match, and intervention 'crowd' has a seat enter later"
    )


def test_interventions_count_in_the_identity_only_when_given(tmp_path):
    plain = load_tournament(write(tmp_path)).config_hash
    (tmp_path / "again").mkdir()
    empty = load_tournament(write(tmp_path / "again", "interventions: []\n")).config_hash
    (tmp_path / "capped").mkdir()
    capped = load_tournament(
        write(
            tmp_path / "capped", "interventions: [{name: cap, kind: price_cap, start_day: 5, price: 1.5}]\n"
        )
    ).config_hash
    assert plain == empty != capped  # an empty list is no intervention


def test_a_match_longer_than_its_scenario_takes_an_intervention_after_the_scenarios_days(tmp_path):
    path = write(
        tmp_path, "interventions: [{name: late, kind: price_cap, start_day: 110, end_day: 120, price: 1.5}]\n"
    )
    path.write_text(path.read_text().replace("days: 40", "days: 150"))  # calvano's own: 100
    assert load_tournament(path).scenarios["calvano"].interventions[0].last_day == 120


@pytest.mark.usefixtures("ray_local")
def test_a_new_entrant_plays_from_its_day_and_the_market_is_measured_around_it(tmp_path):
    """Two grim triggers hold a price until a rival undercuts; an undercutter enters on day 11
    and breaks it: every match's seat 2 has records from day 11 on, the others from day 1, and
    each match's prices before and after the entry are measured."""
    path = tmp_path / "t.yaml"
    path.write_text(
        textwrap.dedent(
            """
            name: entry
            scenarios: [calvano]
            format: free_for_all
            repetitions: 3
            days: 30
            contestants:
              - {name: grim1, kind: grim_trigger}
              - {name: grim2, kind: grim_trigger}
              - {name: newcomer, kind: undercut}
            interventions: [{name: entry, kind: entry, start_day: 11, seats: [2]}]
            """
        )
    )
    engine = engine_for(f"sqlite:///{tmp_path}/arena.db")
    tournament_id = run_tournament(load_tournament(path), engine).tournament_id
    matches = list_matches(engine, tournament_id)
    assert len(matches) == 3
    for match in matches:
        log = match_detail(engine, match.id).days
        first = {name: min(r.day for r in log.records() if r.merchant == name) for name in log.merchants}
        assert first == {name: 11 if seat == 2 else 1 for seat, name in enumerate(log.merchants)}
    measured = store.market_metric_values(
        engine, tournament_id, ["intervention_price_before", "intervention_price_after"]
    )
    assert len(measured) == 2 * 3
    # where the grim triggers are the incumbents they hold the duopoly's monopoly price (a
    # gain of 1 against the game of the two open) until the entrant undercuts, and punish
    # from then on: the market's prices fall to about Nash after the entry
    incumbents = [m.id for m in matches if match_detail(engine, m.id).days.merchants[2] == "newcomer"]
    assert incumbents
    values = {(match_id, name): value for match_id, name, value in measured}
    two, three = (by_seat(load_scenario("calvano"), n).monopoly_price[0, 0] for n in (2, 3))
    for match_id in incumbents:
        assert values[match_id, "intervention_price_before"] == pytest.approx(1.0)
        assert values[match_id, "intervention_price_after"] < 0.1
        # the day the entrant opens the incumbents' game is three's, and what they held the
        # day before is no defection in it
        held = {(r.day, r.merchant): r.prices["good"] for r in match_detail(engine, match_id).days.records()}
        assert held[10, "grim1"] == held[10, "grim2"] == pytest.approx(two)
        assert held[11, "grim1"] == held[11, "grim2"] == pytest.approx(three)
