"""The adaptive format (tournaments.adaptive): which matches it chooses, against fields of known
strengths whose matches are drawn here from the Bradley–Terry model, and when it ends."""

from __future__ import annotations

import functools
import math
import textwrap
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from common.yaml_files import ConfigError
from results.scoring.rating_fit import Fit, Rating, fit
from tournaments.adaptive import AdaptiveSchedule, Round
from tournaments.config import Tournament
from tournaments.load import load_tournament
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


class Played(NamedTuple):
    """A schedule played to its end: the schedule, the rounds it chose, every match's ranking,
    and the round without matches that ended it (saying why)."""

    schedule: AdaptiveSchedule
    rounds: list[Round]
    rankings: list[list[tuple[str, int]]]
    end: Round

    @property
    def matches(self) -> list[list[MatchSpec]]:
        return [r.matches for r in self.rounds]

    @property
    def ended(self) -> str:
        assert self.end.ended is not None
        return self.end.ended


def played(tournament: Tournament, strengths: dict[str, float], seed: int = 0) -> Played:
    chosen = AdaptiveSchedule(tournament)
    rounds: list[Round] = []
    rankings: list[list[tuple[str, int]]] = []
    while (round_ := chosen.next_round(rankings)).matches:
        rounds.append(round_)
        rankings += [outcome(match, strengths, seed) for match in round_.matches]
    return Played(chosen, rounds, rankings, round_)


# Four contestants 200 Elo apart, in the file's order from the strongest: a field the schedule
# orders by its own rule.
APART = {name: 1000.0 + 200.0 * (1.5 - k) for k, name in enumerate("abcd")}


@pytest.fixture(scope="module")
def apart(tmp_path_factory) -> tuple[Tournament, Callable[[int], Played]]:
    """The APART field, and its schedule played with the outcomes drawn from a seed: each seed
    played once for the module, the tests that read the same seed sharing its play (a play
    fits the ratings round after round, most of this module's CPU)."""
    tournament = field(tmp_path_factory.mktemp("apart"), list(APART))
    return tournament, functools.cache(lambda seed: played(tournament, APART, seed))


def test_the_first_round_seats_everyone_around_a_ring(tmp_path):
    names = ["a", "b", "c", "d", "e"]
    first = AdaptiveSchedule(field(tmp_path, names)).next_round([]).matches
    assert [m.seats for m in first] == [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("a", "e")]
    assert [m.key for m in first][:2] == ["calvano/seed=0/a+b", "calvano/seed=0/b+c"]


def test_with_two_clearly_apart_and_a_tied_pair_it_spends_its_matches_on_the_tie(tmp_path):
    """top is far above and bottom far below two equals: once top and bottom are told from
    them (from whichever of the two is next to them), every match goes to the pair that no
    number of matches settles, to the cap less the room of the confirmation round: 3 pairs of
    neighbours x 6 meetings (2^-6 <= 0.05 / 3 < 2^-5)."""
    strengths = {"top": 1800.0, "tie1": 1000.0, "tie2": 1000.0, "bottom": 200.0}
    tournament = field(tmp_path, list(strengths), "max_matches: 80\n")
    play = played(tournament, strengths)
    (*rounds, confirmation), ended = play.matches, play.ended
    later = [frozenset(m.seats) for r in rounds[1:] for m in r]
    tied = frozenset({"tie1", "tie2"})
    assert ended.startswith("max_matches reached (80); the intervals include a confirmation round of 18 ")
    assert sum(len(r) for r in rounds) == 80 - 18 and len(confirmation) == 18
    assert later.count(tied) / len(later) > 0.7
    # the last matches before the confirmation, once the others are settled whichever of the two is above
    assert {frozenset(m.seats) for r in rounds for m in r if m.index >= 40} == {tied}


