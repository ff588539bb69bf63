"""Shared fixtures: paths to the shipped files, one Ray instance for the in-process tests, one
PostgreSQL server for the tests of databases, a factory of day records, and HTTP servers on
loopback that answer as a test scripts them (with OpenAI chat completions). Also the
Hypothesis profiles."""

from __future__ import annotations

import dataclasses
import fcntl
import functools
import importlib
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import typing
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import typer.main
import typer.testing
from click.testing import Result
from hypothesis import settings
from suite_time import RECORDED_SECONDS, ROOT, file_seconds

from market.types import DayRecord

# Bytecode caches on, for this process and every process it starts (xdist's workers, `arena`
# commands, Ray's workers): where PYTHONDONTWRITEBYTECODE is set, as on the VMs arena is
# checked on, each xdist worker compiled and rewrote every test module (13 CPU-s against 6
# with the caches) and every process compiled arena's own modules at each start. The installed
# packages are compiled at install ([tool.uv] compile-bytecode), or, where .ci/run installs
# them without, by the first test process that imports them; __pycache__ is ignored by git.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# typer's CliRunner builds the click command from the app again at every invoke, reading each
# command's signature anew: more CPU than most commands the tests run (two thirds of the time
# in `invoke` over test_cli_errors' 321 calls). The app does not change within a run, so each
# app's command is built once.
typer.testing._get_command = functools.cache(typer.main.get_command)  # type: ignore[attr-defined]

# Hypothesis profiles. "ci", the default, is derandomised: the examples come from a hash of each
# test, not a random seed, so every run (in CI or not) tries the same examples and a failure seen
# once fails again on the next run, with no database of past failures to carry between machines.
# HYPOTHESIS_PROFILE=dev explores at random, keeps failures in .hypothesis/ and prints the
# @reproduce_failure blob of a failure. A profile only sets defaults: a test's @settings wins.
# "ci" keeps the rest of Hypothesis's own "ci" profile (no deadline, no too_slow health check),
# which it replaces.
# How many examples each test tries is its own (tests/property_examples.py multiplies them by
# $ARENA_EXAMPLES_FACTOR).
settings.register_profile("ci", settings.get_profile("ci"), derandomize=True, print_blob=True)
settings.register_profile("dev", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "ci")


