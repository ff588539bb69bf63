"""The language-model merchant's own logic, against a scripted provider: what it asks, what it
remembers, how it repairs a bad answer, what it logs. (The providers are tested on their own.)"""

from __future__ import annotations

import json
from collections import deque
from typing import ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contestants.base import ContestantConfigError, OffPathQuestion, RecallQuestion, RunOptions
from contestants.calls.types import Answer, CompletionRequest, TokenUsage
from contestants.kinds import create, validate_params
from contestants.llm.memory import Memory
from contestants.llm.merchant import LLMMerchant
from contestants.llm.providers import Provider, register_provider
from market.env import MarketEnv
from market.scenario import load_scenario
from market.types import Decision


class Scripted(Provider):
    """Answers from a queue of texts and remembers every request; sends its temperature and
    seed (what the record keeps is what a provider says it sent)."""

    name = "scripted"
    script: ClassVar[deque[str]] = deque()
    requests: ClassVar[list[CompletionRequest]] = []

    def _attempt(self, request: CompletionRequest, timeout: float) -> Answer:
        Scripted.requests.append(request)
        usage = TokenUsage(input_tokens=100, output_tokens=10)
        return Answer(
            text=Scripted.script.popleft(), usage=usage, temperature=request.temperature, seed=request.seed
        )


register_provider("scripted", f"{__name__}:Scripted")

GOOD = json.dumps(
    {"operations": [{"op": "set_price", "product": "widget", "price": 17.5}], "note": "hold 17.5"}
)


@pytest.fixture
def scenario():
    return load_scenario("price_war")


@pytest.fixture(autouse=True)
def fresh_script():
    Scripted.script.clear()
    Scripted.requests.clear()


def merchant(scenario, **params) -> LLMMerchant:
    m = create("llm", {"model": "scripted/test", "no_cache": True, **params})
    m.reset(merchant="m0", scenario=scenario, seed=0)
    return m


def days(scenario, m: LLMMerchant, answers: list[str]):
    """Play as many days as there are answers; return the day records of m0."""
    Scripted.script.extend(answers)
    env = MarketEnv(scenario, ["m0", "m1"])
    observations, _ = env.reset(seed=3)
    records = []
    while Scripted.script:
        observations, _, _, _, infos = env.step({"m0": m.decide(observations["m0"]), "m1": None})
        records.append(infos["m0"]["record"])
    return records


def test_a_valid_answer_becomes_the_days_decision(scenario):
    m = merchant(scenario)
    [record] = days(scenario, m, [GOOD])
    assert record.prices["widget"] == 17.5 and not record.rejections
    [request] = Scripted.requests
    assert request.json_schema["properties"].keys() == Decision.model_json_schema()["properties"].keys() - {
        "plan",
        "message",
    }
    assert request.json_schema["required"] == ["operations", "note"]
    assert request.messages[0].role == "system" and "widget" in request.messages[0].content
    assert "Day 1 of 30" in request.messages[-1].content
    [call] = m.calls()
    assert (call.purpose, call.day, call.input_tokens, call.output_tokens) == ("decide", 1, 100, 10)


def test_a_bad_answer_gets_one_repair_then_goes_to_the_market_as_garbage(scenario):
    m = merchant(scenario)
    repaired, broken = days(scenario, m, ["not json", GOOD, "still not", '{"operations": 5}'])
    assert repaired.prices["widget"] == 17.5
    assert [c.purpose for c in m.calls()] == ["decide", "repair", "decide", "repair"]
    assert "not a valid decision" in Scripted.requests[1].messages[-1].content
    assert Scripted.requests[1].messages[-2].content == "not json"  # the model sees what it said
    assert [r.index for r in broken.rejections] == [-1]  # the whole decision, recorded as malformed


