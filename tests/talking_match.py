"""One match of rule merchants that may talk, played in this process on the calvano market:
what the tests of talking rules (cartel, bluffer) read."""

from __future__ import annotations

from market.scenario import load_scenario
from market.types import DayRecord
from tournaments.config import ContestantEntry
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_contestants
from tournaments.schedule import MatchSpec

CALVANO = load_scenario("calvano")


def play(kinds: list[str], talk: bool = True, days: int = 20) -> dict[str, list[DayRecord]]:
    """One match of `kinds` in seat order (merchants m0, m1, ...): its day records by merchant."""
    entries = {f"m{i}": ContestantEntry(name=f"m{i}", kind=kind) for i, kind in enumerate(kinds)}
    spec = MatchSpec(key="talk", index=0, scenario="calvano", seed=1, days=days, seats=tuple(entries))
    played = play_here(
        [Match(spec, CALVANO, MatchRules(seed=2, talk=talk), plan_contestants(entries.values()))]
    )[0]
    assert played.faults == []
    return {name: [r for r in played.days_played if r.merchant == name] for name in entries}