# Fixtures that start something for their tests (a Ray instance, a PostgreSQL server, the
# embedded model): a test that uses one is slow.
SLOW_FIXTURES = ("ray_local", "cluster_env", "postgres", "smollm2")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `slow` every test that uses one of SLOW_FIXTURES, beside those marked by hand (that
    run arena in processes of its own, or the embedded model): `pytest -m "not slow"` is the
    subset to run between edits. Put the longest files first (`file_seconds`): pytest-xdist
    (`--dist loadfile --no-loadscope-reorder`, as .ci/run runs it) hands out files in this
    order, so the long ones start early instead of ending the run on one worker. And refuse
    a property test whose own @settings undoes the profile's derandomize or print_blob: CI
    would then draw other examples on every run, or not say how to replay a failure."""
    profile = settings.default
    slow_in_file: Counter[str] = Counter()
    for item in items:
        if any(name in getattr(item, "fixturenames", ()) for name in SLOW_FIXTURES):
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("slow") is not None:
            slow_in_file[item.location[0]] += 1
        test = getattr(item, "obj", None)
        if not getattr(test, "is_hypothesis_test", False):
            continue
        own = getattr(
            test, "_hypothesis_internal_use_settings", None
        )  # where @given keeps the test's settings
        if own is None:
            raise pytest.UsageError(
                f"{item.nodeid}: cannot read its Hypothesis settings (has Hypothesis moved them?)"
            )
        if (own.derandomize, own.print_blob) != (profile.derandomize, profile.print_blob):
            raise pytest.UsageError(
                f"{item.nodeid}: its @settings change derandomize or print_blob: leave them to the profile"
            )
    seconds = file_seconds(slow_in_file)
    items.sort(key=lambda item: -seconds[item.location[0]])  # stable: a file's tests keep their order


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-durations",
        action="store_true",
        help=f"write each test file's time in this run to {RECORDED_SECONDS.relative_to(ROOT)} (whole suite)",
    )


_file_time: Counter[str] = Counter()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Each phase's time, by file (under xdist, the workers' reports reach the controller)."""
    _file_time[report.nodeid.split("::")[0]] += report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    if session.config.getoption("--record-durations") and not hasattr(session.config, "workerinput"):
        seconds = {file: round(total, 1) for file, total in sorted(_file_time.items())}
        RECORDED_SECONDS.write_text(json.dumps(seconds, indent=1) + "\n")


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API keys the shipped files and the docs' examples name, set: checking a file looks
    for them; no call is made with them."""
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.setenv(variable, "sk-placeholder")


# One Ray cluster for the whole run, shared by the processes whose tests play tournaments in
# them (pytest's own, or each xdist worker): the first to need it starts it, the others join it,
# and pytest stops it at the end (a pytest killed with SIGKILL leaves it running: `ray stop`).
# A Ray of each worker's own would cost the machine a start and the idle work of another set of
# Ray's processes per worker. Its folder is made by pytest before the workers start, which find
# it in their environment.
SHARED_RAY = "ARENA_TEST_RAY_FOLDER"
RAY_START_S = 120


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        os.environ[SHARED_RAY] = tempfile.mkdtemp(prefix="arenaray", dir="/tmp")  # short: Ray's sockets
        compile_the_learning_kernel()
        write_the_bytecode()


# What every test process imports, and most of what their Ray workers do (2,000 modules)
IMPORTED_EVERYWHERE = (
    "arena.cli",
    "tournaments.run",
    "tournaments.desk",
    "viewer.app",
    "seats.app",
    "results.presentation.export",
    "contestants.llm.merchant",
    "contestants.llm.providers",
    "openai",
    "anthropic",
    "psycopg",
    "playwright.sync_api",
    "choix",
)


def write_the_bytecode() -> None:
    """Import IMPORTED_EVERYWHERE once, before xdist's workers start, where their bytecode is not
    written yet: in a fresh clone (.ci/run installs without compiling it) three workers and the
    first Ray workers would each compile the same modules at the same moment."""
    ray_init = Path(str(importlib.util.find_spec("ray").origin))  # type: ignore[union-attr]  # installed
    if list(ray_init.parent.glob("__pycache__/__init__.*.pyc")):
        return
    for name in IMPORTED_EVERYWHERE:
        importlib.import_module(name)


def compile_the_learning_kernel() -> None:
    """Compile the Q-learners' kernel (numba, kept beside its module in __pycache__) once,
    before xdist's workers start, where it is not compiled yet: in a fresh clone each worker,
    and each Ray worker that plays a learner, would compile it at the same moment, some 6 CPU-s
    apiece. A session of one period is enough to compile it."""
    if list((ROOT / "contestants" / "__pycache__").glob("qlearning_kernel.learn-*.nbi")):
        return
    from contestants.qlearning import QLearningParams, Session, learn
    from market.scenario import load_scenario

    once = QLearningParams(stable_periods=1, max_periods=1)
    learn([Session(load_scenario("calvano"), (once, once), 0)])


def pytest_unconfigure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or SHARED_RAY not in os.environ:
        return
    from arena_process import kill_session

    folder = Path(os.environ.pop(SHARED_RAY))
    head = folder / "head.pid"
    if head.exists():
        kill_session(int(head.read_text()))  # `ray stop` would wait for a graceful stop
    shutil.rmtree(folder, ignore_errors=True)


def shared_ray_address() -> str:
    """The address of the run's Ray cluster, started here if no process of the run has yet:
    `ray start --head` in a session of its own, two CPUs, without token authentication (the
    tests of tokens start clusters of their own), the tests' API keys in its environment
    (tests/api_keys.py) for the hosts to read as they read a user's. Without a log monitor:
    no test reads its workers' output through Ray, and tailing every worker's log for the
    whole run cost 7.6 CPU-s of a suite's 535; without the autoscaler's monitor (`--no-monitor`,
    a flag `ray start` keeps hidden), which a fixed cluster never uses."""
    from api_keys import KEYS
    from arena_process import BIN, arena_env, kill_session

    folder = Path(os.environ[SHARED_RAY])
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        address = folder / "address"
        if not address.exists():
            with socket.socket() as free:
                free.bind(("127.0.0.1", 0))
                port = free.getsockname()[1]
            head = subprocess.Popen(
                [str(BIN / "ray"), "start", "--block", "--head", f"--port={port}", "--num-cpus=2"]
                + ["--include-dashboard=false", "--include-log-monitor=false", "--disable-usage-stats"]
                + ["--no-monitor"]
                + [f"--temp-dir={folder / 'ray'}"],
                env={**arena_env(), **KEYS, "RAY_AUTH_MODE": "disabled"},  # a cluster of this machine's tests
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            (folder / "head.pid").write_text(str(head.pid))
            deadline = time.monotonic() + RAY_START_S
            while not _listening(port):
                if head.poll() is not None or time.monotonic() > deadline:
                    kill_session(head.pid)
                    raise RuntimeError(f"the tests' Ray cluster did not start (exit status {head.poll()})")
                time.sleep(0.2)
            address.write_text(f"127.0.0.1:{port}")
        return address.read_text()


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="session")
def cluster_env() -> dict[str, str]:
    """The environment of an `arena` process that plays on the run's Ray cluster (RAY_ADDRESS),
    for the tests whose point is not how a run starts its own Ray: a local Ray costs the
    machine about 5 CPU-s to start and stop (tests/arena_process.py's `own_ray_env` is for
    the tests that need one)."""
    from arena_process import arena_env

    return {**arena_env(), "RAY_ADDRESS": shared_ray_address()}


@pytest.fixture(scope="session")
def ray_local():
    """The run's Ray cluster (shared_ray_address), joined by this process for the tests that
    run tournaments in it."""
    import ray
    from api_keys import KEYS

    from tournaments.cluster import init_ray

    os.environ.pop("RAY_ADDRESS", None)
    os.environ.update(KEYS)
    init_ray(address=shared_ray_address())
    yield
    ray.shutdown()


@pytest.fixture
def arena_here(ray_local, monkeypatch) -> Callable[..., Result]:
    """`arena_here(folder, *args)`: the command `arena ARGS` run from `folder` in this process,
    on the session's Ray instance, its output as printed to a log. A run as a user's but for
    its process, which only the tests of crashes, clusters and processes need (they start
    `arena` itself, tests/arena_process.py): an own process would start Ray afresh and import
    arena again, more than half of a short run's CPU. An exception that escapes the command
    fails the test, as a traceback would."""
    from typer.testing import CliRunner

    from arena.cli import app

    def run(folder: Path, *args: str) -> Result:
        monkeypatch.chdir(folder)  # the working folder of the run, and of its hosts
        result = CliRunner().invoke(app, list(args))
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    return run


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server of Debian's package for the session (tests/postgres_server.py):
    `postgres.fresh_database()` makes an empty database and returns its URL. Stopped, and its
    folder removed, at the end of the session whatever the tests did."""
    from postgres_server import PostgresServer

    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()


