"""Agent mode: a merchant that works through its day with tools, against stand-ins for the
hosted APIs that script an agent (it reads its books, computes, keeps a note, acts and ends
the day; or loops until its steps run out), and with the embedded model."""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from typing import Any

import pytest
from fakes.agents import RECALLED, SUMMARY, agent, day_of, offered, today
from fakes.server import Call

from contestants.base import ContestantConfigError, RecallQuestion, RunOptions
from contestants.calls.coordinator import CallCoordinatorCore, CallsStopped, LocalCallCoordinator
from contestants.calls.types import ToolCall
from contestants.kinds import create, validate_params
from contestants.llm.agent import HISTORY_CHARS, AgentTools, Workday, tools_for
from contestants.llm.agent_mode import MOST_SUMMARY_CHARS
from contestants.llm.merchant import LLMMerchant
from contestants.llm.prompts import HistoryRow
from market.engine import Market
from market.scenario import Scenario, load_scenario

SHOP = Scenario.model_validate(
    {
        "name": "shop",
        "days": 5,
        "products": [{"id": "tea", "unit_cost": 2.0, "reference_price": 4.0, "base_demand": 30}],
        "finance": {"initial_cash": 100, "credit_share": 0.5, "credit_days": 1},
        "demand": {"mode": "stochastic"},
    }
)
KEY = "sk-fake-openai"


def morning(scenario: Scenario = SHOP, rivals: int = 1) -> tuple[Market, Any]:
    market = Market(scenario, [["a", *(f"r{k}" for k in range(rivals))]])
    market.reset([3])
    return market, market.observations(market.view(), [0])[0]


def run(tools: AgentTools, day: Workday, name: str, **arguments: Any) -> Any:
    return json.loads(tools.run(ToolCall(id="c", name=name, arguments=json.dumps(arguments)), day))


# --- the tools, without a model -----------------------------------------------------------------


def test_the_calculator_computes_and_refuses_what_is_not_arithmetic():
    market, observation = morning()
    tools, day = AgentTools(SHOP, talk=False), Workday(observation)
    assert run(tools, day, "calculator", expression="(4.5 - 2) * 30 + sqrt(16)") == {"value": 79.0}
    assert run(tools, day, "calculator", expression="max(3, 7) / 2") == {"value": 3.5}
    for hostile in (
        "__import__('os').system('true')",
        "open('/etc/passwd')",
        "9**9**9**9",
        "rand()",
        "'a'*9",
    ):
        assert "error" in run(tools, day, "calculator", expression=hostile), hostile
    assert day.tool_errors == 5


def test_arguments_that_no_number_can_hold_and_overflowing_sums_are_tool_errors():
    """NaN or Infinity in arguments, a product of huge numbers and a huge power are refused,
    and the day's books still read (nothing of them was kept); an `op` among the arguments
    does not change which operation the tool makes."""
    _, observation = morning()
    tools, day = AgentTools(SHOP, talk=False), Workday(observation)
    nan = tools.run(ToolCall(id="c", name="set_price", arguments='{"product": "tea", "price": NaN}'), day)
    assert "not a number" in json.loads(nan)["error"]
    for huge in ("10**300 * 10**300", "9**4000000", "exp(1000)"):
        assert "error" in run(tools, day, "calculator", expression=huge), huge
    assert run(tools, day, "read_books")["today"] == []
    run(tools, day, "set_price", product="tea", price=4.0, op="advertise")
    assert day.operations[-1]["op"] == "set_price"


def test_history_answers_with_its_latest_days_when_all_would_not_fit():
    _, observation = morning()
    tools = AgentTools(SHOP, talk=False)
    row = HistoryRow(1, {"tea": 4.0}, {"tea": 10.0}, 12.5, {"r0": {"tea": 3.9}}, frozenset())
    tools.history = [dataclasses.replace(row, day=d) for d in range(1, 301)]
    shown = run(tools, Workday(observation), "read_history", first_day=None, last_day=None)
    assert shown["last_day"] == 300 and shown["first_day"] > 1 and shown["days"] == 301 - shown["first_day"]
    assert len(shown["table"]) <= HISTORY_CHARS and shown["table"].endswith(
        tools.history[-1].day.__str__() + ",4,10,12.5,3.9"
    )


