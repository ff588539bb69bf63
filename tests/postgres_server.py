"""A real PostgreSQL server for the tests: Debian's postgresql package, a cluster of its own in
a temporary folder, listening on 127.0.0.1 at a free port and on a socket folder of its own,
started once per test session and stopped at its end, whatever the tests did.

initdb and postgres refuse to run as root (CI runs as root): then they run as the `postgres`
system user the package creates, which owns the cluster's folder.
"""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

DEBIAN_ROOT = Path("/usr/lib/postgresql")
ADMIN = "arena"  # the superuser initdb makes; tests connect as it over TCP, with its password
PASSWORD = "pg-test-Secret-7319"  # a needle for "the password is never printed"
READY_SECONDS = 60  # a cold start here takes about a second
STOP_SECONDS = 30


def server_binaries() -> Path:
    """The bin folder of the newest PostgreSQL under /usr/lib/postgresql; the test fails
    (never skips) when there is none."""
    versions = [
        p for p in DEBIAN_ROOT.glob("*/bin") if (p / "postgres").is_file() and p.parent.name.isdigit()
    ]
    if not versions:
        pytest.fail(
            f"no PostgreSQL server under {DEBIAN_ROOT}: "
            ".ci/run installs Debian's postgresql (apt-get install postgresql)",
            pytrace=False,
        )
    return max(versions, key=lambda p: int(p.parent.name))


class PostgresServer:
    """One cluster: `start()`, then `fresh_database()` for each test that needs one, then
    `stop()`. `url(...)` builds the SQLAlchemy URL of a database for a role."""

    def __init__(self) -> None:
        self.bin = server_binaries()
        self.folder = Path(tempfile.mkdtemp(prefix="arena-pg-"))  # under /tmp: reachable by the postgres user
        self.data, self.sockets = self.folder / "data", self.folder / "sockets"
        self.log = self.folder / "server.log"
        self.port = 0
        self.process: subprocess.Popen | None = None
        self._names = itertools.count(1)
        self._user = pwd.getpwnam("postgres") if os.geteuid() == 0 else None

    def start(self) -> None:
        self.sockets.mkdir()
        password_file = self.folder / "password"
        password_file.write_text(PASSWORD + "\n")
        if self._user is not None:
            for path in (self.folder, self.sockets, password_file):
                os.chown(path, self._user.pw_uid, self._user.pw_gid)
        initdb = subprocess.run(
            [
                self.bin / "initdb",
                "-D",
                self.data,
                "-U",
                ADMIN,
                f"--pwfile={password_file}",
                "--auth=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--no-instructions",
            ],
            capture_output=True,
            text=True,
            cwd=self.folder,
            **self._identity(),
        )
        password_file.unlink()
        if initdb.returncode != 0:
            raise RuntimeError(f"initdb failed: {initdb.stdout}{initdb.stderr}")
        # Speed over durability: the cluster is thrown away at the end. The time zone is not
        # UTC, so that a timestamp stored in the server's local time would show.
        settings = {
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "200",
            "TimeZone": "America/Sao_Paulo",
        }
        for _ in range(5):  # a port found free can be taken by another program before postgres binds it
            self.port = _free_port()
            options = [f"-c{name}={value}" for name, value in settings.items()]
            with self.log.open("a") as log:
                self.process = subprocess.Popen(
                    [
                        self.bin / "postgres",
                        "-D",
                        self.data,
                        "-h",
                        "127.0.0.1",
                        "-p",
                        str(self.port),
                        "-k",
                        self.sockets,
                        *options,
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self.folder,
                    **self._identity(),
                )
            if self._wait_ready():
                return
        raise RuntimeError(f"PostgreSQL did not start; its log:\n{self.log.read_text()[-3000:]}")

    def url(self, database: str, user: str = ADMIN, password: str | None = PASSWORD) -> str:
        credentials = user if password is None else f"{user}:{password}"
        return f"postgresql+psycopg://{credentials}@127.0.0.1:{self.port}/{database}"

    def admin(self, database: str = "postgres") -> psycopg.Connection:
        """A connection as the superuser, in autocommit (CREATE DATABASE needs it)."""
        return psycopg.connect(
            host="127.0.0.1", port=self.port, user=ADMIN, password=PASSWORD, dbname=database, autocommit=True
        )

    def fresh_database(self) -> str:
        """A new empty database; its URL, as the superuser."""
        name = f"arena_{next(self._names)}"
        with self.admin() as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        """Fast shutdown (SIGINT: what `pg_ctl -m fast` sends), then SIGKILL if it hangs; the
        cluster's folder goes in any case."""
        try:
            if self.process is not None and self.process.poll() is None:
                self.process.send_signal(signal.SIGINT)
                try:
                    self.process.wait(STOP_SECONDS)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(STOP_SECONDS)
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _wait_ready(self) -> bool:
        """True once the server takes connections; False if it exited (its port was taken)."""
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                self.admin().close()
                return True
            except psycopg.OperationalError:
                time.sleep(0.1)
        self.process.kill()
        self.process.wait()
        raise RuntimeError(
            f"PostgreSQL took over {READY_SECONDS} s to start; its log:\n{self.log.read_text()[-3000:]}"
        )

    def _identity(self) -> dict:
        """Run as the postgres system user when we are root (initdb and postgres refuse root)."""
        if self._user is None:
            return {}
        return {
            "user": self._user.pw_uid,
            "group": self._user.pw_gid,
            "extra_groups": [],
            "env": {**os.environ, "HOME": self._user.pw_dir},
        }


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
