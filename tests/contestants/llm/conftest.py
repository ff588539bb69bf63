"""Fixtures for the provider tests: a decision request, and a scripted loopback server that
speaks just enough of the OpenAI chat API to misbehave on cue."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from contestants.calls.types import CompletionRequest, Message
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


@dataclass
class StubServer:
    """Answers POST /v1/chat/completions by popping the next behaviour from `script`
    ("ok" when it is empty): "ok", "429" (Retry-After: 0), "429-wait-5" (Retry-After: 5),
    "500", "400", "401-echo" (echoes the Authorization
    header in the error, as a careless server might), "quota" (OpenAI's 429 for a spent
    quota), "hang" (no answer until the test ends), "nonjson" (200 with an HTML body)."""

    script: list[str] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    address: str = ""

    @property
    def base_url(self) -> str:
        return f"{self.address}/v1"


@pytest.fixture
def stub_server(loopback, chat_completion) -> StubServer:
    stub = StubServer()
    lock = threading.Lock()

    def respond(path: str, headers: Any, body: bytes) -> tuple[int, Any, dict[str, str]] | None:
        with lock:
            stub.requests.append(
                {
                    "path": path,
                    "headers": {k.lower(): v for k, v in headers.items()},
                    "body": json.loads(body),
                }
            )
            behaviour = stub.script.pop(0) if stub.script else "ok"
        if behaviour == "hang":
            return None
        if behaviour == "ok":
            return 200, chat_completion(DECISION), {}
        if behaviour == "nonjson":
            return 200, "<html>gateway says hello</html>", {"Content-Type": "text/html"}
        if behaviour == "quota":
            message = "You exceeded your current quota, please check your plan and billing details."
            return (
                429,
                {
                    "error": {
                        "message": message,
                        "type": "insufficient_quota",
                        "param": None,
                        "code": "insufficient_quota",
                    }
                },
                {},
            )
        if behaviour == "401-echo":
            return (
                401,
                {
                    "error": {
                        "message": f"bad key {headers.get('Authorization')}",
                        "type": "invalid_request_error",
                    }
                },
                {},
            )
        status, _, wait = behaviour.partition("-wait-")  # "429-wait-5": a 429 asking for 5 s
        return (
            int(status),
            {"error": {"message": f"stub says {status}", "type": "error"}},
            {"Retry-After": wait or "0"} if status == "429" else {},
        )

    stub.address = loopback(respond)
    return stub