def test_a_window_too_small_for_the_rules_stops_the_run_and_one_smaller_than_an_answer_is_refused(
    fake_openai: Any, monkeypatch: pytest.MonkeyPatch
):
    """The rules and the tools alone take more than 1,200 tokens: once the day's report is
    compacted away, the run's calls stop with one line naming the contestant, what does not
    fit and the window; no request too long was sent."""
    monkeypatch.setenv("ARENA_TEST_KEY", fake_openai.api_key)
    fake_openai.answer = agent(DAY)
    coordinator = LocalCallCoordinator()
    merchant = agent_merchant(
        "gpt-4.1-mini",
        fake_openai.base_url,
        options=RunOptions(call_coordinator=coordinator, contestant="tiny"),
        context_tokens=1_200,
        max_tokens=100,
    )
    merchant.reset(merchant="a", scenario=SHOP, seed=1)
    _, observation = morning()
    with pytest.raises(CallsStopped) as stopped:
        merchant.decide(observation)
    assert str(stopped.value) == coordinator.status().stopped
    assert re.fullmatch(
        r"contestant tiny \(openai/gpt-4\.1-mini\): the rules, the tools, its summary and notes come to "
        r"[\d,]+ tokens as its model counts them, which with max_tokens 100 do not fit its window of "
        r"1,200 tokens: give it a larger window or a smaller max_tokens",
        str(stopped.value),
    )
    assert coordinator.status().broken == "tiny"
    assert [c.status for c in fake_openai.calls] == [200]  # the compaction; none sent too long
    with pytest.raises(ContestantConfigError, match="must be larger than max_tokens"):
        validate_params("llm", {"model": "local/smollm2", "context_tokens": 1000, "max_tokens": 1000})


def test_notes_are_kept_across_days_read_and_deleted():
    _, observation = morning()
    tools = AgentTools(SHOP, talk=False)
    first, second = Workday(observation), Workday(observation)
    assert run(tools, first, "write_note", key="plan", text="hold 4.5") == {"kept": "plan", "notes": 1}
    assert run(tools, second, "read_notes", key=None) == {"notes": {"plan": "hold 4.5"}}
    assert run(tools, second, "read_notes", key="plan") == {"plan": "hold 4.5"}
    assert run(tools, second, "delete_note", key="plan") == {"deleted": "plan"}
    assert "error" in run(tools, second, "read_notes", key="plan")
    assert "error" in run(tools, second, "write_note", key="x" * 41, text="too long a key")
    assert (first.tool_errors, second.tool_errors) == (0, 2)


def test_an_operation_is_answered_as_the_market_takes_it_at_the_close():
    """Cash 100 at unit cost 2: 30 units (60) are accepted, 30 more (60 against 40 left) are
    refused with the market's reason, a price above the ceiling too; the day's decision gets
    the market's same refusals."""
    market, observation = morning()
    tools, day = AgentTools(SHOP, talk=False), Workday(observation)
    assert run(tools, day, "order", product="tea", quantity=30) == {
        "accepted": True,
        "cash_after_today_operations": 40.0,
    }
    refused = run(tools, day, "order", product="tea", quantity=30)
    assert refused == {"accepted": False, "reason": "order costs 60.00, more than cash 40.00"}
    ceiling = SHOP.products[0].price_ceiling
    assert run(tools, day, "set_price", product="tea", price=ceiling * 2)["accepted"] is False
    assert run(tools, day, "set_price", product="tea", price=4.5)["accepted"] is True
    assert run(tools, day, "end_day") == {"ended": 1}
    assert "error" in run(tools, day, "set_price", product="tea", price=4.0)  # the day has ended
    assert day.tool_errors == 3
    market.advance(decisions={0: day.decision()})
    record = market.logs[0].build()[0]
    assert [r.index for r in record.rejections] == [1, 2]
    assert record.rejections[0].reason == refused["reason"]
    assert record.operations == [
        {"op": "order", "product": "tea", "quantity": 30.0},
        {"op": "set_price", "product": "tea", "price": 4.5},
    ]


def test_books_show_the_days_operations_and_the_cash_they_leave():
    _, observation = morning()
    tools, day = AgentTools(SHOP, talk=False), Workday(observation)
    run(tools, day, "order", product="tea", quantity=10)
    run(tools, day, "advertise", amount=500)
    books = run(tools, day, "read_books")
    assert books["cash"] == 100 and books["cash_after_today_operations"] == 80
    assert books["today"][0]["accepted"] is True
    assert books["today"][1]["refused"] == "advertising 500.00 exceeds cash 80.00"
    assert books["products"][0]["in_stock"] == observation.products[0].inventory


