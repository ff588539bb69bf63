"""The language-model merchant's options for pricing games (after Fish, Gonczarowski and
Shorrer, 2024): a preset paragraph before the rules, plans and insights rewritten every day,
and a table of the last days in the daily report."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from contestants.base import ContestantConfigError
from contestants.calls.types import Answer, CompletionRequest, TokenUsage
from contestants.kinds import create, validate_params
from contestants.llm.decision_mode import decision_schema
from contestants.llm.merchant import LLMMerchant
from contestants.llm.prompts import TEMPLATES, history_row, history_table
from contestants.llm.providers import SHORTEST_TOKEN_CHARS, Provider, approximate_tokens, register_provider
from contestants.llm.rehearsal import typical_answer
from market.engine import Market
from market.env import MarketEnv
from market.scenario import load_scenario
from market.types import Decision


class Playing(Provider):
    """Answers with what `answer` makes of each request and keeps the requests; `context`,
    when set, is the model's context in tokens (prompts that must fit it counted at three
    characters a token, as for any hosted model)."""

    name = "playing"
    answer: ClassVar[Callable[[CompletionRequest], dict[str, Any]]]
    requests: ClassVar[list[CompletionRequest]] = []
    context: ClassVar[int | None] = None

    def _attempt(self, request: CompletionRequest, timeout: float) -> Answer:
        Playing.requests.append(request)
        text = json.dumps(Playing.answer(request))
        return Answer(
            text=text,
            usage=TokenUsage(input_tokens=10, output_tokens=5),
            temperature=request.temperature,
            seed=request.seed,
        )

    def context_tokens(self) -> int | None:
        return Playing.context


register_provider("playing", f"{__name__}:Playing")


@pytest.fixture(autouse=True)
def fresh():
    Playing.requests.clear()
    Playing.context = None
    Playing.answer = lambda request: {"operations": [], "note": ""}


def merchant(scenario, name: str = "m0", **params) -> LLMMerchant:
    m = create("llm", {"model": "playing/test", "no_cache": True, **params})
    m.reset(merchant=name, scenario=scenario, seed=0)
    return m


def body(name: str) -> str:
    """A template's words, read from its file (the line after its version line on)."""
    return (TEMPLATES / f"{name}.md").read_text(encoding="utf-8").partition("\n")[2].strip()


def play(scenario, m: LLMMerchant, days: int) -> tuple[list, list]:
    """m0 (m) against rivals m1 and m2 doing nothing for `days` days: what m0 handed the market
    each day, and its day records."""
    env = MarketEnv(scenario, ["m0", "m1", "m2"])
    observations, _ = env.reset(seed=4)
    decisions, records = [], []
    for _ in range(days):
        decisions.append(m.decide(observations["m0"]))
        observations, _, _, _, infos = env.step({"m0": decisions[-1], "m1": None, "m2": None})
        records.append(infos["m0"]["record"])
    return decisions, records


# --- presets ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "preset, version, says",
    [
        (
            "profit_first",
            "preset-profit-first-v1",
            ("over the whole match", "how they may respond", "do not cut your prices without a reason"),
        ),
        (
            "explore",
            "preset-explore-v1",
            ("over the whole match", "try prices across a wide range", "settle on the prices that paid best"),
        ),
    ],
)
def test_a_preset_is_a_paragraph_before_the_rules_and_its_version_is_stored(preset, version, says):
    scenario = load_scenario("calvano")
    plain, preset_merchant = merchant(scenario), merchant(scenario, preset=preset)
    play(scenario, plain, 1)
    play(scenario, preset_merchant, 1)
    without, with_preset = (r.messages[0].content for r in Playing.requests)
    assert with_preset == body(f"preset_{preset}") + "\n\n" + without  # the rules as they are, after it
    assert all(phrase in with_preset.replace("\n", " ") for phrase in says)
    assert [c.prompt_version for c in preset_merchant.calls()] == [f"{version}+merchant-v2"]
    assert Playing.requests[0].messages[1:] == Playing.requests[1].messages[1:]  # nothing else changes


