from __future__ import annotations

import io
import json
import pickle

import numpy as np
import pytest
from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from market.daylog import SCALARS, DayLog
from results.leaderboard import finish_tournament, leaderboard
from results.recording import save_match, save_matches
from results.records import Fault, FinishedMatch, RecallResult
from results.storage.schema import (
    ContestantRow,
    DayLogRow,
    FaultRow,
    MatchResultRow,
    MatchRow,
    RatingSnapshot,
)
from results.storage.store import (
    NotFound,
    find_resumable,
    finished_keys,
    get_tournament,
    list_matches,
    list_tournaments,
    match_detail,
    resume_tournament,
    start_tournament,
)


def _count(engine, table) -> int:
    with Session(engine) as session:
        return session.exec(select(func.count()).select_from(table)).one()


def _nothing_stored(engine) -> bool:
    return all(_count(engine, table) == 0 for table in (MatchRow, MatchResultRow, DayLogRow, FaultRow))


def test_start_tournament_records_config_and_contestants(engine, tournament):
    stored = get_tournament(engine, tournament)
    assert stored.status == "running"
    assert stored.config_text == "name: spring\nseed: 7\n"
    assert stored.config_hash == "hash-spring"
    assert stored.planned_matches == 4
    assert stored.finished_at is None
    with Session(engine) as session:
        rows = session.exec(select(ContestantRow).order_by(ContestantRow.name)).all()
    assert [(r.name, r.kind, json.loads(r.params)) for r in rows] == [
        ("alpha", "rule", {"markup": 1.5}),
        ("beta", "llm", {"model": "x/y"}),
        ("gamma", "rule", {}),
    ]


def test_match_round_trips(engine, tournament, make_match):
    match = make_match("rr-0", 0, {"alpha": 1, "beta": 2, "gamma": 2})
    match.recalls = [
        RecallResult(
            merchant="m0",
            day=3,
            asked_day=1,
            fact="cash",
            product=None,
            truth=120.0,
            answer=132.0,
            relative_error=0.1,
        ),
        RecallResult(
            merchant="m1",
            day=3,
            asked_day=1,
            fact="price",
            product="tea",
            truth=4.5,
            answer=None,
            relative_error=None,
        ),
    ]
    match_id = save_match(engine, tournament, match)

    detail = match_detail(engine, match_id)
    assert detail.match.key == "rr-0" and detail.match.tournament_id == tournament
    assert detail.days == match.days_played
    assert detail.results == match.merchants
    assert detail.faults == match.faults
    assert detail.recalls == match.recalls
    rebuilt = FinishedMatch(
        **detail.match.model_dump(include={"key", "index", "scenario", "seed", "days", "wall_seconds"}),
        merchants=detail.results,
        days_played=detail.days,
        faults=detail.faults,
        recalls=detail.recalls,
    )
    assert rebuilt == match


def test_a_day_log_survives_pickling_and_is_stored_as_the_same_days(engine, tournament, make_match):
    plain = make_match("rr-0", 0, {"alpha": 1, "beta": 2})
    logged = make_match("rr-1", 1, {"alpha": 1, "beta": 2})
    logged.days_played = pickle.loads(pickle.dumps(DayLog.of(logged.days_played)))
    assert isinstance(logged.days_played, DayLog)
    assert list(logged.days_played) == list(plain.days_played)
    assert logged.days_played[1] == plain.days_played[1] and len(logged.days_played) == len(plain.days_played)
    assert logged.days_played[-2:] == plain.days_played[-2:]

    stored = [match_detail(engine, save_match(engine, tournament, m)) for m in (plain, logged)]
    assert list(stored[0].days) == list(stored[1].days) == plain.days_played


