"""Where a run's actors go on a cluster's nodes (tournaments.cluster.choose_nodes), from a list
of nodes as ray.nodes() gives it; and a local Ray that does not start."""

from __future__ import annotations

from collections import Counter

import pytest
import ray
from hypothesis import given, settings
from hypothesis import strategies as st
from property_examples import examples

from tournaments import cluster
from tournaments.cluster import choose_nodes, cluster_cpus


def node(index: int, cpus: float, alive: bool = True) -> dict:
    return {
        "NodeID": f"id{index:02d}",
        "NodeManagerAddress": f"10.0.0.{index}",
        "Alive": alive,
        "Resources": {"CPU": cpus} if cpus else {},
    }


clusters = st.lists(st.tuples(st.integers(0, 4), st.booleans()), min_size=1, max_size=6).map(
    lambda spec: [node(i, cpus, alive) for i, (cpus, alive) in enumerate(spec)]
)


@settings(max_examples=examples(60))
@given(clusters, st.integers(1, 3), st.data())
def test_actors_go_to_live_nodes_in_proportion_to_their_cpus(nodes, rounds, data):
    """Placing `rounds` times as many actors as the live nodes have CPUs puts exactly `rounds`
    per CPU on each live node that has CPUs, and none elsewhere; where no live node has a CPU,
    each live node gets `rounds`."""
    alive = [n for n in nodes if n["Alive"]]
    if not alive:
        return
    here = data.draw(st.sampled_from(nodes))["NodeID"]
    cpus = {n["NodeID"]: n["Resources"].get("CPU", 0) for n in alive}
    weights = cpus if any(cpus.values()) else dict.fromkeys(cpus, 1)
    count = rounds * int(sum(weights.values()))
    placed = Counter(place.node for place in choose_nodes(nodes, here, count))
    assert placed == Counter({n: rounds * int(w) for n, w in weights.items() if w})


def test_the_drivers_node_first_then_by_address_and_placed_actors_count():
    assert [p.address for p in choose_nodes([node(1, 1), node(2, 1), node(3, 1)], "id03", 4)] == [
        "10.0.0.3",
        "10.0.0.1",
        "10.0.0.2",
        "10.0.0.3",
    ]
    # one actor uses half of node 1's CPUs and all of node 2's one: node 1 first; then a tie
    assert [p.node for p in choose_nodes([node(1, 2), node(2, 1)], "id02", 3)] == ["id01", "id02", "id01"]
    nodes = [node(1, 2), node(2, 1), node(3, 1)]
    # node 1 already holds two actors, node 3 one: its one CPU is taken, node 2's is free
    assert [p.node for p in choose_nodes(nodes, "id01", 1, placed=["id01", "id01", "id03"])] == ["id02"]


def test_a_node_to_avoid_gets_nothing_while_another_is_alive():
    nodes = [node(1, 4), node(2, 1), node(3, 8, alive=False)]
    assert {p.node for p in choose_nodes(nodes, "id01", 5, avoid={"id01"})} == {"id02"}
    assert {
        p.node for p in choose_nodes([node(1, 4), node(3, 8, alive=False)], "id01", 2, avoid={"id01"})
    } == {"id01"}


def test_the_cluster_cpus_are_those_of_its_live_nodes(monkeypatch):
    monkeypatch.setattr(ray, "nodes", lambda: [node(1, 2), node(2, 1.5), node(3, 8, alive=False), node(4, 0)])
    assert cluster_cpus() == 3  # 2 + 1.5, rounded down; not the dead node's 8
    monkeypatch.setattr(ray, "nodes", lambda: [node(1, 0)])
    assert cluster_cpus() == 1  # a run plays somewhere, even on a cluster whose CPUs are all reserved


def test_the_actor_options_ask_for_the_node_and_fall_back_to_any():
    place = choose_nodes([node(1, 1)], "id01", 1)[0]
    assert place.options() == {
        "label_selector": {"ray.io/node-id": "id01"},
        "fallback_strategy": [{"label_selector": {}}],
    }


def test_a_local_ray_that_does_not_start_is_one_line(monkeypatch):
    """Ray's own failure to start (a bare Exception, with its advice on further lines) ends
    the run with a ClusterError of one line, not a traceback."""

    def fail(**options):
        raise Exception(  # as Ray's node.py words it
            "The current node timed out during startup. This could happen because some of the "
            "raylet failed to startup or the GCS has become overloaded.\nSee the logs."
        )

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(cluster, "init_ray", fail)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(cluster.ClusterError) as caught, cluster.ray_session(None):
        pass
    assert str(caught.value) == (
        "Ray did not start on this machine: The current node timed out during startup. This could "
        "happen because some of the raylet failed to startup or the GCS has become overloaded."
    )