def test_a_call_that_is_not_a_tool_or_not_json_is_a_tool_error():
    _, observation = morning()
    tools, day = AgentTools(SHOP, talk=False), Workday(observation)
    assert "no tool" in run(tools, day, "teleport")["error"]
    bad = tools.run(ToolCall(id="c", name="order", arguments='{"product": "tea", '), day)
    assert "not JSON" in json.loads(bad)["error"]
    assert day.operations == [] and day.tool_errors == 2


def test_the_scenarios_parts_add_their_tools():
    names = lambda tools: [t.name for t in tools]  # noqa: E731
    plain = names(tools_for(SHOP, talk=False))
    assert "promote" not in plain and "send_message" not in plain and plain[-1] == "end_day"
    retail = tools_for(load_scenario("retail_quarter"), talk=True)
    assert {"promote", "send_message"} <= set(names(retail))
    order = next(t for t in retail if t.name == "order").parameters
    assert set(order["properties"]["supplier"]["enum"]) == {
        s for names in load_scenario("retail_quarter").supplier_names for s in names
    } | {None}
    for tool in retail:  # strict: every property required, nothing else allowed
        assert tool.parameters["required"] == list(tool.parameters["properties"])
        assert tool.parameters["additionalProperties"] is False


# --- a scripted agent at the stand-ins ----------------------------------------------------------


DAY = [
    [("read_books", {}), ("calculator", {"expression": "100 / 2 / 2"})],
    [("write_note", {"key": "plan", "text": "order 25 a day, price 4.5"})],
    [("order", {"product": "tea", "quantity": 25}), ("set_price", {"product": "tea", "price": 4.5})],
    [("end_day", {})],
]


def agent_merchant(
    model: str, base_url: str, options: RunOptions | None = None, **params: Any
) -> LLMMerchant:
    provider = "anthropic" if model.startswith("claude") else "openai"
    merchant = create(
        "llm",
        {
            "model": f"{provider}/{model}",
            "mode": "agent",
            "base_url": base_url,
            "api_key_env": "ARENA_TEST_KEY",
            "no_cache": True,
            **params,
        },
        options,
    )
    assert isinstance(merchant, LLMMerchant)
    return merchant


def play(merchant: LLMMerchant, days: int) -> Market:
    market = Market(SHOP, [["a", "b"]], days=days)
    market.reset([5])
    merchant.reset(merchant="a", scenario=SHOP, seed=1)
    while market.playing.any():
        observation = market.observations(market.view(), [0])[0]
        market.advance(decisions={0: merchant.decide(observation), 1: None})
    return market


@pytest.mark.parametrize(
    "api, model",
    [("chat", "gpt-4.1-mini"), ("responses", "gpt-5-mini"), ("messages", "claude-sonnet-5-5")],
)
def test_a_scripted_agent_works_through_its_days_at_each_api(
    api: str, model: str, fake_openai: Any, fake_anthropic: Any, monkeypatch: pytest.MonkeyPatch
):
    fake = fake_anthropic if api == "messages" else fake_openai
    monkeypatch.setenv("ARENA_TEST_KEY", fake.api_key)
    fake.answer = agent(DAY)
    extra = {} if api == "messages" else {"api": api}
    merchant = agent_merchant(model, fake.base_url, **extra)
    log = play(merchant, days=2).logs[0].build()
    for record in log.records(log.rows_of("a")):
        assert record.operations == [
            {"op": "order", "product": "tea", "quantity": 25.0},
            {"op": "set_price", "product": "tea", "price": 4.5},
        ]
        assert record.rejections == []
    calls = merchant.calls()
    assert [c.purpose for c in calls] == ["step"] * 8 and [c.day for c in calls] == [1] * 4 + [2] * 4
    assert all(c.prompt_version == "agent-v1" for c in calls)
    # the last request (day 2, step 4) carries the results of the day's five calls so far and day 1's turns
    last = fake.calls[-1].body
    assert len(today(last)) == 5 and json.dumps(last).count("order 25 a day, price 4.5") == 2
    assert merchant.mode.agent is not None and merchant.mode.agent[0].notes == {
        "plan": "order 25 a day, price 4.5"
    }
    reported = merchant.reported_metrics()
    assert reported["steps_per_day"] == 4.0 and reported["step_limit_days"] == reported["loops"] == 0


