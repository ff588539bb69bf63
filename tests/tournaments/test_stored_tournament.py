"""A stored tournament's file read again for the record: the same reading as a file on disk, its
settings and scenarios, and the defaults with a note when it no longer validates."""

from __future__ import annotations

from pathlib import Path

from results.scoring.composite import ScoringWeights
from results.settings import CollusionSettings
from results.storage.schema import TournamentRow
from tournaments.config import stored_tournament
from tournaments.load import load_tournament

TOURNAMENT = """\
name: stored
scenarios: [small, gone]
contestants:
  - {name: a, kind: fixed_price}
  - {name: b, kind: undercut}
scoring: {win_rate: 1, validity: 0, memory: 0}
collusion: {window: 0.25, min_days: 3}
"""

SMALL = """\
name: small
days: 6
products:
  - {id: w, unit_cost: 10, reference_price: 20, base_demand: 30, initial_stock: 20}
"""


def _row(path: Path, text: str) -> TournamentRow:
    return TournamentRow(
        name="stored", config_path=str(path), config_text=text, config_hash="h", seed=0, planned_matches=1
    )


def test_the_stored_file_is_read_as_a_file_on_disk_is(tmp_path):
    (tmp_path / "small.yaml").write_text(SMALL)
    on_disk = tmp_path / "t.yaml"
    on_disk.write_text(TOURNAMENT.replace(", gone", ""))
    stored = stored_tournament(_row(on_disk, on_disk.read_text()))
    assert stored.spec == load_tournament(on_disk).spec
    assert stored.problem is None


def test_the_settings_and_scenarios_come_from_the_stored_text(tmp_path):
    (tmp_path / "small.yaml").write_text(SMALL)
    stored = stored_tournament(_row(tmp_path / "t.yaml", TOURNAMENT))  # no file on disk: the text is stored
    assert stored.scoring == ScoringWeights(win_rate=1, validity=0, memory=0)
    scenarios, notes = stored.scenarios()
    ((label, (by_name, collusion)),) = scenarios.cells.items()
    assert label == "" and collusion == CollusionSettings(window=0.25, min_days=3)
    assert list(by_name) == ["small"] and by_name["small"].days == 6
    (note,) = notes
    assert note.startswith("events of scenario 'gone' are not shown:") and "not found" in note


def test_a_stored_file_that_no_longer_validates_gives_the_defaults_and_says_why(tmp_path):
    for text, field in ((TOURNAMENT + "rounds: 3\n", "rounds"), ("name: [unclosed\n", "invalid YAML")):
        stored = stored_tournament(_row(tmp_path / "t.yaml", text))
        assert stored.spec is None and field in (stored.problem or "")
        assert stored.scoring == ScoringWeights()
        scenarios, notes = stored.scenarios()
        assert scenarios.cells == {} and notes == [
            f"the tournament file stored with the record cannot be read ({stored.problem}): "
            "scenario events are not shown"
        ]
