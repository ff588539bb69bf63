"""How fast the Q-learning merchants learn, and what they learn: run by hand, prints JSON.
Not a test.

    python benchmarks/pricing.py                  # Calvano's baseline experiment: 1,000 sessions
    python benchmarks/pricing.py --sessions 100 --runs 3

(a) session_periods_per_s: periods x sessions per second in the learning kernel, the best of
    --runs runs of --probe sessions of two default learners on the calvano scenario, each
    to convergence (contestants.qlearning.learn: the kernel on every core this process may
    use, building the payoff tables and Q0 included);
(b) calvano_1000_sessions_s: the seconds of Calvano et al.'s baseline experiment, --sessions
    (1,000) such sessions to convergence in one call, with what they learnt: the share that
    converged, the mean periods to convergence, and the mean profit gain
    Delta = (pi - pi_N) / (pi_M - pi_N) of their play after learning, pi the profit per
    period averaged over the two seats and over the limit cycle that greedy play from the
    state where learning ended falls into (Calvano et al. report about 0.85).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

from contestants.qlearning import Learnt, QLearningParams, Session, learn, payoff_table
from market.equilibrium import equilibria
from market.scenario import load_scenario
from results.scoring.collusion import gain

SEATS = 2


def sessions(count: int, first_seed: int = 0) -> list[Session]:
    scenario, params = load_scenario("calvano"), QLearningParams()
    return [Session(scenario, (params,) * SEATS, seed) for seed in range(first_seed, first_seed + count)]


def limit_cycle(learnt: Learnt) -> list[int]:
    """The action profiles of the cycle that greedy play from the last state falls into
    (memory 1: a state is the last profile)."""
    greedy = learnt.q.argmax(axis=2)  # [seat, state]
    m = learnt.grids.shape[1]
    seen: dict[int, int] = {}
    path: list[int] = []
    state = learnt.state
    while state not in seen:
        seen[state] = len(path)
        state = sum(int(greedy[i, state]) * m ** (SEATS - 1 - i) for i in range(SEATS))
        path.append(state)
    return path[seen[state] :]


def profit_gain(learnt: Learnt) -> float:
    scenario = load_scenario("calvano")
    (benchmarks,) = equilibria(scenario, SEATS).values()
    nash, monopoly = np.mean(benchmarks.nash.profits), np.mean(benchmarks.monopoly.profits)
    payoffs = payoff_table(scenario, learnt.grids)
    profit = payoffs[:, limit_cycle(learnt)].mean()
    return float(gain(profit, nash, monopoly))


def throughput(count: int) -> dict:
    batch = sessions(count, first_seed=10_000)
    started = time.perf_counter()
    learnt = learn(batch)
    seconds = time.perf_counter() - started
    periods = sum(one.periods for one in learnt)
    return {
        "sessions": count,
        "periods": periods,
        "seconds": round(seconds, 3),
        "session_periods_per_s": round(periods / seconds),
    }


def experiment(count: int) -> dict:
    batch = sessions(count)
    started = time.perf_counter()
    learnt = learn(batch)
    seconds = time.perf_counter() - started
    gains = np.array([profit_gain(one) for one in learnt])
    periods = np.array([one.periods for one in learnt])
    converged = np.array([one.converged for one in learnt])
    cycles = np.array([len(limit_cycle(one)) for one in learnt])
    return {
        "sessions": count,
        "seconds": round(seconds, 2),
        "converged_share": float(converged.mean()),
        "learning_periods_mean": round(float(periods.mean())),
        "learning_periods_range": [int(periods.min()), int(periods.max())],
        "profit_gain_mean": round(float(gains.mean()), 4),
        "profit_gain_std": round(float(gains.std()), 4),
        "limit_cycle_length_shares": {
            int(k): round(float(np.mean(cycles == k)), 3) for k in sorted(set(cycles.tolist()))
        },
        "session_periods_per_s": round(int(periods.sum()) / seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000, help="sessions of the baseline experiment")
    parser.add_argument("--probe", type=int, default=40, help="sessions of each throughput run")
    parser.add_argument("--runs", type=int, default=3, help="best of this many throughput runs")
    args = parser.parse_args()
    learn(sessions(1, first_seed=10**9))  # the kernel compiled, or loaded from numba's cache
    runs = [throughput(args.probe) for _ in range(args.runs)]
    best = max(runs, key=lambda r: r["session_periods_per_s"])
    baseline = experiment(args.sessions)
    report = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "processor": platform.processor() or platform.machine(),
        },
        "session_periods_per_s": best["session_periods_per_s"],
        "throughput_runs": runs,
        "calvano_1000_sessions_s"
        if args.sessions == 1000
        else f"calvano_{args.sessions}_sessions_s": baseline["seconds"],
        "baseline": baseline,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
