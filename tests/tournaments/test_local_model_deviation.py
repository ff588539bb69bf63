"""A deviation probe on the embedded model (SmolLM2-135M, no server) through the real runner,
with the response cache off: the days before the deviation, which a cache would answer (see
test_pricing_study.py: the prefix replays from it with no new call, and the day after the
deviation is asked afresh), are asked again.

The model plays in the run's worker pool (isolate: false): where it is hosted is not the
point here, and a host of its own and a match runner would cost two processes."""

from __future__ import annotations

import sqlite3
import textwrap

import pytest

from results.storage.db import engine_for
from tournaments.load import load_tournament
from tournaments.run import run_tournament

pytestmark = pytest.mark.usefixtures("ray_local")


def test_with_the_cache_off_the_prefix_is_asked_again(tmp_path):
    """The shortest probe: forced from day 1 of 2, so the prefix is day 1 (decided before the
    forced price), asked again, and day 2 is asked as after any deviation."""
    config = tmp_path / "t.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            name: probe
            seed: 5
            scenarios: [calvano]
            seeds: [1]
            days: 2
            recall_every: 0
            decision_timeout_s: 600
            contestants:
              - name: smol
                kind: llm
                isolate: false
                params:
                  {{model: local/smollm2, memory: stateless, max_string: 4, max_items: 1, no_cache: true,
                    cache_dir: {tmp_path / "cache"}}}
              - {{name: fixed, kind: fixed_price, params: {{price: 1.8}}}}
            deviation: {{day: 1, seat: 1, to: 1.2}}
            """
        )
    )
    db = tmp_path / "probe.db"
    run_tournament(load_tournament(config), engine_for(f"sqlite:///{db}"))
    with sqlite3.connect(db) as connection:
        on_path, deviated = (
            connection.execute(
                f"select day, cached from {table} where purpose = 'decide' order by id"
            ).fetchall()
            for table in ("model_call", "deviation_call")
        )
    assert on_path == deviated == [(1, 0), (2, 0)]