@pytest.mark.parametrize("api, model", [("responses", "gpt-5-mini"), ("messages", "claude-opus-5")])
def test_a_reasoning_agents_own_items_survive_its_compactions(
    api: str, model: str, fake_openai: Any, fake_anthropic: Any, monkeypatch: pytest.MonkeyPatch
):
    """Reasoning items and signed thinking go back with their turns through compactions, as
    the APIs want them (the stand-ins refuse them unpaired, regrouped or unsigned). Twenty
    days are compacted six times at the Responses API, three at the Messages API (at least
    three asked)."""
    fake = fake_anthropic if api == "messages" else fake_openai
    monkeypatch.setenv("ARENA_TEST_KEY", fake.api_key)
    fake.contexts[model] = 8_000
    fake.answer = agent(DAY)
    extra = {} if api == "messages" else {"api": api}
    merchant = agent_merchant(model, fake.base_url, context_tokens=8_000, max_steps=5, **extra)
    play(merchant, days=20)
    assert [c.status for c in fake.calls if c.status != 200] == []
    purposes = Counter(c.purpose for c in merchant.calls())
    assert purposes["step"] == 20 * 4 and purposes["compact"] >= 3
    assert all(s.answer.reasoning for s in merchant.transcript() if s.purpose == "step")


def test_an_agent_that_loops_is_stopped_by_its_steps(fake_openai: Any, monkeypatch: pytest.MonkeyPatch):
    """An agent that orders more than it can pay for, again and again, never ends its day: the
    day ends after max_steps steps, each refusal is recorded by the market too."""
    monkeypatch.setenv("ARENA_TEST_KEY", fake_openai.api_key)
    fake_openai.answer = agent([[("order", {"product": "tea", "quantity": 1000})]] * 50)
    merchant = agent_merchant("gpt-4.1-mini", fake_openai.base_url, max_steps=4)
    log = play(merchant, days=1).logs[0].build()
    (record,) = log.records(log.rows_of("a"))
    assert record.operations == [] and [r.code.value for r in record.rejections] == ["order_over_cash"] * 4
    assert len(merchant.calls()) == 4
    assert merchant.reported_metrics() == {  # the same refused call three times more: three loops
        "steps_per_day": 4.0,
        "tool_errors_per_day": 4.0,
        "loops": 3.0,
        "step_limit_days": 1.0,
        "compactions": 0.0,
    }


