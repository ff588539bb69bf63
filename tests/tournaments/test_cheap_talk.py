"""Cheap talk in matches: the `cartel` rule announces its monopoly price every day and plays
grim trigger, on the calvano market (Calvano et al.'s logit Bertrand game). Its benchmark
prices are found here by brute force on Calvano's own formulas, not read from
market.equilibrium, which the rule uses."""

from __future__ import annotations

import functools
import math
import textwrap

import numpy as np
import pandas as pd
import pytest
from talking_match import CALVANO, play
from typer.testing import CliRunner

from arena.cli import app, printing
from contestants.kinds import create
from market.env import MarketEnv
from results.storage import store
from results.storage.db import engine_for

GRID = np.linspace(1.0, 3.0, 200_001)


def calvano_profit(price, rival: float):
    """(p - c) q: q = exp((a - p)/mu) / (exp((a - p)/mu) + exp((a - p_rival)/mu) + exp(a_0/mu)),
    a = 2, a_0 = 0, mu = 1/4, c = 1, one customer a day."""
    weight = lambda p: np.exp((2.0 - p) / 0.25)  # noqa: E731
    return (price - 1.0) * weight(price) / (weight(price) + weight(rival) + 1.0)


@functools.cache
def monopoly() -> float:
    """The symmetric price of the best joint profit (computed when first asked, not when the
    file is collected: every worker of the suite collects it)."""
    return float(GRID[np.argmax(calvano_profit(GRID, GRID))])


@functools.cache
def nash() -> float:
    """Iterated best responses on the grid, from the cost, until one repeats: the symmetric
    Nash price."""
    price = 1.0
    for _ in range(100):
        response = float(GRID[np.argmax(calvano_profit(GRID, price))])
        if response == price:
            break
        price = response
    return price


def prices(records) -> list[float]:
    return [r.prices["good"] for r in records]


def test_two_cartels_hold_the_monopoly_price_every_day_and_say_so():
    played = play(["cartel", "cartel"], days=CALVANO.days)
    for records in played.values():
        assert prices(records) == pytest.approx([monopoly()] * CALVANO.days, abs=2e-5)
        assert all(r.rejections == [] for r in records)
        assert len({r.message for r in records}) == 1  # the same terms every day
        message = records[0].message
        assert f"good at {monopoly():.2f}" in message and f"at {nash():.2f} for good" in message, message


def test_a_cartel_turns_to_nash_the_day_after_an_undercut_and_says_so():
    """The undercutter posts below the cartel's price from day 1; the cartel reads rivals'
    prices from day 2 and is triggered by a price more than 1% below its monopoly price."""
    played = play(["cartel", "undercut"])
    undercut = prices(played["m1"])
    cut = 1 + next(day for day, price in enumerate(undercut) if price < monopoly() * (1 - 0.01))
    assert prices(played["m0"]) == pytest.approx([monopoly()] * cut + [nash()] * (20 - cut), abs=2e-5)
    assert all(r.message for r in played["m0"]) and not any(r.message for r in played["m1"])
    # the offer until it is triggered (it sees the cut the morning after), then the punishment
    offer, punishment = played["m0"][0].message, f"You undercut me: I price good at {nash():.2f} for good."
    assert [r.message for r in played["m0"]] == [offer] * cut + [punishment] * (20 - cut)


def test_without_talk_a_cartel_is_a_silent_grim_trigger():
    cartel, grim = play(["cartel", "undercut"], talk=False), play(["grim_trigger", "undercut"], talk=False)
    assert prices(cartel["m0"]) == prices(grim["m0"]) and prices(cartel["m1"]) == prices(grim["m1"])
    assert not any(r.message for records in cartel.values() for r in records)


def test_a_cartel_asked_alone_says_what_it_says_in_a_team():
    """A cartel hosted in an actor decides from its Observation: the same terms."""
    env = MarketEnv(CALVANO, ["m0", "m1"], talk=True)
    observations, _ = env.reset(seed=1)
    alone = create("cartel", {})
    alone.reset(merchant="m0", scenario=CALVANO, seed=1)
    decision = alone.decide(observations["m0"])
    _, _, _, _, infos = env.step({"m0": decision, "m1": None})
    assert infos["m0"]["record"].message == play(["cartel", "cartel"], days=1)["m0"][0].message
    assert math.isclose(infos["m0"]["record"].prices["good"], monopoly(), abs_tol=2e-5)


@pytest.mark.usefixtures("ray_local")
def test_a_tournament_with_talk_stores_shows_and_exports_its_messages(tmp_path, monkeypatch):
    """arena run of cartels (one hosted in an actor of its own) and an undercutter: each
    cartel's message of every day is in the record, `arena show` prints a match's, `arena
    export` writes them all."""
    config = tmp_path / "t.yaml"
    config.write_text(
        textwrap.dedent("""
        name: talkers
        seed: 3
        scenarios: [calvano]
        days: 4
        talk: true
        contestants:
          - {name: cartel_a, kind: cartel}
          - {name: cartel_b, kind: cartel, isolate: true}
          - {name: cutter, kind: undercut}
        """)
    )
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    runner = CliRunner()
    ran = runner.invoke(app, ["run", str(config), "--db", url])
    assert ran.exit_code == 0, ran.output
    engine = engine_for(url, create=False)
    details = {m.key: store.match_detail(engine, m.id) for m in store.list_matches(engine)}
    expected = []
    for key, detail in details.items():
        assert detail.faults == []
        said = detail.days.said()
        cartels = sorted(r.contestant for r in detail.results if r.contestant.startswith("cartel"))
        assert sorted((s.day, s.merchant) for s in said) == sorted(
            (day, name) for day in range(1, 5) for name in cartels
        )
        cutter = "cutter" in {
            r.contestant for r in detail.results
        }  # whose cut the cartel sees the next morning, and says so
        assert all(
            s.text.startswith(
                "I will price good at 1.92 "
                if s.day == 1 or not cutter
                else "You undercut me: I price good at 1.47"
            )
            for s in said
        )
        expected += [
            (detail.match.tournament_id, detail.match.id, key, s.day, s.merchant, s.merchant, s.text)
            for s in said
        ]
    assert len(expected) == 4 * (2 + 1 + 1)  # cartel against cartel, each cartel against the undercutter

    both = next(d for d in details.values() if {r.contestant for r in d.results} == {"cartel_a", "cartel_b"})
    monkeypatch.setattr(printing.out, "width", 300)
    shown = runner.invoke(app, ["show", str(both.match.id), "--db", url])
    assert shown.exit_code == 0, shown.output
    section = shown.output.split("messages (each read by the rivals the next day)")[1].split("day by day")[0]
    rows = [
        [cell.strip() for cell in line.strip("│").split("│")]
        for line in section.splitlines()
        if line.startswith("│")
    ]
    assert (
        rows == [[str(s.day), s.merchant, s.text] for s in both.days.said()] and len(rows) == 8
    )  # four days, two cartels

    exported = runner.invoke(
        app, ["export", str(both.match.tournament_id), "--out", str(tmp_path / "out"), "--db", url]
    )
    assert exported.exit_code == 0, exported.output
    messages = pd.read_csv(tmp_path / "out" / "messages.csv")
    assert sorted(messages.itertuples(index=False, name=None)) == sorted(expected)
