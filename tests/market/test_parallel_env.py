"""`market.parallel_env`, the PettingZoo-style entry point: a shipped scenario by name, or any
scenario file by its path."""

from __future__ import annotations

import re

import pytest
from pettingzoo.test import parallel_api_test

from common.yaml_files import ConfigError
from market import parallel_env, shipped_scenarios
from market.scenario import SHIPPED_SCENARIOS, shipped_scenario

SMALL = """\
name: small
days: 4
products:
  - {id: w, unit_cost: 10, reference_price: 20, base_demand: 30, initial_stock: 20}
"""


def test_a_shipped_scenario_by_name_passes_the_api_test():
    env = parallel_env("price_war", merchants=2, days=6)
    assert env.scenario.name == "price_war" and env.days == 6 and env.possible_agents == ["m0", "m1"]
    parallel_api_test(env, num_cycles=env.days + 2)


@pytest.mark.parametrize("as_text", [False, True], ids=["Path", "str"])
def test_a_scenario_file_by_path_passes_the_api_test(tmp_path, as_text):
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    env = parallel_env(str(path) if as_text else path, merchants=["a", "b", "c"])
    assert env.scenario.name == "small" and env.days == 4 and env.possible_agents == ["a", "b", "c"]
    parallel_api_test(env, num_cycles=env.days + 2)


def test_the_shipped_scenarios_are_the_package_files():
    assert shipped_scenarios() == sorted(path.stem for path in SHIPPED_SCENARIOS.glob("*.yaml"))
    assert {"price_war", "retail_quarter", "seed_shop"} <= set(shipped_scenarios())
    assert all(shipped_scenario(name).is_file() for name in shipped_scenarios())


def test_an_unknown_name_names_the_shipped_scenarios():
    with pytest.raises(
        ValueError,
        match=r"no shipped scenario is named 'atlantis' \(shipped: "
        + re.escape(", ".join(shipped_scenarios()))
        + r"\)",
    ):
        parallel_env("atlantis")


def test_a_mistake_in_a_file_names_the_file_and_the_field(tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(SMALL.replace("unit_cost: 10", "unit_cost: 0"))
    with pytest.raises(ConfigError) as caught:
        parallel_env(path)
    assert (caught.value.file, caught.value.field) == (str(path), "products[0].unit_cost")