def test_window_memory_keeps_the_last_k_days(scenario):
    m = merchant(scenario, memory="window", window=2)
    days(scenario, m, [GOOD] * 4)
    last = Scripted.requests[-1].messages
    assert [msg.role for msg in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "Day 2 of 30" in last[1].content and "Day 4 of 30" in last[-1].content


@given(remembered=st.integers(0, 8), days=st.one_of(st.none(), st.integers(0, 12)))
def test_window_memory_shows_the_last_days_asked_for_or_all_it_keeps(remembered, days):
    """`days` of the days window memory keeps are the last ones, all of them where it keeps
    fewer (None: all)."""
    memory = Memory("window", window=8)
    for day in range(1, remembered + 1):
        memory.remember(day, f"report {day}", f"answer {day}", None)
    messages = memory.messages("rules", "today", days)
    shown = remembered if days is None else min(days, remembered)
    assert [m.content for m in messages[1:-1]] == [
        text
        for day in range(remembered - shown + 1, remembered + 1)
        for text in (f"report {day}", f"answer {day}")
    ]
    assert (messages[0].content, messages[-1].content) == ("rules", "today")


def test_stateless_memory_shows_only_today(scenario):
    m = merchant(scenario, memory="stateless")
    days(scenario, m, [GOOD] * 3)
    assert [msg.role for msg in Scripted.requests[-1].messages] == ["system", "user"]


def test_notes_memory_carries_the_models_own_notes(scenario):
    m = merchant(scenario, memory="notes")
    days(scenario, m, [GOOD] * 3)
    system, today = Scripted.requests[-1].messages
    assert (system.role, today.role) == ("system", "user")
    assert "day 1: hold 17.5" in today.content and "day 2: hold 17.5" in today.content
    assert today.content.index("day 2: hold") < today.content.index("Day 3 of 30")
    # the system message stays the same all match, so a provider can keep it evaluated
    assert system == Scripted.requests[0].messages[0]


def test_recall_asks_with_its_own_schema_and_reads_a_number(scenario):
    m = merchant(scenario)
    days(scenario, m, [GOOD] * 2)
    Scripted.script.extend(['{"value": 1234.5}', '{"value": null}', '{"value": "lots"}'])
    question = RecallQuestion(day=1, fact="cash")
    assert m.recall(question) == 1234.5
    assert m.recall(question) is None and m.recall(question) is None
    assert "cash at the end of day 1" in Scripted.requests[-1].messages[-1].content
    assert Scripted.requests[-1].schema_name == "recall"
    assert [c.purpose for c in m.calls()][-3:] == ["recall"] * 3


def test_an_off_path_question_asks_what_it_would_charge_and_leaves_its_memory_alone(scenario):
    m = merchant(scenario, memory="notes")
    days(scenario, m, [GOOD] * 2)
    assert m.mode.system is not None
    before = m.mode.memory.messages(m.mode.system, "today")  # what it would be sent next, its notes in it
    Scripted.script.extend(['{"value": 16.25}', '{"value": "cheap"}'])
    question = OffPathQuestion(rival="m1", product="widget", price=12.5, posted=18.25)
    assert m.off_path(question) == 16.25 and m.off_path(question) is None
    asked = Scripted.requests[-1].messages[-1].content
    assert "Today is day 3. Suppose m1 had posted 12.5 for widget yesterday (it posted 18.25)." in asked
    assert "What price would you post for widget today?" in asked
    assert Scripted.requests[-1].schema_name == "off_path"
    assert [c.purpose for c in m.calls()][-2:] == ["off_path"] * 2
    assert [c.prompt_version for c in m.calls()][-1].endswith("+off-path-v1")
    assert (
        m.mode.memory.messages(m.mode.system, "today") == before
    )  # neither the question nor its answer is remembered


def test_unknown_params_and_missing_keys_are_configuration_errors(monkeypatch):
    with pytest.raises(ContestantConfigError):
        validate_params("llm", {"model": "scripted/x", "temprature": 0.5})
    monkeypatch.delenv("ARENA_TEST_KEY", raising=False)
    params = validate_params("llm", {"model": "openai/gpt-4o-mini", "api_key_env": "ARENA_TEST_KEY"})
    with pytest.raises(ContestantConfigError, match="ARENA_TEST_KEY"):
        LLMMerchant.preflight(params)


def test_every_call_records_its_prompt_version_temperature_and_seed(scenario):
    m = merchant(scenario, temperature=0.3)
    days(scenario, m, [GOOD, GOOD])
    Scripted.script.append('{"value": 1}')
    m.recall(RecallQuestion(day=1, fact="cash"))
    assert [(c.purpose, c.prompt_version) for c in m.calls()] == [
        ("decide", "merchant-v2"),
        ("decide", "merchant-v2"),
        ("recall", "merchant-v2+recall-v1"),
    ]
    assert {(c.temperature, c.seed) for c in m.calls()} == {(0.3, Scripted.requests[0].seed)}
    assert Scripted.requests[0].seed is not None and Scripted.requests[0].temperature == 0.3


def test_a_repair_records_the_repair_template_too(scenario):
    m = merchant(scenario)
    days(scenario, m, ["not json", GOOD])
    assert [c.prompt_version for c in m.calls()] == ["merchant-v2", "merchant-v2+repair-v1"]


def test_think_asks_for_reasoning_before_the_operations(scenario):
    m = merchant(scenario, think=True)
    thought = json.dumps({"reasoning": "rivals sit at 18; undercut a little", **json.loads(GOOD)})
    [record] = days(scenario, m, [thought])
    assert record.prices["widget"] == 17.5 and not record.rejections  # the reasoning is set aside
    [request] = Scripted.requests
    assert list(request.json_schema["properties"])[0] == "reasoning"
    assert request.json_schema["required"][0] == "reasoning"
    assert '"reasoning"' in request.messages[0].content  # the system prompt asks for it
    assert m.calls()[0].prompt_version == "merchant-v2+think-v1"


def test_without_think_or_plan_there_is_no_reasoning_or_plan_field(scenario):
    m = merchant(scenario)
    days(scenario, m, [GOOD])
    [request] = Scripted.requests
    assert {"reasoning", "plan"}.isdisjoint(request.json_schema["properties"])
    assert "PlannedPrice" not in request.json_schema["$defs"]  # nothing the model is not asked to fill
    assert '"reasoning"' not in request.messages[0].content and '"plan"' not in request.messages[0].content


def test_plan_asks_for_the_prices_it_intends_to_hold_and_the_day_records_them(scenario):
    m = merchant(scenario, plan=True, think=True)
    planned = json.dumps(
        {"reasoning": "hold", **json.loads(GOOD), "plan": [{"product": "widget", "price": 18}]}
    )
    first, second = days(scenario, m, [planned, GOOD])
    assert first.plan == {"widget": 18} and second.plan == {}  # GOOD states no plan
    request = Scripted.requests[0]
    assert request.json_schema["required"] == ["reasoning", "operations", "note", "plan"]
    assert request.json_schema["$defs"]["PlannedPrice"]["required"] == ["product", "price"]
    assert '"plan"' in request.messages[0].content  # the system prompt asks for it
    assert m.calls()[0].prompt_version == "merchant-v2+think-v1+plan-v1"


def test_reflect_looks_back_at_yesterday_and_carries_the_reflection_into_the_decision(scenario):
    m = merchant(scenario, reflect=True, memory="stateless")
    reflection = json.dumps({"reflection": "17.5 sold well; keep it"})
    days(scenario, m, [GOOD, reflection, GOOD, "{}", GOOD])
    assert [(c.purpose, c.day) for c in m.calls()] == [
        ("decide", 1),
        ("reflect", 2),
        ("decide", 2),
        ("reflect", 3),
        ("decide", 3),
    ]
    ask, decide = Scripted.requests[1], Scripted.requests[2]
    assert ask.schema_name == "reflection" and ask.json_schema["required"] == ["reflection"]
    assert "Yesterday (day 1) you decided" in ask.messages[-1].content
    assert '"price": 17.5' in ask.messages[-1].content  # yesterday's decision
    assert "Day 2 of 30" in ask.messages[-1].content  # and today's report, its outcome
    assert "Your reflection on yesterday's decision: 17.5 sold well; keep it" in decide.messages[-1].content
    assert "Day 2 of 30" in decide.messages[-1].content
    # an answer without a reflection leaves the decision prompt as it would be without one
    assert "reflection" not in Scripted.requests[4].messages[-1].content
    assert [c.prompt_version for c in m.calls()] == [
        "merchant-v2",
        "merchant-v2+reflect-v1",
        "merchant-v2+reflection-v1",
        "merchant-v2+reflect-v1",
        "merchant-v2",
    ]


def test_reflect_skips_a_day_that_had_no_decision(scenario):
    m = merchant(scenario, reflect=True)
    days(scenario, m, [GOOD])
    env = MarketEnv(scenario, ["m0", "m1"])
    observations, _ = env.reset(seed=3)
    for _ in range(2):  # days 1 and 2 pass without m0 deciding
        observations, *_ = env.step({"m0": None, "m1": None})
    Scripted.script.append(GOOD)
    m.decide(observations["m0"])  # day 3: the last decision was for day 1, nothing to reflect on
    assert [c.purpose for c in m.calls()] == ["decide", "decide"]


def test_the_no_cache_run_option_neither_reads_nor_writes_the_cache(scenario, tmp_path):
    observation = MarketEnv(scenario, ["m0", "m1"]).reset(seed=3)[0]["m0"]

    def first_call(options=None):
        m = create("llm", {"model": "scripted/test", "cache_dir": str(tmp_path)}, options)
        m.reset(merchant="m0", scenario=scenario, seed=0)
        Scripted.script.append(GOOD)
        m.decide(observation)
        return m.calls()[0]

    assert not first_call(RunOptions(no_cache=True)).cached
    assert not list(tmp_path.rglob("*.json"))  # nothing written
    assert not first_call().cached  # fills the cache
    assert first_call().cached  # replays it
    assert not first_call(RunOptions(no_cache=True)).cached  # asks again
    assert len(Scripted.requests) == 3


def test_the_schema_names_only_the_catalogs_products_and_whole_units_where_the_market_wants_them(
    scenario, two_products
):
    m = merchant(scenario, plan=True)
    days(scenario, m, [GOOD])
    defs = Scripted.requests[0].json_schema["$defs"]
    assert defs["SetPrice"]["properties"]["product"]["enum"] == ["widget"]
    assert defs["PlannedPrice"]["properties"]["product"]["enum"] == ["widget"]
    assert defs["Order"]["properties"]["quantity"]["type"] == (
        "integer" if scenario.whole_units else "number"
    )
    expected = two_products.model_copy(
        update={"demand": two_products.demand.model_copy(update={"mode": "expected"})}
    )
    for market, quantity in ((two_products, "integer"), (expected, "number")):
        assert market.whole_units == (quantity == "integer")
        m = merchant(market)
        days(market, m, [GOOD])
        defs = Scripted.requests[-1].json_schema["$defs"]
        assert defs["Order"]["properties"]["product"]["enum"] == ["a", "b"]
        assert defs["Order"]["properties"]["quantity"]["type"] == quantity


def test_the_schema_offers_the_listed_suppliers_and_no_supplier_where_none_is_listed(scenario):
    product = scenario.products[0]
    m = merchant(scenario)
    days(scenario, m, [GOOD])
    assert "supplier" not in Scripted.requests[-1].json_schema["$defs"]["Order"]["properties"]
    listed = type(scenario).model_validate(
        {
            **scenario.model_dump(),
            "products": [{**product.model_dump(), "suppliers": [{"name": "farm", "unit_cost": 1.0}]}],
        }
    )
    m = merchant(listed)
    days(listed, m, [GOOD])
    order = Scripted.requests[-1].json_schema["$defs"]["Order"]
    assert order["properties"]["supplier"]["anyOf"] == [
        {"type": "string", "enum": ["farm"]},
        {"type": "null"},
    ]
    assert "supplier" in order["required"]
    assert (
        'also from supplier farm (order with "supplier": "farm")' in Scripted.requests[-1].messages[0].content
    )


def test_the_schema_offers_promote_only_where_the_market_runs_promotions(scenario):
    for promotions, offered in ((None, False), ({"max_discount": 0.3}, True)):
        market = type(scenario).model_validate({**scenario.model_dump(), "promotions": promotions})
        days(market, merchant(market), [GOOD])
        schema = Scripted.requests[-1].json_schema
        branches = [b["$ref"] for b in schema["properties"]["operations"]["items"]["oneOf"]]
        assert ("#/$defs/Promote" in branches) == offered == ("Promote" in schema["$defs"])
        assert (
            "promote" in schema["properties"]["operations"]["items"]["discriminator"]["mapping"]
        ) == offered


def test_the_rules_give_the_merchant_its_own_seats_unit_cost(scenario):
    """In a scenario with seats the supplier charges each seat its own price; the rules the
    model reads say what its seat pays (the product's own cost is another seat's)."""
    product = scenario.products[0]
    seated = type(scenario).model_validate(
        {**scenario.model_dump(), "seats": [{}, {"unit_cost": {product.id: 7.25}}]}
    )
    for name, cost in (("m0", product.unit_cost), ("m1", 7.25)):
        Scripted.script.clear()
        Scripted.requests.clear()
        m = create("llm", {"model": "scripted/test", "no_cache": True})
        m.reset(merchant=name, scenario=seated, seed=0)
        observations, _ = MarketEnv(seated, ["m0", "m1"]).reset(seed=3)
        Scripted.script.append(GOOD)
        m.decide(observations[name])
        rules = Scripted.requests[0].messages[0].content
        assert f"- {product.id}: unit cost {cost:g}," in rules
