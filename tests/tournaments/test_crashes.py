"""`arena run` killed as a user's machine kills it, with SIGKILL, then resumed: killed while a
match is stored and another under way, and killed inside the one transaction that writes a
group of finished matches. Each time the store holds whole matches only, nothing of the run
is left running, and `--resume` plays exactly what is missing and ends with the table of an
uninterrupted run."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
import yaml
from arena_process import (
    BackgroundRun,
    assert_whole_and_equal,
    keys,
    kill_with_a_match_in_flight,
    matches_and_days,
    orphan_rows,
    own_ray_env,
    rows_per_match,
    stored_matches,
)
from typer.testing import CliRunner
from unhosted import unhosted

from arena.cli import app
from market.scenario import SHIPPED_SCENARIOS
from results.storage.db import engine_for
from tournaments.load import load_tournament
from tournaments.run import run_tournament

pytestmark = pytest.mark.slow  # each test plays tournaments in processes of their own

INSTRUMENT = (
    Path(__file__).parent / "pause_before_commit"
)  # its sitecustomize.py holds a commit of several matches


@pytest.fixture
def ray_env():
    with own_ray_env() as env:
        yield env


def test_kill_9_with_a_match_stored_and_one_in_flight_then_resume_gives_the_uninterrupted_table(
    tmp_path, slow_tournament, ray_env, arena_here
):
    """Killed on a local Ray of its own, every process of the run ends with it. The resume is
    the command run in this process, on the tests' Ray cluster: what is resumed is the store,
    not a process (an `arena` process would cost seconds of imports and of joining Ray). The
    uninterrupted run, in this process, plays its merchants unhosted (tests/unhosted.py)."""
    whole, killed = tmp_path / "whole.db", tmp_path / "killed.db"
    run_tournament(load_tournament(unhosted(slow_tournament)), engine_for(f"sqlite:///{whole}"))
    planned = stored_matches(whole)
    assert planned == 6

    with BackgroundRun(
        "run",
        str(slow_tournament),
        "--db",
        f"sqlite:///{killed}",
        cwd=tmp_path,
        env=ray_env,
        log=tmp_path / "killed.log",
    ) as run:
        seen = kill_with_a_match_in_flight(run, lambda: matches_and_days(killed))
        # as seen with the run stopped just before the kill: a match stored, one in play
        assert 1 <= seen.stored < planned and seen.in_play, seen
        # and after it: the kill took nothing away and half-wrote nothing
        assert matches_and_days(killed) == (seen.stored, seen.stored_days)
        assert orphan_rows(killed) == {}
        assert rows_per_match(killed) == rows_per_match(whole, only=keys(killed))
        survivors = run.survivors()
        assert survivors == {}, f"processes of the killed run still alive: {survivors}"

    resumed = arena_here(tmp_path, "run", str(slow_tournament), "--db", f"sqlite:///{killed}", "--resume")
    assert resumed.exit_code == 0, resumed.stderr
    assert f"Resumed tournament 1: {seen.stored} matches were already done." in resumed.stdout
    assert_whole_and_equal(killed, whole)


def test_an_adaptive_run_killed_with_a_match_in_flight_resumes_into_the_uninterrupted_one(
    tmp_path, slow_tournament, cluster_env, arena_here
):
    """The slow field, adaptive: each round is chosen from the matches stored before it, so
    the run killed mid-round and resumed chooses the same rounds, plays exactly what is
    missing and ends with the uninterrupted run's matches, table and reason (that run with its
    merchants unhosted: tests/unhosted.py). (The killed run plays on the tests' Ray cluster:
    what a kill leaves of a local Ray is the first test's.)"""
    config = tmp_path / "adaptive.yaml"
    adaptive = "name: slow\nformat: adaptive\nmax_matches: 8\n"
    config.write_text(slow_tournament.read_text().replace("name: slow\n", adaptive, 1))
    whole, killed = tmp_path / "whole.db", tmp_path / "killed.db"
    reference = run_tournament(load_tournament(unhosted(config)), engine_for(f"sqlite:///{whole}"))
    assert reference.ended is not None and stored_matches(whole) >= 4
    with BackgroundRun(
        "run",
        str(config),
        "--db",
        f"sqlite:///{killed}",
        cwd=tmp_path,
        env=cluster_env,
        log=tmp_path / "killed.log",
    ) as run:
        seen = kill_with_a_match_in_flight(run, lambda: matches_and_days(killed))
        assert 1 <= seen.stored < stored_matches(whole) and seen.in_play, seen
        assert orphan_rows(killed) == {} and run.survivors() == {}
    resumed = arena_here(tmp_path, "run", str(config), "--db", f"sqlite:///{killed}", "--resume")
    assert resumed.exit_code == 0, resumed.stderr
    assert f"Resumed tournament 1: {seen.stored} matches were already done." in resumed.stdout
    assert (
        f"Adaptive schedule ended after {stored_matches(whole)} matches: {reference.ended}." in resumed.stdout
    )
    assert_whole_and_equal(killed, whole)


def test_a_kill_inside_the_write_of_several_matches_stores_none_of_them(tmp_path, ray_local, cluster_env):
    """Rule merchants' matches are played side by side in a group per scenario, and a group is
    written in one transaction. The brief scenario's group is stored first; the test's
    instrument holds the long one's commit with its rows written, and the run is killed
    there: none of that group is stored, and --resume plays that group alone. (The run plays
    on the tests' Ray cluster: what a kill leaves of a local Ray is the first test's.)"""
    config = instant_tournament(tmp_path)
    whole, killed, marker = tmp_path / "whole.db", tmp_path / "killed.db", tmp_path / "held.json"
    run_tournament(load_tournament(config), engine_for(f"sqlite:///{whole}"))
    planned = stored_matches(whole)
    assert planned == 12

    env = {
        **cluster_env,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(INSTRUMENT), cluster_env.get("PYTHONPATH")])),
        "ARENA_PAUSE_MARKER": str(marker),
    }
    with BackgroundRun(
        "run", str(config), "--db", f"sqlite:///{killed}", cwd=tmp_path, env=env, log=tmp_path / "killed.log"
    ) as run:
        run.wait_for("a write of several matches held before its commit", marker.exists)
        run.kill()
        held = json.loads(marker.read_text())
        assert len(held["stored"]) == len(held["writing"]) == 6  # a scenario's group each
        assert keys(killed) == set(held["stored"])  # the held ones not among them
        assert orphan_rows(killed) == {}
        assert rows_per_match(killed) == rows_per_match(whole, only=set(held["stored"]))
        assert run.survivors() == {}

    resumed = CliRunner().invoke(app, ["run", str(config), "--db", f"sqlite:///{killed}", "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert "Resumed tournament 1: 6 matches were already done." in resumed.stdout
    assert_whole_and_equal(killed, whole)
    assert keys(killed) - set(held["stored"]) == set(held["writing"])  # what the resume played


def instant_tournament(folder: Path) -> Path:
    """Three rule merchants in pairs, two seeds, on a brief and a long variant of the price
    war: each variant's six matches play side by side as one group (up to 32 a group, see
    tournaments.run.group_instant), and the brief group ends long before the long one."""
    (folder / "scenarios").mkdir()
    price_war = yaml.safe_load((SHIPPED_SCENARIOS / "price_war.yaml").read_text())
    for name, days in (("brief", 3), ("long", 100)):
        (folder / "scenarios" / f"{name}.yaml").write_text(
            yaml.safe_dump({**price_war, "name": name, "days": days})
        )
    path = folder / "instant.yaml"
    path.write_text(
        textwrap.dedent(
            """
            name: instant
            seed: 4
            scenarios: [brief, long]
            seeds: [1, 2]
            max_concurrent_matches: 64
            contestants:
              - {name: fixed, kind: fixed_price}
              - {name: cost_plus, kind: cost_plus}
              - {name: undercut, kind: undercut}
            """
        )
    )
    return path
