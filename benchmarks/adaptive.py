"""How many matches the adaptive format needs against the full round robin, and how often its
intervals cover the truth, on fields whose true ratings are known: contestants of Elo strengths
`--gap` apart (mean 1000, the fit's scale), each match drawn from the Bradley–Terry model with a
generator of its key (the scheduler and the fit are arena's own, tournaments.adaptive and
results.scoring.rating_fit; only the match's outcome is drawn here rather than played).

For each field seed: the round robin of `--repetitions` seeds, fitted; the adaptive schedule run
to its end (its confirmation round included); whether each ends in the true order, whether the
adaptive table ends in the round robin's order, and the matches each used. Coverage counts the
contestants whose 95% interval holds its true rating, over all fields, with a 95% Clopper–Pearson
interval on the share (the cases of one field are not independent: their ratings share a mean,
so the interval is a little narrow): for the round robin, the adaptive run's final table, its
table at the stop (fitted without the confirmation round) and, as the other way to answer the
stop, the table at the stop with each interval widened to the level spread over the looks taken
(1 - 0.05 / looks, from the bootstrap's spread: rating +- z sd). Prints JSON.

    python benchmarks/adaptive.py --contestants 10 --gap 150 --repetitions 20 --fields 10
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import textwrap
import time
import zlib
from collections import defaultdict
from pathlib import Path
from statistics import NormalDist

import numpy as np
from scipy.stats import binomtest

from results.scoring.rating_fit import Fit, fit, order_key
from tournaments.adaptive import AdaptiveSchedule
from tournaments.config import Tournament
from tournaments.load import load_tournament
from tournaments.schedule import MatchSpec, schedule


def tournament(folder: Path, names: list[str], repetitions: int, fmt: str) -> Tournament:
    path = folder / f"{fmt}.yaml"
    path.write_text(
        textwrap.dedent(
            f"""
            name: {fmt}
            format: {fmt}
            scenarios: [calvano]
            repetitions: {repetitions}
            max_concurrent_matches: 8
            """
        )
        + "contestants:\n"
        + "".join(f"  - {{name: {name}, kind: fixed_price}}\n" for name in names)
    )
    return load_tournament(path)


def outcome(match: MatchSpec, strengths: dict[str, float], seed: int) -> list[tuple[str, int]]:
    a, b = match.seats
    draw = np.random.default_rng([seed, zlib.crc32(match.key.encode())]).random()
    wins = draw < 1 / (1 + 10 ** ((strengths[b] - strengths[a]) / 400))
    return [(a, 1), (b, 2)] if wins else [(a, 2), (b, 1)]


def table(rankings: list[list[tuple[str, int]]]) -> list[str]:
    return order(fit(rankings))


def order(found: Fit) -> list[str]:
    return sorted(found.ratings, key=lambda name: order_key(name, found.ratings[name].rating))


def intervals(found: Fit, level: float | None = None) -> dict[str, tuple[float, float]]:
    """Each contestant's interval: the fit's own, or rating +- z sd of its bootstrap ratings at `level`."""
    if level is None:
        return {name: (r.low, r.high) for name, r in found.ratings.items()}
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    spread = dict(zip(found.names, np.nanstd(found.samples, axis=0, ddof=1)))
    return {
        name: (r.rating - z * spread[name], r.rating + z * spread[name]) for name, r in found.ratings.items()
    }


def held(found: dict[str, tuple[float, float]], truth: dict[str, float]) -> int:
    """How many of the intervals `found` hold the true rating."""
    return sum(bool(low <= truth[name] <= high) for name, (low, high) in found.items())


def coverage(runs: list[dict[str, tuple[float, float]]], truth: dict[str, float]) -> dict[str, object]:
    """How many intervals hold the truth, of how many, the 95% interval on that share, and the
    intervals' mean width."""
    covered = sum(held(found, truth) for found in runs)
    count = sum(len(found) for found in runs)
    share = binomtest(covered, count).proportion_ci(0.95)
    return {
        "covered": covered,
        "cases": count,
        "share": round(covered / count, 3),
        "share_95": [round(share.low, 3), round(share.high, 3)],
        "mean_width": round(
            statistics.fmean(high - low for found in runs for low, high in found.values()), 1
        ),
    }