_DAY_RECORD_TYPES = typing.get_type_hints(DayRecord)


def day_record(
    *,
    merchant: str = "m0",
    day: int = 1,
    products: Iterable[str] | None = None,
    tables: float = 0.0,
    numbers: float = 0.0,
    **fields: Any,
) -> DayRecord:
    """A DayRecord of `merchant` on `day` in which nothing happened, changed by `fields`.

    Each field of DayRecord without a default of its own gets a neutral value from its type:
    per-product tables (dict[str, float]) map each product to `tables`, numbers (float: money,
    reputation, net worth) are `numbers`, lists are empty, flags False. The products are
    `products`, else those of `prices` when `fields` gives it, else tea alone.
    """
    if products is None:
        products = list(fields["prices"]) if "prices" in fields else ["tea"]
    products = list(products)
    neutral: dict[str, Any] = {"merchant": merchant, "day": day}
    for f in dataclasses.fields(DayRecord):
        if (
            f.name in neutral
            or f.default is not dataclasses.MISSING
            or f.default_factory is not dataclasses.MISSING
        ):
            continue
        kind = _DAY_RECORD_TYPES[f.name]
        if kind == dict[str, float]:
            neutral[f.name] = dict.fromkeys(products, tables)
        elif kind is float:
            neutral[f.name] = numbers
        elif kind is bool:
            neutral[f.name] = False
        elif typing.get_origin(kind) is list:
            neutral[f.name] = []
    return DayRecord(**{**neutral, **fields})


@pytest.fixture(name="day_record", scope="session")  # a plain function: usable by fixtures of any scope
def day_record_fixture():
    """`day_record`, for tests and for the factories of other test folders."""
    return day_record


def chat_completion(arguments: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI chat completion whose answer is a call of the `decision` function."""
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "stub-model",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "decision", "arguments": json.dumps(arguments)},
                        }
                    ],
                },
            }
        ],
        "usage": {
            "prompt_tokens": 50,
            "completion_tokens": 12,
            "total_tokens": 62,
            "prompt_tokens_details": {"cached_tokens": 10},
        },
    }


@pytest.fixture(name="chat_completion")
def chat_completion_fixture():
    """`chat_completion`, for the test servers."""
    return chat_completion


# What a loopback server answers a POST (path, headers, body) with: status, body (a dict is sent
# as JSON) and extra headers; or None for no answer at all, until the test ends.
Responder = Callable[[str, Message, bytes], tuple[int, Any, dict[str, str]] | None]


class _Loopback(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet about a client that hung up (the tests' timeouts make them): its traceback,
        printed while a command runs, would read as the command's own."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@pytest.fixture
def loopback() -> Iterator[Callable[[Responder], str]]:
    """`loopback(respond)` starts an HTTP server on 127.0.0.1 that answers every POST with
    `respond` and returns its address (http://127.0.0.1:PORT). Closed after the test."""
    servers: list[tuple[_Loopback, threading.Thread]] = []
    ended = threading.Event()

    def start(respond: Responder) -> str:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                reply = respond(self.path, self.headers, self.rfile.read(int(self.headers["Content-Length"])))
                if reply is None:
                    ended.wait(10)
                    return
                status, body, headers = reply
                data = (body if isinstance(body, str) else json.dumps(body)).encode()
                self.send_response(status)
                for name, value in {
                    "Content-Type": "application/json",
                    **headers,
                    "Content-Length": str(len(data)),
                }.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        server = _Loopback(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        servers.append((server, thread))
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    ended.set()
    for server, thread in servers:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def fake_openai():
    """A stand-in for today's OpenAI API on loopback (tests/fakes/openai_api.py)."""
    from fakes.openai_api import FakeOpenAI

    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def fake_anthropic():
    """A stand-in for today's Anthropic Messages API on loopback (tests/fakes/anthropic_api.py)."""
    from fakes.anthropic_api import FakeAnthropic

    with FakeAnthropic() as fake:
        yield fake
