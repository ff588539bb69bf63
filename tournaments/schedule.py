"""Which matches a tournament plays, in a fixed order.

round_robin: every group of `group_size` contestants plays every scenario x seed.
free_for_all: all contestants in one market, every scenario x seed.
gauntlet: the challenger meets each other contestant alone, every scenario x seed.
solo: each contestant alone against the market, every scenario x seed (as round_robin with
group_size 1).

With rotate_seats, the group's seat order turns by one for each successive seed, so no
contestant always holds the same seat (seat order decides who is listed first to rivals, the
order of tie-breaking, and, in a scenario with `seats:`, the unit costs and qualities a
merchant plays with): over as many seeds as seats, every contestant plays every seat.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

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

    @property
    def draws(self) -> str:
        """What the match's random draws are seeded from (tournaments.match.match_seeds): its
        key, or for a merchant alone its scenario and seed, so that the solo matches ranked
        against one another (results.ratings.ranked_matches) start from the same draws: their
        merchants meet the same customers as long as their customers choose alike."""
        return f"{self.scenario}/seed={self.seed}" if len(self.seats) == 1 else self.key


def schedule(tournament: Tournament) -> list[MatchSpec]:
    spec = tournament.spec
    names = [c.name for c in spec.contestants]
    if spec.format in ("round_robin", "solo"):
        groups = [list(g) for g in combinations(names, spec.merchants_per_match)]
    elif spec.format == "free_for_all":
        groups = [names]
    else:
        challenger = spec.challenger
        assert challenger is not None  # the gauntlet format has one (TournamentSpec)
        groups = [[challenger, other] for other in names if other != challenger]
    lineups = [
        ("+".join(sorted(group)), [tuple(group[shift:] + group[:shift]) for shift in range(len(group))])
        for group in groups
    ]
    matches: list[MatchSpec] = []
    for scenario_name, scenario in tournament.scenarios.items():
        days = spec.days or scenario.days
        for turn, seed in enumerate(spec.seed_list):
            for lineup, seatings in lineups:
                seats = seatings[turn % len(seatings) if spec.rotate_seats else 0]
                matches.append(
                    MatchSpec(
                        f"{scenario_name}/seed={seed}/{lineup}",
                        len(matches),
                        scenario_name,
                        seed,
                        days,
                        seats,
                    )
                )
    return matches
