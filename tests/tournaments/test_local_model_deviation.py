"""A deviation probe on the embedded model (SmolLM2-135M, no server) through the real runner:
the deviated path is played after the match, so every answer it needs before the deviation is
in the response cache and the prefix costs no new call; once the rival's forced price is in
the model's report, it is asked afresh. With the cache off, the prefix is asked again.

The model plays in the run's worker pool (isolate: false): where it is hosted is not the
point here, and a host of its own and a match runner would cost two processes a run."""

from __future__ import annotations

import sqlite3
import textwrap

import pytest

from results.storage.db import engine_for
from tournaments.load import load_tournament
from tournaments.run import run_tournament

pytestmark = pytest.mark.usefixtures("ray_local")

DAYS, DEVIATION_DAY = 3, 2


def play(
    folder, cache: bool, days: int = DAYS, deviation_day: int = DEVIATION_DAY
) -> tuple[list[tuple], list[tuple], dict[str, float]]:
    """The on-path and deviated calls (day, cached) in order, and the model's prefix_replayed."""
    config = folder / "t.yaml"
    smol = (
        f"{{model: local/smollm2, memory: stateless, max_string: 16, max_items: 1, "
        f"cache_dir: {folder / 'cache'}, "
        f"no_cache: {str(not cache).lower()}}}"
    )
    config.write_text(
        textwrap.dedent(
            f"""\
            name: probe
            seed: 5
            scenarios: [calvano]
            seeds: [1]
            days: {days}
            recall_every: 0
            decision_timeout_s: 600
            contestants:
              - {{name: smol, kind: llm, isolate: false, params: {smol}}}
              - {{name: fixed, kind: fixed_price, params: {{price: 1.8}}}}
            deviation: {{day: {deviation_day}, seat: 1, to: 1.2}}
            """
        )
    )
    db = folder / "probe.db"
    run_tournament(load_tournament(config), engine_for(f"sqlite:///{db}"))
    with sqlite3.connect(db) as connection:
        on_path = connection.execute(
            "select day, cached from model_call where purpose = 'decide' order by id"
        ).fetchall()
        deviated = connection.execute(
            "select day, cached from deviation_call where purpose = 'decide' order by id"
        ).fetchall()
        measures = dict(
            connection.execute(
                "select name, value from metric "
                "where merchant = 'smol' and name in ('prefix_replayed', 'rival_response')"
            ).fetchall()
        )
    return on_path, deviated, measures


def test_the_prefix_replays_from_the_cache_with_no_new_call(tmp_path):
    on_path, deviated, measures = play(tmp_path, cache=True)
    assert on_path == [(day, 0) for day in range(1, DAYS + 1)]  # a fresh cache: every call made
    # the deviated path: days 1 and 2 answered from the cache (day 2's decision comes before the
    # forced price), day 3 asked afresh: its report shows the rival at 1.2
    assert deviated == [(1, 1), (2, 1), (3, 0)]
    assert measures["prefix_replayed"] == 1.0 and "rival_response" in measures


def test_with_the_cache_off_the_prefix_is_asked_again(tmp_path):
    """The shortest probe: forced from day 1 of 2, so the prefix is day 1 (decided before the
    forced price), asked again, and day 2 is asked as after any deviation (the test above)."""
    on_path, deviated, _ = play(tmp_path, cache=False, days=2, deviation_day=1)
    assert on_path == deviated == [(1, 0), (2, 0)]
