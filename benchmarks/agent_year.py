"""What a year of an agent costs to keep: run by hand, prints JSON. Not a test.

    python benchmarks/agent_year.py                 # 365 days, 20 steps a day: about a minute
    python benchmarks/agent_year.py --days 30 --steps 5
    python benchmarks/agent_year.py --days 200 --chars-per-token 2 --refuses-as vllm

A scripted agent (the tests' stand-in for the OpenAI API, tests/fakes) plays --days days of
price_war against a fixed-price rival, taking --steps steps a day (it reads its books, its
history and its rivals, computes, keeps notes, prices and orders, and ends the day on the
last step), under a --window-token context, so the conversation is compacted as it grows.
The stand-in counts a prompt at --chars-per-token characters a token (4; arena assumes 3 where
it has no tokenizer: fewer is a server that counts more tokens than arena does) and refuses a
request longer than the window in the words of --refuses-as, which arena learns from.
Reports the calls, the compactions, the requests refused as too long (and on which days), the
largest prompt the stand-in counted, the tokens of
the year (input, of it read from the prompt cache, output: the stand-in's counts, its answers
the script's short calls), what they cost at the catalogue's list
prices of --priced models, the transcript's size as JSON and as stored (results.storage.transcript_codec:
zlib, a merchant-day a row), and the wall time (of which most is the stand-in's and the SDK's:
no model is run).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fakes.agents import agent  # noqa: E402
from fakes.openai_api import FakeOpenAI  # noqa: E402
from fakes.server import Call  # noqa: E402

from contestants.calls.types import TokenUsage  # noqa: E402
from contestants.kinds import create  # noqa: E402
from contestants.llm.merchant import LLMMerchant  # noqa: E402
from contestants.llm.pricing import cost  # noqa: E402
from contestants.llm.retry import error_in  # noqa: E402
from contestants.llm.too_long import too_long  # noqa: E402
from market.engine import Market  # noqa: E402
from market.scenario import load_scenario  # noqa: E402
from results.records import TranscriptRecord  # noqa: E402
from results.storage.transcript_codec import day_rows  # noqa: E402

CHORES: list[list[tuple[str, dict[str, Any]]]] = [
    [("read_books", {})],
    [("read_history", {"first_day": None, "last_day": None})],
    [("read_rivals", {})],
    [("calculator", {"expression": "round((11 - 6.5) * 30 - 2 * 30 * 0.05, 2)"})],
    [("read_notes", {"key": None})],
    [("write_note", {"key": "plan", "text": "Hold 11 while the rival stays at 10; order 30 on low stock."})],
    [("set_price", {"product": "widget", "price": 11.0})],
    [("order", {"product": "widget", "quantity": 30})],
]


def script(steps: int) -> list[list[tuple[str, dict[str, Any]]]]:
    """`steps` steps: the chores in turn, the last ending the day."""
    return [CHORES[k % len(CHORES)] for k in range(steps - 1)] + [[("end_day", {})]]


def refused_for_length(call: Call) -> bool:
    """Whether the stand-in refused the call as too long, as arena reads a refusal."""
    said = error_in(call.reply) if call.status != 200 else None
    return said is not None and too_long(call.status, *said) is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--window", type=int, default=8_000)
    parser.add_argument("--chars-per-token", type=float, default=4.0)
    parser.add_argument("--refuses-as", choices=["openai", "vllm", "llama.cpp"], default="openai")
    parser.add_argument("--priced", nargs="+", default=["openai/gpt-5.4-mini", "anthropic/claude-haiku-5-5"])
    args = parser.parse_args()
    scenario = load_scenario("price_war")
    with FakeOpenAI() as fake:
        os.environ["ARENA_BENCHMARK_KEY"] = str(fake.api_key)
        fake.contexts["gpt-4.1-mini"] = args.window
        fake.chars_per_token, fake.refuses_as = args.chars_per_token, args.refuses_as
        fake.answer = agent(script(args.steps))
        merchant = create(
            "llm",
            {
                "model": "openai/gpt-4.1-mini",
                "mode": "agent",
                "max_steps": args.steps,
                "context_tokens": args.window,
                "base_url": fake.base_url,
                "api_key_env": "ARENA_BENCHMARK_KEY",
                "no_cache": True,
            },
        )
        assert isinstance(merchant, LLMMerchant)
        market = Market(scenario, [["agent", "rival"]], days=args.days)
        market.reset([1])
        merchant.reset(merchant="agent", scenario=scenario, seed=1)
        rival = create("fixed_price", {})
        rival.reset(merchant="rival", scenario=scenario, seed=2)
        start = time.perf_counter()
        while market.playing.any():
            agent_sees, rival_sees = market.observations(market.view(), [0, 1])
            market.advance(decisions={0: merchant.decide(agent_sees), 1: rival.decide(rival_sees)})
        seconds = time.perf_counter() - start
        failed = [c.status for c in fake.calls if c.status != 200 and not refused_for_length(c)]
    steps = [TranscriptRecord(merchant="agent", **s.model_dump()) for s in merchant.transcript()]
    rows = list(day_rows(steps))
    as_json = sum(len(json.dumps(s.model_dump(mode="json"), ensure_ascii=False).encode()) for s in steps)
    stored = sum(len(row["words"]) for row in rows)
    calls = merchant.calls()
    used = TokenUsage(
        input_tokens=sum(c.input_tokens for c in calls),
        cached_tokens=sum(c.cached_tokens for c in calls),
        output_tokens=sum(c.output_tokens for c in calls),
    )
    print(
        json.dumps(
            {
                "machine": {"processor": platform.processor() or platform.machine(), "cpus": os.cpu_count()},
                "days": args.days,
                "steps_a_day": args.steps,
                "window_tokens": args.window,
                "stand_in_chars_per_token": args.chars_per_token,
                "refuses_as": args.refuses_as,
                "calls": dict(Counter(c.purpose for c in calls)),
                "refused_as_too_long_on_days": [s.day for s in steps if s.refused is not None],
                "other_failures": len(failed),
                "largest_prompt_tokens": max(c.input_tokens for c in calls),
                "tokens": used.model_dump(include={"input_tokens", "cached_tokens", "output_tokens"}),
                "usd_at_list_prices": {label: round(cost(label, used) or 0.0, 2) for label in args.priced},
                "transcript_json_bytes": as_json,
                "transcript_stored_bytes": stored,
                "stored_bytes_per_step": round(stored / len(steps), 1),
                "seconds": round(seconds, 1),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
