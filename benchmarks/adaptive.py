"""How many matches the adaptive format needs against the full round robin, on fields whose true
order is known: contestants of Elo strengths `--gap` apart, each match drawn from the
Bradley–Terry model with a generator of its key (the scheduler and the fit are arena's own,
tournaments.adaptive and results.rating_fit; only the match's outcome is drawn here rather
than played). For each field seed: the round robin of `--repetitions` seeds, fitted; the
adaptive schedule run to its end; whether each ends in the true order, whether the adaptive
table ends in the round robin's order, and the matches each used. Prints JSON.

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
from pathlib import Path

import numpy as np

from results.rating_fit import fit, order_key
from tournaments.adaptive import AdaptiveSchedule
from tournaments.config import Tournament, load_tournament
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
    ratings = fit(rankings).ratings
    return sorted(ratings, key=lambda name: order_key(name, ratings[name].rating))


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
    fields = []
    for seed in range(args.fields):
        round_robin = table([outcome(m, strengths, seed) for m in schedule(full)])
        chosen, rankings = AdaptiveSchedule(adaptive_file), []
        reached = None  # the matches after which its table was the round robin's to the end
        while True:
            next_round = chosen.next_round(rankings)
            if not next_round.matches:
                break
            rankings += [outcome(m, strengths, seed) for m in next_round.matches]
            same = table(rankings) == round_robin
            reached = (reached or len(rankings)) if same else None
        final = table(rankings)
        fields.append(
            {
                "seed": seed,
                "round_robin_matches": len(schedule(full)),
                "round_robin_true_order": round_robin == names,
                "adaptive_matches": len(rankings),
                "adaptive_true_order": final == names,
                "adaptive_round_robin_order": final == round_robin,
                "adaptive_matches_to_round_robin_order": reached,
                "ended": next_round.ended,
            }
        )
    used = [f["adaptive_matches"] for f in fields]
    print(
        json.dumps(
            {
                "machine": machine(),
                "contestants": args.contestants,
                "gap": args.gap,
                "round_robin_matches": len(schedule(full)),
                "adaptive_matches_mean": statistics.fmean(used),
                "adaptive_matches_max": max(used),
                "adaptive_share_of_round_robin": statistics.fmean(used) / len(schedule(full)),
                "adaptive_true_order": sum(f["adaptive_true_order"] for f in fields),
                "adaptive_round_robin_order": sum(f["adaptive_round_robin_order"] for f in fields),
                "round_robin_true_order": sum(f["round_robin_true_order"] for f in fields),
                "fields": len(fields),
                "seconds": round(time.perf_counter() - started, 1),
                "each": fields,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