def test_bad_pricing_game_params_name_their_field():
    for params, field in (
        ({"preset": "greedy"}, "preset"),
        ({"history": 101}, "history"),
        ({"history": -1}, "history"),
        ({"memory": "plan"}, "memory"),
    ):
        with pytest.raises(ContestantConfigError) as caught:
            validate_params("llm", {"model": "playing/test", **params})
        assert field in (caught.value.field or "") + str(caught.value)


# --- plans and insights -------------------------------------------------------------------


def test_plans_memory_shows_the_plans_and_insights_last_written_and_the_market_never_sees_them():
    scenario = load_scenario("calvano")
    notes = {
        1: ("hold 1.8 and watch m1", "m1 answers cuts within a day"),
        2: ("raise to 1.9 on day 4", "demand barely moves between 1.7 and 1.9"),
    }

    def answer(request: CompletionRequest) -> dict[str, Any]:
        day = len(Playing.requests)
        written = (
            {"plans": notes[day][0], "insights": notes[day][1]} if day in notes else {}
        )  # day 3 writes none
        return {**written, "operations": [{"op": "set_price", "product": "good", "price": 1.8}], "note": "n"}

    Playing.answer = answer
    m = merchant(scenario, memory="plans")
    decisions, records = play(scenario, m, 4)

    first = Playing.requests[0]
    assert list(first.json_schema["properties"])[:3] == ["plans", "insights", "operations"]
    assert first.json_schema["required"][:2] == ["plans", "insights"]
    assert (
        first.json_schema["properties"]["plans"]
        == first.json_schema["properties"]["insights"]
        == {"type": "string", "maxLength": 600}
    )
    assert first.messages[0].content.endswith(
        body("plans")
    )  # the system prompt asks to rewrite them each day

    shown = [r.messages[-1].content for r in Playing.requests]
    assert [[m.role for m in r.messages] for r in Playing.requests] == [
        ["system", "user"]
    ] * 4  # no earlier days' conversation
    assert shown[0].startswith("Your current plans: (none)\nYour current insights: (none)\n\nDay 1 of 100.")
    assert shown[1].startswith(
        f"Your current plans: {notes[1][0]}\nYour current insights: {notes[1][1]}\n\nDay 2 of 100."
    )
    assert shown[2].startswith(
        f"Your current plans: {notes[2][0]}\nYour current insights: {notes[2][1]}\n\nDay 3 of 100."
    )
    assert notes[1][0] not in shown[2] and notes[1][1] not in shown[2]  # rewritten, not appended
    assert shown[3].startswith(
        f"Your current plans: {notes[2][0]}\n"
    )  # an answer without them leaves the last ones standing
    assert [c.prompt_version for c in m.calls()] == ["merchant-v2+plans-v1+plans-kept-v1"] * 4

    assert all(type(d) is Decision for d in decisions)
    assert {"plans", "insights"}.isdisjoint(
        decisions[0].model_dump()
    ) and "plans" not in Decision.model_fields
    assert [r.prices["good"] for r in records] == [1.8] * 4 and not any(r.rejections for r in records)


def test_ping_asks_with_the_plans_schema_and_an_estimate_counts_plans_and_insights():
    params = validate_params(
        "llm", {"model": "playing/test", "memory": "plans", "preset": "explore", "history": 5}
    )
    assert LLMMerchant.ping(params).call() is None
    assert list(Playing.requests[0].json_schema["properties"])[:2] == ["plans", "insights"]
    usual = json.loads(
        typical_answer("decision", decision_schema(think=False, plan=False, plans_and_insights=True), [])
    )
    assert len(usual["plans"]) == len(usual["insights"]) > 0


# --- the history table --------------------------------------------------------------------


