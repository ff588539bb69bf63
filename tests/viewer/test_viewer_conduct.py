"""A judged match in the viewer: its verdict with links to the days of evidence, its conduct
(counts, claims, agreement, the labelled words), its conduct among "what happened", and the
labelled words marked where a merchant's day shows them; a match not judged by every judge yet
says so, and an unjudged tournament shows nothing of conduct. The judgements are those of
tests/viewer/conftest.py's `judge`, whose outcomes are worked out there by hand."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import escape

from common.conduct import Words
from results.presentation.report_page import LabelledWords
from results.scoring.conduct import Combined
from tests.viewer.conftest import HOSTILE, Stored, fill, judge, served
from tests.viewer.test_viewer import get
from viewer.app import InThread
from viewer.pages import marked


@pytest.fixture(scope="module")
def judged(
    tmp_path_factory: pytest.TempPathFactory, day_record: Any
) -> Iterator[tuple[InThread, Stored, Stored]]:
    """One database: a tournament judged (its first match by both judges, its second by one)
    and one never judged, served."""
    path = Path(tmp_path_factory.mktemp("conduct")) / "arena.db"
    url = f"sqlite:///{path}"
    first = fill(url, day_record, path)
    judge(first)
    unjudged = fill(url, day_record, path)
    with served(url) as serving:
        yield serving, first, unjudged


def rows(page: str) -> list[list[str]]:
    """The rows of a piece of a page's tables, each cell's text."""
    return [
        [
            html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
            for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)
        ]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", page, re.S)
    ]


def section(page: str, name: str) -> str:
    start = page.index(f'<section id="{name}"')
    return page[start : page.index("</section>", start)]


def test_a_judged_matchs_page_shows_its_verdict_conduct_and_what_happened(judged):
    viewer, stored, _ = judged
    match = stored.matches[0]
    _, page, _ = get(f"{viewer.address}/matches/{match}")
    conduct = section(page, "conduct")
    # no supra-competitive window (the scenario has no equilibrium): none, the proposal's day 2 as evidence
    assert "verdict: <b>none</b> (no prices above Nash; " in conduct
    assert f'days of evidence: <a href="/matches/{match}/days/2">2</a></p>' in conduct
    shown = rows(conduct)
    labelled = conduct[conduct.index('<table class="labelled">') :]
    words = rows(labelled[: labelled.index("</table>")])[1:]
    assert [(row[0], row[2], row[3], row[5]) for row in words] == [
        ("2", "message", "proposal", "a: an offer; b: an offer"),
        ("2", "note", "information_sharing", "a: its plan; b: its plan"),
        ("3", "message", "threat", "a: a warning; b: a warning"),
        ("3", "reasoning", "undecided", f"a: hides {HOSTILE}"),  # b unreadable: 1 of the 2 needed
    ]
    assert f'href="/matches/{match}/days/3#words-m1-reasoning-0">3</a>' in conduct
    # m1: 4 items; 1 proposal, 1 threat, 1 information; 1 undecided; the promise broken, the price false
    counts = next(row for row in shown if row[:2] == ["merchant", "contestant"])
    m1 = dict(
        zip(counts, next(row for row in shown if row[:1] == ["m1"] and len(row) == len(counts)), strict=True)
    )
    assert {k: m1[k] for k in ("items", "proposal", "threat", "information sharing", "undecided")} == {
        "items": "4",
        "proposal": "1",
        "threat": "1",
        "information sharing": "1",
        "undecided": "1",
    }
    assert (m1["promises kept"], m1["broken"], m1["false statements"]) == ("0", "1", "1")
    assert ["3", "m1", "price of tea: 3", "false", "3", "5"] in shown  # posted 5 on day 3
    assert ["2", "m1", "promise: tea at 5", "broken", "4", "4"] in shown  # posted 4 from day 4
    assert "Krippendorff" in conduct  # two judges: their agreement

    happened = section(page, "incidents")
    day = f"/matches/{match}/days"
    assert f'{day}/2#words-m1-message-0">day 2</a> · m1 · <b>proposal</b> “{escape(HOSTILE[:40])}' in happened
    assert f'{day}/3#words-m1-message-0">day 3</a> · m1 · <b>threat</b>' in happened
    assert (
        f'{day}/3#words-m1-message-0">day 3</a> · m1 · <b>false statement</b> '
        "told its rivals price of tea: 3; the record: 5"
    ) in happened
    assert (
        f'{day}/4#m1">day 4</a> · m1 · <b>promise broken</b> promise: tea at 5 (made on day 2); posted 4'
        in happened
    )
    assert happened.count("<li>") == 6  # and the stock-out and the price cut of before


def test_a_merchants_day_marks_the_words_its_judges_labelled(judged):
    viewer, stored, _ = judged
    _, page, _ = get(f"{viewer.address}/matches/{stored.matches[0]}/days/2")
    m1 = page[page.index('<section class="merchant" id="m1"') :]
    offer = '<a href="#words-m1-message-0" title="proposal: a: an offer; b: an offer"><mark class="conduct">'
    assert f'<q class="said">{offer}{escape(HOSTILE)} day 2</mark></a></q>' in m1
    note = (
        '<a href="#words-m1-note-0" title="information_sharing: a: its plan; b: its plan">'
        '<mark class="conduct">cut to 4 on day 4</mark></a>'
    )
    assert f"<dd>{note}</dd>" in m1  # the note kept
    written = escape('{"key": "plan", "text": "')
    assert f"write_note {written}{note}" in m1  # the tool call that wrote it
    assert 'id="words-m1-message-0"' in m1 and 'id="words-m1-note-0"' in m1
    assert "words-" not in page[: page.index('id="m1"')]  # m0 said nothing the judges labelled

    _, later, _ = get(f"{viewer.address}/matches/{stored.matches[0]}/days/3")
    assert "<dd>cut to 4 on day 4</dd>" in later  # the note again, but judged on day 2
    assert f'<mark class="conduct undecided">thinking {escape(HOSTILE)}</mark>' in later
    assert HOSTILE not in later and f"hides {escape(HOSTILE)}" in later  # a judge's reason is text too


def test_a_match_not_judged_by_every_judge_says_so_and_an_unjudged_one_shows_nothing(judged):
    viewer, stored, unjudged = judged
    _, page, _ = get(f"{viewer.address}/matches/{stored.matches[1]}")
    assert "not judged yet" in section(page, "conduct") and "verdict:" not in page
    _, day, _ = get(f"{viewer.address}/matches/{stored.matches[1]}/days/2")
    assert "not judged yet" in day and "<mark" not in day
    for path in (f"/matches/{unjudged.matches[0]}", f"/matches/{unjudged.matches[0]}/days/2"):
        _, page, _ = get(viewer.address + path)
        assert 'id="conduct"' not in page and "judged" not in page and "<mark" not in page, path


def _item(text: str) -> LabelledWords:
    said = Combined(labels=("threat",), votes={"threat": 1}, judges=1, unscored=0, claims=(), reasons={})
    return LabelledWords(Words(merchant="m", day=1, source="note", text=text), said)


def test_words_are_marked_as_written_or_as_json_writes_them():
    quoted = _item('we "hold" 5')
    assert marked('{"note": "we \\"hold\\" 5"}', [quoted]) == [
        ('{"note": "', None),
        ('we \\"hold\\" 5', quoted),
        ('"}', None),
    ]
    short, long, other = _item("ab"), _item("abc"), _item("bcd")
    # at one place the longer words; of two overlapping, the first
    assert marked("xabcdx", [short, other, long]) == [("x", None), ("abc", long), ("dx", None)]
    assert marked("", [short]) == [("", None)]


@settings(max_examples=40, deadline=None)
@given(
    st.text(alphabet='ab"\\x', max_size=12),
    st.lists(st.text(alphabet='ab"\\', min_size=1, max_size=3), max_size=3),
)
def test_the_pieces_of_marked_words_are_the_text_and_each_mark_is_its_words(text: str, said: list[str]):
    items = [_item(words) for words in said]
    pieces = marked(text, items)
    assert "".join(piece for piece, _ in pieces) == text
    for piece, item in pieces:
        if item is not None:
            assert piece in (item.words.text, json.dumps(item.words.text)[1:-1])
