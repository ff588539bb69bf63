"""`arena export`: the tables read back with pandas hold exactly what the record holds."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pyarrow.parquet
import pytest
from sqlmodel import Session, SQLModel, select, update
from typer.testing import CliRunner

from arena.cli import app
from common.model_calls import ModelCall
from market.scenario import load_scenario
from market.types import DayRecord
from results.errors import NotFound
from results.presentation import export as export_module
from results.presentation.export import SCHEMAS, ExportError, export
from results.recording import save_match
from results.records import ModelCallRecord
from results.scoring.metrics import METRICS
from results.settings import DeviationProbe
from results.storage import store
from results.storage.schema import MatchResultRow, MetricRow, ModelCallRow
from results.storage.store import match_detail, start_tournament

FORMATS = ["csv", "parquet"]


def _read(folder, name: str, fmt: str) -> pd.DataFrame:
    path = folder / f"{name}.{fmt}"
    return pd.read_csv(path) if fmt == "csv" else pd.read_parquet(path)


def _call(
    merchant: str, day: int, tokens: int, cost: float | None, contestant: str = "beta"
) -> ModelCallRecord:
    return ModelCallRecord(
        merchant=merchant,
        contestant=contestant,
        day=day,
        purpose="decide",
        model="local/smollm2",
        input_tokens=tokens,
        output_tokens=7,
        cached_tokens=3,
        latency=0.25,
        attempts=1,
        cost=cost,
        cached=day == 2,
        request_hash=f"hash{day}",
        prompt_version="merchant-v1",
        temperature=0.0,
        seed=7,
    )


@pytest.fixture
def stored(engine, tournament, make_match) -> list[int]:
    """Two matches of the `tournament` fixture, with model calls and metrics, and a match of
    another tournament that must not be exported."""
    first = make_match("a", 0, {"alpha": 1, "beta": 2}, days=4).model_copy(
        update={"calls": [_call("m1", 1, 90, 0.5), _call("m1", 2, 40, None)]}
    )
    second = make_match("b", 1, {"alpha": 2, "beta": 1, "gamma": 3}, days=2)
    ids = [save_match(engine, tournament, first), save_match(engine, tournament, second)]
    other = start_tournament(
        engine, "other", "o.yaml", "name: other\n", "hash-other", 1, [("alpha", "rule", {})], 1
    )
    save_match(
        engine,
        other,
        make_match("z", 0, {"alpha": 1, "beta": 2}, days=3).model_copy(
            update={"calls": [_call("m0", 1, 5, 0.1, "alpha")]}
        ),
    )
    with Session(engine) as session:  # a known value and a missing one in place of the computed ones
        for match_id, merchant, value in ((ids[0], "m0", 0.75), (ids[1], "m2", None)):
            session.exec(
                update(MetricRow)
                .where(
                    MetricRow.match_id == match_id,
                    MetricRow.merchant == merchant,
                    MetricRow.name == "validity_rate",
                )
                .values(value=value)
            )
        session.commit()
    return ids


def _rows(engine, table, match_ids):
    with Session(engine) as session:
        return session.exec(select(table).where(table.match_id.in_(match_ids)).order_by(table.id)).all()


@pytest.mark.parametrize("fmt", FORMATS)
def test_tables_read_back_with_the_record_values(engine, tournament, stored, tmp_path, fmt):
    out = tmp_path / "export"
    written = export(engine, tournament, out, fmt)
    assert sorted(p.name for p in written) == sorted(f"{name}.{fmt}" for name in SCHEMAS)
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in written)  # no staging left

    results = _read(out, "results", fmt)
    expected = _rows(engine, MatchResultRow, stored)
    assert len(results) == len(expected) == 5
    for row in expected:
        got = results[(results.match_id == row.match_id) & (results.merchant == row.merchant)].iloc[0]
        assert (got.contestant, got["rank"], got.net_worth, got.profit) == (
            row.contestant,
            row.rank,
            row.net_worth,
            row.profit,
        )
        assert got.scenario == "corner-shop" and pd.isna(got.bankrupt_day)

    days = _read(out, "days", fmt)
    day_rows = [
        (match_id, record) for match_id in stored for record in store.match_detail(engine, match_id).days
    ]
    assert len(days) == len(day_rows) == 2 * 4 + 3 * 2
    indexed = days.set_index(["match_id", "merchant", "day"])
    for match_id, record in day_rows:
        got = indexed.loc[(match_id, record.merchant, record.day)]
        assert (got.cash_end, got.net_worth, got.revenue, bool(got.bankrupt)) == (
            record.cash_end,
            record.net_worth,
            record.revenue,
            record.bankrupt,
        )
        assert json.loads(got.operations) == record.operations
        assert json.loads(got.rejections)[0]["reason"] == record.rejections[0].reason
    assert set(days[days.match_id == stored[1]].contestant) == {"alpha", "beta", "gamma"}

    products = _read(out, "day_products", fmt)
    assert len(products) == len(day_rows)  # one product (tea) per merchant-day
    first_match, first = day_rows[0]
    got = products[
        (products.match_id == first_match) & (products.merchant == first.merchant) & (products.day == 1)
    ].iloc[0]
    assert (got["product"], got.price, got.units_sold, got.lost_sales, got.inventory) == (
        "tea",
        first.prices["tea"],
        first.units_sold["tea"],
        first.lost_sales["tea"],
        first.inventory["tea"],
    )
    planned = products.set_index(["match_id", "merchant", "day"]).planned_price
    assert planned[(first_match, first.merchant, 1)] == first.plan["tea"] == 5.0
    assert pd.isna(planned[(first_match, first.merchant, 2)])  # no plan stated that day

    calls = _read(out, "calls", fmt)
    call_rows = _rows(engine, ModelCallRow, stored)
    assert len(calls) == len(call_rows) == 2
    assert list(calls.input_tokens) == [c.input_tokens for c in call_rows]
    assert list(calls.contestant) == ["beta", "beta"]
    assert calls.cost.iloc[0] == 0.5 and pd.isna(calls.cost.iloc[1])
    assert [bool(c) for c in calls.cached] == [False, True]

    metrics = _read(out, "metrics", fmt)
    stored_metrics = store.metrics(engine, tournament)
    assert len(metrics) == len(stored_metrics) == 5 * len(METRICS)
    assert [row[:4] for row in metrics.itertuples(index=False, name=None)] == [
        tuple(m[:4]) for m in stored_metrics
    ]
    assert list(metrics.value) == pytest.approx(
        [float("nan") if m.value is None else m.value for m in stored_metrics], nan_ok=True
    )
    validity = metrics[metrics.name == "validity_rate"].set_index(["match_id", "merchant"]).value
    assert validity[(stored[0], "m0")] == 0.75 and pd.isna(validity[(stored[1], "m2")])


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_collusion_measures_are_exported(engine, tournament, make_match, day_record, tmp_path, fmt):
    """A calvano match held above the Nash price for six days: its merchants' gains in
    `metrics`, its market's in `market_metrics`, its supra-competitive window in `price_windows`."""
    days = [
        day_record(
            merchant=m,
            day=d,
            products=["good"],
            prices={"good": 1.9},
            unit_cost={"good": 1.0},
            net_worth=1000.0,
        )
        for d in range(1, 7)
        for m in ("m0", "m1")
    ]
    match = make_match("cal", 0, {"alpha": 1, "beta": 2}, days=6).model_copy(
        update={"scenario": "calvano", "days_played": days}
    )
    match_id = save_match(engine, tournament, match, scenario=load_scenario("calvano"))
    market = match_detail(engine, match_id).market
    export(engine, tournament, tmp_path, fmt)

    metrics = _read(tmp_path, "metrics", fmt)
    assert (
        list(metrics[metrics.name == "price_gain"].value)
        == [pytest.approx((1.9 - 1.4729) / (1.9250 - 1.4729), abs=1e-3)] * 2
    )  # Calvano's p_N, p_M
    market_metrics = _read(tmp_path, "market_metrics", fmt)
    assert (
        list(market_metrics.columns)
        == ["match_id", "name", "value", "note"]
        == SCHEMAS["market_metrics"].names
    )
    assert (
        list(market_metrics.name)
        == ["market_profit_gain", "market_price_gain", "supra_competitive_days", "price_war_days"]
        == list(market.metrics)
    )
    assert list(market_metrics.value) == pytest.approx(list(market.metrics.values()))
    windows = _read(tmp_path, "price_windows", fmt)
    assert list(windows.columns) == SCHEMAS["price_windows"].names
    assert [tuple(row) for row in windows.itertuples(index=False, name=None)] == [
        (match_id, "supra_competitive", 1, 6)
    ]


