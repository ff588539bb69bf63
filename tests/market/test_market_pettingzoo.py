"""MarketEnv against PettingZoo's own conformance tests, on every shipped scenario."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

from market.env import MarketEnv
from market.types import DayRecord, Observation


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
    parallel_seed_test(lambda: MarketEnv(scenario, 3, days=min(scenario.days, 12), numeric=numeric), num_cycles=12)


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
        observations, rewards, terminations, truncations, infos = env.step({a: env.action_space(a).sample() for a in env.agents})
        days += 1
    for obs in observations.values():
        assert env.observation_space("m0").contains(obs)


def test_observations_and_infos_have_the_documented_types(scenario):
    env = MarketEnv(scenario, 2)
    observations, infos = env.reset(seed=0)
    assert all(isinstance(o, Observation) and o.day == 1 and o.yesterday is None for o in observations.values())
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
    hidden = scenario.model_copy(update={"visibility": scenario.visibility.model_copy(update={"rival_prices": False})})
    env = MarketEnv(hidden, 3, numeric=True)
    observations, _ = env.reset(seed=2)
    own = [pr.start_price for pr in hidden.products]
    for i, agent in enumerate(env.possible_agents):
        prices = observations[agent]["prices"]
        assert np.allclose(prices[i], own) and not np.delete(prices, i, axis=0).any()
        assert env.observation_space(agent).contains(observations[agent])
    models = MarketEnv(hidden, 3).reset(seed=2)[0]
    assert all(m.prices is None for m in models["m0"].market)
