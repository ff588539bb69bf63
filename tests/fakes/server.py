"""The HTTP side shared by the stand-ins for hosted model APIs (`openai_api`, `anthropic_api`).

A stand-in listens on 127.0.0.1, answers each POST with its subclass's `handle`, and records
every call. Each call gets two stamps from one counter shared by all its calls, `began` when
it arrives and `ended` when its answer is ready, just before it is sent (so no client can
have an answer whose call is not recorded as ended), so a test can tell whether two calls
overlapped by comparing stamps instead of timing them. Tests may script failures for the next
calls (`fail`) and slow every answer down (`delay`). A stand-in counts a prompt's tokens at
`chars_per_token` characters a token (4, as `tokens` does, unless a test makes it denser).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, Any, dict[str, str]]  # status, body (a dict is sent as JSON), extra headers


@dataclass
class Call:
    """One request as received, and what it was answered."""

    path: str
    headers: dict[str, str]  # names in lower case
    body: Any  # the parsed JSON, or the raw text when it is not JSON
    began: int
    ended: int | None = None
    status: int | None = None
    reply: Any = None


@dataclass
class Scripted:
    """A failure to answer the next call with, instead of handling it."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class FakeAPI:
    """Base of the stand-ins. Subclasses implement `handle(call) -> Reply` and `failure(status,
    retry_after) -> Scripted`, the API's own error body for a scripted status."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.delay = 0.0  # seconds before each answer
        self.chars_per_token = 4.0  # of the prompt, as the stand-in counts it for its window and usage
        self._script: list[Scripted] = []
        self._stamps = itertools.count()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.address = ""

    # -- what subclasses provide -----------------------------------------------------------

    def handle(self, call: Call) -> Reply:  # pragma: no cover - abstract
        raise NotImplementedError

    def failure(self, status: int, retry_after: float | None) -> Scripted:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- what tests use --------------------------------------------------------------------

    def fail(self, status: int, times: int = 1, retry_after: float | None = None) -> None:
        """Answer the next `times` calls with the API's error for `status` (with Retry-After
        in seconds when given)."""
        with self._lock:
            self._script.extend(self.failure(status, retry_after) for _ in range(times))

    def count(self, text: str) -> int:
        """The prompt tokens of `text`, as this stand-in counts them: one per `chars_per_token`
        characters, at least one."""
        return max(1, int(len(text) / self.chars_per_token))

    def calls_to(self, path_suffix: str) -> list[Call]:
        return [c for c in self.calls if c.path.split("?")[0].endswith(path_suffix)]

    def start(self) -> FakeAPI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw.decode(errors="replace")
                with fake._lock:
                    call = Call(
                        self.path, {k.lower(): v for k, v in self.headers.items()}, body, next(fake._stamps)
                    )
                    fake.calls.append(call)
                    scripted = fake._script.pop(0) if fake._script else None
                if fake.delay:
                    time.sleep(fake.delay)
                if scripted is not None:
                    status, reply, headers = scripted.status, scripted.body, scripted.headers
                else:
                    try:
                        status, reply, headers = fake.handle(call)
                    except Exception as exc:  # a bug in the stand-in: say so rather than hang the client
                        status, reply, headers = 500, {"error": {"message": f"stand-in failed: {exc!r}"}}, {}
                data = (reply if isinstance(reply, str) else json.dumps(reply)).encode()
                with (
                    fake._lock
                ):  # recorded before the client can read it: a client that has its answer finds it
                    call.status, call.reply, call.ended = status, reply, next(fake._stamps)
                self.send_response(status)
                for name, value in {
                    "Content-Type": "application/json",
                    **headers,
                    "Content-Length": str(len(data)),
                }.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

            do_GET = do_POST

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        self.address = f"http://127.0.0.1:{self._server.server_address[1]}"
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(5)
            self._server = None

    def __enter__(self) -> FakeAPI:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()


def overlapping(calls: list[Call]) -> list[tuple[Call, Call]]:
    """Pairs of calls of which the second began before the first had been answered."""
    pairs: list[tuple[Call, Call]] = []
    ordered = sorted(calls, key=lambda c: c.began)
    for i, first in enumerate(ordered):
        pairs += [
            (first, later) for later in ordered[i + 1 :] if first.ended is None or later.began < first.ended
        ]
    return pairs


def tokens(text: str) -> int:
    """The stand-ins' token count: one token per four characters, at least one."""
    return max(1, len(text) // 4)


@dataclass(frozen=True)
class Uses:
    """What a stand-in's `answer` hook returns for the model to use tools: (name, arguments)
    of each call, in order, and the text it writes beside them."""

    calls: tuple[tuple[str, dict[str, Any]], ...]
    text: str = ""
