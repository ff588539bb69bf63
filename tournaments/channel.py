"""A direct connection from a match runner to a contestant host, for the merchants' daily turns
and the end of their matches.

A hosted match asks each hosted merchant for one turn a day, so turns are most of what a
match runner and a host do. Asked as a Ray actor call, a turn costs several times what it
costs over a connection of its own (`benchmarks/turns.py`, a 2-core AMD EPYC VM, 2026-12-04,
2,000 turns of a 1.5 kB Observation, 14 at once): 0.56 ms of the runner's CPU against 0.06 ms,
0.47 ms of the host's against 0.14 ms, and 0.61 ms of wall time against 0.17 ms. So the turns
go over a TCP connection: the host listens on its node's address, the runner asks it through
Ray where and with which token (`ContestantHost.channel`), connects once, and multiplexes the
turns of all its matches over that one connection, and each match's `finish` at its end. Ray
still starts, places, restarts and readies the hosts and carries every other call.

A frame is a header (request id, status, payload length) and the payload. A request's payload
is a pickled request of tournaments.hosts (a TurnRequest or a FinishRequest); the reply's is
the host's answer (status OK) or the pickled exception it raised (status RAISED). A connection
that closes fails every request waiting on it with HostGone: the host's process died (Ray
restarts it; the next request connects to the new one) or its node vanished (noticed within
UNACKNOWLEDGED_S)."""

from __future__ import annotations

import asyncio
import functools
import hmac
import itertools
import pickle
import secrets
import socket
import struct
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor

HEADER = struct.Struct("!QBI")  # request id, status, payload length
OK, RAISED = 0, 1
TOKEN_BYTES = 16
TOKEN_WAIT_S = 10.0  # a client that has not sent the token by then is dropped
# A host whose node died or was cut off sends no FIN: the runner's side of the connection
# gives up after this long without an acknowledgement from the host's kernel (which answers
# at once, however long the contestant thinks), and its turns fail with HostGone.
UNACKNOWLEDGED_S = 15
CLOSED = "the connection to the contestant host closed: its process died"

Address = tuple[str, int, bytes]  # host, port, token


class HostGone(ConnectionError):
    """The connection to a contestant host closed or could not be made: its process died."""


class TurnServer:
    """The host's side: answers each request frame with `answer(payload)`, run on a pool of
    `threads` threads (so one slow contestant answers many matches at once), from an event
    loop on a thread of its own. Only a client that first sends the token is answered: the
    payloads are pickles."""

    def __init__(self, answer: Callable[[bytes], bytes], threads: int, host: str):
        self.answer = answer
        self.token = secrets.token_bytes(TOKEN_BYTES)
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="turn")
        self.loop = asyncio.new_event_loop()
        bound: Future[tuple[str, int]] = Future()
        threading.Thread(target=self._serve, args=(host, bound), name="turn-server", daemon=True).start()
        self.address: Address = (*bound.result(), self.token)

    def _serve(self, host: str, bound: Future) -> None:
        try:
            server = self.loop.run_until_complete(asyncio.start_server(self._client, host, 0))
        except BaseException as exc:
            bound.set_exception(exc)
            return
        bound.set_result(server.sockets[0].getsockname()[:2])
        self.loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if not hmac.compare_digest(
                await asyncio.wait_for(reader.readexactly(TOKEN_BYTES), TOKEN_WAIT_S), self.token
            ):
                return
            while True:
                request_id, _, size = HEADER.unpack(await reader.readexactly(HEADER.size))
                payload = await reader.readexactly(size)
                answering = self.loop.run_in_executor(self.pool, self.answer, payload)
                answering.add_done_callback(functools.partial(_reply, writer, request_id))
        except (asyncio.IncompleteReadError, OSError):  # OSError includes TimeoutError
            pass  # the runner went away, or never said the token
        finally:
            writer.close()


def _reply(writer: asyncio.StreamWriter, request_id: int, done: asyncio.Future) -> None:
    if done.cancelled():  # the host is shutting down
        return
    exc = done.exception()
    status, body = (OK, done.result()) if exc is None else (RAISED, _pickled(exc))
    if not writer.is_closing():
        writer.write(HEADER.pack(request_id, status, len(body)) + body)


