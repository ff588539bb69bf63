"""Which matches a tournament plays, in a fixed order.

round_robin: every group of `group_size` contestants plays every scenario x seed.
free_for_all: all contestants in one market, every scenario x seed.
gauntlet: the challenger meets each other contestant alone, every scenario x seed.
solo: each contestant alone against the market, every scenario x seed (as round_robin with
group_size 1).
adaptive: the round robin's matches, chosen round by round where they settle the table most
(tournaments.adaptive); its schedule here is the most it may play.

With rotate_seats, the group's seat order turns by one for each successive seed, so no
contestant always holds the same seat (seat order decides who is listed first to rivals, the
order of tie-breaking, and, in a scenario with `seats:`, the unit costs and qualities a
merchant plays with): over as many seeds as seats, every contestant plays every seat.

With sampling_repeats N, every match is followed by N - 1 repeats of it for each of its
merchants, keys ending `/sample=K:NAME`: the market's draws and the other merchants' the same,
that merchant's own drawn anew (match_seeds).

A tournament with a sweep plays the schedule of each of its cells in turn, each match's key
led by its cell's label (`qlearning.alpha=0.05,group_size=2/calvano/seed=0/a+b`).
"""

from __future__ import annotations

import itertools
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from results.records import SweepCell, market_draw, repeat_key

if TYPE_CHECKING:  # a match runner imports the specs, not the tournament file's model
    from tournaments.config import Tournament


@dataclass(frozen=True, slots=True)
class MatchSpec:
    """One match of the schedule. A small record (its seat order shared with the other matches
    of its group), not a model: the driver holds the whole schedule for the length of a run."""

    key: str
    index: int
    scenario: str
    seed: int
    days: int
    seats: tuple[str, ...]
    cell: str = ""  # the label of its cell of a sweep (tournaments.config.Cell)
    sample: int = 0  # its repeat (sampling_repeats): 0 the match itself
    renewed: str = ""  # a repeat's merchant whose own draws are new

    @property
    def draws(self) -> str:
        """What the match's random draws are seeded from (match_seeds): its
        key without its cell, or for a merchant alone its scenario and seed, so that the solo
        matches ranked against one another (results.scoring.ratings.ranked_matches) start from the
        same draws: their merchants meet the same customers as long as their customers choose
        alike. The cells of a sweep play the same draws (common random numbers), so that two
        cells differ by their factors, not by their luck."""
        if len(self.seats) == 1:
            return f"{self.scenario}/seed={self.seed}"
        key = market_draw(self.key)
        return key.removeprefix(f"{self.cell}/") if self.cell else key


def match_seeds(
    tournament_seed: int, draws: str, seats: int, sample: int = 0, renewed: tuple[int, str] | None = None
) -> list[int]:
    """Seeds for the market (first), each seat, and the recall questions (last), from the
    tournament seed and the match's `draws` (MatchSpec.draws) alone, so a match plays the same
    wherever and whenever it runs. A repeat (`sample` k > 0, sampling_repeats) of the seat and
    merchant `renewed` draws that seat's seed anew and keeps every other: only that merchant's
    own draws (a model's sampling) differ."""

    def spawned(source: str) -> list[int]:
        sequence = np.random.SeedSequence([tournament_seed, zlib.crc32(source.encode())])
        return [int(child.generate_state(1)[0]) for child in sequence.spawn(seats + 2)]

    seeds = spawned(draws)
    if sample and renewed is not None:
        seat, name = renewed
        seeds[1 + seat] = spawned(repeat_key(draws, sample, name))[1 + seat]
    return seeds


def repetition_seed(tournament_seed: int, seed: int) -> int:
    """The seed of the tournament's matches played with `seed`, whoever plays them: work a
    kind's merchants share across those matches (a learner's self-play) is seeded from it
    (contestants.base.Seating)."""
    sequence = np.random.SeedSequence([tournament_seed, zlib.crc32(b"repetition"), seed])
    return int(sequence.generate_state(1)[0])


def schedule(tournament: Tournament) -> list[MatchSpec]:
    """Every match of the tournament, of each of its cells in turn."""
    matches: list[MatchSpec] = []
    for cell in tournament.each_cell():
        matches += _schedule(cell.tournament, cell.label, len(matches))
    return matches