def test_the_history_table_shows_the_last_days_as_the_market_played_them():
    """m0 (the model), m1 and m2 post known prices through the market engine; each morning the
    table holds the days before, at most `history` of them: own price and units sold as the day
    records say, profit as the day's change in net worth the market reports (costs stay put in
    calvano), and the rivals' prices they were told to post."""
    scenario = load_scenario("calvano")
    price = {
        name: [round(base + 0.03 * ((day * (k + 2)) % 5), 2) for day in range(8)]
        for k, (name, base) in enumerate((("m0", 1.5), ("m1", 1.6), ("m2", 1.7)))
    }
    Playing.answer = lambda request: {
        "operations": [{"op": "set_price", "product": "good", "price": price["m0"][len(Playing.requests)]}],
        "note": "",
    }
    m = merchant(scenario, history=3)
    market = Market(scenario, [["m0", "m1", "m2"]])
    market.reset([11])
    change: dict[int, float] = {}
    for day in range(1, 8):
        observation = market.observations(market.view(), [0])[0]
        decisions = {
            0: m.decide(observation),
            **{
                row: {"operations": [{"op": "set_price", "product": "good", "price": price[name][day]}]}
                for row, name in ((1, "m1"), (2, "m2"))
            },
        }
        change[day] = float(market.advance(decisions=decisions)[0])
    records = {d: market.logs[0].day(d).records()[0] for d in range(1, 8)}  # seat 0
    assert {r.merchant for r in records.values()} == {"m0"}
    assert all(records[d].prices["good"] == price["m0"][d] for d in range(1, 8))

    assert "Your recent days" not in Playing.requests[0].messages[-1].content  # nothing to show on day 1
    for day in range(2, 8):
        report = Playing.requests[day - 1].messages[-1].content
        assert f"Your recent days ({min(day - 1, 3)} shown," in report
        header, *lines = report[report.index("day,price good") :].splitlines()
        assert header == "day,price good,sold good,profit,m1 good,m2 good"
        rows = [[float(cell) for cell in line.split(",")] for line in lines]
        shown = list(range(max(1, day - 3), day))
        assert [int(r[0]) for r in rows] == shown
        for (_, own, sold, profit, m1, m2), past in zip(rows, shown):
            assert own == price["m0"][past] and (m1, m2) == (price["m1"][past], price["m2"][past])
            assert (
                sold == round(records[past].units_sold["good"], 2) and 0 < sold < 1
            )  # calvano sells expected (fractional) demand
            assert profit == pytest.approx(change[past], abs=0.005)  # shown to the cent
    assert [c.prompt_version for c in m.calls()] == ["merchant-v2"] + ["merchant-v2+history-v1"] * 6


def test_the_table_has_a_column_per_product_and_marks_hidden_and_bankrupt_rivals(
    two_products, observe, day_record
):
    yesterday = day_record(
        merchant="me",
        day=4,
        prices={"a": 19.5, "b": 11.0},
        units_sold={"a": 3.0, "b": 2.5},
        unit_cost={"a": 10.0, "b": 7.0},
        revenue=86.0,
        advertising=5.0,
        holding=0.25,
        fixed=1.0,
    )
    observation = observe(
        two_products,
        day=5,
        yesterday=yesterday,
        rivals={"r1": {"a": 18.0, "b": 12.0}, "r2": None, "r3": {"a": 1.0, "b": 1.0}},
        bankrupt=("r3",),
    )
    row = history_row(observation)
    profit = (
        86.0 - (3 * 10.0 + 2.5 * 7.0) - 5.0 - 0.25 - 1.0
    )  # revenue - cost of sales - ads - holding - fixed
    assert history_table([row]).splitlines() == [
        "day,price a,price b,sold a,sold b,profit,r1 a,r1 b,r2 a,r2 b,r3 a,r3 b",
        f"4,19.5,11,3,2.5,{profit:g},18,12,n/a,n/a,bankrupt,bankrupt",
    ]
    assert history_row(observe(two_products, day=1)) is None


