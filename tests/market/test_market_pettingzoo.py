"""MarketEnv against PettingZoo's own conformance tests, on every shipped scenario."""

from __future__ import annotations

import ast
import copy
import json
import pickle
import warnings
from collections import Counter

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

from market import daylog as daylog_module
from market import env as env_module
from market import observations as observations_module
from market.env import LazyDict, MarketEnv
from market.observations import ObservationMaker
from market.scenario import load_scenario
from market.types import DayRecord, Decision, Observation, SetPrice


@pytest.mark.parametrize("numeric", [False, True], ids=["models", "numeric"])
def test_parallel_api(scenario, numeric):
    env = MarketEnv(scenario, 3, days=min(scenario.days, 12), numeric=numeric)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parallel_api_test(env, num_cycles=env.days + 2)
    complaints = [str(w.message) for w in caught if "pettingzoo" in w.filename.replace("\\", "/")]
    assert not complaints, complaints


@pytest.mark.parametrize("numeric", [False, True], ids=["models", "numeric"])
def test_parallel_seed(scenario, numeric):
    parallel_seed_test(
        lambda: MarketEnv(scenario, 3, days=min(scenario.days, 12), numeric=numeric), num_cycles=12
    )


def test_seeded_runs_agree_day_after_day(scenario):
    """parallel_seed_test stops after the first step (it tests `any(dict)`), so play whole
    matches with sampled actions and compare everything."""

    def play():
        env = MarketEnv(scenario, 3)
        env.reset(seed=42)
        for i, agent in enumerate(env.possible_agents):
            env.action_space(agent).seed(7 + i)
        steps = []
        while env.agents:
            steps.append(env.step({a: env.action_space(a).sample() for a in env.agents}))
        return steps

    assert repr(play()) == repr(play())


def test_numeric_observations_lie_in_the_observation_space(scenario):
    env = MarketEnv(scenario, 4, numeric=True)
    observations, infos = env.reset(seed=3)
    for i, agent in enumerate(env.possible_agents):
        env.action_space(agent).seed(i)
    days = 0
    while env.agents and days < 25:
        for agent, obs in observations.items():
            space = env.observation_space(agent)
            assert space.contains(obs), {k: (v, space[k]) for k, v in obs.items() if not space[k].contains(v)}
        observations, rewards, terminations, truncations, infos = env.step(
            {a: env.action_space(a).sample() for a in env.agents}
        )
        days += 1
    for obs in observations.values():
        assert env.observation_space("m0").contains(obs)


def test_observations_and_infos_have_the_documented_types(scenario):
    env = MarketEnv(scenario, 2)
    observations, infos = env.reset(seed=0)
    assert all(
        isinstance(o, Observation) and o.day == 1 and o.yesterday is None for o in observations.values()
    )
    assert infos == {"m0": {}, "m1": {}}
    observations, rewards, terminations, truncations, infos = env.step({})
    for agent in ("m0", "m1"):
        assert isinstance(infos[agent]["record"], DayRecord)
        assert observations[agent].yesterday == infos[agent]["record"]
        assert observations[agent].day == 2 or env.days == 1
        assert isinstance(rewards[agent], float) and np.isfinite(rewards[agent])


def test_numeric_observations_hide_what_the_scenario_hides(scenario):
    """Rivals' prices a scenario hides read 0 in the arrays (and None in the models); a
    merchant always sees its own."""
    hidden = scenario.model_copy(
        update={"visibility": scenario.visibility.model_copy(update={"rival_prices": False})}
    )
    env = MarketEnv(hidden, 3, numeric=True)
    observations, _ = env.reset(seed=2)
    own = [pr.start_price for pr in hidden.products]
    for i, agent in enumerate(env.possible_agents):
        prices = observations[agent]["prices"]
        assert np.allclose(prices[i], own) and not np.delete(prices, i, axis=0).any()
        assert env.observation_space(agent).contains(observations[agent])
    models = MarketEnv(hidden, 3).reset(seed=2)[0]
    assert all(m.prices is None for m in models["m0"].market)