def test_an_answer_without_a_call_gets_a_reminder(fake_openai: Any, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ARENA_TEST_KEY", fake_openai.api_key)
    fake_openai.answer = agent([])  # text only, every step
    merchant = agent_merchant("gpt-4.1-mini", fake_openai.base_url, max_steps=3)
    play(merchant, days=1)
    assert len(merchant.calls()) == 3
    sent = fake_openai.calls[-1].body["messages"]
    assert [m["content"] for m in sent[-4:] if m["role"] == "user"] == [
        "Use a tool. Call end_day when you are done with today."
    ] * 2


@pytest.mark.slow
def test_the_embedded_model_takes_steps_with_the_tools():
    """SmolLM2 under a grammar a step: every step is one call of an offered tool, answered;
    the day's decision is what the market applies."""
    merchant = create(
        "llm", {"model": "local/smollm2", "mode": "agent", "max_steps": 2, "max_tokens": 60, "no_cache": True}
    )
    assert isinstance(merchant, LLMMerchant)
    market = play(merchant, days=1)
    calls = merchant.calls()
    assert 1 <= len(calls) <= 2 and all(c.purpose == "step" for c in calls)
    assert merchant.mode.agent is not None
    tools, conversation = merchant.mode.agent
    turns = [m for _, block in conversation.blocks for m in block]
    called = [call for m in turns for call in m.tool_calls]
    assert len(called) == len(calls)  # one call a step
    assert {c.name for c in called} <= {t.name for t in tools.tools}
    answered = [m for m in turns if m.role == "tool"]
    assert len(answered) == len(called)
    log = market.logs[0].build()
    assert log.records(log.rows_of("a"))[0].day == 1


def test_agent_mode_on_a_model_that_refuses_tools_on_chat_completions_is_refused_at_validation(
    monkeypatch: pytest.MonkeyPatch,
):
    """gpt-6-astra takes no function tools on Chat Completions: an agent of it must use the
    Responses API, and says so before any match; a decision-mode entry of it is fine."""
    from contestants.base import ContestantConfigError
    from contestants.kinds import validate_params

    monkeypatch.setenv("ARENA_TEST_KEY", KEY)
    params = {"model": "openai/gpt-6-astra", "api_key_env": "ARENA_TEST_KEY", "mode": "agent"}
    with pytest.raises(ContestantConfigError, match="use api: responses") as refused:
        LLMMerchant.preflight(validate_params("llm", params))
    assert refused.value.field == "api"
    LLMMerchant.preflight(validate_params("llm", {**params, "api": "responses"}))
    LLMMerchant.preflight(validate_params("llm", {**params, "mode": "decision"}))


def test_the_transcript_keeps_every_word_once(fake_anthropic: Any, monkeypatch: pytest.MonkeyPatch):
    """Each step keeps the turns new to its request, the answer and its tools' results: laid end
    to end they are the conversation the model was sent, each turn once (the provider's signed
    thinking left out, its text kept as reasoning)."""
    monkeypatch.setenv("ARENA_TEST_KEY", fake_anthropic.api_key)
    fake_anthropic.answer = agent(DAY)
    merchant = agent_merchant("claude-sonnet-5-5", fake_anthropic.base_url)
    play(merchant, days=2)
    steps = merchant.transcript()
    assert [(s.day, s.step, s.purpose) for s in steps] == [
        (d, k, "step") for d in (1, 2) for k in (1, 2, 3, 4)
    ]
    assert [m.role for m in steps[0].sent] == ["system", "user"] and steps[0].sent[1].content.startswith(
        "Day 1"
    )
    assert [m.content[:5] for m in steps[4].sent] == ["Day 2"]  # the morning, and nothing said before
    assert all(s.sent == () for s in steps if s.step > 1)
    assert [len(s.results) for s in steps[:4]] == [2, 1, 2, 1]
    assert json.loads(steps[3].results[0].content) == {"ended": 1}
    assert all(s.answer.reasoning and not s.answer.carried for s in steps)
    assert merchant.mode.agent is not None
    told = [m.model_copy(update={"carried": ()}) for m in merchant.mode.agent[1].messages()]
    kept = [m for s in steps for m in (*s.sent, s.answer, *s.results)]
    assert kept == told


def test_decision_mode_keeps_its_calls_words_too(fake_openai: Any, monkeypatch: pytest.MonkeyPatch):
    """A decision merchant with window memory: day 2's request repeats day 1's prompt and
    answer; its transcript keeps only the new report."""
    monkeypatch.setenv("ARENA_TEST_KEY", fake_openai.api_key)
    merchant = agent_merchant("gpt-4.1-mini", fake_openai.base_url, mode="decision", memory="window")
    play(merchant, days=2)
    first, second = merchant.transcript()
    assert (first.purpose, second.purpose, second.day, second.step) == ("decide", "decide", 2, 1)
    assert [m.role for m in first.sent] == ["system", "user"]
    assert [m.role for m in second.sent] == ["user"] and second.sent[0].content.startswith("Day 2")
    assert json.loads(first.answer.content)["operations"] is not None


def test_a_summary_longer_than_its_schema_allows_is_cut_to_its_most(
    fake_openai: Any, monkeypatch: pytest.MonkeyPatch
):
    """The summary's schema asks for at most MOST_SUMMARY_CHARS characters, which the window is
    shared out by; OpenAI's strict mode does not hold an answer to a maxLength, so a model may
    write more: the summary kept is its first MOST_SUMMARY_CHARS characters."""
    monkeypatch.setenv("ARENA_TEST_KEY", fake_openai.api_key)
    fake_openai.contexts["gpt-4.1-mini"] = 6_000
    scripted = agent(DAY)
    written = "".join(f"{k:04d} " for k in range(1_000))  # 5,000 characters

    def answer(call: Call, schema: Any) -> Any:
        if schema is not None and "summary" in schema.get("properties", {}):
            return {"summary": written}
        return scripted(call, schema)

    fake_openai.answer = answer
    merchant = agent_merchant(
        "gpt-4.1-mini", fake_openai.base_url, context_tokens=6_000, max_tokens=2_000, max_steps=5
    )
    play(merchant, days=8)
    assert Counter(c.purpose for c in merchant.calls())["compact"] >= 1
    assert merchant.mode.agent is not None and merchant.mode.agent[1].summary is not None
    assert f"\n{written[:MOST_SUMMARY_CHARS]}\n\nYour notes: " in merchant.mode.agent[1].summary.content


LONG_RUN_DAYS = 120


@pytest.mark.slow
def test_four_months_of_days_run_within_an_8000_token_window(
    fake_openai: Any, monkeypatch: pytest.MonkeyPatch
):
    """120 days of a scripted agent at a stand-in whose model has an 8,000-token window (it
    refuses any longer request with OpenAI's own 400): every request fits, so no day is lost;
    the conversation is compacted again and again (every ten days or so, from day 15 on: the
    longest request reaches its most by day 55 and the cycle repeats, as it does through a
    year), each time into the model's summary, its notes and the last turns; on every seventh
    day the agent loops on a refused order until its steps run out."""
    monkeypatch.setenv("ARENA_TEST_KEY", fake_openai.api_key)
    fake_openai.contexts["gpt-4.1-mini"] = 8_000
    scripted = agent(DAY)
    looping = agent([[("order", {"product": "tea", "quantity": 10_000})]] * 50)

    def answer(call: Call, schema: Any) -> Any:
        return (looping if day_of(call.body) % 7 == 0 else scripted)(call, schema)

    fake_openai.answer = answer
    merchant = agent_merchant("gpt-4.1-mini", fake_openai.base_url, context_tokens=8_000, max_steps=5)
    market = Market(SHOP, [["a", "b"]], days=LONG_RUN_DAYS)
    market.reset([5])
    merchant.reset(merchant="a", scenario=SHOP, seed=1)
    while market.playing.any():
        observation = market.observations(market.view(), [0])[0]
        market.advance(decisions={0: merchant.decide(observation), 1: None})
    assert market.day == LONG_RUN_DAYS + 1 and not market.closed[0]
    assert [c.status for c in fake_openai.calls if c.status != 200] == []
    purposes = Counter(c.purpose for c in merchant.calls())
    looped = LONG_RUN_DAYS // 7
    assert purposes["step"] == (LONG_RUN_DAYS - looped) * 4 + looped * 5
    assert purposes["compact"] >= 9
    reported = merchant.reported_metrics()
    assert reported["compactions"] == purposes["compact"] and reported["step_limit_days"] == looped
    assert reported["loops"] == looped * 4
    longest = max(c.input_tokens for c in merchant.calls())  # as the stand-in counted them
    assert 4_000 < longest <= 8_000 - 400  # the window is used, never overrun
    assert merchant.mode.agent is not None
    summary = merchant.mode.agent[1].summary
    assert (
        summary is not None and SUMMARY in summary.content and "order 25 a day" in summary.content
    )  # the notes
    log = market.logs[0].build()
    loop_day = log.records(log.rows_of("a"))[6]
    assert loop_day.day == 7 and [r.code.value for r in loop_day.rejections] == ["order_over_cash"] * 5


SHORT_DAY = [
    [
        ("read_books", {}),
        ("order", {"product": "tea", "quantity": 5}),
        ("set_price", {"product": "tea", "price": 4.5}),
    ],
    [("end_day", {})],
]


@pytest.mark.parametrize(
    "server, days",
    [("vllm", 100), ("openai", 50), ("llama.cpp", 50), ("anthropic", 50)],
)
def test_days_at_a_server_counting_two_characters_a_token_end_every_day_with_few_refusals(
    server: str, days: int, fake_openai: Any, fake_anthropic: Any, monkeypatch: pytest.MonkeyPatch
):
    """The stand-in counts a prompt at 2 characters a token where arena assumes 3, under an
    8,000-token window, and refuses in `server`'s words (vLLM's give only a lower bound of its
    count, OpenAI's and Anthropic's the count, llama.cpp's counts the prompt alone). Its first
    refusals teach arena how it counts: every day ends with end_day and the day's operations,
    no refused request is sent again, a handful are refused in all, each kept in the
    transcript, and none counts toward the contestant's failures in a row (which would stop it
    at the first)."""
    fake = fake_anthropic if server == "anthropic" else fake_openai
    model = "claude-haiku-4-5" if server == "anthropic" else "gpt-4.1-mini"
    monkeypatch.setenv("ARENA_TEST_KEY", fake.api_key)
    fake.contexts[model], fake.chars_per_token = 8_000, 2
    if fake is fake_openai:
        fake_openai.refuses_as = server
    fake.answer = agent(SHORT_DAY)
    coordinator = LocalCallCoordinator(CallCoordinatorCore(stop_after=1))
    merchant = agent_merchant(
        model,
        fake.base_url,
        options=RunOptions(call_coordinator=coordinator, contestant="dense"),
        context_tokens=8_000,
        max_steps=5,
    )
    log = play(merchant, days=days).logs[0].build()
    records = log.records(log.rows_of("a"))
    assert [[op["op"] for op in d.operations] for d in records] == [["order", "set_price"]] * days
    assert merchant.reported_metrics()["step_limit_days"] == 0  # every day ended by end_day
    refused = [c for c in fake.calls if c.status == 400]
    kept = [s for s in merchant.transcript() if s.refused is not None]
    assert 1 <= len(refused) == len(kept) <= 3 and coordinator.status().stopped is None
    bodies = [json.dumps(c.body, sort_keys=True) for c in fake.calls]
    assert all(bodies.count(json.dumps(c.body, sort_keys=True)) == 1 for c in refused)  # never again
    assert Counter(c.purpose for c in merchant.calls())["step"] == days * 2


def test_an_agent_answers_a_recall_question_at_the_end_of_its_conversation(
    fake_anthropic: Any, monkeypatch: pytest.MonkeyPatch
):
    """Asked what its cash was at the end of day 1, the agent is sent its conversation and the
    question, with one tool to answer; the question stays out of its conversation, and the
    call is kept in the transcript, on the day it is asked."""
    monkeypatch.setenv("ARENA_TEST_KEY", fake_anthropic.api_key)
    fake_anthropic.answer = agent(DAY)
    merchant = agent_merchant("claude-sonnet-5-5", fake_anthropic.base_url)
    play(merchant, days=2)
    assert merchant.mode.agent is not None
    before = merchant.mode.agent[1].messages()
    assert merchant.recall(RecallQuestion(day=1, fact="cash")) == RECALLED
    sent = fake_anthropic.calls[-1].body
    assert offered(sent) == {"answer"} and "end of day 1" in json.dumps(sent["messages"][-1])
    assert merchant.mode.agent[1].messages() == before
    recall = merchant.transcript()[-1]
    assert (recall.purpose, recall.day, recall.step) == ("recall", 3, 1)  # asked on the morning of day 3
    assert "cash at the end of day 1" in recall.sent[-1].content
    assert merchant.calls()[-1].prompt_version == "agent-v1+recall-tool-v1"


def test_a_stated_plan_goes_with_the_days_decision():
    market, observation = morning()
    tools, day = AgentTools(SHOP, talk=False, plan=True), Workday(observation)
    assert "state_plan" in [t.name for t in tools.tools]
    assert run(tools, day, "state_plan", product="tea", price=4.5) == {"planned": {"tea": 4.5}}
    assert "error" in run(tools, day, "state_plan", product="coffee", price=4.5)
    market.advance(decisions={0: day.decision()})
    assert market.logs[0].build()[0].plan == {"tea": 4.5}


def test_the_books_show_the_goals_and_where_the_merchant_stands():
    """retail_quarter's four goals as written, and the revenue customers kept (revenue less
    refunds, added up from the days' records), the units sold and the net worth at the end of
    yesterday, from the day records the merchant was shown."""
    retail = load_scenario("retail_quarter")
    market = Market(retail, [["a", "b"]])
    market.reset([2])
    tools = AgentTools(retail, talk=False)
    for _ in range(3):
        observation = market.observations(market.view(), [0])[0]
        tools.begin_day(observation)
        market.advance(decisions={0: None, 1: None})
    observation = market.observations(market.view(), [0])[0]
    tools.begin_day(observation)
    goals = run(tools, Workday(observation), "read_books")["goals"]
    log = market.logs[0].build()
    days = log.records(log.rows_of("a"))
    assert goals["goals"] == [g.label() for g in retail.goals] and len(goals["goals"]) == 4
    assert goals["so_far"]["days"] == 3
    assert goals["so_far"]["revenue"] == pytest.approx(sum(d.revenue - d.refunds for d in days), abs=0.01)
    assert goals["so_far"]["units_sold"] == pytest.approx(
        sum(sum(d.units_sold.values()) for d in days), abs=0.01
    )
    assert goals["so_far"]["net_worth"] == pytest.approx(days[-1].net_worth, abs=0.01)
