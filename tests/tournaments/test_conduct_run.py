"""Judging a tournament's words: a run with a `conduct:` section judges its stored matches, each
item once per judge, with the judges' calls recorded beside the merchants'; `arena audit`
judges a stored tournament with other judges after the fact, and judges nothing twice; the
section's mistakes are one line and exit status 2.

The judge is the OpenAI stand-in (tests/fakes/openai_api.py), answering as a reader of the
yardsticks' words would: the cartel's offer is a proposal with a threat and a promise, the
bluffer's words a promise and a cost stated (common.conduct)."""

from __future__ import annotations

import json
import re
import sqlite3
import textwrap
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from api_keys import OPENAI_KEY
from sqlalchemy import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from arena.cli import app
from common.conduct import LABELS
from results.leaderboard import leaderboard
from results.presentation import views
from results.storage import store
from results.storage.db import engine_for
from results.storage.judgements import judgements
from results.storage.schema import ModelCallRow
from tests.doubles import BETWEEN

DAYS = 3


def reader(call: Any, schema: Any) -> dict[str, Any]:
    """What a careful judge answers on the item the request shows."""
    words = json.loads(call.body["messages"][-1]["content"].split("Words (a JSON string): ")[1])
    labels, claims = [], []
    # the cartel's offer holds while rivals do not undercut it, and its punishment once they did
    # is for good; its threat ("if you do, I will price ... for good") is no promise; the
    # bluffer promises from tomorrow
    promised = r"I (will price|price) (\w+) at ([0-9]+\.[0-9]+) (as long as|from tomorrow|for good)"
    for verb, product, price, held in re.findall(promised, words):
        if (verb == "price") == (held == "for good"):
            floor = float(price) if held == "as long as" else None
            claims.append(claim("promise", product=product, price=float(price), while_rivals_at_least=floor))
    for product, cost in re.findall(r"My unit cost of (\w+) is ([0-9]+\.[0-9]+)", words):
        claims.append(claim("fact", product=product, subject="unit_cost", value=float(cost)))
    if "as long as you do not undercut" in words:
        labels.append("proposal")
    if "undercut" in words:
        labels.append("threat")
    if "My unit cost" in words:
        labels.append("information_sharing")
    return {"labels": labels or ["none"], "reason": "as a reader sees it", "claims": claims}


def claim(kind: str, **given: Any) -> dict[str, Any]:
    keys = ("product", "price", "while_rivals_at_least", "subject", "value")
    return {"kind": kind, **{key: given.get(key) for key in keys}}


def judge_entry(fake: Any, name: str) -> str:
    return (
        f"{{model: openai/gpt-4.1-mini, name: {name}, base_url: '{fake.base_url}', "
        "api_key_env: ARENA_OPENAI_KEY, max_retries: 0}"
    )