def test_numeric_observations_carry_the_retail_parts_the_scenario_runs():
    """On retail_quarter, where every part is on, the arrays hold what the observation models
    of the same play say of the competitor's price, the stock that spoils, the discount in
    force and the satisfaction index, day after day of promoting juice; price_war has none
    of these keys."""
    scenario = load_scenario("retail_quarter")
    numeric, models = MarketEnv(scenario, 2, numeric=True), MarketEnv(scenario, 2)
    arrays, seen = numeric.reset(seed=4)[0], models.reset(seed=4)[0]
    ids = scenario.product_ids
    discounted = 0
    for _ in range(12):
        for agent in numeric.agents:
            got, model = arrays[agent], seen[agent]
            (shop,) = model.competitors
            assert got["competitor_prices"][0].tolist() == pytest.approx([shop.prices[pid] for pid in ids])
            for j, state in enumerate(model.products):
                width = len(state.spoiling or [])
                assert got["spoiling"][j, :width].tolist() == pytest.approx(state.spoiling or [])
                assert not got["spoiling"][j, width:].any()
                assert got["discount"][j] == pytest.approx(state.discount or 0.0)
                discounted += bool(state.discount)
            assert got["satisfaction"][0] == pytest.approx(model.satisfaction)
        promote = {"op": "promote", "product": "juice", "discount": 0.2, "days": 3}
        ops = {a: [promote] for a in numeric.agents}
        arrays, seen = numeric.step(ops)[0], models.step(ops)[0]
    assert discounted > 0
    plain = MarketEnv(load_scenario("price_war"), 2, numeric=True).reset(seed=0)[0]["m0"]
    assert not {"competitor_prices", "spoiling", "discount", "satisfaction"} & set(plain)


# --- observations made when read ---------------------------------------------------------------


def _decisions(env: MarketEnv, day: int) -> dict:
    """Prices that differ by merchant and day, a message from every other merchant, and an
    answer that is no decision at all from the last one (a rejection in its record)."""
    product = env.scenario.product_ids[0]
    answers: dict = {}
    for i, agent in enumerate(env.agents):
        answers[agent] = Decision(
            operations=[SetPrice(product=product, price=12.0 + i + day / 10)],
            message=f"{agent} on day {day}" if i % 2 else None,
        )
    answers[env.agents[-1]] = "not json"
    return answers


@pytest.mark.parametrize("numeric", [False, True], ids=["models", "numeric"])
def test_observations_are_made_only_for_the_merchants_that_read_them(monkeypatch, numeric):
    """One market read in full right after every step, the same market read for two merchants
    alone: one on even days right away, and a day late (after the next step) on odd days; the
    other always a day late, the last time after a reset. They come out the same, and nothing
    is made for the merchants nobody read, counting every Observation (or numeric
    observation) and every DayRecord made."""
    scenario, days = load_scenario("price_war"), 7
    eager, lazy = (MarketEnv(scenario, 6, days=days, numeric=numeric, talk=True) for _ in range(2))
    at_once = [dict(eager.reset(seed=5)[0])]
    records = [{}]
    for day in range(1, days + 1):
        observations, _, _, _, infos = eager.step(_decisions(eager, day))
        at_once.append(dict(observations))
        records.append({agent: info["record"] for agent, info in infos.items()})

    made: Counter = Counter()
    records_made: Counter = Counter()
    if numeric:
        numbers = env_module._numbers
        monkeypatch.setattr(
            env_module,
            "_numbers",
            lambda view, prices, i: made.update([lazy.possible_agents[i]]) or numbers(view, prices, i),
        )
    else:
        observation = observations_module.Observation
        monkeypatch.setattr(
            observations_module,
            "Observation",
            lambda *fields: made.update([fields[0]]) or observation(*fields),
        )
    record = daylog_module.DayRecord
    monkeypatch.setattr(
        daylog_module, "DayRecord", lambda *fields: records_made.update([fields[0]]) or record(*fields)
    )

    same = (
        (lambda a, b: a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a))
        if numeric
        else (lambda a, b: a == b)
    )
    observations, _ = lazy.reset(seed=5)
    assert isinstance(observations, dict) and list(observations) == lazy.possible_agents
    assert same(observations["m1"], at_once[0]["m1"])
    late, late_infos = observations, None

    def read_late(day: int) -> None:  # what was left unread on `day`
        assert same(late["m4"], at_once[day]["m4"])
        if day % 2:
            assert same(late["m1"], at_once[day]["m1"]) and late_infos["m1"]["record"] == records[day]["m1"]

    for day in range(1, days + 1):
        observations, _, _, _, infos = lazy.step(_decisions(lazy, day))
        assert list(observations) == list(infos) == list(at_once[day])
        read_late(day - 1)  # after the market moved on
        if day % 2 == 0:
            assert (
                same(observations["m1"], at_once[day]["m1"]) and infos["m1"]["record"] == records[day]["m1"]
            )
        late, late_infos = observations, infos
    lazy.reset(seed=6)
    read_late(days)
    assert made == {"m1": days + 1, "m4": days + 1}
    assert records_made == (
        {"m1": days} if numeric else {"m1": days, "m4": days}
    )  # a model's observation holds its yesterday


