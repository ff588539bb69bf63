"""How a year's estimate compares with the year played: run by hand, prints JSON. Not a test.

    python benchmarks/estimate_year.py                  # 365 days, 20 steps a day at most
    python benchmarks/estimate_year.py --days 60 --max-steps 8

A tournament of one match of price_war: a scripted agent at the tests' stand-in for the OpenAI
API (tests/fakes: four steps a day, its books and a sum, a note, a price and an order,
end_day) against a fixed-price rival. `arena validate --estimate --json` foresees its calls,
input tokens and cost, each from one step a day to the most; `arena run` plays it. Prints both,
and whether each played figure is within its range (docs/tournaments.md, "How far off it
is"). The stand-in counts a token per four characters of what the model reads and serves a
prompt cache, so the played cost is below what the same tokens cost fresh.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fakes.agents import agent  # noqa: E402
from fakes.openai_api import FakeOpenAI  # noqa: E402
from throughput import machine  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from arena.cli import app  # noqa: E402
from results.storage import store  # noqa: E402
from results.storage.db import engine_for  # noqa: E402

DAY = [
    [("read_books", {}), ("calculator", {"expression": "round(1000 / 7, 2)"})],
    [("write_note", {"key": "plan", "text": "hold 14, order 20"})],
    [("set_price", {"product": "widget", "price": 14.0}), ("order", {"product": "widget", "quantity": 20})],
    [("end_day", {})],
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--max-steps", type=int, default=20)
    parser.add_argument("--window", type=int, default=32_000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="estimate_year_"))
    os.chdir(folder)
    with FakeOpenAI() as fake:
        os.environ["ARENA_BENCHMARK_KEY"] = str(fake.api_key)
        fake.answer = agent(DAY)
        config = folder / "year.yaml"
        config.write_text(
            textwrap.dedent(
                f"""
                name: year
                seed: 11
                scenarios: [price_war]
                seeds: [1]
                days: {args.days}
                recall_every: 30
                contestants:
                  - name: scripted
                    kind: llm
                    params: {{model: openai/gpt-4.1-mini, mode: agent, max_steps: {args.max_steps},
                             context_tokens: {args.window}, base_url: "{fake.base_url}",
                             api_key_env: ARENA_BENCHMARK_KEY, no_cache: true}}
                  - {{name: fixed, kind: fixed_price}}
                """
            )
        )
        start = time.perf_counter()
        shown = CliRunner().invoke(app, ["validate", str(config), "--estimate", "--json"])
        estimating = time.perf_counter() - start
        assert shown.exit_code == 0, shown.output
        start = time.perf_counter()
        db = f"sqlite:///{folder}/year.db"
        ran = CliRunner().invoke(app, ["run", str(config), "--db", db])
        playing = time.perf_counter() - start
        assert ran.exit_code == 0, ran.output
    foreseen = {e["contestant"]: e for e in json.loads(shown.stdout)["estimate"]}["scripted"]
    engine = engine_for(db, create=False)
    [match] = store.list_matches(engine)
    detail = store.match_detail(engine, match.id)
    calls = detail.calls
    played = {
        "calls": len(calls),
        "input_tokens": sum(c.input_tokens for c in calls),
        "cost": round(sum(c.cost or 0.0 for c in calls), 4),
    }
    print(
        json.dumps(
            {
                "machine": machine(),
                "days": args.days,
                "max_steps": args.max_steps,
                "foreseen": foreseen,
                "played": {
                    **played,
                    "by_purpose": dict(Counter(c.purpose for c in calls)),
                    "cached_tokens": sum(c.cached_tokens for c in calls),
                    "bankrupt_day": [r.bankrupt_day for r in detail.results if r.contestant == "scripted"][0],
                },
                "within": {k: foreseen[k][0] <= v <= foreseen[k][1] for k, v in played.items()},
                "seconds": {"estimate": round(estimating, 1), "run": round(playing, 1)},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
