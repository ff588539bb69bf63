"""`arena run` joining a Ray cluster started apart from it, with `ray start`."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from arena_process import BIN, arena, arena_env, stored_matches


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


def test_run_joins_a_ray_head_on_loopback(tmp_path, slow_tournament):
    port = _free_port()
    # its own temp dir (short: Ray puts unix sockets in it), so the head leaves no
    # /tmp/ray/ray_current_cluster behind for later ray.init() calls to find
    temp_dir = tempfile.mkdtemp(prefix="rayhead", dir="/tmp")
    head = subprocess.Popen(
        [str(BIN / "ray"), "start", "--head", "--block", f"--temp-dir={temp_dir}", f"--port={port}", f"--node-ip-address={LOOPBACK}",
         "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=arena_env(), start_new_session=True,
    )
    try:
        _wait_for_port(port, head)
        db = tmp_path / "cluster.db"
        result = arena("run", str(slow_tournament), "--db", f"sqlite:///{db}", "--address", f"{LOOPBACK}:{port}", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert stored_matches(db) == 12
        assert head.poll() is None, "the head node must still be up: the run joined it, it did not own it"
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
        shutil.rmtree(temp_dir, ignore_errors=True)