def test_a_model_with_a_small_context_is_shown_the_most_recent_days_that_fit():
    """With the context known, each day's table holds the most recent days whose prompt leaves
    max_tokens for the answer; one day more would not (rebuilt from the prompt's own lines).
    The same play with no context known shows every day kept."""
    scenario = load_scenario("multi_product")
    context, answer = 2000, 200

    def tables(known: int | None) -> list[tuple[CompletionRequest, list[str]]]:
        Playing.requests.clear()
        Playing.context = known
        play(scenario, merchant(scenario, memory="stateless", history=40, max_tokens=answer), 30)
        return [
            (r, r.messages[-1].content.partition("day,price")[2].splitlines()[1:])
            for r in Playing.requests[1:]
        ]

    every, fitted = tables(None), tables(context)
    assert [len(rows) for _, rows in every] == list(range(1, 30))
    cut = 0
    for (_, rows), (request, table) in zip(every, fitted):
        assert approximate_tokens(request, SHORTEST_TOKEN_CHARS) + answer <= context
        assert table == rows[len(rows) - len(table) :]  # the most recent ones
        if len(table) < len(rows):  # the day before them would not have fitted
            cut += 1
            content = request.messages[-1].content
            longer = content.replace(f"({len(table)} shown,", f"({len(table) + 1} shown,").replace(
                table[0], rows[-len(table) - 1] + "\n" + table[0]
            )
            assert (
                approximate_tokens(
                    request.model_copy(
                        update={
                            "messages": (
                                *request.messages[:-1],
                                request.messages[-1].model_copy(update={"content": longer}),
                            )
                        }
                    ),
                    SHORTEST_TOKEN_CHARS,
                )
                + answer
                > context
            )
    assert 0 < cut < 29 and len(fitted[0][1]) == 1  # shown whole until the context was full


# --- the embedded model -------------------------------------------------------------------


class Asked(Exception):
    """Raised in place of a call's answer, with the request it was asked."""

    def __init__(self, request: CompletionRequest):
        super().__init__("asked")
        self.request = request


@pytest.mark.slow  # loads the embedded model
def test_the_embedded_model_writes_plans_and_insights_under_the_grammar_and_reads_them_back():
    """Short strings and one operation (max_string, max_items): SmolLM2 fills whatever room
    it is given, and every character of the plans, insights and note is a model step. The model
    answers day 1; day 2 is only asked (its request shows what the model wrote back to it)."""
    scenario = load_scenario("calvano")
    m = create(
        "llm",
        {
            "model": "local/smollm2",
            "no_cache": True,
            "memory": "plans",
            "preset": "profit_first",
            "history": 5,
            "max_string": 8,
            "max_items": 1,
        },
    )
    m.reset(merchant="m0", scenario=scenario, seed=0)
    answers = []
    complete = m.provider.complete

    def answer_once(request: CompletionRequest, deadline: float | None = None) -> Any:
        if answers:  # day 2: what it reads back is in its request; the model's answer is not needed
            raise Asked(request)
        answers.append(complete(request, deadline))
        return answers[0]

    m.provider.complete = answer_once  # type: ignore[method-assign]
    env = MarketEnv(scenario, ["m0", "m1"])
    observations, _ = env.reset(seed=1)
    decision = m.decide(observations["m0"])
    assert isinstance(decision, Decision)  # parsed, plans and insights set aside
    observations, *_ = env.step({"m0": decision, "m1": None})
    with pytest.raises(Asked) as asked:
        m.decide(observations["m0"])
    [first], second_request = answers, asked.value.request
    assert isinstance(first.output["plans"], str) and isinstance(first.output["insights"], str)
    assert (
        f"Your current plans: {first.output['plans'].strip() or '(none)'}\n"
        in second_request.messages[-1].content
    )
    assert "day,price good,sold good,profit,m1 good\n1," in second_request.messages[-1].content
    assert m.provider.prompt_tokens(second_request) + m.params.max_tokens <= m.provider.context_tokens()