def sweep_cells(tournament: Tournament, matches: list[MatchSpec]) -> list[SweepCell]:
    """The cells of the tournament's sweep as the record keeps them, with their matches of
    `matches` (its schedule); none without a sweep."""
    return [
        SweepCell(
            position=position,
            label=cell.label,
            factors=cell.factors,
            first_index=min(own),
            matches=len(own),
        )
        for position, cell in enumerate(tournament.cells)
        for own in [[m.index for m in matches if m.cell == cell.label]]
    ]


def _schedule(tournament: Tournament, cell: str, first_index: int) -> list[MatchSpec]:
    spec = tournament.spec
    names = [c.name for c in spec.contestants]
    if spec.format in ("round_robin", "solo", "adaptive"):
        groups = [list(g) for g in itertools.combinations(names, spec.merchants_per_match)]
    elif spec.format == "free_for_all":
        groups = [names]
    else:
        challenger = spec.challenger
        assert challenger is not None  # the gauntlet format has one (TournamentSpec)
        groups = [[challenger, other] for other in names if other != challenger]
    matches: list[MatchSpec] = []
    if spec.format == "adaptive":  # the most it may play: turn after turn of every group
        cap = most_matches(tournament)
        for turn in itertools.count():
            for scenario in tournament.scenarios:
                for group in groups:
                    if len(matches) + spec.plays_per_match > cap:
                        return matches
                    matches += group_matches(tournament, group, scenario, turn, first_index + len(matches))
    for scenario in tournament.scenarios:
        for turn in range(len(spec.seed_list)):
            for group in groups:
                matches += group_matches(tournament, group, scenario, turn, first_index + len(matches), cell)
    return matches


def most_matches(tournament: Tournament) -> int:
    """The most matches an adaptive tournament plays, repeats included: its max_matches, or as
    many as the round robin of its groups, scenarios and seeds."""
    spec = tournament.spec
    groups = math.comb(len(spec.contestants), spec.merchants_per_match)
    every = groups * len(tournament.scenarios) * len(spec.seed_list) * spec.plays_per_match
    return spec.max_matches or every


def largest_seed(tournament: Tournament) -> int:
    """The largest seed a match of the tournament may be played with: a seed of the file, or in
    an adaptive tournament, which may give one group every match up to its cap (most_matches,
    a match and its repeats taking plays_per_match of it), that group's last."""
    spec = tournament.spec
    if spec.format != "adaptive":
        return max(spec.seed_list)
    group = [entry.name for entry in spec.contestants][: spec.group_size]
    last = most_matches(tournament) // spec.plays_per_match - 1
    return max(*spec.seed_list, adaptive_match(tournament, group, last, 0)[0].seed)


def adaptive_match(tournament: Tournament, group: Sequence[str], k: int, index: int) -> list[MatchSpec]:
    """The `k`-th match of `group` in an adaptive tournament, with its repeats, the first
    numbered `index`: the round robin's, with the (k // S)-th seed and the (k % S)-th of the S
    scenarios."""
    turn, scenario = divmod(k, len(tournament.scenarios))
    return group_matches(tournament, group, list(tournament.scenarios)[scenario], turn, index)


def group_matches(
    tournament: Tournament, group: Sequence[str], scenario: str, turn: int, index: int, cell: str = ""
) -> list[MatchSpec]:
    """The match of `group` (in the file's order) in `scenario` with the `turn`-th seed (past the
    file's seeds, the integers after its largest), its seats turned by the seed (rotate_seats),
    then its repeats (sampling_repeats: N - 1 for each seat in turn); the first numbered `index`."""
    spec = tournament.spec
    seeds = spec.seed_list
    seed = seeds[turn] if turn < len(seeds) else max(seeds) + 1 + turn - len(seeds)
    shift = turn % len(group) if spec.rotate_seats else 0
    seats = tuple(group[shift:]) + tuple(group[:shift])
    key = f"{cell}/" * bool(cell) + f"{scenario}/seed={seed}/{'+'.join(sorted(group))}"
    days = spec.days or tournament.scenarios[scenario].days
    repeats = [(0, "")] + [(k, name) for name in seats for k in range(1, spec.sampling_repeats)]
    return [
        MatchSpec(repeat_key(key, k, name), index + n, scenario, seed, days, seats, cell, k, name)
        for n, (k, name) in enumerate(repeats)
    ]
