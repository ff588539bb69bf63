"""Tournaments on real Ray: determinism, faults that do not stop a tournament, resuming."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd
import pytest
from older_arena import as_an_older_arena_left_it
from sqlmodel import Session, select
from typer.testing import CliRunner

from arena.cli import app
from results.leaderboard import leaderboard
from results.storage.db import engine_for
from results.storage.schema import FaultRow, MatchRow, ModelCallRow, TournamentRow
from results.storage.store import list_matches, match_detail, run_progress
from tournaments.cluster import ClusterError
from tournaments.load import load_tournament
from tournaments.match import LOSSES_ALLOWED
from tournaments.run import run_tournament
from tournaments.schedule import schedule

pytestmark = pytest.mark.usefixtures("ray_local")


def write_tournament(folder: Path, body: str) -> Path:
    path = folder / "t.yaml"
    path.write_text(textwrap.dedent(body))
    return path


def table(engine, tournament_id):
    return [row.model_dump() for row in leaderboard(engine, tournament_id)]


def all_days(engine, tournament_id):
    return {m.key: match_detail(engine, m.id).days for m in list_matches(engine, tournament_id)}


def test_same_yaml_and_seed_give_identical_results(tmp_path):
    config = write_tournament(
        tmp_path,
        """
        name: twice
        seed: 11
        scenarios: [price_war, seasonal]
        seeds: [1, 2]
        days: 12
        max_concurrent_matches: 3
        contestants:
          - {name: fixed, kind: fixed_price}
          - {name: random, kind: random}
          - {name: undercut, kind: undercut}
        """,
    )
    tournament = load_tournament(config)
    first, second = engine_for(f"sqlite:///{tmp_path}/a.db"), engine_for(f"sqlite:///{tmp_path}/b.db")
    a = run_tournament(tournament, first).tournament_id
    b = run_tournament(tournament, second).tournament_id
    assert table(first, a) == table(second, b)
    assert all_days(first, a) == all_days(second, b)
    assert len(all_days(first, a)) == len(schedule(tournament)) == 12
    noted = run_progress(first, a)  # what the run last wrote of where it stood: all done
    assert noted is not None and (noted.days_played, noted.days_planned, noted.matches_playing) == (
        12 * 12,
        144,
        0,
    )
    # the random merchant really is random across seeds, so equality above is not vacuous
    days = all_days(first, a)
    prices = {
        key: [d.prices for d in records if d.merchant == "random"]
        for key, records in days.items()
        if "random" in key
    }
    assert len({str(p) for p in prices.values()}) == len(prices)


def test_faulty_merchants_do_not_stop_the_tournament(tmp_path):
    config = write_tournament(
        tmp_path,
        """
        name: chaos
        seed: 3
        format: free_for_all
        scenarios: [price_war]
        repetitions: 2
        days: 6
        decision_timeout_s: 2
        contestants:
          - {name: steady, kind: fixed_price}
          - {name: raiser, kind: tests.doubles:Chaos, params: {fault: raise, every: 2}}
          - {name: hanger, kind: tests.doubles:Chaos, params: {fault: hang, every: 5, hang_s: 2.5}}
          - {name: junk, kind: tests.doubles:Chaos, params: {fault: garbage}}
          - {name: crasher, kind: tests.doubles:Chaos, params: {fault: crash, every: 3}}
        """,
    )
    engine = engine_for(f"sqlite:///{tmp_path}/c.db")
    tid = run_tournament(load_tournament(config), engine).tournament_id
    matches = list_matches(engine, tid)
    assert len(matches) == 2
    with Session(engine) as session:
        faults = session.exec(select(FaultRow.merchant, FaultRow.kind, FaultRow.day)).all()
    kinds = {(merchant, kind) for merchant, kind, _ in faults}
    assert ("raiser", "error") in kinds
    assert ("hanger", "timeout") in kinds
    assert ("junk", "malformed") in kinds
    assert ("crasher", "actor_died") in kinds
    assert not any(merchant == "steady" for merchant, _, _ in faults)
    raiser_days = sorted(day for merchant, kind, day in faults if merchant == "raiser")
    assert raiser_days == [2, 2, 4, 4, 6, 6]  # every second day, in both matches, nothing else
    for match in matches:
        detail = match_detail(engine, match.id)
        assert {d.day for d in detail.days} == set(range(1, 7))  # every merchant played every day
        # the crasher's actor dies on days 3 and 6 (and takes the other match's call in flight
        # with it); each time it starts afresh, never left without its state (an "error")
        crashes = [f for f in detail.faults if f.merchant == "crasher"]
        assert {f.kind for f in crashes} == {"actor_died"} and {3, 6} <= {f.day for f in crashes}
        counted = {r.merchant: r.faults for r in detail.results}
        for merchant in counted:
            assert counted[merchant] == sum(1 for f in detail.faults if f.merchant == merchant)
    rows = {row.contestant: row for row in leaderboard(engine, tid)}
    assert rows["steady"].faults == 0 and rows["raiser"].faults == 6


def test_resume_plays_only_what_is_missing(tmp_path):
    config = write_tournament(
        tmp_path,
        """
        name: resumable
        seed: 5
        scenarios: [price_war]
        seeds: [1, 2, 3]
        days: 8
        contestants:
          - {name: fixed, kind: fixed_price}
          - {name: s_S, kind: reorder_point}
          - {name: cost_plus, kind: cost_plus}
        """,
    )
    tournament = load_tournament(config)
    engine = engine_for(f"sqlite:///{tmp_path}/part.db")
    first = run_tournament(tournament, engine).tournament_id
    whole = table(engine, first)  # the uninterrupted run's table, read before the cut
    with Session(engine) as session:  # as if the run had died after four matches
        for match in session.exec(select(MatchRow).where(MatchRow.index >= 4)).all():
            session.delete(match)
        session.get(TournamentRow, first).status = "running"
        session.commit()
    summary = run_tournament(tournament, engine, resume=True)
    assert summary.resumed and summary.tournament_id == first
    assert (summary.played, summary.skipped) == (5, 4)
    assert table(engine, first) == whole
    keys = [m.key for m in list_matches(engine, first)]
    assert len(keys) == len(set(keys)) == 9


def test_resume_finishes_a_run_in_a_database_an_older_arena_wrote(tmp_path, arena_here):
    """Its results lack the columns added since (results.storage.db.ADDED_COLUMNS): `arena run --resume`
    adds them and plays the rest, the merchants of its stored match having no refusals."""
    config = write_tournament(
        tmp_path,
        """
        name: older
        seed: 5
        scenarios: [price_war]
        seeds: [1, 2]
        days: 4
        contestants:
          - {name: fixed, kind: fixed_price}
          - {name: cost_plus, kind: cost_plus}
        """,
    )
    url = f"sqlite:///{tmp_path}/old.db"
    engine = engine_for(url)
    first = run_tournament(load_tournament(config), engine).tournament_id
    whole = table(engine, first)
    with Session(engine) as session:  # as if the older arena's run had died after one match
        session.delete(session.exec(select(MatchRow).where(MatchRow.index == 1)).one())
        session.get(TournamentRow, first).status = "running"
        session.commit()
    engine.dispose()
    as_an_older_arena_left_it(url)

    resumed = arena_here(tmp_path, "run", "t.yaml", "--resume", "--db", url)
    assert resumed.exit_code == 0, resumed.output
    engine = engine_for(url, create=False)
    assert table(engine, first) == whole
    (kept,) = [m for m in list_matches(engine, first) if m.index == 0]
    assert {r.length_refusals for r in match_detail(engine, kept.id).results} == {0}
    engine.dispose()


SHOCKED_FROM_DAY_1 = """
name: shocked
description: A supply shock that is on from the first day, and a fixed cost that bankrupts the idle.
days: 10
products:
  - {id: widget, unit_cost: 10.0, reference_price: 20.0, base_demand: 40, initial_stock: 30}