@pytest.mark.parametrize("fmt", FORMATS)
def test_messages_have_a_table_of_their_own(engine, tournament, make_match, tmp_path, fmt):
    """One row per message said (commas, quotes and a newline kept); days without one have none,
    and `days` has no message column."""
    said = {(2, "m0"): 'I hold 4.50, "if you do"', (3, "m1"): "fine,\nme too"}
    match = make_match("talk", 0, {"alpha": 1, "beta": 2})
    days = [dataclasses.replace(d, message=said.get((d.day, d.merchant), "")) for d in match.days_played]
    match_id = save_match(engine, tournament, match.model_copy(update={"days_played": days}))
    export(engine, tournament, tmp_path, fmt)
    messages = _read(tmp_path, "messages", fmt)
    assert list(messages.columns) == SCHEMAS["messages"].names
    assert [tuple(row) for row in messages.itertuples(index=False, name=None)] == [
        (tournament, match_id, "talk", day, merchant, {"m0": "alpha", "m1": "beta"}[merchant], text)
        for (day, merchant), text in said.items()
    ]
    assert "message" not in _read(tmp_path, "days", fmt).columns


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_tournament_without_matches_gives_empty_tables_with_their_columns(
    engine, tournament, tmp_path, fmt
):
    export(engine, tournament, tmp_path, fmt)
    for name, schema in SCHEMAS.items():
        table = _read(tmp_path, name, fmt)
        assert table.empty and list(table.columns) == schema.names


