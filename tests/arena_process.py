"""Running `arena` as a user runs it, in its own process, for the tests of crashes, clusters
and databases: the command, its environment, and what it left in a SQLite database."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
ARENA = str(BIN / "arena")


def arena(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([ARENA, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=arena_env())


def arena_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    env["RAY_AUTH_MODE"] = "token"  # a head started by a test and the runs that join it share ~/.ray's token
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
