"""max_concurrent_calls: however many threads call, at most that many requests reach one
endpoint at once, counted at a slow loopback server."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from contestants.llm import CompletionRequest, Message, get_provider

ANSWER = {"operations": []}


class SlowServer:
    """An OpenAI-compatible chat endpoint on 127.0.0.1 that gives `answer` (a chat completion
    as JSON bytes) after `delay` seconds and records the most requests it ever had in flight
    at once."""

    def __init__(self, answer: bytes, delay: float = 0.3):
        self.in_flight = self.most = self.served = 0
        lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                with lock:
                    server.in_flight += 1
                    server.most = max(server.most, server.in_flight)
                time.sleep(delay)
                with lock:
                    server.in_flight -= 1
                    server.served += 1
                data = answer
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def slow_server(chat_completion):
    """Starts SlowServers; closes them after the test."""
    servers: list[SlowServer] = []
    answer = json.dumps(chat_completion(ANSWER)).encode()

    def start(delay: float = 0.3) -> SlowServer:
        servers.append(SlowServer(answer, delay))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def request(n: int) -> CompletionRequest:
    return CompletionRequest(messages=(Message(role="user", content=f"day {n}"),), json_schema={"type": "object"})


def call(base_url: str, limit: int, n: int) -> None:
    # A provider per call, as an actor has one per match: the limit must hold across them.
    settings = {"base_url": base_url, "api_key_env": None, "no_cache": True, "max_concurrent_calls": limit}
    assert get_provider("openai/slow", settings).complete(request(n)).output == ANSWER


def test_no_more_calls_in_flight_than_the_limit(slow_server):
    server = slow_server()
    with ThreadPoolExecutor(12) as pool:
        list(pool.map(lambda n: call(server.base_url, 3, n), range(12)))
    assert server.served == 12
    assert server.most == 3  # reached, never passed


def test_each_endpoint_has_its_own_limit(slow_server):
    a, b = slow_server(), slow_server()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda n: call((a, b)[n % 2].base_url, 2, n), range(16)))
    assert (a.served, b.served) == (8, 8)
    assert (a.most, b.most) == (2, 2)  # calls to one did not wait for places at the other


def test_the_default_limit_lets_calls_overlap(slow_server):
    server = slow_server(delay=1.0)  # long enough for every thread to be under way
    settings = {"base_url": server.base_url, "api_key_env": None, "no_cache": True}
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda n: get_provider("openai/slow", settings).complete(request(n)), range(4)))
    assert server.most == 4  # below the default of 8: none waited