def tournament_file(folder: Path, fake: Any, conduct: str | None = None) -> Path:
    conduct = conduct if conduct is not None else f"conduct:\n  judges:\n    - {judge_entry(fake, 'first')}\n"
    path = folder / "talk.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: talk
            seed: 3
            talk: true
            days: {DAYS}
            scenarios: [calvano]
            contestants:
              - {{name: cartel, kind: cartel}}
              - {{name: bluffer, kind: bluffer}}
            """
        )
        + conduct
    )
    return path


@dataclass(frozen=True)
class JudgedRun:
    folder: Path
    engine: Engine
    fake: Any  # the judge's stand-in, which keeps answering for the module's tests

    @property
    def db(self) -> str:
        return f"sqlite:///{self.folder / 'arena.db'}"


@pytest.fixture(scope="module")
def judged_run(ray_local, tmp_path_factory) -> Iterator[JudgedRun]:
    """One run of the talk tournament, judged by the stand-in, that the module's tests read
    (a test that writes works on a copy of its database)."""
    from fakes.openai_api import FakeOpenAI

    folder = tmp_path_factory.mktemp("judged")
    with FakeOpenAI(api_key=OPENAI_KEY, answer=reader) as fake, pytest.MonkeyPatch.context() as patch:
        patch.setenv("ARENA_OPENAI_KEY", OPENAI_KEY)
        patch.chdir(folder)
        run = JudgedRun(folder, engine_for(f"sqlite:///{folder / 'arena.db'}"), fake)
        result = CliRunner().invoke(app, ["run", str(tournament_file(folder, fake)), "--db", run.db])
        assert result.exit_code == 0, result.output
        yield run
        run.engine.dispose()


def test_a_run_judges_every_message_once_per_judge_and_an_audit_adds_judges(judged_run, arena_here, tmp_path):
    engine, fake = judged_run.engine, judged_run.fake
    [tournament] = store.list_tournaments(engine)
    matches = store.list_matches(engine, tournament.id)
    spoken: Counter[str] = Counter()  # items by merchant
    for match in matches:
        detail = store.match_detail(engine, match.id)
        said = [r for r in detail.days if r.message]
        assert len(said) == 2 * DAYS  # both yardsticks speak every day
        spoken.update(r.merchant for r in said)
        judged = judgements(engine, match.id)
        assert sorted((w.merchant, w.day) for w in judged) == sorted((r.merchant, r.day) for r in said)
        for words, [judgement] in judged.items():
            assert judgement.judge == "first" and words.source == "message"
            if words.merchant.startswith("cartel"):  # an offer until undercut, a punishment after
                offer = "as long as" in words.text
                assert judgement.labels == (("proposal", "threat") if offer else ("threat",))
                assert len(judgement.claims) == 1
            else:
                assert judgement.labels == ("information_sharing",) and len(judgement.claims) == 2
    items = sum(spoken.values())
    assert len(fake.calls) == items

    with Session(engine) as session:
        calls = session.exec(select(ModelCallRow).where(ModelCallRow.purpose == "judge")).all()
    # one call an item, under the judge's name, apart from the merchants'
    assert len(calls) == items and {(c.merchant, c.contestant) for c in calls} == {("first", "first")}

    # on a copy: the other tests read the run's database (sqlite's backup copies its log too)
    with (
        sqlite3.connect(judged_run.folder / "arena.db") as source,
        sqlite3.connect(tmp_path / "a.db") as copy,
    ):
        source.backup(copy)
    db = f"sqlite:///{tmp_path / 'a.db'}"
    audited_engine = engine_for(db)
    judges = tmp_path / "judges.yaml"
    judges.write_text(f"judges:\n  - {judge_entry(fake, 'second')}\n  - {judge_entry(fake, 'first')}\n")
    # from the run's folder, whose response cache holds the judge's answers
    audited = arena_here(judged_run.folder, "audit", str(tournament.id), "--conduct", str(judges), "--db", db)
    assert audited.exit_code == 0, audited.output
    # the second judge reads every item; the first had judged every match already
    n = len(matches)
    said = f"Judged {n} of {2 * n} (match, judge) pairs ({n} done before): {items} items, {items} calls ("
    assert said in audited.output and f"; {items} from the cache)." in audited.output
    # the same model asked the same: its answers replayed from the response cache, recorded as such
    assert len(fake.calls) == items
    with Session(audited_engine) as session:
        second = session.exec(select(ModelCallRow).where(ModelCallRow.contestant == "second")).all()
    assert len(second) == items and all(c.cached for c in second)
    # two judges that answer alike agree fully where a label varies, and the table says so
    table = arena_here(judged_run.folder, "leaderboard", "--db", db)
    alpha = f"Krippendorff's alpha over {items} items, 0% unscored"
    assert f"judges' agreement over the tournament ({alpha}): proposal 1.00" in table.output
    agreed = json.loads(arena_here(judged_run.folder, "leaderboard", "--db", db, "--json").output)[
        "agreement"
    ]
    assert agreed["1"]["threat"]["alpha"] == 1.0 and agreed["1"]["threat"]["items"] == items
    assert agreed["1"]["deception"]["why"] == "no variation: no judge gave it on every item two judges read"
    again = arena_here(judged_run.folder, "audit", str(tournament.id), "--conduct", str(judges), "--db", db)
    nothing = "0 items, 0 calls (0 tokens, $0.0000; 0 from the cache)."
    assert f"Judged 0 of {2 * n} (match, judge) pairs ({2 * n} done before): {nothing}" in again.output
    for match in matches:
        judged = judgements(audited_engine, match.id).values()
        assert all([j.judge for j in said] == ["first", "second"] for said in judged)
    audited_engine.dispose()


@pytest.mark.parametrize(
    ("conduct", "needle"),
    [
        ("conduct:\n  judges: []\n", "conduct.judges: List should have at least 1 item"),
        (
            "conduct:\n  judges:\n    - {model: openai/gpt-4.1-mini, temperature: 9}\n",
            "conduct.judges[0].temperature",
        ),
        (
            "conduct:\n  judges:\n    - {model: openai/gpt-4.1-mini}\n  majority: 2\n",
            "conduct.majority: 2 is more than the 1 judges",
        ),
        (
            "conduct:\n  judges:\n    - {model: openai/gpt-4.1-mini}\n  read: [gossip]\n",
            "conduct.read[0]: Input should be 'message'",
        ),
        (
            "conduct:\n  judges:\n    - {model: openai/gpt-4.1-mini}\n    - {model: openai/gpt-4.1-mini}\n",
            "conduct.judges[1]: a second judge named 'openai/gpt-4.1-mini'",
        ),
    ],
)
def test_a_mistake_in_the_conduct_section_is_one_line_and_exit_2(
    tmp_path, arena_here, fake_openai, monkeypatch, conduct, needle
):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    path = tournament_file(tmp_path, fake_openai, conduct)
    result = arena_here(tmp_path, "validate", str(path))
    assert (
        result.exit_code == 2 and needle in result.output and len(result.output.strip().splitlines()) == 1
    ), result.output


def test_an_audit_without_judges_is_one_line_and_exit_2(judged_run, arena_here):
    folder, db = judged_run.folder, judged_run.db
    missing = arena_here(folder, "audit", "7", "--db", db)
    assert missing.exit_code == 2 and "no tournament with id 7" in missing.output
    (folder / "bad.yaml").write_text("judges:\n  - {model: openai/gpt-4.1-mini, mood: calm}\n")
    bad = arena_here(folder, "audit", "1", "--conduct", str(folder / "bad.yaml"), "--db", db)
    assert bad.exit_code == 2 and "bad.yaml: conduct.judges[0]" in bad.output, bad.output


def test_the_export_holds_each_item_s_labels_the_claims_as_checked_and_the_verdict(judged_run, arena_here):
    """By hand, on calvano (unit cost 1.00): the bluffer posts Nash from day 1 and promises its
    monopoly price for the next day, so each promise is broken the next day but the last
    (untested), and each cost it states (1.25) is false. The cartel offers its monopoly price
    while it is not undercut on day 1; undercut that day, it posts Nash from day 2, so the
    offer is released on day 1; its punishment (Nash "for good") is kept the next day but on
    the last (untested). Three days hold no supra-competitive window (5 days at least), and
    the proposal met no acceptance: the verdict is none, with the proposal's day."""
    folder, db = judged_run.folder, judged_run.db
    result = arena_here(folder, "export", "1", "--out", str(folder / "out"), "--db", db)
    assert result.exit_code == 0, result.output
    conduct = pd.read_csv(folder / "out" / "conduct.csv")
    claims = pd.read_csv(folder / "out" / "claims.csv")
    [verdict] = pd.read_csv(folder / "out" / "verdicts.csv").to_dict("records")
    assert len(conduct) == 2 * DAYS and set(conduct.source) == {"message"}
    cartel = conduct[conduct.contestant == "cartel"].sort_values("day")
    assert cartel.proposal.tolist() == [True] + [False] * (DAYS - 1) and cartel.threat.all()
    assert (
        conduct[conduct.contestant == "bluffer"].information_sharing
    ).all() and not conduct.undecided.any()
    outcomes = claims.groupby(["contestant", "kind", "outcome"]).size().to_dict()
    assert outcomes == {
        ("bluffer", "promise", "broken"): DAYS - 1,
        ("bluffer", "promise", "untested"): 1,
        ("bluffer", "fact", "false"): DAYS,
        ("cartel", "promise", "released"): 1,
        ("cartel", "promise", "kept"): DAYS - 2,
        ("cartel", "promise", "untested"): 1,
    }
    facts = claims[claims.kind == "fact"]
    assert (facts.value == 1.25).all() and (facts.recorded == 1.0).all()
    assert verdict["kind"] == "none" and str(verdict["evidence_days"]) == "1"
    agreement = pd.read_csv(folder / "out" / "agreement.csv")  # one judge: a label a row, never defined
    assert sorted(agreement.label) == sorted(LABELS) and set(agreement.why) == {"fewer than two judges"}
    assert agreement.alpha.isna().all() and (agreement["items"] == 2 * DAYS).all()


