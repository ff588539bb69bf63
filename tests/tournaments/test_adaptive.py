"""The adaptive format (tournaments.adaptive): which matches it chooses, against fields of known
strengths whose matches are drawn here from the Bradley–Terry model, and when it ends."""

from __future__ import annotations

import math
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest

from market.yaml_files import ConfigError
from results.rating_fit import Fit, Rating, Separation, fit
from tournaments.adaptive import AdaptiveSchedule
from tournaments.config import Tournament, load_tournament
from tournaments.schedule import MatchSpec, schedule


def field(folder: Path, names: list[str], extra: str = "", fmt: str = "adaptive") -> Tournament:
    path = folder / "adaptive.yaml"
    path.write_text(
        textwrap.dedent(
            f"""
            name: adaptive
            format: {fmt}
            scenarios: [calvano]
            repetitions: 20
            max_concurrent_matches: 4
            """
        )
        + "contestants:\n"
        + "".join(f"  - {{name: {name}, kind: fixed_price}}\n" for name in names)
        + textwrap.dedent(extra)
    )
    return load_tournament(path)


def outcome(match: MatchSpec, strengths: dict[str, float], seed: int) -> list[tuple[str, int]]:
    """The match's ranking drawn from the strengths (Elo scale): the first seat wins with
    probability 1 / (1 + 10^((s_b - s_a) / 400)), from a generator of the match's key."""
    a, b = match.seats
    draw = np.random.default_rng([seed, zlib.crc32(match.key.encode())]).random()
    wins = draw < 1 / (1 + 10 ** ((strengths[b] - strengths[a]) / 400))
    return [(a, 1), (b, 2)] if wins else [(a, 2), (b, 1)]


def played(
    tournament: Tournament, strengths: dict[str, float], seed: int = 0
) -> tuple[list[list[MatchSpec]], list[list[tuple[str, int]]], str]:
    """The rounds the schedule chose, every match's ranking, and why it ended."""
    chosen = AdaptiveSchedule(tournament)
    rounds: list[list[MatchSpec]] = []
    rankings: list[list[tuple[str, int]]] = []
    while True:
        round_ = chosen.next_round(rankings)
        if not round_.matches:
            assert round_.ended is not None
            return rounds, rankings, round_.ended
        rounds.append(round_.matches)
        rankings += [outcome(match, strengths, seed) for match in round_.matches]


def test_the_first_round_seats_everyone_around_a_ring(tmp_path):
    names = ["a", "b", "c", "d", "e"]
    first = AdaptiveSchedule(field(tmp_path, names)).next_round([]).matches
    assert [m.seats for m in first] == [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("a", "e")]
    assert [m.key for m in first][:2] == ["calvano/seed=0/a+b", "calvano/seed=0/b+c"]


def test_with_two_clearly_apart_and_a_tied_pair_it_spends_its_matches_on_the_tie(tmp_path):
    """top is far above and bottom far below two equals: once top and bottom are told from
    them (from whichever of the two is next to them), every match goes to the pair that no
    number of matches settles, to the cap."""
    strengths = {"top": 1800.0, "tie1": 1000.0, "tie2": 1000.0, "bottom": 200.0}
    tournament = field(tmp_path, list(strengths), "max_matches: 80\n")
    rounds, _, ended = played(tournament, strengths)
    later = [frozenset(m.seats) for r in rounds[1:] for m in r]
    tied = frozenset({"tie1", "tie2"})
    assert ended == "max_matches reached (80)" and sum(len(r) for r in rounds) == 80
    assert later.count(tied) / len(later) > 0.7
    # the last half of the matches, once the others are settled whichever of the two is above
    assert {frozenset(m.seats) for r in rounds for m in r if m.index >= 40} == {tied}