def machine() -> str:
    """The CPU's model name, as /proc/cpuinfo gives it (the VMs here are AMD EPYC or Intel Xeon)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--contestants", type=int, default=10)
    parser.add_argument("--gap", type=float, default=150.0, help="Elo points between neighbours")
    parser.add_argument("--repetitions", type=int, default=20, help="the round robin's seeds")
    parser.add_argument("--fields", type=int, default=10, help="field seeds (outcome draws)")
    args = parser.parse_args()
    names = [f"c{k:02d}" for k in range(args.contestants)]
    strengths = {name: 1000.0 + args.gap * ((len(names) - 1) / 2 - k) for k, name in enumerate(names)}
    folder = Path(tempfile.mkdtemp())
    full = tournament(folder, names, args.repetitions, "round_robin")
    adaptive_file = tournament(folder, names, args.repetitions, "adaptive")
    started = time.perf_counter()
    fields: list[dict[str, object]] = []
    used: list[int] = []  # matches of each adaptive run
    stopped: list[int] = []  # of them, before its confirmation round
    covers: dict[str, list[dict[str, tuple[float, float]]]] = defaultdict(list)
    for seed in range(args.fields):
        full_fit = fit([outcome(m, strengths, seed) for m in schedule(full)])
        round_robin = order(full_fit)
        chosen, looks, confirmation = AdaptiveSchedule(adaptive_file), 0, 0
        rankings: list[list[tuple[str, int]]] = []
        reached = None  # the matches after which its table was the round robin's to the end
        while True:
            next_round = chosen.next_round(rankings)
            if not next_round.matches:
                break
            looks += not next_round.confirmation  # each is followed by a fit that could stop the run
            confirmation += len(next_round.matches) * next_round.confirmation
            rankings += [outcome(m, strengths, seed) for m in next_round.matches]
            same = table(rankings) == round_robin
            reached = (reached or len(rankings)) if same else None
        final = fit(rankings)
        at_stop = fit(rankings[: len(rankings) - confirmation])
        found = {
            "round_robin": intervals(full_fit),
            "adaptive": intervals(final),
            "at_stop": intervals(at_stop),
            "at_stop_spread": intervals(at_stop, 1 - 0.05 / looks),
        }
        for method, each in found.items():
            covers[method].append(each)
        used.append(len(rankings))
        stopped.append(len(rankings) - confirmation)
        fields.append(
            {
                "seed": seed,
                "round_robin_matches": len(schedule(full)),
                "round_robin_true_order": round_robin == names,
                "adaptive_matches": len(rankings),
                "confirmation_matches": confirmation,
                "looks": looks,
                "adaptive_true_order": order(final) == names,
                "adaptive_round_robin_order": order(final) == round_robin,
                "adaptive_matches_to_round_robin_order": reached,
                "ended": next_round.ended,
                "covered": {method: held(each, strengths) for method, each in found.items()},
            }
        )
    print(
        json.dumps(
            {
                "machine": machine(),
                "contestants": args.contestants,
                "gap": args.gap,
                "round_robin_matches": len(schedule(full)),
                "adaptive_matches_mean": statistics.fmean(used),
                "adaptive_matches_min": min(used),
                "adaptive_matches_max": max(used),
                "at_stop_matches_mean": statistics.fmean(stopped),
                "adaptive_share_of_round_robin": statistics.fmean(used) / len(schedule(full)),
                "adaptive_true_order": sum(bool(f["adaptive_true_order"]) for f in fields),
                "adaptive_round_robin_order": sum(bool(f["adaptive_round_robin_order"]) for f in fields),
                "round_robin_true_order": sum(bool(f["round_robin_true_order"]) for f in fields),
                "coverage": {method: coverage(runs, strengths) for method, runs in covers.items()},
                "fields": len(fields),
                "seconds": round(time.perf_counter() - started, 1),
                "each": fields,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