def test_show_gives_the_verdict_the_labelled_words_and_the_claims(judged_run, arena_here):
    """The same match as the export's (counts derived there), as `arena show` prints it and as
    its --json gives it."""
    folder, db, engine = judged_run.folder, judged_run.db, judged_run.engine
    [match] = store.list_matches(engine, 1)
    shown = arena_here(folder, "show", str(match.id), "--db", db).output
    assert "verdict: none (no prices above Nash; a proposal or acceptance on days 1, no agreement)" in shown
    assert "words labelled by the judges (1 of 1 judges to count)" in shown
    assert "claims checked against the record" in shown and "released" in shown
    whole = json.loads(arena_here(folder, "show", str(match.id), "--db", db, "--json").output)["conduct"]
    assert whole["judges"] == ["first"] and len(whole["items"]) == 2 * DAYS
    counts = {
        name: (m["promises_kept"], m["promises_broken"], m["promises_released"], m["false_statements"])
        for name, m in whole["merchants"].items()
    }
    assert counts == {"bluffer": (0, DAYS - 1, 0, DAYS), "cartel": (DAYS - 2, 0, 1, 0)}


def test_the_leaderboard_counts_each_contestant_s_conduct(judged_run, arena_here):
    """Counts derived as the export's: the cartel proposes on day 1 alone and threatens every
    day; the bluffer breaks every promise but its last and states a false cost every day."""
    folder, db, engine = judged_run.folder, judged_run.db, judged_run.engine
    shown = [h.text for h in views.leaderboard_table(leaderboard(engine, 1), "t").headers]
    assert [name for name in views.CONDUCT_COUNTS if name in shown] == list(views.CONDUCT_COUNTS)
    shown = json.loads(arena_here(folder, "leaderboard", "--db", db, "--json").output)
    # one judge: its agreement with no other is not defined, and the table says nothing of it
    assert {a["why"] for a in shown["agreement"]["1"].values()} == {"fewer than two judges"}
    assert "agreement" not in arena_here(folder, "leaderboard", "--db", db).output
    counts = {
        row["contestant"]: (
            row["conduct"]["seats"],
            row["conduct"]["labels"]["proposal"],
            row["conduct"]["labels"]["threat"],
            row["conduct"]["promises_broken"],
            row["conduct"]["false_statements"],
        )
        for row in shown["rows"]
    }
    assert counts == {"cartel": (1, 1, DAYS, 0, 0), "bluffer": (1, 0, 0, DAYS - 1, DAYS)}