@pytest.mark.slow  # six schedules played to their end: 15 s
def test_a_field_of_known_strengths_is_ordered_with_fewer_matches_than_the_round_robin(tmp_path):
    """Four contestants 200 Elo apart, over six draws of the matches' outcomes: every run ends
    with all of them ordered, in the true order, with fewer matches than the round robin of the
    same seeds. Stopping once the order is settled picks the runs whose gaps looked wide,
    so the fitted ratings spread wider than the truth and their 95% intervals cover it less
    often than 95%: here 13 of the 24 (the round robin's cover about 90%, test_rating_fit)."""
    strengths = {name: 1000.0 + 200.0 * (1.5 - k) for k, name in enumerate("abcd")}
    tournament = field(tmp_path, list(strengths))
    covered = 0
    for seed in range(6):
        rounds, rankings, ended = played(tournament, strengths, seed)
        assert ended == "every two contestants next to each other in the table are ordered at 95% confidence"
        ratings = fit(rankings).ratings
        assert sorted(ratings, key=lambda name: -ratings[name].rating) == list(strengths)
        covered += sum(ratings[name].low <= strengths[name] <= ratings[name].high for name in strengths)
        assert sum(len(r) for r in rounds) < len(schedule(tournament)) == math.comb(4, 2) * 20
    assert 12 <= covered <= 22


def test_the_same_results_give_the_same_rounds_and_a_new_schedule_chooses_them_again(tmp_path):
    """A resumed run builds its schedule anew and gives it the stored rankings round by round:
    it chooses the rounds it had chosen."""
    strengths = {name: 1000.0 + 150.0 * k for k, name in enumerate("abcd")}
    tournament = field(tmp_path, list(strengths))
    rounds, rankings, _ = played(tournament, strengths, seed=3)
    again = AdaptiveSchedule(tournament)
    seen = 0
    for round_ in rounds:
        assert again.next_round(rankings[:seen]).matches == round_
        seen += len(round_)
    assert [m.index for r in rounds for m in r] == list(range(seen))


def test_groups_of_three_seat_the_pair_with_the_one_rated_nearest(tmp_path):
    chosen = AdaptiveSchedule(field(tmp_path, ["a", "b", "c", "d"], "group_size: 3\n"))
    first = chosen.next_round([]).matches
    assert [m.seats for m in first] == [("a", "b", "c"), ("b", "c", "d"), ("a", "c", "d"), ("a", "b", "d")]
    ratings = {"a": 1300.0, "b": 1000.0, "c": 990.0, "d": 900.0}
    found = Fit(
        {n: Rating(r, r - 50, r + 50, 1) for n, r in ratings.items()}, list(ratings), np.empty((0, 4)), [], []
    )
    # b and c's middle is 995: d is 95 from it, a 305
    assert chosen.group(found, Separation("b", "c", 0.6, False, 10)) == ("b", "c", "d")


@pytest.mark.parametrize(
    "extra, words",
    [
        ("max_matches: 10\n", "max_matches: only applies to the adaptive format"),
        ("group_size: 1\n", "group_size: adaptive orders contestants by the matches they meet in"),
        ("sweep: {a.price: [10, 20]}\n", "sweep: adaptive plays one field"),
        ("confidence: 0.4\n", "confidence: Input should be greater than 0.5"),
        (
            "max_matches: 2\n",
            "max_matches: 2 is fewer than the first round, in which everyone plays: 3 matches",
        ),
    ],
)
def test_settings_it_cannot_take_are_one_line(tmp_path, extra, words):
    with pytest.raises(ConfigError) as raised:
        field(tmp_path, ["a", "b", "c"], extra, "round_robin" if "max_matches: 10" in extra else "adaptive")
    assert words in str(raised.value) and "\n" not in str(raised.value)


def test_its_scoring_objective_is_part_of_its_identity(tmp_path):
    """An adaptive run rates by the scoring's objective to choose its rounds: a resume with
    another would choose others. A round robin's scoring only reads its results."""
    hashes = {}
    for fmt in ("adaptive", "round_robin"):
        for objective in ("net_worth", "goals"):
            folder = tmp_path / f"{fmt}-{objective}"
            folder.mkdir()
            extra = f"scoring: {{objective: {objective}}}\n"
            hashes[fmt, objective] = field(folder, ["a", "b", "c"], extra, fmt).config_hash
    assert hashes["adaptive", "net_worth"] != hashes["adaptive", "goals"]
    assert hashes["round_robin", "net_worth"] == hashes["round_robin", "goals"]
