"""A probed match stored for the tests of its readers (`arena show`, the report, exports, the
viewer), played in this process (no Ray): a fixed price of 1.8 against tit for tat in the
calvano market, the fixed merchant forced to 1.3 on day 3 of the deviated path, which tit for
tat copies on day 4."""

from __future__ import annotations

from market.scenario import load_scenario
from results import recording
from results.settings import DeviationProbe
from results.storage import store
from results.storage.db import engine_for
from tournaments.config import ContestantEntry
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_contestants
from tournaments.schedule import MatchSpec

CALVANO = load_scenario("calvano")
DAYS = 8


def store_probed_match(url: str) -> tuple[int, int]:
    """The match stored in the database at `url`: (tournament id, match id)."""
    engine = engine_for(url)
    entries = {
        "fixed": ContestantEntry(name="fixed", kind="fixed_price", params={"price": 1.8}),
        "tft": ContestantEntry(name="tft", kind="tit_for_tat"),
    }
    tournament = store.start_tournament(
        engine, "t", "t.yaml", "name: t\n", "h", 1, [(n, e.kind, e.params) for n, e in entries.items()], 1
    )
    spec = MatchSpec(key="probed", index=0, scenario="calvano", seed=1, days=DAYS, seats=("fixed", "tft"))
    probe = MatchRules(seed=1, deviation=DeviationProbe(day=3, seat=0, to=1.3))
    played = play_here([Match(spec, CALVANO, probe, plan_contestants(entries.values()))])[0]
    match = recording.save_match(engine, tournament, played, CALVANO)
    engine.dispose()
    return tournament, match
