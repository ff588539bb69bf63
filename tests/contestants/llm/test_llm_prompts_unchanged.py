"""What the language-model merchant sends with its options off, byte for byte as it was sent
before the pricing-game options (preset, plans memory, history table) existed.

`prompts_unchanged.json` was written by `conversations()` below at commit 256045a, the code
before those options: every request of three days played through the market under each
configuration (system prompt, each day's messages, the schema, the templates' versions) and the
schema `decision_schema` gives. A template reworded, a line of the report moved, a field added
to the schema: each changes a stored byte and fails here. A new wording belongs in a new
template with a new version, behind an option. A change meant for every merchant (a new field
of market.types.Decision, say) writes the file again in the commit that makes it, saying so:

    python -c "
import json, sys
sys.path[:0] = ['tests', 'tests/contestants/llm']
import test_llm_prompts_unchanged as t
text = json.dumps(t.conversations(), indent=1, sort_keys=True, ensure_ascii=False)
open(t.STORED, 'w').write(text + '\\n')"
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from contestants.base import RecallQuestion
from contestants.calls.types import Answer, CompletionRequest, TokenUsage
from contestants.kinds import create
from contestants.llm.decision_mode import decision_schema
from contestants.llm.providers import Provider, register_provider
from market.env import MarketEnv
from market.scenario import load_scenario

STORED = Path(__file__).with_name("prompts_unchanged.json")

SCENARIOS = ("price_war", "multi_product", "seasonal", "calvano")
CONFIGS: dict[str, dict[str, Any]] = {
    "default": {},
    "stateless_think_plan": {"memory": "stateless", "think": True, "plan": True},
    "notes_reflect": {"memory": "notes", "reflect": True},
    "window2_all": {"memory": "window", "window": 2, "think": True, "plan": True, "reflect": True},
}
DAYS = 3


class Answering(Provider):
    """Answers each request by its kind and records it: a decision that sets a price, orders
    more than the cash pays for (so the next report shows a rejection) and fills whatever
    else the schema asks for; a reflection; a recalled number."""

    name = "answering"
    requests: ClassVar[list[CompletionRequest]] = []

    def _attempt(self, request: CompletionRequest, timeout: float) -> Answer:
        Answering.requests.append(request)
        properties = request.json_schema["properties"]
        if request.schema_name == "reflection":
            answer: dict[str, Any] = {"reflection": "the price held; order less"}
        elif request.schema_name == "recall":
            answer = {"value": 1234.5}
        else:
            product = request.json_schema["$defs"]["SetPrice"]["properties"]["product"]["enum"][
                0
            ]  # the catalog's first
            answer = {
                **({"reasoning": "rivals match me; hold"} if "reasoning" in properties else {}),
                "operations": [
                    {"op": "set_price", "product": product, "price": 1.61},
                    {"op": "order", "product": product, "quantity": 10**7},
                ],
                "note": "held at 1.61",
                **({"plan": [{"product": product, "price": 1.6}]} if "plan" in properties else {}),
            }
        return Answer(
            text=json.dumps(answer),
            usage=TokenUsage(input_tokens=10, output_tokens=5),
            temperature=request.temperature,
            seed=request.seed,
        )


register_provider("answering", f"{__name__}:Answering")


def conversation(scenario_name: str, params: dict[str, Any]) -> dict[str, Any]:
    """Every request m0 makes over DAYS days and one recall, against two rivals doing nothing."""
    Answering.requests.clear()
    scenario = load_scenario(scenario_name)
    if scenario.events:  # brought forward into the days played, so that the reports announce them
        scenario = scenario.model_copy(
            update={"events": [e.model_copy(update={"start_day": 2, "end_day": 4}) for e in scenario.events]}
        )
    merchant = create("llm", {"model": "answering/test", "no_cache": True, **params})
    merchant.reset(merchant="m0", scenario=scenario, seed=0)
    env = MarketEnv(scenario, ["m0", "m1", "m2"])
    observations, _ = env.reset(seed=3)
    for _ in range(DAYS):
        observations, *_ = env.step({"m0": merchant.decide(observations["m0"]), "m1": None, "m2": None})
    merchant.recall(RecallQuestion(day=2, fact="price", product=scenario.product_ids[0]))
    requests = list(Answering.requests)
    systems = {r.messages[0].content for r in requests}
    schemas = {json.dumps(r.json_schema, sort_keys=True) for r in requests if r.schema_name == "decision"}
    assert len(systems) == 1 and len(schemas) == 1  # the same all match
    return {
        "system": systems.pop(),
        "decision_schema": json.loads(schemas.pop()),
        "requests": [
            {
                "schema_name": r.schema_name,
                "messages": [[m.role, m.content] for m in r.messages[1:]],
                "max_tokens": r.max_tokens,
            }
            for r in requests
        ],
        "prompt_versions": [[c.purpose, c.prompt_version] for c in merchant.calls()],
    }


def conversations() -> dict[str, Any]:
    return {
        "schemas": {
            f"think={think},plan={plan}": decision_schema(think=think, plan=plan)
            for think in (False, True)
            for plan in (False, True)
        },
        "conversations": {
            f"{s}/{c}": conversation(s, params) for s in SCENARIOS for c, params in CONFIGS.items()
        },
    }


def test_with_the_new_options_off_every_prompt_and_schema_is_as_it_was():
    stored = json.loads(STORED.read_text(encoding="utf-8"))
    now = json.loads(json.dumps(conversations()))  # through JSON, as stored
    assert now["schemas"] == stored["schemas"]
    assert now["conversations"].keys() == stored["conversations"].keys()
    for key, conversation in stored["conversations"].items():
        assert now["conversations"][key] == conversation, key