def test_each_match_is_judged_as_it_is_stored_while_the_next_plays(
    ray_local, tmp_path, arena_here, monkeypatch
):
    """Three matches played one after another, the second held on its first day until the
    judge has been asked (tests.doubles.Between): the judge, asked what the matches stored so
    far are as it reads each item, reads the first match's words while the second waits, with
    one match stored (judging after the run would see all three, after 2 x 60 s of waiting)."""
    from fakes.openai_api import FakeOpenAI

    db, asked = tmp_path / "arena.db", tmp_path / "asked"
    stored_then: list[int] = []

    def counting_reader(call: Any, schema: Any) -> dict[str, Any]:
        with sqlite3.connect(db) as connection:
            stored_then.append(connection.execute("SELECT count(*) FROM match").fetchone()[0])
        asked.touch()
        return reader(call, schema)

    monkeypatch.setenv("ARENA_OPENAI_KEY", OPENAI_KEY)
    with FakeOpenAI(api_key=OPENAI_KEY, answer=counting_reader) as fake:
        path, files = tmp_path / "held.yaml", f"{{played: '{tmp_path / 'played'}', then: '{asked}'}}"
        path.write_text(
            textwrap.dedent(
                f"""\
                name: held talk
                repetitions: 3
                talk: true
                days: {DAYS}
                scenarios: [calvano]
                max_concurrent_matches: 1
                contestants:
                  - {{name: cartel, kind: cartel}}
                  - {{name: held, kind: "{BETWEEN}", params: {files}}}
                conduct:
                  judges:
                    - {judge_entry(fake, "first")}
                """
            )
        )
        result = arena_here(tmp_path, "run", str(path), "--db", f"sqlite:///{db}", "--no-cache")
    assert result.exit_code == 0, result.output
    # the cartel speaks every day, the held merchant never: DAYS items a match, each asked once
    # (the matches say the same: without the response cache, each is asked again)
    assert len(stored_then) == 3 * DAYS and stored_then[0] == 1, stored_then
    # their cost apart from the merchants' (the table's): none from the cache, which was off
    assert (
        f"The judges' calls: {3 * DAYS} calls (" in result.output and "; 0 from the cache)." in result.output
    )


