"""`arena run` joining a Ray cluster started apart from it, with a plain `ray start --head`."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from arena_process import BIN, arena, arena_env, own_ray_env, stored_matches


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


ACTORS_OF_OTHER_JOBS = textwrap.dedent(
    """
    import collections, logging, sys
    import ray
    import ray._private.state as state
    ray.init(address=sys.argv[1], log_to_driver=False, logging_level=logging.ERROR)
    mine = ray.get_runtime_context().get_job_id()
    counts = collections.Counter(a["ActorClassName"] for a in state.actors().values() if a["JobID"] != mine)
    print(" ".join(f"{name}={n}" for name, n in sorted(counts.items())))
    """
)


def test_run_joins_a_plain_ray_head_and_plays_on_it(tmp_path, slow_tournament):
    """As a user who has run arena before: a local Ray then wrote ~/.ray/auth_token, so a plain
    `ray start --head` turns token authentication on, and the run must send the token with no
    RAY_AUTH_MODE set. Its actors are in the head's state, and it started no Ray of its own."""
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text(secrets.token_hex(16))
    env = {**arena_env(), "HOME": str(home)}
    port = _free_port()
    # its own temp dir (short: Ray puts unix sockets in it), so the head leaves no
    # /tmp/ray/ray_current_cluster behind for later ray.init() calls to find
    temp_dir = tempfile.mkdtemp(prefix="rayhead", dir="/tmp")
    head = subprocess.Popen(
        [str(BIN / "ray"), "start", "--head", "--block", f"--temp-dir={temp_dir}", f"--port={port}", f"--node-ip-address={LOOPBACK}",
         "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True,
    )
    try:
        _wait_for_port(port, head)
        address = f"{LOOPBACK}:{port}"
        db = tmp_path / "cluster.db"
        with own_ray_env() as run_env:
            result = arena("run", str(slow_tournament), "--db", f"sqlite:///{db}", "--address", address, cwd=tmp_path,
                           env=run_env | {"HOME": str(home)})
            assert result.returncode == 0, result.stderr
            # a local Ray would have kept its session in the run's RAY_TMPDIR (under ray/)
            assert list(Path(run_env["RAY_TMPDIR"]).rglob("session_*")) == []
        assert stored_matches(db) == 12
        assert head.poll() is None, "the head node must still be up: the run joined it, it did not own it"
        listing = subprocess.run([sys.executable, "-c", ACTORS_OF_OTHER_JOBS, address], capture_output=True, text=True,
                                 env={**env, "RAY_AUTH_MODE": "token"}, timeout=120)
        assert listing.returncode == 0, listing.stderr
        counts = {name: int(n) for name, n in (item.split("=") for item in listing.stdout.split())}
        # the slow tournament hosts its latency contestant; its matches play in match runners
        assert counts.get("ContestantHost") == 1, counts
        assert counts.get("MatchRunner", 0) >= 1, counts
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
        shutil.rmtree(temp_dir, ignore_errors=True)


def test_an_unreachable_address_fails_in_seconds_with_one_line(tmp_path, slow_tournament):
    db = tmp_path / "never.db"
    started = time.monotonic()
    result = arena("run", str(slow_tournament), "--db", f"sqlite:///{db}", "--address", f"{LOOPBACK}:{_free_port()}", cwd=tmp_path)
    elapsed = time.monotonic() - started
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"cannot reach the Ray cluster at {LOOPBACK}:" in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert stored_matches(db) == 0
    assert elapsed < 10, elapsed
