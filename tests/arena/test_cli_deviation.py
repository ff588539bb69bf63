"""A probed match as the record shows it: `arena show` (text and --json), the report's charts of
both paths, and `arena export`'s deviation tables. The match is played in this process (no
Ray): a fixed price of 1.8 against tit for tat in the calvano market, the fixed merchant
forced to 1.3 on day 3, which tit for tat copies on day 4."""

from __future__ import annotations

import csv
import json

import pytest
from page_reader import parse
from probed_match import CALVANO, DAYS, store_probed_match
from typer.testing import CliRunner

from arena.cli import app, printing
from results.records import PlayedScenarios
from results.report import build_report
from results.settings import CollusionSettings
from results.storage.db import engine_for

runner = CliRunner()


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> tuple[str, int, int]:
    """(database URL, tournament id, match id)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('deviation') / 'arena.db'}"
    tournament, match = store_probed_match(url)
    return url, tournament, match


def test_show_prints_the_probe_its_measures_and_both_paths(stored, monkeypatch):
    url, _, match = stored
    monkeypatch.setattr(printing.out, "width", 200)
    shown = runner.invoke(app, ["show", str(match), "--db", url])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    row = lambda *words: next(line for line in lines if all(w in line for w in words))  # noqa: E731
    assert "fixed forced to 1.3 on day 3" in shown.output
    assert f"{(1.3 - 1.8) / 1.8:+.1%}" in row("rival_response")
    assert row("prefix_replayed").count("yes") == 2
    assert row("│ 3 ", "fixed").split("│")[3:5] == [
        " 1.80           ",
        " 1.30            ",
    ]  # day 3: on path, deviated
    assert row("│ 4 ", "tft").split("│")[3:5] == [" 1.80           ", " 1.30            "]
    data = json.loads(runner.invoke(app, ["show", str(match), "--db", url, "--json"]).stdout)
    assert data["deviation"]["probe"] == {"day": 3, "seat": 0, "to": 1.3, "days": 1, "discount": 0.95}
    assert [d["prices"]["good"] for d in data["deviation"]["days"] if d["merchant"] == "tft"] == [1.7] + [
        1.8
    ] * 2 + [1.3] + [1.8] * 4
    assert data["metrics"]["tft"]["recovery_days"] == 1.0


def test_the_report_draws_both_paths_with_the_forced_day_shaded(stored):
    url, tournament, match = stored
    page = parse(
        build_report(
            engine_for(url, create=False),
            tournament,
            PlayedScenarios({"": ({"calvano": CALVANO}, CollusionSettings())}),
            [],
        )
    )
    section = page.one("details", id=f"match-{match}")
    chart = next(
        f.one("svg")
        for f in section.all("figure")
        if f.one("figcaption").content() == "Price, on path and deviated: good"
    )
    assert sorted(g.attrs["data-series"] for g in chart.all("g", cls="series")) == [
        "fixed",
        "fixed (deviated)",
        "tft",
        "tft (deviated)",
    ]
    assert [g.attrs["data-band"] for g in chart.all("g", cls="band-deviation")] == [
        "fixed forced to 1.3 (day 3)"
    ]
    assert {g.attrs["data-level"].split()[0] for g in chart.all("g", cls="level")} == {"Nash", "monopoly"}
    # the match's own charts mark the probe's days too: where the two paths part
    own = next(f.one("svg") for f in section.all("figure") if f.one("figcaption").content() == "Price: good")
    assert [g.attrs["data-band"] for g in own.all("g", cls="band-deviation")] == [
        "fixed forced to 1.3 (day 3)"
    ]


def test_export_writes_the_probe_and_the_deviated_path(stored, tmp_path):
    url, tournament, _ = stored
    result = runner.invoke(app, ["export", str(tournament), "--out", str(tmp_path), "--db", url])
    assert result.exit_code == 0, result.output

    def read(name: str) -> list[dict[str, str]]:
        with open(tmp_path / f"{name}.csv", newline="") as f:
            return list(csv.DictReader(f))

    (probe,) = read("deviations")
    assert (probe["day"], probe["merchant"], probe["to"], probe["days"]) == ("3", "fixed", "1.3", "1")
    deviated = {(r["merchant"], int(r["day"])): float(r["price"]) for r in read("deviated_day_products")}
    on_path = {(r["merchant"], int(r["day"])): float(r["price"]) for r in read("day_products")}
    assert len(deviated) == len(on_path) == 2 * DAYS
    assert [day for key, day in sorted(k for k in deviated if deviated[k] != on_path[k])] == [
        3,
        4,
    ]  # fixed on day 3, tft on day 4
    assert len(read("deviated_days")) == 2 * DAYS and read("deviated_calls") == []
