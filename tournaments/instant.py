"""Instant matches: those with no hosted merchant, played straight through as Ray tasks on
the cluster's warm worker pool, with no Ray call per day. Those of rule merchants alone go in
groups played side by side in one market.
"""

from __future__ import annotations

import pickle

import ray

from market.scenario import Scenario
from results.records import FinishedMatch, StoppedMatch
from results.storage import daylog_codec
from tournaments.collector import collector_paused
from tournaments.match import LOSSES_ALLOWED, Match, MatchRules, play_here
from tournaments.plan import ContestantPlan
from tournaments.schedule import MatchSpec

GROUP_LIMIT = 32  # matches played side by side in one task


def group_instant(
    matches: list[MatchSpec], plans: dict[str, ContestantPlan], max_concurrent: int, cpus: int
) -> list[list[MatchSpec]]:
    """The instant matches in groups to play as one task each, in schedule order of their
    first match. Matches whose merchants all decide from the view and that share scenario,
    length and size are grouped, in near-equal groups of at most max_concurrent / cpus (so every
    CPU can have a group while all count against max_concurrent_matches) and GROUP_LIMIT; any
    other match is a group of its own."""
    limit = max(1, min(GROUP_LIMIT, max_concurrent // max(cpus, 1)))
    alike: dict[tuple[str, int, int], list[MatchSpec]] = {}
    groups: list[list[MatchSpec]] = []
    for match in matches:
        if all(plans[name].decides_from_view for name in match.seats):
            alike.setdefault((match.scenario, match.days, len(match.seats)), []).append(match)
        else:
            groups.append([match])
    for same in alike.values():
        count = -(-len(same) // limit)
        size = -(-len(same) // count)
        groups += [same[i : i + size] for i in range(0, len(same), size)]
    return sorted(groups, key=lambda group: group[0].index)


@ray.remote(num_cpus=1, max_retries=LOSSES_ALLOWED)  # a group lost with its worker or node is played again
def play_instant_matches(
    matches: list[MatchSpec], scenario: Scenario, rules: MatchRules, plans: dict[str, ContestantPlan]
) -> bytes:
    """A group of `group_instant`, played side by side: the finished (or stopped) matches
    packed for storage and pickled here, with garbage collection paused (see
    `unpickle_matches`)."""
    with collector_paused():
        finished = play_here([Match(match, scenario, rules, plans) for match in matches])
        packed = [
            daylog_codec.packed(match) if isinstance(match, FinishedMatch) else match for match in finished
        ]
        return pickle.dumps(packed, pickle.HIGHEST_PROTOCOL)


def unpickle_matches(blob: bytes) -> list[FinishedMatch | StoppedMatch]:
    """The matches `play_instant_matches` returns, unpickled with garbage collection paused
    as they were pickled (Ray's own serialiser would do both with it running)."""
    with collector_paused():
        played: list[FinishedMatch | StoppedMatch] = pickle.loads(blob)
        return played
