"""A tournament stores the same results whatever numpy and numba use on the CPU: played once
as this machine plays it and once with numpy's vectorised loops for newer CPUs switched off
(NPY_DISABLE_CPU_FEATURES: every target numpy dispatches to, AVX-512 and AVX2 among them),
numba compiling for a generic x86-64 (NUMBA_CPU_NAME=generic) and OpenBLAS using another
CPU's kernels (OPENBLAS_CORETYPE), every row of the record and the table are equal, bit for
bit.

The baseline tournament is a case that differed before the market's exp was correctly
rounded (market.elementary): cost_plus prices at 13, where its utility equals the
no-purchase utility at the initial reputation, and seated last, numpy's multinomial draws its
customers with probability 1/2 in exact arithmetic, and switched method between 0.5 and
0.5000000000000001 (this tournament seed was one where the two disagreed, with AVX-512's exp
and the C library's). The Q-learning pair learns in the numba kernel, from payoffs and
equilibrium prices that come through exp, and is probed with a forced deviation, whose
discounted profits come through powers."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

BASELINE = """
name: baseline
seed: 1
scenarios: [price_war]
seeds: [2]
days: 3
group_size: 3
contestants:
  - {name: random, kind: random}
  - {name: tit_for_tat, kind: tit_for_tat}
  - {name: cost_plus, kind: cost_plus}
"""

LEARNERS = """
name: learners
seed: 3
scenarios: [calvano]
seeds: [1]
days: 12
deviation: {day: 6, seat: 0, to: nash, days: 1, discount: 0.9}
contestants:
  - {name: q1, kind: qlearning, params: {beta: 2.0e-4, stable_periods: 2000, max_periods: 200000}}
  - name: q2
    kind: qlearning
    params: {beta: 2.0e-4, stable_periods: 2000, max_periods: 200000, alpha: 0.25}
"""

# Plays tournament files into SQLite databases in a folder, on the Ray cluster this process
# has joined, and says as JSON-ready data what numpy and numba use in the driver and in a task
# of its own, and per file every stored row and the leaderboard (`played(folder, paths)`). Run
# in this process for the way this machine plays, and in a child for the other (CHILD).
PLAY = r"""
import json, sqlite3
from pathlib import Path

import ray

from results.storage.db import engine_for
from results.leaderboard import leaderboard
from tournaments.load import load_tournament
from tournaments.run import run_tournament


def where():
    import numba
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return {"numpy": [t for t in __cpu_dispatch__ if __cpu_features__[t]], "numba": numba.config.CPU_NAME}


def stored(db):
    rows = {}
    with sqlite3.connect(db) as connection:
        keys = dict(connection.execute("select id, key from match"))
        listed = connection.execute("select name from sqlite_master where type = 'table'")
        tables = [name for (name,) in listed]
        for table in tables:
            info = list(connection.execute(f"pragma table_info({table})"))
            # what varies from run to run: when, how long, and the ids rows were given
            columns = [c[1] for c in info if c[2] != "DATETIME" and c[1] not in ("id", "wall_seconds")]
            quoted = ", ".join('"' + c + '"' for c in columns)
            found = []
            for values in connection.execute(f"select {quoted} from {table}"):
                row = dict(zip(columns, values))
                if "match_id" in row:
                    row["match_id"] = keys.get(row["match_id"])
                found.append({k: v.hex() if isinstance(v, bytes) else v for k, v in row.items()})
            rows[table] = sorted(found, key=lambda r: json.dumps(r, sort_keys=True))
    return rows


def played(folder, paths):
    found = {"driver": where(), "worker": ray.get(ray.remote(where).remote())}
    for path in paths:
        db = Path(folder) / (Path(path).stem + ".db")
        engine = engine_for(f"sqlite:///{db}")
        tournament = run_tournament(load_tournament(path), engine).tournament_id
        table = [row.model_dump() for row in leaderboard(engine, tournament)]
        engine.dispose()
        found[str(path)] = {**stored(db), "leaderboard": table}
    return found
"""

# PLAY in a process of its own, on the Ray cluster at $RAY_ADDRESS, into the folder given
# first, of the files named after it. Its workers get this process's NPY_DISABLE_CPU_FEATURES,
# NUMBA_CPU_NAME and OPENBLAS_CORETYPE (a job's runtime environment): the cluster's own are
# the test's.
CHILD = (
    PLAY
    + r"""
import os, sys

from tournaments.cluster import init_ray

CPU = ("NPY_DISABLE_CPU_FEATURES", "NUMBA_CPU_NAME", "OPENBLAS_CORETYPE")
cpu = {k: os.environ[k] for k in CPU if k in os.environ}
init_ray(address=os.environ["RAY_ADDRESS"], runtime_env={"env_vars": cpu})
print(json.dumps(played(sys.argv[1], sys.argv[2:])))
"""
)


@pytest.mark.slow  # a process playing on Ray beside this one
def test_a_tournament_stores_the_same_results_whatever_numpy_and_numba_use_on_the_cpu(
    tmp_path, cluster_env, ray_local
):
    """Played here as this process plays (on the tests' cluster, whose workers have the
    test's environment) and, at the same time, in a child process with the CPU settings above."""
    from numpy._core._multiarray_umath import __cpu_dispatch__

    files = []
    for name, text in (("baseline", BASELINE), ("learners", LEARNERS)):
        files.append(tmp_path / f"{name}.yaml")
        files[-1].write_text(textwrap.dedent(text))
    elsewhere = {
        "NPY_DISABLE_CPU_FEATURES": " ".join(__cpu_dispatch__),
        "NUMBA_CPU_NAME": "generic",
        "OPENBLAS_CORETYPE": "Haswell",
    }
    here = {k: v for k, v in cluster_env.items() if k not in elsewhere}
    for way in ("here", "elsewhere"):
        (tmp_path / way).mkdir()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path / "elsewhere"), *map(str, files)],
        env={**here, **elsewhere},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    play: dict[str, Any] = {"__name__": "same_results_play"}  # a module Ray's workers cannot import
    exec(PLAY, play)
    played = {"here": json.loads(json.dumps(play["played"](tmp_path / "here", files)))}
    out, err = child.communicate(timeout=240)
    assert child.returncode == 0, err[-3000:]
    played["elsewhere"] = json.loads(out)
    mine, other = played["here"], played["elsewhere"]

    # the two really computed differently, in the driver and in Ray's workers
    for process in ("driver", "worker"):
        assert other[process] == {"numpy": [], "numba": "generic"}
        assert mine[process]["numpy"] and mine[process]["numba"] != "generic"

    baseline, learners = (str(f) for f in files)
    assert len(mine[baseline]["match_result"]) == 3 and [m["days"] for m in mine[baseline]["match"]] == [3]
    assert len(mine[learners]["match"]) == 1 and len(mine[learners]["deviation_path"]) == 1
    assert {"profit_gain", "deviation_profitable"} <= {m["name"] for m in mine[learners]["metric"]}
    for path in (baseline, learners):
        assert other[path].keys() == mine[path].keys()
        for table, rows in mine[path].items():
            assert other[path][table] == rows, f"{path}: {table} differs"
    assert np.isfinite([r["rating"] for r in mine[baseline]["leaderboard"]]).all()
