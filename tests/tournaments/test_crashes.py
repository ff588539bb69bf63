"""`arena run` killed as a user's machine kills it, with SIGKILL, then resumed."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time

from arena_process import ARENA, arena, arena_env, leaderboard_json, stored_matches
from results.db import engine_for
from tournaments.config import load_tournament
from tournaments.runner import run_tournament


def test_kill_9_then_resume_gives_the_uninterrupted_table(tmp_path, slow_tournament, ray_local):
    whole, killed = tmp_path / "whole.db", tmp_path / "killed.db"
    run_tournament(load_tournament(slow_tournament), engine_for(f"sqlite:///{whole}"))  # the reference, in this process
    planned = stored_matches(whole)
    assert planned == 12

    log = tmp_path / "killed.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [ARENA, "run", str(slow_tournament), "--db", f"sqlite:///{killed}"],
            cwd=tmp_path, stdout=output, stderr=output, env=arena_env(), start_new_session=True,
        )
    # Kill once two matches are recorded, or after a few seconds at the latest: on a loaded
    # machine the database was once not seen to fill until the run had ended.
    deadline = time.monotonic() + 7
    while stored_matches(killed) < 2 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process.poll() is None, f"the run ended before it could be killed:\n{log.read_text()[-2000:]}"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    done_before = stored_matches(killed)
    assert done_before < planned, "the kill should land before the run ends"

    resumed = arena("run", str(slow_tournament), "--db", f"sqlite:///{killed}", "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    if done_before:
        assert f"{done_before} matches were already done" in resumed.stdout
    assert stored_matches(killed) == planned
    with sqlite3.connect(killed) as connection:
        keys = [k for (k,) in connection.execute("select key from match")]
        tournaments = connection.execute("select count(*) from tournament").fetchone()[0]
    assert len(keys) == len(set(keys)) and tournaments == 1
    assert leaderboard_json(killed, tmp_path) == leaderboard_json(whole, tmp_path)
