"""Replication packs (tournaments.replication, `arena replicate`): the shipped packs are
coherent, and a run is compared with the published figures, a value outside its band flagged."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from arena.cli import app
from results.scoring.sweeps import ALL_METRICS
from tournaments import replication
from tournaments.load import load_tournament
from tournaments.replication import PackFigures, load_pack, packs, played_text
from tournaments.schedule import schedule

REPORTED = {"converged", "learning_periods"}  # what the learners report of themselves


@pytest.mark.parametrize("name", packs())
def test_every_figure_of_a_shipped_pack_names_a_cell_its_tournament_plays_and_a_metric(name):
    pack = load_pack(name)
    tournament = load_tournament(pack.tournament)
    cells = [cell.factors for cell in tournament.each_cell()]
    assert schedule(tournament)
    for figure in pack.figures.figures:
        assert figure.metric in ALL_METRICS or figure.metric in REPORTED, figure.name
        assert any(all(cell.get(k) == v for k, v in figure.where.items()) for cell in cells), figure.name
        low, high = figure.band
        assert low <= figure.published <= high, figure.name


TINY = """
name: tiny
seed: 3
scenarios: [price_war]
repetitions: 3
days: 5
contestants:
  - {name: a, kind: fixed_price, params: {price: 20.0}}
  - {name: b, kind: cost_plus}
sweep:
  a.price: [18.0, 24.0]
"""


@pytest.fixture
def tiny_pack(tmp_path, monkeypatch):
    """A pack of its own in a folder of packs: fixed prices, two cells; its figures' bands are
    set by the test."""
    folder = tmp_path / "packs" / "tiny"
    folder.mkdir(parents=True)
    (folder / "tournament.yaml").write_text(textwrap.dedent(TINY))
    monkeypatch.setattr(replication, "PACKS", tmp_path / "packs")

    def with_figures(*figures: dict) -> Path:
        (folder / "figures.yaml").write_text(
            yaml.safe_dump({"title": "Tiny", "source": "this test", "figures": list(figures)})
        )
        return folder

    return with_figures


def profit_figure(price: float, band: tuple[float, float]) -> dict:
    return {
        "name": f"profit at {price}",
        "metric": "profit",
        "where": {"a.price": price},
        "published": (band[0] + band[1]) / 2,
        "band": list(band),
        "source": "here",
    }


@pytest.mark.usefixtures("ray_local")
def test_replicate_plays_the_pack_and_flags_a_figure_outside_its_band(tiny_pack, tmp_path):
    db = f"sqlite:///{tmp_path}/arena.db"
    tiny_pack(profit_figure(18.0, (-1e9, 1e9)), profit_figure(24.0, (1e9, 2e9)))
    played = CliRunner().invoke(app, ["replicate", "tiny", "--db", db, "--json"])
    assert played.exit_code == 6, played.output
    shown = json.loads(played.stdout)
    assert [f["within"] for f in shown["figures"]] == [True, False]
    assert "not reproduced: profit at 24.0 fell outside the band" in played.stderr

    # arena's value: the mean over the cell's sessions (its seeds) of the merchants' mean profit
    out = tmp_path / "out"
    assert (
        CliRunner().invoke(app, ["export", str(shown["tournament"]), "--db", db, "--out", str(out)]).exit_code
        == 0
    )
    results = pd.read_csv(out / "results.csv")
    for figure in shown["figures"]:
        own = results[results["a.price"] == figure["where"]["a.price"]]
        expected = own.groupby("seed")["profit"].mean().mean()
        assert figure["arena"]["mean"] == pytest.approx(expected) and figure["arena"]["n"] == 3

    # compared again without playing, with a band that now holds it
    mean = shown["figures"][1]["arena"]["mean"]
    tiny_pack(profit_figure(24.0, (mean - 1, mean + 1)))
    again = CliRunner().invoke(
        app, ["replicate", "tiny", "--db", db, "--tournament", str(shown["tournament"])]
    )
    assert again.exit_code == 0, again.output
    assert "yes" in again.stdout and "NO" not in again.stdout

    tiny_pack(profit_figure(99.0, (0, 1)))  # a cell the run did not play
    missing = CliRunner().invoke(
        app, ["replicate", "tiny", "--db", db, "--tournament", str(shown["tournament"])]
    )
    assert missing.exit_code == 2
    assert (
        f"tournament {shown['tournament']} played no cell {{'a.price': 99.0}} for 'profit at 99.0'"
        in missing.output
    )


def test_a_shorter_try_says_so_in_the_file_it_plays(tiny_pack):
    tiny_pack(profit_figure(18.0, (0, 1)))
    text = played_text(load_pack("tiny"), days=2, repetitions=1, model=None)
    assert text.startswith("# arena replicate tiny, with days 2, repetitions 1\n")
    tournament = load_tournament(load_pack("tiny").tournament, text)
    assert (tournament.spec.days, tournament.spec.repetitions) == (2, 1)
    assert played_text(load_pack("tiny"), None, None, None) == textwrap.dedent(TINY)


def test_an_unknown_pack_is_one_line_naming_the_packs():
    result = CliRunner().invoke(app, ["replicate", "calvano-nothing"])
    assert result.exit_code == 2
    assert "no replication pack is named 'calvano-nothing' (packs: calvano-baseline" in result.output


def test_a_band_upside_down_is_refused():
    with pytest.raises(ValueError, match="band: its low end is above its high end"):
        PackFigures.model_validate(
            {"title": "t", "source": "s", "figures": [{**profit_figure(1.0, (0, 1)), "band": [1, 0]}]}
        )