finance: {initial_cash: 400, fixed_daily_cost: 60}
events:
  - {name: shortage, kind: cost, start_day: 1, end_day: 3, multiplier: 1.5}
"""


def test_results_and_metrics_agree_when_a_cost_shock_covers_day_1(tmp_path):
    """Issue 16's acceptance: profit, rank and market share read the same in `arena export`'s
    results and metrics tables, and are what the exported day records say by hand: profit
    from a start with the 30 units at day 1's shocked cost of 15 (not the base cost of 10,
    which would make it 150 more), ranks with survivors first, then the longer-lived, then
    net worth, and shares of the units sold."""
    (tmp_path / "shocked.yaml").write_text(SHOCKED_FROM_DAY_1)
    config = write_tournament(
        tmp_path,
        f"""
        name: shocked
        seed: 4
        format: free_for_all
        scenarios: [{tmp_path / "shocked.yaml"}]
        seeds: [1, 2]
        contestants:
          - {{name: dear, kind: fixed_price, params: {{markup: 3.0}}}}
          - {{name: cost_plus, kind: cost_plus}}
          - {{name: undercut, kind: undercut}}
        """,
    )
    url = f"sqlite:///{tmp_path}/shocked.db"
    tid = run_tournament(load_tournament(config), engine_for(url)).tournament_id
    exported = CliRunner().invoke(app, ["export", str(tid), "--out", str(tmp_path / "out"), "--db", url])
    assert exported.exit_code == 0, exported.output
    read = {
        name: pd.read_csv(tmp_path / "out" / f"{name}.csv")
        for name in ("results", "metrics", "days", "day_products")
    }
    results = read["results"].set_index(["match_id", "merchant"])
    metrics = read["metrics"].pivot_table(
        index=["match_id", "merchant"], columns="name", values="value", dropna=False
    )
    days, products = read["days"], read["day_products"]
    assert (products[products.day == 1].unit_cost == 15.0).all()

    last = days.sort_values("day").groupby(["match_id", "merchant"]).last()
    sold = products.groupby(["match_id", "merchant"]).units_sold.sum()
    assert len(results) == len(last) == 6 and last.bankrupt.any() and (~last.bankrupt).any()
    for (match_id, merchant), row in results.iterrows():
        end = last.loc[match_id, merchant]
        rivals = last.loc[match_id]
        standing = (not end.bankrupt, end.day, end.net_worth)
        by_hand = {
            "profit": end.net_worth - (400 + 30 * 10.0 * 1.5),
            "rank": 1 + sum((not r.bankrupt, r.day, r.net_worth) > standing for r in rivals.itertuples()),
            "market_share": sold[match_id, merchant] / sold[match_id].sum(),
        }
        for name, expected in by_hand.items():
            assert row[name] == pytest.approx(expected, abs=1e-9), (merchant, name)
            assert metrics.loc[(match_id, merchant), name] == pytest.approx(expected, abs=1e-9), (
                merchant,
                name,
            )


class Lost:
    """An observer that keeps what it is told of matches lost and played again."""

    def __init__(self):
        self.told: list[tuple[str, str]] = []

    def started(self, *told) -> None:
        pass

    def advanced(self, *told) -> None:
        pass

    def lost(self, match_key: str, reason: str) -> None:
        self.told.append((match_key, reason))


@pytest.mark.parametrize(
    "partner, lost_because, told",
    [
        # hosted: its matches play in a match runner, which the run replaces and says so
        (
            "{name: slow, kind: tests.doubles:Latency, params: {latency_s: 0.01}}",
            "its match runner on ",
            LOSSES_ALLOWED,
        ),
        # inline: the match is a Ray task, which Ray itself plays again
        ("{name: steady, kind: fixed_price}", "its process died (", 0),
    ],
)
def test_a_match_whose_process_keeps_dying_is_played_again_then_stops_the_run(
    tmp_path, partner, lost_because, told
):
    """A crashing merchant kept out of an actor of its own kills the process its match plays
    in, on every try: the match is played again LOSSES_ALLOWED times, then the run stops with
    one reason, storing nothing of it."""
    config = write_tournament(
        tmp_path,
        f"""
        name: doomed
        seed: 2
        scenarios: [price_war]
        seeds: [1]
        days: 4
        contestants:
          - {partner}
          - {{name: crasher, kind: tests.doubles:Chaos, params: {{fault: crash, every: 2}}, isolate: false}}
        """,
    )
    tournament = load_tournament(config)
    [match] = schedule(tournament)
    engine = engine_for(f"sqlite:///{tmp_path}/d.db")
    observer = Lost()
    with pytest.raises(ClusterError) as stopped:
        run_tournament(tournament, engine, observer=observer)
    assert str(stopped.value).startswith(
        f"match {match.key} was lost {LOSSES_ALLOWED + 1} times, the last because {lost_because}"
    )
    assert [key for key, _ in observer.told] == [match.key] * told
    assert all(reason.startswith(lost_because) and reason.endswith(" died") for _, reason in observer.told)
    assert list_matches(engine) == []


def test_the_calls_of_a_match_whose_runner_died_are_recorded_as_paid(tmp_path, loopback, chat_completion):
    """A language model hosted in its own actor plays beside a crashing merchant that kills the
    match runner on day 2 of every try. The model's seat comes first, so its day-2 request has
    left before the crasher's turn: each try's calls of days 1 and 2, which the model's host
    still holds when the runner dies, are recorded as paid (with no match); the tries after the
    first answer them from the response cache, so the server is asked twice."""
    asked = []

    def respond(path, headers, body):
        asked.append(path)
        return (
            200,
            chat_completion({"operations": [{"op": "set_price", "product": "widget", "price": 18.0}]}),
            {},
        )

    address = loopback(respond)
    model = (
        f'{{model: openai/stub, base_url: "{address}/v1", api_key_env: null, memory: stateless, '
        f'cache_dir: "{tmp_path}/cache"}}'
    )
    config = write_tournament(
        tmp_path,
        f"""
        name: paid
        seed: 2
        scenarios: [price_war]
        seeds: [1]
        days: 4
        recall_every: 0
        contestants:
          - name: model
            kind: llm
            params: {model}
          - {{name: crasher, kind: tests.doubles:Chaos, params: {{fault: crash, every: 2}}, isolate: false}}
        """,
    )
    engine = engine_for(f"sqlite:///{tmp_path}/p.db")
    with pytest.raises(ClusterError):
        run_tournament(load_tournament(config), engine)
    with Session(engine) as session:
        calls = session.exec(select(ModelCallRow.match_id, ModelCallRow.cached)).all()
    days_asked = 2
    assert sorted(calls) == [(None, False)] * days_asked + [(None, True)] * days_asked * LOSSES_ALLOWED
    assert len(asked) == days_asked
