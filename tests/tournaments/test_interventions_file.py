"""A tournament file's own `interventions:` (tournaments.config.as_played): added to every
scenario's, checked against each, and part of the tournament's identity only when given."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from market.yaml_files import ConfigError
from tournaments.config import load_tournament

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
    ],
)
def test_an_intervention_a_scenario_cannot_have_is_one_line_naming_it(tmp_path, extra, words):
    path = write(tmp_path, extra)
    with pytest.raises(ConfigError) as raised:
        load_tournament(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: {words}") and "\n" not in message


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
