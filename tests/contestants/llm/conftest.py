"""Fixtures for the provider tests: a decision request, and a scripted loopback server that
speaks just enough of the OpenAI chat API to misbehave on cue."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from contestants.llm import CompletionRequest, Message
from market.types import Decision

DECISION = {"operations": [{"op": "set_price", "product": "widget", "price": 19.5}], "note": "hold price"}


@pytest.fixture
def decision_request() -> CompletionRequest:
    return CompletionRequest(
        messages=(
            Message(role="system", content="You run a shop selling widgets. Answer with today's decision."),
            Message(role="user", content="Day 3 of 30. Cash 1000. Widget stock 40, price 20, unit cost 10."),
        ),
        json_schema=Decision.model_json_schema(),
        temperature=0.0,
        seed=7,
        max_tokens=200,
    )


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
    """`chat_completion`, for test modules' own servers."""
    return chat_completion


@dataclass
class StubServer:
    """Answers POST /v1/chat/completions by popping the next behaviour from `script`
    ("ok" when it is empty): "ok", "429", "500", "400", "401-echo" (echoes the Authorization
    header in the error, as a careless server might), "hang" (sleeps past any test timeout),
    "nonjson" (200 with an HTML body)."""

    script: list[str] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0
    release: threading.Event = field(default_factory=threading.Event)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


@pytest.fixture
def stub_server() -> Iterator[StubServer]:
    stub = StubServer()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                stub.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
                behaviour = stub.script.pop(0) if stub.script else "ok"
            if behaviour == "hang":
                stub.release.wait(10)
                return
            if behaviour == "ok":
                self._send(200, json.dumps(chat_completion(DECISION)))
            elif behaviour == "nonjson":
                self._send(200, "<html>gateway says hello</html>", "text/html")
            elif behaviour == "401-echo":
                error = {"message": f"bad key {self.headers.get('Authorization')}", "type": "invalid_request_error"}
                self._send(401, json.dumps({"error": error}))
            else:
                status = int(behaviour)
                headers = {"Retry-After": "0"} if status == 429 else {}
                self._send(status, json.dumps({"error": {"message": f"stub says {status}", "type": "error"}}), headers=headers)

        def _send(self, status: int, body: str, content_type: str = "application/json", headers: dict[str, str] | None = None) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    stub.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield stub
    stub.release.set()
    server.shutdown()
    server.server_close()
    thread.join(5)
