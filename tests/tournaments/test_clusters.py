"""`arena run` joining a Ray cluster started apart from it, with a plain `ray start --head`."""

from __future__ import annotations

import json
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from arena_process import (
    ARENA,
    BIN,
    PATIENCE,
    BackgroundRun,
    a_match_in_flight,
    arena,
    arena_env,
    assert_whole_and_equal,
    kill_session,
    kill_when,
    matches_and_days,
    own_ray_env,
    stored_matches,
)
from ray_cluster_state import ClusterState, cluster_state
from unhosted import unhosted

from results.storage.db import engine_for
from tournaments.load import load_tournament
from tournaments.run import run_tournament

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


# 127.0.0.2, not 127.0.0.1: Ray rewrites "127.0.0.1" and "localhost" in an address to the
# machine's network address; any other loopback address it leaves alone.
LOOPBACK = "127.0.0.2"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, "ray start --head exited"
        with socket.socket() as s:
            if s.connect_ex((LOOPBACK, port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"the Ray head did not listen on {LOOPBACK}:{port}")


def token_cluster_state(address: str, home: Path) -> ClusterState:
    """`cluster_state` of a cluster that asks for a token, read by a process of its own that
    sends the token of `home` (Ray reads the token a process sends once, from its environment)."""
    listing = subprocess.run(
        [sys.executable, "-m", "ray_cluster_state", address, "1"],
        capture_output=True,
        text=True,
        env={**arena_env(), "HOME": str(home), "RAY_AUTH_MODE": "token", "PYTHONPATH": str(TESTS)},
        timeout=180,
    )
    assert listing.returncode == 0, listing.stderr
    # Ray may print warnings of its own around it (a node found dead, say)
    state = json.loads(next(line for line in listing.stdout.splitlines() if line.startswith("state: "))[7:])
    return ClusterState(state["alive"], state["dead"], [tuple(actor) for actor in state["actors"]])


@contextmanager
def ray_node(*args: str, env: dict[str, str], cwd: Path) -> Iterator[subprocess.Popen]:
    """`ray start --block ARGS` with a Ray temp dir of its own (so it leaves no
    /tmp/ray/ray_current_cluster behind for later ray.init() calls to find; short, as Ray
    puts unix sockets in it), in a session of its own. Leaving kills every process of its
    session: a test's node needs no graceful stop, which `ray start --block` takes 30 s over.
    Without a log monitor: arena's drivers take no worker output (init_ray's log_to_driver),
    so it would only tail the workers' logs for nobody, a process and its CPU on every node."""
    temp_dir = tempfile.mkdtemp(prefix="raynode", dir="/tmp")
    node = subprocess.Popen(
        [str(BIN / "ray"), "start", "--block", f"--temp-dir={temp_dir}", "--disable-usage-stats"]
        + ["--include-log-monitor=false", *args],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        yield node
    finally:
        kill_session(node.pid)
        node.wait()
        shutil.rmtree(temp_dir, ignore_errors=True)


def head_node(port: int, env: dict[str, str], cwd: Path, *args: str):
    """A head node without the autoscaler's monitor (`--no-monitor`, a flag `ray start` keeps
    out of its help): a test's cluster has no nodes to add or remove, and the monitor is a
    process (and its CPU at start) on every head. The head finds dead nodes without it."""
    return ray_node(
        "--head",
        f"--port={port}",
        f"--node-ip-address={LOOPBACK}",
        "--include-dashboard=false",
        "--no-monitor",
        *args,
        env=env,
        cwd=cwd,
    )


@dataclass(frozen=True)
class TokenHead:
    address: str
    home: Path  # the home whose ~/.ray/auth_token the head was started with
    process: subprocess.Popen


@pytest.fixture(scope="module")
def token_head(tmp_path_factory) -> Iterator[TokenHead]:
    """A plain `ray start --head` of two CPUs started by a user who has run arena before: a
    local Ray then wrote ~/.ray/auth_token, so the head turns token authentication on, with
    no RAY_AUTH_MODE set. One head for the tests of tokens: a head costs seconds of CPU to start."""
    folder = tmp_path_factory.mktemp("token_head")
    home = folder / "home"
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text(secrets.token_hex(16))
    port = _free_port()
    with head_node(port, {**arena_env(), "HOME": str(home)}, folder, "--num-cpus=2") as head:
        _wait_for_port(port, head)
        yield TokenHead(f"{LOOPBACK}:{port}", home, head)


def test_run_joins_a_plain_ray_head_and_plays_on_it(tmp_path, slow_tournament, token_head):
    """As a user who has run arena before, on the head they started (`token_head`): the run
    must send the token with no RAY_AUTH_MODE set. Its actors are in the head's state, and it
    started no Ray of its own."""
    home, address, head = token_head.home, token_head.address, token_head.process
    brief = tmp_path / "brief.yaml"  # the slow field's three pairs, a seed each, three days
    brief.write_text(slow_tournament.read_text().replace("seeds: [1, 2]\ndays: 5\n", "seeds: [1]\ndays: 3\n"))
    db = tmp_path / "cluster.db"
    with own_ray_env() as run_env:
        result = arena(
            "run",
            str(brief),
            "--db",
            f"sqlite:///{db}",
            "--address",
            address,
            cwd=tmp_path,
            env=run_env | {"HOME": str(home)},
        )
        assert result.returncode == 0, result.stderr
        # a local Ray would have kept its session in the run's RAY_TMPDIR (under ray/)
        assert list(Path(run_env["RAY_TMPDIR"]).rglob("session_*")) == []
    assert stored_matches(db) == 3
    assert head.poll() is None, "the head node must still be up: the run joined it, it did not own it"
    actors = token_cluster_state(address, home).actors
    counts = Counter(name for _, name, _ in actors)
    # the slow tournament hosts its latency contestant; its matches play in match runners; its
    # contestants call no model, so it has no call coordinator
    assert counts["ContestantHost"] == 1, counts
    assert counts["MatchRunner"] >= 1, counts
    assert counts["CallCoordinatorActor"] == 0, counts


WORKER = "127.0.0.3"
# the head finds a node dead after 3 missed health checks 1 s apart, about 3 s (Ray's default: 5,
# 3 s apart)
QUICK_HEALTH_CHECKS = json.dumps(
    {
        "health_check_period_ms": 1000,
        "health_check_timeout_ms": 1000,
        "health_check_failure_threshold": 3,
        "health_check_initial_delay_ms": 0,
    }
)
# Every match has both hosted merchants, one on each node: losing the worker loses every match in
# play, those of the worker's runner with it and those of the head's runner with their host there.
# A turn's deadline is short beside the time the head takes to find the worker dead (3 s or
# more): turns asked of the worker's host time out before anyone knows why. It is long beside
# the merchants' own time, so that a machine busy with other tests does not make them late.
TWO_HOSTED = textwrap.dedent(
    """
    name: node_loss
    seed: 5
    scenarios: [price_war]
    seeds: [1, 2, 3, 4, 5, 6]
    days: 6
    max_concurrent_matches: 4
    decision_timeout_s: 2.0
    contestants:
      - {name: slowpoke, kind: tests.doubles:Latency, params: {latency_s: 0.15}}
      - {name: sleepy, kind: tests.doubles:Latency, params: {latency_s: 0.1, price: 9}}
    """
)

pytestmark = pytest.mark.slow  # each test plays tournaments in processes of their own
# When the worker is killed: before any match is stored, with days played; and once a match
# is stored and another is in play. Turns are in flight at either moment.
KILL_MOMENTS = {
    "days into the first matches": lambda seen: seen.stored == 0 and seen.progress.days >= 12,
    "a match stored and another in flight": a_match_in_flight,
}


def assert_one_runner_on_each_node_and_the_workers_replaced(
    actors: list[tuple[str, str, str]], jobs_before: set[str]
) -> None:
    """The match runners of the jobs started since `jobs_before` (a run's): one on each node,
    and the worker's replaced on the head."""
    runners = Counter(node for job, name, node in actors if job not in jobs_before and name == "MatchRunner")
    assert runners == {LOOPBACK: 2, WORKER: 1}, actors


def test_a_worker_node_killed_mid_turn_changes_nothing_but_replays(tmp_path, ray_local):
    """A head and a worker node of one CPU each, started apart with `ray start`: the run puts a
    match runner and a contestant host on each. The worker is killed (every process of it) in
    the middle of turns, at different moments of a run, and started again for the next. Each
    run goes on to the end, says which matches it lost (with their runner, or with a host) and
    plays them again, and stores each match once, with the table of an undisturbed run (here,
    in this process on the tests' own cluster, its merchants unhosted: tests/unhosted.py): no
    turn lost with the node counts as its merchant's fault."""
    env = {**arena_env(), "HOME": str(tmp_path)}  # no Ray token: a cluster without authentication
    # the runs come from a machine that has a token (any earlier local run writes one): the
    # cluster asks for none, and must get none (a process sending one refuses the cluster's calls)
    user = tmp_path / "user"
    (user / ".ray").mkdir(parents=True)
    (user / ".ray" / "auth_token").write_text(secrets.token_hex(16))
    run_env = {**env, "HOME": str(user)}
    config = tmp_path / "node_loss.yaml"
    config.write_text(TWO_HOSTED)
    calm = tmp_path / "calm.db"
    port = _free_port()
    address = f"{LOOPBACK}:{port}"
    run = ("run", str(config), "--address", address)
    worker_node = ("--address=" + address, f"--node-ip-address={WORKER}", "--num-cpus=1")
    lost: list[str] = []
    jobs_before: set[str] = set()  # the jobs on the cluster before the last run
    with head_node(port, env, tmp_path, "--num-cpus=1", f"--system-config={QUICK_HEALTH_CHECKS}") as head:
        _wait_for_port(port, head)
        for k, (moment, when) in enumerate(KILL_MOMENTS.items()):
            lossy = tmp_path / f"lossy{k}.db"
            with ray_node(*worker_node, env=env, cwd=tmp_path) as worker:
                if k == 0:  # the undisturbed run, while the first worker starts
                    run_tournament(load_tournament(unhosted(config)), engine_for(f"sqlite:///{calm}"))
                # one listing for both: the new worker working, and what the last run left
                state = cluster_state(address, nodes=2)
                assert sorted(state.alive) == [LOOPBACK, WORKER] and state.dead == [WORKER] * k, state
                if k:
                    assert_one_runner_on_each_node_and_the_workers_replaced(state.actors, jobs_before)
                jobs_before = {job for job, _, _ in state.actors}
                with BackgroundRun(
                    *run,
                    "--db",
                    f"sqlite:///{lossy}",
                    cwd=tmp_path,
                    env=run_env,
                    log=tmp_path / f"lossy{k}.log",
                ) as background:
                    seen = kill_when(
                        background,
                        lambda lossy=lossy: matches_and_days(lossy),
                        moment,
                        when,
                        kill=lambda worker=worker: kill_session(worker.pid),
                    )
                    assert seen.progress.days > seen.stored_days, (moment, seen)  # turns in flight
                    assert background.process.wait(timeout=PATIENCE) == 0, background.output()[-3000:]
                    output = background.output()
            assert "Traceback" not in output
            lost += [line.split(" lost, ")[1] for line in output.splitlines() if " lost, " in line]
            assert_whole_and_equal(lossy, calm)
        state = cluster_state(address)
        assert state.alive == [LOOPBACK] and state.dead == [WORKER] * len(KILL_MOMENTS), state
        assert_one_runner_on_each_node_and_the_workers_replaced(state.actors, jobs_before)
    assert all(line.endswith(": playing it again from its start") for line in lost), lost
    assert any(line.startswith(f"its match runner on {WORKER} died") for line in lost), lost
    assert any(
        line.startswith(f"a host of its merchants was on a node that died ({WORKER})") for line in lost
    ), lost


def test_a_cluster_that_refuses_the_token_is_named_with_the_fix_in_one_line(
    tmp_path, slow_tournament, token_head
):
    """A head with token authentication (`token_head`), joined from a machine with another
    token and from one with none: each run ends at once with one line that names the cause and
    the fix, where Ray would retry for 20 s, a warning a second, and then say only that it
    failed to connect."""
    other, none = tmp_path / "other", tmp_path / "none"
    for home, token in ((other, secrets.token_hex(16)), (none, None)):
        (home / ".ray").mkdir(parents=True)
        if token:
            (home / ".ray" / "auth_token").write_text(token)
    address = token_head.address
    db = tmp_path / "never.db"
    refused = {
        home.name: arena(
            "run",
            str(slow_tournament),
            "--db",
            f"sqlite:///{db}",
            "--address",
            address,
            cwd=tmp_path,
            env={**arena_env(), "HOME": str(home)},
        )
        for home in (other, none)
    }
    fix = (
        "copy ~/.ray/auth_token from its head node to this machine, "
        "or set RAY_AUTH_TOKEN to that file's content"
    )
    expected = {
        "other": f"error: the Ray cluster at {address} refused this machine's Ray token: {fix}",
        "none": f"error: the Ray cluster at {address} asks for a token (`ray start` turns token "
        f"authentication on where ~/.ray/auth_token exists) and this machine has none: {fix}",
    }
    assert {name: (r.returncode, r.stderr.strip()) for name, r in refused.items()} == {
        name: (2, line) for name, line in expected.items()
    }
    assert stored_matches(db) == 0


def test_an_unreachable_address_fails_in_seconds_with_one_line(tmp_path, slow_tournament):
    db = tmp_path / "never.db"
    started = time.monotonic()
    result = arena(
        "run",
        str(slow_tournament),
        "--db",
        f"sqlite:///{db}",
        "--address",
        f"{LOOPBACK}:{_free_port()}",
        cwd=tmp_path,
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"cannot reach the Ray cluster at {LOOPBACK}:" in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert stored_matches(db) == 0
    assert elapsed < 10, elapsed


def test_a_run_under_uv_run_from_a_folder_of_ones_own_plays(tmp_path, cluster_env):
    """As `uv run --project ARENA arena run FILE` in a folder of one's own (here a stand-in
    `uv` that only starts the command: Ray knows `uv run` by its ancestor's command line). Ray
    2.60 would start every worker through `uv run` in a packed-up copy of the folder, and
    refuses a folder that lacks the project's pyproject.toml with a traceback; arena's
    workers run its own Python, wherever it is started from: its one match plays in a match
    runner against a hosted merchant, two workers."""
    (tmp_path / "run").write_text(
        "import subprocess, sys\nsys.exit(subprocess.call(sys.argv[3:]))\n"
    )  # after --project ROOT
    config = tmp_path / "small.yaml"
    config.write_text(
        textwrap.dedent(
            """
            name: small
            seed: 1
            scenarios: [price_war]
            seeds: [1]
            days: 3
            contestants:
              - {name: fixed, kind: fixed_price}
              - {name: slowpoke, kind: tests.doubles:Latency, params: {latency_s: 0.01}}
            """
        )
    )
    db = tmp_path / "small.db"
    as_uv_run = 'exec -a uv "$0" run --project "$@"'
    played = subprocess.run(
        [
            "bash",
            "-c",
            as_uv_run,
            sys.executable,
            str(ROOT),
            ARENA,
            "run",
            str(config),
            "--db",
            f"sqlite:///{db}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=cluster_env,
        timeout=300,
    )
    assert played.returncode == 0, played.stderr[-3000:]
    assert stored_matches(db) == 1