def test_the_stored_day_log_reads_with_numpy_and_json(engine, tournament, make_match):
    match = make_match("rr-0", 0, {"alpha": 1, "beta": 2}, days=4)
    match_id = save_match(engine, tournament, match)
    with Session(engine) as session:
        row = session.get(DayLogRow, match_id)
    arrays = np.load(io.BytesIO(row.columns), allow_pickle=False)
    text = json.loads(row.decisions)
    assert text["scalars"] == list(SCALARS) and text["products"] == ["tea"]
    cash_end = arrays["scalars"][:, SCALARS.index("cash_end")].tolist()
    assert cash_end == [r.cash_end for r in match.days_played]
    assert [text["merchants"][s] for s in arrays["seat"]] == [r.merchant for r in match.days_played]
    assert arrays["day"].tolist() == [r.day for r in match.days_played]
    kinds, products = text["operation_kinds"], text["products"]
    operations = [[] for _ in arrays["day"]]
    for row, kind, product, value in zip(
        *(arrays[f"op_{name}"].tolist() for name in ("row", "kind", "product", "value"))
    ):
        operations[row].append((kinds[kind], products[product] if product >= 0 else None, value))
    expected = [
        [(op["op"], op.get("product"), op.get("price", op.get("quantity"))) for op in r.operations]
        for r in match.days_played
    ]
    assert operations == expected and any(expected)


def test_same_key_is_stored_once(engine, tournament, make_match):
    first = save_match(engine, tournament, make_match("rr-0", 0, {"alpha": 1, "beta": 2}))
    again = save_match(engine, tournament, make_match("rr-0", 0, {"alpha": 2, "beta": 1}))
    assert again == first
    assert _count(engine, MatchRow) == 1
    assert _count(engine, MatchResultRow) == 2
    assert _count(engine, DayLogRow) == 1
    assert _count(engine, FaultRow) == 1
    assert [r.rank for r in match_detail(engine, first).results] == [1, 2]


def test_same_key_in_another_tournament_is_another_match(engine, tournament, make_match):
    other = start_tournament(engine, "other", "o.yaml", "x: 1\n", "hash-o", 1, [], 1)
    first = save_match(engine, tournament, make_match("rr-0", 0, {"alpha": 1, "beta": 2}))
    second = save_match(engine, other, make_match("rr-0", 0, {"alpha": 1, "beta": 2}))
    assert first != second


def test_failing_day_log_leaves_nothing(engine, tournament, make_match):
    match = make_match("rr-0", 0, {"alpha": 1, "beta": 2})
    match.days_played[0].plan["tea"] = object()  # cannot be written as JSON
    with pytest.raises(TypeError):
        save_match(engine, tournament, match)
    assert _nothing_stored(engine)
    assert finished_keys(engine, tournament) == set()


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_failing_last_row_leaves_nothing(engine, tournament, make_match):
    """The faults are written last; a NOT NULL violation there must undo the days too."""
    broken = Fault.model_construct(day=1, merchant="m0", kind="error", detail=None)
    match = make_match("rr-0", 0, {"alpha": 1, "beta": 2}, faults=[broken])
    with pytest.raises(IntegrityError):
        save_match(engine, tournament, match)
    assert _nothing_stored(engine)

    save_match(engine, tournament, make_match("rr-0", 0, {"alpha": 1, "beta": 2}))
    assert finished_keys(engine, tournament) == {"rr-0"}


def test_finished_keys(engine, tournament, make_match):
    assert finished_keys(engine, tournament) == set()
    save_match(engine, tournament, make_match("rr-1", 1, {"alpha": 1, "beta": 2}))
    save_match(engine, tournament, make_match("rr-0", 0, {"beta": 1, "gamma": 2}))
    other = start_tournament(engine, "other", "o.yaml", "x: 1\n", "hash-o", 1, [], 1)
    save_match(engine, other, make_match("rr-9", 9, {"alpha": 1, "beta": 2}))
    assert finished_keys(engine, tournament) == {"rr-0", "rr-1"}


