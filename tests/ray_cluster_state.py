"""What a Ray cluster's control store (GCS) knows, read without joining the cluster as a
driver (tests/tournaments/test_clusters.py): ray.init would make the reader a job of the
cluster, in a Python process of its own (the test's process is a driver of the tests' own
cluster already), only to list nodes and actors. Run as a script
(`python -m ray_cluster_state ADDRESS NODES`) for a cluster that asks for a token: Ray reads
the token a process sends once, when it first needs one, from that process's environment."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass

WAIT_S = 120


@dataclass(frozen=True)
class ClusterState:
    alive: list[str]
    dead: list[str]
    actors: list[tuple[str, str, str]]


def cluster_state(address: str, nodes: int = 1) -> ClusterState:
    """The addresses of the cluster's live nodes, once at least `nodes` are alive with their
    CPUs known to the cluster (as a run counts them: a node that has just joined is alive
    before they are), those of its dead nodes, and the actors started on it: (job, class,
    node address), those that ended included."""
    from ray._private.internal_api import get_state_from_address

    state = get_state_from_address(address)
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            table = {node["NodeID"]: node for node in state.node_table()}
            working = sum(node["Alive"] and node["Resources"].get("CPU", 0) > 0 for node in table.values())
            if working >= nodes or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        actors = [
            (actor["JobID"], actor["ActorClassName"], table[actor["Address"]["NodeID"]]["NodeManagerAddress"])
            for actor in state.actor_table(None).values()
            if actor["Address"]["NodeID"] in table
        ]
    finally:
        state.disconnect()
    alive = [node["NodeManagerAddress"] for node in table.values() if node["Alive"]]
    dead = [node["NodeManagerAddress"] for node in table.values() if not node["Alive"]]
    return ClusterState(alive, dead, actors)


if __name__ == "__main__":
    print("state:", json.dumps(asdict(cluster_state(sys.argv[1], int(sys.argv[2])))))