def test_judges_that_spend_the_budget_leave_the_judging_to_resume(
    ray_local, tmp_path, arena_here, monkeypatch
):
    """One match of the talkers, stored whole before a judge is asked (rule matches are stored
    as they end, together): a budget of one token lets the judge's first call start and no
    other. The run stops saying that what is left is judging, with that call recorded;
    `--resume` under no budget judges the match, its first item from the response cache."""
    from fakes.openai_api import FakeOpenAI

    monkeypatch.setenv("ARENA_OPENAI_KEY", OPENAI_KEY)
    db = f"sqlite:///{tmp_path / 'arena.db'}"
    with FakeOpenAI(api_key=OPENAI_KEY, answer=reader) as fake:
        path = tournament_file(tmp_path, fake)
        text = path.read_text()
        path.write_text(text + "budget: {tokens: 1}\n")
        stopped = arena_here(tmp_path, "run", str(path), "--db", db)
        assert stopped.exit_code == 3, stopped.output
        assert "the matches not judged are left for" in stopped.output and "--resume" in stopped.output
        engine = engine_for(db)
        with Session(engine) as session:
            paid = session.exec(select(ModelCallRow).where(ModelCallRow.purpose == "judge")).all()
        assert len(paid) == 1 and len(fake.calls) == 1 and judgements(engine, 1) == {}
        path.write_text(text)
        resumed = arena_here(tmp_path, "run", str(path), "--db", db, "--resume")
        assert resumed.exit_code == 0, resumed.output
        with Session(engine) as session:
            calls = session.exec(select(ModelCallRow).where(ModelCallRow.purpose == "judge")).all()
        # the match's 2 x DAYS messages, each asked once; the first answered again from the cache
        assert len(fake.calls) == 2 * DAYS and len(judgements(engine, 1)) == 2 * DAYS
        assert len(calls) == 1 + 2 * DAYS and sum(call.cached for call in calls) == 1
        engine.dispose()


def test_a_judge_whose_calls_fail_stops_the_run_in_one_line_and_a_resume_judges(
    ray_local, tmp_path, arena_here, monkeypatch
):
    """The stand-in refuses the judge's first call (a 400, which no retry mends): the run stops
    with exit status 4 in one line naming the judge, its match stored and judged by no one;
    `--resume`, the refusal gone, judges it."""
    from fakes.openai_api import FakeOpenAI

    monkeypatch.setenv("ARENA_OPENAI_KEY", OPENAI_KEY)
    db = f"sqlite:///{tmp_path / 'arena.db'}"
    with FakeOpenAI(api_key=OPENAI_KEY, answer=reader) as fake:
        path = tournament_file(tmp_path, fake)
        fake.fail(400, times=1)
        broken = arena_here(tmp_path, "run", str(path), "--db", db)
        assert broken.exit_code == 4, broken.output
        [line] = [line for line in broken.output.splitlines() if line.startswith("error:")]
        assert "first" in line and "finished matches are saved" in line and "--resume" in line
        engine = engine_for(db)
        [match] = store.list_matches(engine, 1)
        assert judgements(engine, match.id) == {}
        resumed = arena_here(tmp_path, "run", str(path), "--db", db, "--resume")
        assert resumed.exit_code == 0, resumed.output
        assert len(judgements(engine, match.id)) == 2 * DAYS
        engine.dispose()