def test_a_failure_midway_leaves_no_file(engine, tournament, stored, tmp_path, monkeypatch):
    real = export_module._write_match
    calls = []

    def failing(write, detail, factors):
        calls.append(detail.match.id)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(write, detail, factors)

    monkeypatch.setattr(export_module, "_write_match", failing)
    with pytest.raises(ExportError, match="No space left on device"):
        export(engine, tournament, tmp_path / "out", "parquet")
    assert list((tmp_path / "out").iterdir()) == []


def test_unknown_tournament_creates_nothing(engine, tmp_path):
    with pytest.raises(NotFound):
        export(engine, 999, tmp_path / "out", "csv")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "args, needle",
    [
        (["999", "--out", "{tmp}/out"], "no tournament with id 999"),
        (["{id}", "--out", "{tmp}/file.txt"], "exists and is not a folder"),
        (["{id}", "--out", "{tmp}/file.txt/sub"], "cannot create or write the folder"),
    ],
    ids=["unknown-tournament", "out-is-a-file", "out-under-a-file"],
)
def test_cli_mistakes_are_one_line_and_exit_2(engine, tournament, stored, tmp_path, args, needle):
    (tmp_path / "file.txt").write_text("keep me")
    args = [a.format(id=tournament, tmp=tmp_path) for a in args]
    result = CliRunner().invoke(app, ["export", *args, "--db", str(engine.url)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in result.output
    assert {p.name for p in tmp_path.iterdir()} - {"arena.db", "arena.db-wal", "arena.db-shm"} == {"file.txt"}
    assert (tmp_path / "file.txt").read_text() == "keep me"


def test_cli_exports_parquet(engine, tournament, stored, tmp_path):
    result = CliRunner().invoke(
        app,
        [
            "export",
            str(tournament),
            "--format",
            "parquet",
            "--out",
            str(tmp_path / "x"),
            "--db",
            str(engine.url),
        ],
    )
    assert result.exit_code == 0, result.output
    assert (
        len(pd.read_parquet(tmp_path / "x" / "results.parquet"))
        == len(match_detail(engine, stored[0]).results) + 3
    )


# What `arena export` leaves out of the stored record, and why. Every other field of every
# table of results.storage.schema must reach a file: a field added to a record is exported or added here.
NOT_EXPORTED = {
    "tournament": "the tournament is the one named by the export; its file is kept in the database",
    "contestant": "contestants are named on every row; their kinds and parameters are in the tournament file",
    "rating_snapshot": "the leaderboard as reported at a run's end (`arena leaderboard` computes it)",
    "fault": "a match's faults are read with `arena show`; the export has no table of them",
    "deviation_fault": "as `fault`, for the deviated path",
    "recall_question": "recall questions are read with `arena show`; the export has no table of them",
    "run_progress": "where a run stood while it played, for `arena serve`; not what happened in it",
    "sweep_cell": "a cell's factors are columns of `matches` and `results`; its label leads each match's key",
    "run_end": "why a run ended early, which `arena run` and `arena leaderboard` say; not what happened",
    "conduct": "the majority a judging set: the `conduct` table gives each item's labels as it combines them",
    "judged_match": "which judges have judged a match: `judgements` holds what each answered",
    "match_conduct": "each seat's conduct, kept for tables: `conduct` and `claims` give what it counts",
}
LEFT_OUT = {
    ("match", "tournament_id"): "the export is of one tournament (`messages` carry its id)",
    ("match", "wall_seconds"): "how long the match took to play differs between runs of one schedule",
    ("match", "finished_at"): "when the match was stored, not what happened in it",
    ("model_call", "tournament_id"): "the export is of one tournament",
    (
        "model_call",
        "match_key",
    ): "the match's key is in `results`; calls of matches not stored are not exported",
    ("deviation_call", "tournament_id"): "the export is of one tournament",
    ("transcript", "steps"): "a merchant-day's count of calls: the distinct `step`s of its rows",
    ("transcript", "words"): "the day's steps, compressed: exported a message a row",
    ("desk_page", "tournament_id"): "the export is of one tournament",
    (
        "desk_page",
        "shown",
    ): "a digest of what the page showed, for a replay's check; `days` holds what it showed",
}
EXPORTED_IN = {
    "match": "results",
    "match_result": "results",
    "model_call": "calls",
    "transcript": "transcript",
    "deviation_call": "deviated_calls",
    "metric": "metrics",
    "metric_note": "metrics",  # and the market's in market_metrics
    "market_metric": "market_metrics",
    "price_window": "price_windows",
    "goal": "goals",
    "off_path": "off_path",
    "judgement": "judgements",
    "desk_page": "pages",
}
DAY_RECORDS = {"day_log": "", "deviation_path": "deviated_"}  # a path's DayRecords, stored encoded


def test_every_field_of_the_stored_record_is_exported_unless_left_out_on_purpose(
    engine, tournament, tmp_path
):
    export(engine, tournament, tmp_path, "parquet")
    exported = {
        path.stem: set(pyarrow.parquet.read_schema(path).names) for path in tmp_path.glob("*.parquet")
    }
    missing = []
    for table in SQLModel.metadata.sorted_tables:
        if table.name in NOT_EXPORTED:
            continue
        if table.name in DAY_RECORDS:
            prefix = DAY_RECORDS[table.name]
            for name in (f.name for f in dataclasses.fields(DayRecord)):
                exported_as = {
                    "merchant": [f"{prefix}days"],
                    "message": [f"{prefix}messages"],
                }.get(name, [f"{prefix}days", f"{prefix}day_products"])
                column = {"message": "text", "prices": "price", "plan": "planned_price"}.get(name, name)
                if not any(column in exported[where] for where in exported_as):
                    missing.append(f"{table.name}: DayRecord.{name}")
            if table.name == "deviation_path":
                missing += [
                    f"deviation_path: DeviationProbe.{name}"
                    for name in DeviationProbe.model_fields
                    if name not in exported["deviations"]
                ]
            continue
        if table.name not in EXPORTED_IN:
            missing.append(f"{table.name}: neither exported nor in NOT_EXPORTED")
            continue
        for column in table.columns:
            if (table.name, column.name) in LEFT_OUT or (column.name == "id" and table.name != "match"):
                continue  # a row's own id is the database's; the match's is every row's match_id
            name = "match_id" if (table.name, column.name) == ("match", "id") else column.name
            if name not in exported[EXPORTED_IN[table.name]]:
                missing.append(f"{table.name}.{column.name}")
    assert missing == []


def test_the_calls_tables_have_a_column_per_field_of_a_model_call(engine, tournament, tmp_path):
    export(engine, tournament, tmp_path, "parquet")
    for name in ("calls", "deviated_calls"):
        names = pyarrow.parquet.read_schema(tmp_path / f"{name}.parquet").names
        assert names == ["match_id", "merchant", "contestant", *ModelCall.model_fields]
