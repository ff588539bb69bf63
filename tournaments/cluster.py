"""Connecting to Ray (join a cluster or start a local one for the length of a run), and where
on its nodes a run's actors go."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

from common.errors import UserError


def enter(working_dir: str) -> None:
    """Work in the folder `arena run` was started in, so relative paths in a contestant's
    settings (a response cache, a model file) mean what they meant there, not wherever Ray
    starts its workers (a folder of its session). Skipped on a node that lacks the folder."""
    if os.path.isdir(working_dir):
        os.chdir(working_dir)


def result(ref: Any) -> asyncio.Future:
    """An asyncio future of a Ray ObjectRef's value. `await ref` goes through Ray's
    deprecated ObjectRef.as_future(), which costs a logged warning and several times the
    CPU of this on every call: it was the driver's largest cost in a tournament of instant
    matches."""
    return asyncio.wrap_future(ref.future())


async def dead_nodes(ids: set[str]) -> set[str]:
    """The addresses of the nodes among `ids` that Ray's control store does not have alive
    (the id itself for one it does not know)."""
    import ray

    nodes = {node["NodeID"]: node for node in await asyncio.to_thread(ray.nodes)}
    return {
        nodes[n]["NodeManagerAddress"] if n in nodes else n for n in ids if not nodes.get(n, {}).get("Alive")
    }


class ClusterError(UserError):
    """The Ray cluster named by --address or RAY_ADDRESS cannot be reached, a local one does
    not start, or the cluster keeps losing the processes that play a match."""


class Place(NamedTuple):
    """A node chosen for an actor: its Ray id and its address (for messages)."""

    node: str
    address: str

    def options(self) -> dict[str, Any]:
        """The actor options that put an actor there, or elsewhere if the node is gone: when
        Ray starts the actor again after its node died, say. (A NodeAffinitySchedulingStrategy
        will not do: a hard one leaves such an actor unschedulable, and Ray 2.60 does not
        honour a soft one, which it spills to another node whenever it likes.)"""
        return {"label_selector": {NODE_LABEL: self.node}, "fallback_strategy": [{"label_selector": {}}]}


NODE_LABEL = "ray.io/node-id"  # a label Ray gives every node
# how long a run waits for its processes to start (call coordinator, desk, hosts, match runners:
# Ray starts a process for each, a few at a time on a busy machine, seconds each)
READY_SECONDS = 300.0


def cluster_cpus() -> int:
    """The CPUs of the cluster's live nodes (at least one), from the same list of nodes that
    `spread` places actors by: Ray's summary of resources can lag a node that has just joined."""
    import ray

    return max(1, int(sum(node["Resources"].get("CPU", 0) for node in ray.nodes() if node["Alive"])))


def spread(count: int, placed: Sequence[str] = (), avoid: Collection[str] = ()) -> list[Place]:
    """Nodes of the cluster for `count` more actors (`choose_nodes`, from Ray's list of nodes).

    Ray's own SPREAD strategy only tries to spread: two actors may land on one node of two, and
    one started just after a node died may land on it before Ray has noticed. Placing them
    here makes where matches play known, and a replacement avoid the node its predecessor
    died on."""
    import ray

    return choose_nodes(ray.nodes(), ray.get_runtime_context().get_node_id(), count, placed, avoid)


def choose_nodes(
    nodes: list[dict[str, Any]],
    here: str,
    count: int,
    placed: Sequence[str] = (),
    avoid: Collection[str] = (),
) -> list[Place]:
    """Of `nodes` (as ray.nodes() lists them), one for each of `count` more actors: each the
    live node with the fewest actors per CPU once it has this one (counting those already
    `placed`, by node id), node `here` (the driver's) first among equals, then by address.
    Never a node in `avoid` while another is alive; nodes without CPUs (a head kept for Ray's
    own services) get none unless every node is so."""
    alive = [node for node in nodes if node["Alive"]]
    candidates = [node for node in alive if node["NodeID"] not in avoid] or alive
    working = [node for node in candidates if node["Resources"].get("CPU", 0) > 0]
    ordered = sorted(
        working or candidates,
        key=lambda node: (node["NodeID"] != here, node["NodeManagerAddress"], node["NodeID"]),
    )
    cpus = {node["NodeID"]: node["Resources"].get("CPU", 0) or 1 for node in ordered}
    load = Counter(node for node in placed if node in cpus)
    places = []
    for _ in range(count):
        chosen = min(ordered, key=lambda node: (load[node["NodeID"]] + 1) / cpus[node["NodeID"]])
        load[chosen["NodeID"]] += 1
        places.append(Place(chosen["NodeID"], chosen["NodeManagerAddress"]))
    return places