def test_find_resumable_ignores_finished(engine):
    digest = "hash-a"
    assert find_resumable(engine, digest) is None

    done = start_tournament(engine, "t", "t.yaml", "a: 1\n", "hash-a", 3, [], 2)
    finish_tournament(engine, done, "finished")
    assert find_resumable(engine, digest) is None

    stopped = start_tournament(engine, "t", "t.yaml", "a: 1\n", "hash-a", 3, [], 2)
    finish_tournament(engine, stopped, "stopped")
    assert find_resumable(engine, digest) == stopped

    running = start_tournament(engine, "t", "t.yaml", "a: 1\n", "hash-a", 3, [], 2)
    start_tournament(engine, "t", "t.yaml", "a: 1\n", "hash-b", 4, [], 2)  # other files, other hash
    assert find_resumable(engine, digest) == running

    finish_tournament(engine, running, "finished")
    assert find_resumable(engine, digest) == stopped

    resume_tournament(engine, stopped)  # a resumed run plays it: running again, not yet finished
    resumed = get_tournament(engine, stopped)
    assert (resumed.status, resumed.finished_at) == ("running", None)


def test_finish_tournament_snapshots_ratings(engine, tournament, make_match):
    save_match(engine, tournament, make_match("rr-0", 0, {"alpha": 1, "beta": 2}))
    finish_tournament(engine, tournament, "finished")
    stored = get_tournament(engine, tournament)
    assert stored.status == "finished" and stored.finished_at is not None
    with Session(engine) as session:
        snapshots = session.exec(select(RatingSnapshot).order_by(RatingSnapshot.contestant)).all()
    # the table's rating (the fit; alpha beat beta once), and no row for gamma, who has not played
    table = {row.contestant: row.rating for row in leaderboard(engine, tournament)}
    assert [(s.contestant, s.rating, s.matches, s.wins) for s in snapshots] == [
        ("alpha", table["alpha"], 1, 1),
        ("beta", table["beta"], 1, 0),
    ]
    assert table["alpha"] > table["beta"]


def test_finish_tournament_rejects_other_status(engine, tournament):
    with pytest.raises(ValueError, match="'running'"):
        finish_tournament(engine, tournament, "running")


def test_list_matches_in_schedule_order(engine, tournament, make_match):
    other = start_tournament(engine, "other", "o.yaml", "x: 1\n", "hash-o", 1, [], 1)
    save_match(engine, other, make_match("o-0", 0, {"alpha": 1, "beta": 2}))
    for index in (2, 0, 1):
        save_match(engine, tournament, make_match(f"rr-{index}", index, {"alpha": 1, "beta": 2}))
    assert [m.key for m in list_matches(engine, tournament)] == ["rr-0", "rr-1", "rr-2"]
    assert [m.key for m in list_matches(engine)] == ["rr-0", "rr-1", "rr-2", "o-0"]
    assert [t.id for t in list_tournaments(engine)] == [tournament, other]


def test_unknown_ids_raise_not_found(engine, tournament, make_match):
    with pytest.raises(NotFound, match="no match with id 99"):
        match_detail(engine, 99)
    with pytest.raises(NotFound, match="no tournament with id 99"):
        save_match(engine, 99, make_match("rr-0", 0, {"alpha": 1, "beta": 2}))
    for call in (get_tournament, finished_keys, list_matches):
        with pytest.raises(NotFound, match="no tournament with id 99"):
            call(engine, 99)
    with pytest.raises(NotFound):
        finish_tournament(engine, 99, "finished")
    assert _nothing_stored(engine)


def test_matches_saved_together_and_a_recorded_key_among_them(engine, tournament, make_match):
    first = save_match(engine, tournament, make_match("rr-0", 0, {"alpha": 1, "beta": 2}))
    batch = [
        make_match("rr-1", 1, {"alpha": 2, "beta": 1}),
        make_match("rr-0", 0, {"alpha": 2, "beta": 1}),
        make_match("rr-2", 2, {"alpha": 1, "beta": 2}),
    ]
    ids = save_matches(engine, tournament, [(m, None) for m in batch])
    assert (
        ids[1] == first and len(set(ids)) == 3
    )  # the recorded key keeps its first write; the others are new
    assert [m.key for m in list_matches(engine, tournament)] == ["rr-0", "rr-1", "rr-2"]
    [latest] = save_matches(engine, tournament, [(make_match("rr-3", 3, {"alpha": 1, "beta": 2}), None)])
    assert latest not in ids and match_detail(engine, latest).match.key == "rr-3"
    with pytest.raises(NotFound):
        save_matches(engine, 99, [(make_match("rr-4", 4, {"alpha": 1, "beta": 2}), None)])