def test_the_observations_read_as_a_plain_dict():
    """Every way of reading a mapping makes the values, each once, and gives what a plain
    dict of them would."""
    made: list[str] = []

    def fresh() -> LazyDict:
        return LazyDict.made_on_read(["a", "b"], lambda agent: made.append(agent) or agent.upper())

    plain = {"a": "A", "b": "B"}
    readings = {
        "dict": dict,
        "unpacked": lambda d: {**d},
        "merged": lambda d: {} | d,
        "or": lambda d: d | {},
        "copy": lambda d: d.copy(),
        "items": lambda d: dict(d.items()),
        "values": lambda d: dict(zip(d, d.values())),
        "keywords": lambda d: (lambda **kw: kw)(**d),
        "json": lambda d: json.loads(json.dumps(d)),
        "pickle": lambda d: pickle.loads(pickle.dumps(d)),
        "deepcopy": copy.deepcopy,
        "repr": lambda d: ast.literal_eval(repr(d)),
        "get": lambda d: {k: d.get(k) for k in d},
        "pop": lambda d: {k: d.pop(k) for k in list(d)},
    }
    for name, read in readings.items():
        made.clear()
        assert read(fresh()) == plain, name
        assert sorted(made) == ["a", "b"], name
    made.clear()
    lazy = fresh()
    assert (
        len(lazy) == 2 and "a" in lazy and "c" not in lazy and lazy.get("c", 0) == 0 and made == []
    )  # the keys need no values
    assert lazy["a"] == lazy["a"] == "A" and made == ["a"]
    # SIM202 would turn `not lazy != plain` into `lazy == plain`: it is `!=` itself that is under test here
    assert lazy == plain and plain == lazy and not lazy != plain and made == ["a", "b"]  # noqa: SIM202


def test_the_aec_wrapper_makes_no_observation_nobody_reads():
    """PettingZoo's AEC wrapper copies each step's observations and infos: the copies stay
    lazy, and rebuilding one as mapping utilities do (`type(d)(pairs)`) gives a plain dict."""
    from pettingzoo.utils.conversions import parallel_to_aec

    made = Counter()
    env = MarketEnv(load_scenario("price_war"), 6)
    maker = ObservationMaker.observation

    def counted(self, i):
        made[i] += 1
        return maker(self, i)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ObservationMaker, "observation", counted)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the env has no render_mode
            aec = parallel_to_aec(env)
        aec.reset(seed=3)
        for _ in list(aec.agents):
            aec.step({"operations": []})
        assert sum(made.values()) == 0
        observed = aec.observe("m2")
        assert made == {2: 1}
    assert observed == env.market.observations(env.market.view(), [2])[0]
    rebuilt = type(aec.infos)(aec.infos.items())
    assert (
        type(rebuilt) is LazyDict and rebuilt == aec.infos and LazyDict.fromkeys("ab", 1) == {"a": 1, "b": 1}
    )
