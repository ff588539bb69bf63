"""The adaptive format: the next matches chosen where they settle the table most.

A first round seats every contestant: the groups of `group_size` contestants that follow one
another around the ring of the file's order (one group when there are no more contestants
than that), so that the fit joins them all. Then, round after round, the ratings are fitted
on every match played (results.scoring.rating_fit, the same fit and bootstrap as the leaderboard's),
and each two contestants next to each other in the table whose order is not settled are
given matches. A pair is settled when the share of resamples ordering it so is at least a
level of 1 - (1 - confidence) / (n - 1) (results.scoring.rating_fit.separations), so that all n - 1
pairs are ordered at once at `confidence`, and its two have met at least k times, the fewest
with 2^-k at most 1 - level: the bootstrap sees no doubt in a few straight wins, and stopping on
them orders fields wrongly. A round holds a match for each such pair, or
max_concurrent_matches if that is more, dealt to the pairs in turn, the least settled first
(the share of resamples ordering them nearest one half, then the wider intervals, then the
names). A pair's match seats the two and, in groups of more, the
group_size - 2 other contestants rated nearest them. A group's k-th match is the round
robin's: with the (k // S)-th seed and the (k % S)-th of the S scenarios
(tournaments.schedule.adaptive_match), so it plays exactly as it would there.

The rounds end when every two contestants next to each other are ordered, or when the next
would pass max_matches (tournaments.schedule.most_matches) less the room kept for the
confirmation round. That round follows: each two next to each other in the table meet k times
more, in fresh matches (the group's next ones), dealt in turn. Stopping once the order looks
settled picks the runs whose gaps looked wide, and a pair settled on k straight wins has a
record in which the bootstrap sees no doubt: intervals fitted at the stop cover the truth far
less often than their level says (docs/benchmarks.md). The fresh matches, their outcomes
independent of the stop, are fitted with the rest: a gap that luck widened is pulled back and
a one-sided record broken, and the intervals cover about as often as a round robin's. The
run's budget may end it sooner, without that round.

A round depends only on the matches of the rounds before it, all stored before it is chosen:
a run is the same for a seed however its matches finish, and a resumed run chooses again the
rounds it had played and plays what is missing of them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from results.scoring.rating_fit import Fit, Ranking, Separation, fit, order_key, separations
from tournaments.config import Tournament
from tournaments.schedule import MatchSpec, adaptive_match, most_matches


@dataclass(frozen=True)
class Round:
    """The next matches to play, and whether they are the confirmation round; none, and why,
    when the schedule ends."""

    matches: list[MatchSpec]
    ended: str | None = None
    confirmation: bool = False


class AdaptiveSchedule:
    """The rounds of an adaptive tournament, each chosen from the rankings of those before."""

    def __init__(self, tournament: Tournament):
        self.tournament = tournament
        self.spec = tournament.spec
        self.names = [c.name for c in self.spec.contestants]
        self.cap = most_matches(tournament)
        self.by_goals = self.spec.scoring.objective == "goals"  # rated as the leaderboard rates them
        # each of the n - 1 pairs at 1 - (1 - confidence) / (n - 1): all at once at `confidence`
        self.level = 1 - (1 - self.spec.confidence) / max(1, len(self.names) - 1)
        # and each after as many meetings as a fair coin lands one way with less than 1 - level
        self.meetings = math.ceil(math.log2(1 / (1 - self.level)))
        # the confirmation round's room under the cap: each two neighbours meet that often again
        self.reserve = (len(self.names) - 1) * self.meetings * self.spec.plays_per_match
        self.scheduled: list[MatchSpec] = []
        self.played: Counter[tuple[str, ...]] = Counter()  # matches of each group so far
        self.ended: str | None = None  # why, once the confirmation round is scheduled

    def next_round(self, rankings: Sequence[Ranking], draws: Sequence[str] | None = None) -> Round:
        """The round after those scheduled, from `rankings`: every match scheduled so far, in
        the order scheduled, and their market `draws` (results.records.market_draw; default:
        each its own)."""
        if self.ended is not None:
            return Round([], self.ended)
        if not self.scheduled:
            g = self.spec.group_size
            ring = [
                tuple(self.names[(i + k) % len(self.names)] for k in range(g)) for i in range(len(self.names))
            ]
            return Round(
                self.deal(
                    dict.fromkeys(tuple(sorted(group, key=self.names.index)) for group in ring), self.cap
                )
            )
        found = fit(rankings, draws=draws)
        unsettled = self.unsettled(found)
        if not unsettled:
            return self.confirm(
                found,
                f"every two contestants next to each other in the table are ordered at "
                f"{self.spec.confidence:.0%} confidence",
            )
        dealt = max(len(unsettled), self.spec.max_concurrent_matches)
        pairs = [unsettled[k % len(unsettled)] for k in range(dealt)]
        matches = self.deal([self.group(found, s.upper, s.lower) for s in pairs], self.cap - self.reserve)
        return Round(matches) if matches else self.confirm(found, f"max_matches reached ({self.cap})")

    def confirm(self, found: Fit, why: str) -> Round:
        """The confirmation round after the rounds ended `why`: each two contestants next to
        each other in `found`'s table meet `meetings` times more, in fresh matches, dealt in
        turn as far as max_matches allows; the schedule ends after it."""
        order = sorted(found.ratings, key=lambda name: order_key(name, found.ratings[name].rating))
        pairs = list(pairwise(order))
        matches = self.deal(
            [self.group(found, *pair) for _ in range(self.meetings) for pair in pairs], self.cap
        )
        self.ended = why + (
            f"; the intervals include a confirmation round of {len(matches)} fresh matches of "
            "neighbours played after that"
            if matches
            else "; max_matches left no room for a confirmation round, so the intervals may be too narrow"
        )
        return Round(matches, confirmation=True) if matches else Round([], self.ended)

    def deal(self, groups: Iterable[tuple[str, ...]], cap: int) -> list[MatchSpec]:
        """Each group's next match (and its repeats), in turn, while they fit under `cap`; scheduled."""
        matches: list[MatchSpec] = []
        for group in groups:
            k = self.played[group]
            index = len(self.scheduled) + len(matches)
            repeats = adaptive_match(self.tournament, group, k, index)
            if index + len(repeats) > cap:
                break
            self.played[group] += 1
            matches += repeats
        self.scheduled += matches
        return matches

    def unsettled(self, found: Fit) -> list[Separation]:
        """The pairs next to each other in the table not yet ordered, least settled first."""
        order = sorted(found.ratings, key=lambda name: order_key(name, found.ratings[name].rating))
        ratings = found.ratings

        def width(name: str) -> float:
            return ratings[name].high - ratings[name].low

        pairs = [
            s
            for s in separations(found, order, self.level)
            if not s.ordered or found.matches_together(s.upper, s.lower) < self.meetings
        ]
        return sorted(
            pairs,
            key=lambda s: (
                abs((0.5 if s.share is None else s.share) - 0.5),
                -(width(s.upper) + width(s.lower)),
                s.upper,
            ),
        )

    def group(self, found: Fit, upper: str, lower: str) -> tuple[str, ...]:
        """The pair, and in groups of more the contestants rated nearest them, in the file's order."""
        ratings = found.ratings
        middle = (ratings[upper].rating + ratings[lower].rating) / 2
        others = sorted(
            (name for name in ratings if name not in (upper, lower)),
            key=lambda name: (abs(ratings[name].rating - middle), name),
        )
        chosen = {upper, lower, *others[: self.spec.group_size - 2]}
        return tuple(name for name in self.names if name in chosen)
