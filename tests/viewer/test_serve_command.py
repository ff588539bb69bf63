"""`arena serve` as a user starts it: the address it prints, the token it asks for beyond
loopback, and one line with exit status 2 for what it cannot do."""

from __future__ import annotations

import re
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.cli import app
from tests.arena_process import ARENA, arena_env
from tests.viewer.conftest import Stored

pytestmark = pytest.mark.slow


def started(*args: str, cwd: Path) -> tuple[subprocess.Popen, str]:
    """The server in its own process, and the first line it printed (its address)."""
    process = subprocess.Popen(
        [ARENA, "serve", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=arena_env(),
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code


def test_it_prints_its_address_and_serves_the_record(stored: Stored, tmp_path: Path):
    process, line = started("--db", stored.url, "--port", "0", cwd=tmp_path)
    try:
        found = re.fullmatch(r"arena serve: (http://127\.0\.0\.1:\d+/)", line)
        assert found, line
        assert status_of(found[1] + f"matches/{stored.matches[0]}") == 200
    finally:
        process.terminate()
        process.wait(10)


def test_beyond_loopback_it_asks_for_the_token_it_printed_once(stored: Stored, tmp_path: Path):
    process, line = started("--db", stored.url, "--port", "0", "--host", "0.0.0.0", cwd=tmp_path)
    try:
        # the address names this machine: 0.0.0.0 is where it listens, no address to browse to
        found = re.fullmatch(
            rf"arena serve: http://{re.escape(socket.gethostname())}:(\d+)/\?token=(\S+)", line
        )
        assert found, line
        port, token = found[1], found[2]
        assert status_of(f"http://127.0.0.1:{port}/") == 401
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with browser.open(f"http://127.0.0.1:{port}/?token={token}", timeout=10) as answer:
            assert answer.status == 200 and token not in answer.url
    finally:
        process.terminate()
        process.wait(10)
    assert token.encode() not in stored.path.read_bytes()


def test_a_port_taken_or_a_database_missing_is_one_line_and_status_2(stored: Stored, tmp_path: Path):
    """In this process: the command's own words and status (a real process's one line is
    tests/arena/test_cli_errors.py's)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(app, ["serve", "--db", stored.url, "--port", str(port)])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    result = CliRunner().invoke(app, ["serve", "--db", f"sqlite:///{tmp_path / 'none.db'}"])
    assert result.exit_code == 2 and "no database at" in result.stderr and result.stderr.count("\n") == 1
    assert not (tmp_path / "none.db").exists()