@contextmanager
def ray_session(address: str | None) -> Iterator[None]:
    """Join the cluster at `address` (or $RAY_ADDRESS), or start a local one for this run
    (never a cluster found lying around: that is what --address is for).

    Ray is imported here, not at module level, so the CLI starts fast when it only reads results.
    """
    import ray

    if ray.is_initialized():
        yield
        return
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is not None:
        _check_reachable(address)
        _check_admitted(address)
    try:
        init_ray(address=address or "local")
    except ConnectionError as exc:
        raise ClusterError(f"cannot reach the Ray cluster at {address}: {str(exc).splitlines()[0]}") from None
    except Exception as exc:
        if address is not None:
            raise
        # Ray says its own processes did not come up in time (on a machine too busy, say) with
        # a bare Exception
        raise ClusterError(f"Ray did not start on this machine: {str(exc).splitlines()[0]}") from None
    try:
        yield
    finally:
        ray.shutdown()


def init_ray(**options: Any) -> None:
    """ray.init with `options`, quiet, for every process of arena that starts or joins Ray (a
    run, the tests, the benchmarks). Its workers run this process's Python, in which arena is
    installed, as on any node whose Ray was started from arena's environment.

    Not through `uv run`: when the driver runs under `uv run` (as the Quickstart does), Ray
    2.60 by default starts each worker through `uv run` as well, in a copy of the current
    folder it packs up (RAY_ENABLE_UV_RUN_RUNTIME_ENV). That doubled a short run's time; it
    fails outright in a folder that is not arena's project; and packing up a folder that
    holds the run's SQLite database opens and closes the database's files in the driver,
    which drops SQLite's locks on them, so that another process reading the database during
    the run could checkpoint and delete its write-ahead log under it: the run's later writes
    were lost (seen in a test)."""
    import ray
    from ray._private import ray_constants

    ray_constants.RAY_ENABLE_UV_RUN_RUNTIME_ENV = False  # read by ray.init, from this module
    ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR, **options)


def _check_reachable(address: str, seconds: float = 5.0) -> None:
    """Fail in seconds, not minutes: Ray itself retries an unreachable address for a long time."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(f"--address must be HOST:PORT, not {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=seconds).close()
    except OSError as exc:
        raise ClusterError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None


ADMISSION_WAIT_MS = (
    5000  # for the cluster's control store to answer (Ray waits three times this for one that never does)
)
TOKEN_FIX = (
    "copy ~/.ray/auth_token from its head node to this machine, or set RAY_AUTH_TOKEN to that file's content"
)


def _check_admitted(address: str) -> None:
    """Ask the cluster's control store (GCS) whether it lets this machine in, before ray.init,
    with this machine's Ray token only if the cluster asks for one: refused, ray.init tries
    again for 20 s, printing a warning every second, and then says only that it failed to
    connect.

    Ray sends a token by itself only to a cluster it finds on its own, not to an address given
    to it, yet `ray start --head` turns token authentication on wherever a token exists (any
    local `ray.init()`, an earlier `arena run` included, writes one). And a process that sends
    tokens refuses the calls of a cluster that sends none, so this one sends its token only
    when asked (and RAY_AUTH_MODE is unset). A Ray Client address (ray://) is left to ray.init,
    with the token if there is one."""
    if address.startswith("ray://"):
        _send_token()
        return
    if _admitted(address):
        return
    if os.environ.get("RAY_AUTH_MODE") is None and _token_available():
        _send_token()
        if _admitted(address):
            return
    if _token_available():
        raise ClusterError(f"the Ray cluster at {address} refused this machine's Ray token: {TOKEN_FIX}")
    raise ClusterError(
        f"the Ray cluster at {address} asks for a token (`ray start` turns token authentication on where "
        f"~/.ray/auth_token exists) and this machine has none: {TOKEN_FIX}"
    )


def _admitted(address: str) -> bool:
    """Whether the control store lets this machine in, as it would now connect; ClusterError
    if it cannot be asked."""
    from ray._raylet import InnerGcsClient  # type: ignore[attr-defined]  # compiled; Ray ships no stub of it
    from ray.exceptions import AuthenticationError, RayError

    try:
        with _native_stderr_silenced():
            InnerGcsClient.standalone(address, None, ADMISSION_WAIT_MS)
        return True
    except AuthenticationError:
        return False
    except RayError as exc:
        raise ClusterError(
            f"cannot reach the Ray cluster at {address}: {str(exc).strip().splitlines()[0]}"
        ) from None


@contextmanager
def _native_stderr_silenced() -> Iterator[None]:
    """File descriptor 2 sent to /dev/null: Ray's C++ core writes its warnings there,
    past Python's logging."""
    sys.stderr.flush()
    saved, nowhere = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(nowhere, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(nowhere)


def _token_available() -> bool:
    from ray._private.authentication.authentication_token_setup import AuthenticationTokenLoader

    return AuthenticationTokenLoader.instance().has_token(ignore_auth_mode=True)


def _send_token() -> None:
    """Send this machine's Ray token from now on, if it has one and RAY_AUTH_MODE is unset."""
    from ray._private.authentication import authentication_token_setup

    quiet = logging.getLogger(authentication_token_setup.__name__)
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        authentication_token_setup.maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
    finally:
        quiet.setLevel(level)