def test_after_the_stop_each_two_neighbours_meet_again_in_fresh_matches_and_the_schedule_ends(apart):
    """The confirmation round: once every neighbour is ordered, each two next to each other
    in the table fitted at the stop meet 6 times more (as many meetings as settle a pair: 2^-6
    <= 0.05 / 3), in matches none of the rounds before played, and then the schedule ends
    saying so, as often as it is asked."""
    _, play_of = apart
    chosen, rounds, rankings, round_ = play_of(0)
    assert [r.confirmation for r in rounds] == [False] * (len(rounds) - 1) + [True]
    *before, confirmation = [r.matches for r in rounds]
    at_stop = fit(rankings[: -len(confirmation)]).ratings
    table = sorted(at_stop, key=lambda name: -at_stop[name].rating)
    neighbours = Counter(frozenset(pair) for pair in zip(table, table[1:]))
    assert Counter(frozenset(m.seats) for m in confirmation) == {pair: 6 for pair in neighbours}
    assert not {m.key for m in confirmation} & {m.key for r in before for m in r}
    ended = (
        "every two contestants next to each other in the table are ordered at 95% confidence; the "
        "intervals include a confirmation round of 18 fresh matches of neighbours played after that"
    )
    assert round_.ended == ended and chosen.next_round(rankings) == round_


def test_a_cap_with_no_room_left_after_the_first_round_says_the_intervals_are_unconfirmed(tmp_path):
    tournament = field(tmp_path, ["a", "b", "c"], "max_matches: 3\n")
    chosen = AdaptiveSchedule(tournament)
    first = chosen.next_round([]).matches
    assert len(first) == 3
    last = chosen.next_round([[(m.seats[0], 1), (m.seats[1], 2)] for m in first])
    assert last.matches == [] and last.ended == (
        "max_matches reached (3); max_matches left no room for a confirmation round, so the "
        "intervals may be too narrow"
    )


@pytest.mark.slow  # six schedules played to their end: 15 s
def test_a_field_of_known_strengths_is_ordered_with_fewer_matches_than_the_round_robin(apart):
    """Four contestants 200 Elo apart, over six draws of the matches' outcomes: every run ends
    with all of them ordered, in the true order, with fewer matches than the round robin of the
    same seeds, and its 95% intervals, the confirmation round's matches in them, cover the true
    ratings in 19 or more of the 24 cases: at the 90% the benchmark counts for them and for a
    round robin (docs/benchmarks.md), in 97% of draws; intervals fitted at the stop, without it,
    cover 74% there, and reach 19 in 38% of draws (here 13 of 24)."""
    tournament, play_of = apart
    strengths = APART
    covered = 0
    for seed in range(6):
        play = play_of(seed)
        rounds, rankings = play.matches, play.rankings
        assert play.ended.startswith(
            "every two contestants next to each other in the table are ordered at 95% confidence; "
        )
        ratings = fit(rankings).ratings
        assert sorted(ratings, key=lambda name: -ratings[name].rating) == list(strengths)
        covered += sum(ratings[name].low <= strengths[name] <= ratings[name].high for name in strengths)
        assert sum(len(r) for r in rounds) < len(schedule(tournament)) == math.comb(4, 2) * 20
    assert covered >= 19


def test_the_same_results_give_the_same_rounds_and_a_new_schedule_chooses_them_again(apart):
    """A resumed run builds its schedule anew and gives it the stored rankings round by round:
    it chooses the rounds it had chosen, the confirmation round among them. (The APART field,
    whose schedule stops by its own rule and confirms, where 150 apart would play to its cap of
    120 matches.)"""
    tournament, play_of = apart
    play = play_of(0)
    again = AdaptiveSchedule(tournament)
    seen = 0
    for round_ in play.rounds:
        assert again.next_round(play.rankings[:seen]) == round_
        seen += len(round_.matches)
    assert again.next_round(play.rankings) == play.end
    assert play.rounds[-1].confirmation
    assert [m.index for r in play.matches for m in r] == list(range(seen))


def test_groups_of_three_seat_the_pair_with_the_one_rated_nearest(tmp_path):
    chosen = AdaptiveSchedule(field(tmp_path, ["a", "b", "c", "d"], "group_size: 3\n"))
    first = chosen.next_round([]).matches
    assert [m.seats for m in first] == [("a", "b", "c"), ("b", "c", "d"), ("a", "c", "d"), ("a", "b", "d")]
    ratings = {"a": 1300.0, "b": 1000.0, "c": 990.0, "d": 900.0}
    found = Fit(
        {n: Rating(r, r - 50, r + 50, 1) for n, r in ratings.items()}, list(ratings), np.empty((0, 4)), [], []
    )
    # b and c's middle is 995: d is 95 from it, a 305
    assert chosen.group(found, "b", "c") == ("b", "c", "d")


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