def _pickled(exc: BaseException) -> bytes:
    """The exception pickled, or a RuntimeError saying what it was if it cannot be pickled
    and unpickled (an exception class whose arguments do not match its constructor's) or is
    not an Exception (SystemExit, CancelledError: raised in the runner, they would stop its
    event loop or the match rather than count as the merchant's fault)."""
    try:
        if isinstance(exc, Exception):
            body = pickle.dumps(exc, pickle.HIGHEST_PROTOCOL)
            pickle.loads(body)
            return body
    except Exception:
        pass
    return pickle.dumps(RuntimeError(f"{type(exc).__name__}: {exc}"), pickle.HIGHEST_PROTOCOL)


class TurnClient:
    """A runner's side of the connection to one host (the TurnServer's client), shared by all
    the runner's matches.

    `locate` asks the host (through Ray) for its address; it is asked again whenever the
    connection has closed, so a turn after the host's restart reaches the new process."""

    def __init__(self, locate: Callable[[], Awaitable[Address]]):
        self.locate = locate
        self._connecting: asyncio.Future[asyncio.StreamWriter] | None = None
        self._waiting: dict[int, asyncio.Future[tuple[int, bytes]]] = {}
        self._ids = itertools.count()
        self._reading: asyncio.Task | None = (
            None  # held: the event loop keeps only a weak reference to a task
        )

    async def connect(self) -> None:
        await self._writer()

    async def ask(self, request: bytes) -> bytes:
        """The host's answer to `request`; raises what the host raised, or HostGone."""
        writer = await self._writer()
        if writer.is_closing():  # it closed before this turn could wait on it
            raise HostGone(CLOSED)
        request_id = next(self._ids)
        reply = self._waiting[request_id] = asyncio.get_running_loop().create_future()
        writer.write(HEADER.pack(request_id, OK, len(request)) + request)
        try:
            status, body = await reply
        finally:
            self._waiting.pop(request_id, None)
        if status == RAISED:
            raise pickle.loads(body)
        return body

    async def _writer(self) -> asyncio.StreamWriter:
        """The open connection, or one being made for all who ask meanwhile (a waiter that
        gives up does not stop it for the others)."""
        if self._connecting is None or (
            self._connecting.done()
            and (self._connecting.cancelled() or self._connecting.exception() is not None)
        ):
            self._connecting = asyncio.ensure_future(self._open())
            self._connecting.add_done_callback(_retrieved)  # a failure no waiter is left for is not logged
        return await asyncio.shield(self._connecting)

    async def _open(self) -> asyncio.StreamWriter:
        host, port, token = await self.locate()
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError as exc:  # the host died after saying where it listens
            raise HostGone(f"cannot connect to the contestant host: {exc}") from None
        _give_up_unacknowledged(writer.get_extra_info("socket"))
        writer.write(token)
        self._reading = asyncio.ensure_future(self._read(reader, writer))
        return writer

    async def _read(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request_id, status, size = HEADER.unpack(await reader.readexactly(HEADER.size))
                body = await reader.readexactly(size)
                reply = self._waiting.pop(request_id, None)
                if reply is not None and not reply.done():  # else the turn gave up waiting
                    reply.set_result((status, body))
        except (asyncio.IncompleteReadError, OSError):
            pass
        finally:  # no await from here on: no turn can start on this connection meanwhile
            writer.close()
            self._connecting = None
            for reply in self._waiting.values():
                if not reply.done():
                    reply.set_exception(HostGone(CLOSED))
            self._waiting.clear()


def _retrieved(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()


def _give_up_unacknowledged(sock: socket.socket) -> None:
    """Keepalive probes on an idle connection and a bound on unacknowledged data, so a host
    that vanished without closing (see UNACKNOWLEDGED_S) is noticed. Linux options; other
    systems keep their defaults."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in (
        ("TCP_KEEPIDLE", 5),
        ("TCP_KEEPINTVL", 5),
        ("TCP_KEEPCNT", 2),
        ("TCP_USER_TIMEOUT", UNACKNOWLEDGED_S * 1000),
    ):
        if hasattr(socket, option):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)
