"""`arena run` as a user runs it: in its own process, killed with SIGKILL and resumed, and
joining a Ray head node started on loopback."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from results.db import engine_for
from tournaments.config import load_tournament
from tournaments.runner import run_tournament

BIN = Path(sys.executable).parent
ARENA = str(BIN / "arena")


def arena(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([ARENA, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=_env())


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    env["RAY_AUTH_MODE"] = "token"  # the head below and the runs that join it share ~/.ray's token
    return env


def stored_matches(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=1) as connection:
            return connection.execute("select count(*) from match").fetchone()[0]
    except sqlite3.OperationalError:  # tables not created yet
        return 0


def leaderboard_json(db: Path, cwd: Path) -> list[dict]:
    result = arena("leaderboard", "--db", f"sqlite:///{db}", "--tournament", "1", "--json", cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def slow_tournament(tmp_path: Path) -> Path:
    path = tmp_path / "slow.yaml"
    path.write_text(
        textwrap.dedent(
            """
            name: slow
            seed: 9
            scenarios: [price_war]
            seeds: [1, 2, 3, 4]
            days: 10
            max_concurrent_matches: 2
            contestants:
              - {name: fixed, kind: fixed_price}
              - {name: cost_plus, kind: cost_plus}
              - {name: slowpoke, kind: latency, params: {latency_s: 0.25}}
            """
        )
    )
    return path


def test_kill_9_then_resume_gives_the_uninterrupted_table(tmp_path, slow_tournament, ray_local):
    whole, killed = tmp_path / "whole.db", tmp_path / "killed.db"
    run_tournament(load_tournament(slow_tournament), engine_for(f"sqlite:///{whole}"))  # the reference, in this process
    planned = stored_matches(whole)
    assert planned == 12

    log = tmp_path / "killed.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [ARENA, "run", str(slow_tournament), "--db", f"sqlite:///{killed}"],
            cwd=tmp_path, stdout=output, stderr=output, env=_env(), start_new_session=True,
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


# 127.0.0.2, not 127.0.0.1: Ray rewrites "127.0.0.1" and "localhost" in an address to the
# machine's network address; any other loopback address it leaves alone.
LOOPBACK = "127.0.0.2"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, "ray start --head exited"
        with socket.socket() as s:
            if s.connect_ex((LOOPBACK, port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"the Ray head did not listen on {LOOPBACK}:{port}")


def test_run_joins_a_ray_head_on_loopback(tmp_path, slow_tournament):
    port = _free_port()
    # its own temp dir (short: Ray puts unix sockets in it), so the head leaves no
    # /tmp/ray/ray_current_cluster behind for later ray.init() calls to find
    temp_dir = tempfile.mkdtemp(prefix="rayhead", dir="/tmp")
    head = subprocess.Popen(
        [str(BIN / "ray"), "start", "--head", "--block", f"--temp-dir={temp_dir}", f"--port={port}", f"--node-ip-address={LOOPBACK}",
         "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(), start_new_session=True,
    )
    try:
        _wait_for_port(port, head)
        db = tmp_path / "cluster.db"
        result = arena("run", str(slow_tournament), "--db", f"sqlite:///{db}", "--address", f"{LOOPBACK}:{port}", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert stored_matches(db) == 12
        assert head.poll() is None, "the head node must still be up: the run joined it, it did not own it"
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
        shutil.rmtree(temp_dir, ignore_errors=True)
