"""Shared fixtures: paths to the shipped files, one Ray instance for the in-process tests, and
HTTP servers on loopback that answer as a test scripts them (with OpenAI chat completions)."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterator
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def ray_local():
    """A local Ray instance shared by the tests that run tournaments in this process."""
    import ray

    os.environ.pop("RAY_ADDRESS", None)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    yield
    ray.shutdown()


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
                        {"id": "call_1", "type": "function", "function": {"name": "decision", "arguments": json.dumps(arguments)}}
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62, "prompt_tokens_details": {"cached_tokens": 10}},
    }


@pytest.fixture(name="chat_completion")
def chat_completion_fixture():
    """`chat_completion`, for the test servers."""
    return chat_completion


# What a loopback server answers a POST (path, headers, body) with: status, body (a dict is sent
# as JSON) and extra headers; or None for no answer at all, until the test ends.
Responder = Callable[[str, Message, bytes], tuple[int, Any, dict[str, str]] | None]


@pytest.fixture
def loopback() -> Iterator[Callable[[Responder], str]]:
    """`loopback(respond)` starts an HTTP server on 127.0.0.1 that answers every POST with
    `respond` and returns its address (http://127.0.0.1:PORT). Closed after the test."""
    servers: list[tuple[ThreadingHTTPServer, threading.Thread]] = []
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
                for name, value in {"Content-Type": "application/json", **headers, "Content-Length": str(len(data))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
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
