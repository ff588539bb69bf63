"""How long a sweep of Calvano et al.'s learners takes as a whole command: run by hand, prints
JSON. Not a test.

    python benchmarks/sweep_grid.py                         # 10 x 10 alpha x beta, 100 sessions a cell
    python benchmarks/sweep_grid.py --alphas 3 --betas 3 --sessions 20

Writes a tournament file of two default learners on `calvano` (100 days) with a sweep of
--alphas learning rates evenly from 0.025 to 0.25 and --betas exploration decays evenly from
2e-6 to 2e-5, --sessions repetitions a cell, and times `arena run` on it (Ray started by the
command, a fresh SQLite file in a temporary folder): the seconds of the whole command, and
from the record the cells, the sessions, how many converged and the range of the cells' mean
profit gain Delta.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from results.storage import store
from results.storage.db import engine_for
from results.sweep_summary import by_cell


def grid_file(alphas: int, betas: int, sessions: int) -> str:
    alpha = [round(a, 4) for a in np.linspace(0.025, 0.25, alphas)]
    beta = [float(f"{b:.3e}") for b in np.linspace(2e-6, 2e-5, betas)]
    return (
        "name: alpha-beta-grid\nseed: 2020\nscenarios: [calvano]\n"
        f"repetitions: {sessions}\ndays: 100\n"
        "contestants:\n  - {name: q1, kind: qlearning}\n  - {name: q2, kind: qlearning}\n"
        f"sweep:\n  qlearning.alpha: {json.dumps(alpha)}\n  qlearning.beta: {json.dumps(beta)}\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alphas", type=int, default=10)
    parser.add_argument("--betas", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        config, db = Path(folder) / "grid.yaml", f"sqlite:///{folder}/arena.db"
        config.write_text(grid_file(args.alphas, args.betas, args.sessions))
        arena = Path(sys.executable).with_name("arena")
        started = time.perf_counter()
        subprocess.run([str(arena), "run", str(config), "--db", db], check=True, capture_output=True)
        seconds = time.perf_counter() - started
        engine = engine_for(db, create=False)
        (tournament,) = store.list_tournaments(engine)
        cells = by_cell(engine, tournament.id or 0, metrics=["market_profit_gain", "converged"])
        deltas = [c.values["market_profit_gain"].mean for c in cells if c.values["market_profit_gain"]]
        converged = [c.values["converged"].mean for c in cells if c.values["converged"]]
    print(
        json.dumps(
            {
                "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()},
                "cells": len(cells),
                "sessions": sum(c.sessions for c in cells),
                "arena_run_s": round(seconds, 1),
                "converged_share": round(float(np.mean(converged)), 4),
                "delta_by_cell": {"min": round(min(deltas), 3), "max": round(max(deltas), 3)},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
