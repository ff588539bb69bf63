"""The direct connection for the turns (tournaments.channel), with real sockets and a real
host process: answers reach the turn that asked, in any order; what the host raises is
raised; a host that dies fails the turns waiting on it and the next turn reaches its
replacement; a client without the token is not answered."""

from __future__ import annotations

import asyncio
import multiprocessing
import socket
import threading
import time

import pytest

from tournaments.channel import HEADER, UNACKNOWLEDGED_S, HostGone, TurnClient, TurnServer


class Unpicklable(Exception):
    def __reduce__(self):
        raise TypeError("not this one")


class Unreadable(Exception):
    """Pickles, but cannot be unpickled: its constructor wants two arguments."""

    def __init__(self, a, b):
        super().__init__(f"{a} {b}")


SIDE_BY_SIDE = 6
MEETING = threading.Barrier(
    SIDE_BY_SIDE, timeout=30
)  # in the host: broken unless that many turns are handled at once


def answer(request: bytes) -> bytes:
    """'sleep:S:x' answers 'x' after S seconds; 'meet:S:x' too, once SIDE_BY_SIDE turns are
    being answered at once; 'raise:m' raises ValueError(m); 'unreadable' and 'odd' raise
    exceptions that cannot be unpickled or pickled; 'exit' raises SystemExit."""
    kind, _, rest = request.decode().partition(":")
    if kind in ("sleep", "meet"):
        seconds, _, text = rest.partition(":")
        if kind == "meet":
            MEETING.wait()
        time.sleep(float(seconds))
        return text.encode()
    if kind == "raise":
        raise ValueError(rest)
    if kind == "unreadable":
        raise Unreadable("so", "odd")
    if kind == "exit":
        raise SystemExit("bye")
    raise Unpicklable("odd")


def serve(addresses) -> None:
    """A host process: serves `answer` until killed."""
    addresses.send(TurnServer(answer, threads=8, host="127.0.0.1").address)
    time.sleep(3600)


class Host:
    """A TurnServer in a process of its own, which the test can kill like a crashed actor."""

    def __init__(self):
        context = multiprocessing.get_context("spawn")
        receiving, sending = context.Pipe(duplex=False)
        self.process = context.Process(target=serve, args=(sending,), daemon=True)
        self.process.start()
        self.address = receiving.recv()

    def kill(self) -> None:
        self.process.kill()
        self.process.join()


@pytest.fixture
def hosts():
    started: list[Host] = []

    def start() -> Host:
        started.append(Host())
        return started[-1]

    yield start
    for host in started:
        host.kill()


def client_to(current: list[Host]) -> tuple[TurnClient, list[int]]:
    """A client that locates whichever host is current[0], counting how often it asks."""
    asked: list[int] = []

    async def locate():
        asked.append(1)
        return current[0].address

    return TurnClient(locate), asked


def test_each_turn_gets_its_own_answer_in_whatever_order_they_come(hosts):
    """Six turns at once: the host answers none before all six are in hand (side by side,
    not one after another), then each after its own delay, so not in the order asked."""
    client, asked = client_to([hosts()])
    delays = [0.3, 0.0, 0.2, 0.1, 0.25, 0.05]
    assert len(delays) == SIDE_BY_SIDE

    async def play():
        return await asyncio.gather(*(client.ask(f"meet:{d}:turn{i}".encode()) for i, d in enumerate(delays)))

    assert asyncio.run(play()) == [f"turn{i}".encode() for i in range(6)]
    assert len(asked) == 1  # one connection for all of them


def test_what_the_host_raises_is_raised_by_the_turn(hosts):
    client, _ = client_to([hosts()])

    async def play():
        with pytest.raises(ValueError, match="bad day"):
            await client.ask(b"raise:bad day")
        with pytest.raises(RuntimeError, match="Unpicklable: odd"):
            await client.ask(b"odd")
        with pytest.raises(RuntimeError, match="Unreadable: so odd"):
            await client.ask(b"unreadable")
        with pytest.raises(
            RuntimeError, match="SystemExit: bye"
        ):  # not raised as itself: it would stop the runner
            await client.ask(b"exit")
        return await client.ask(b"sleep:0:still here")  # the client survives both

    assert asyncio.run(play()) == b"still here"


def test_a_turn_that_gives_up_leaves_the_connection_working(hosts):
    client, _ = client_to([hosts()])

    async def play():
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(client.ask(b"sleep:0.5:late"), 0.05)
        answer = await client.ask(b"sleep:0.6:next")  # the late answer arrives meanwhile and is dropped
        return answer, client._waiting

    answer, waiting = asyncio.run(play())
    assert answer == b"next" and waiting == {}


def test_a_dead_host_fails_the_waiting_turns_and_the_next_turn_reaches_its_replacement(hosts):
    current = [hosts()]
    client, asked = client_to(current)

    async def play():
        assert await client.ask(b"sleep:0:first") == b"first"
        waiting = asyncio.ensure_future(client.ask(b"sleep:30:never"))
        await asyncio.sleep(0.2)
        dead = current[0]
        current[0] = hosts()  # Ray would restart the actor; locate then names the new process
        dead.kill()
        with pytest.raises(HostGone):
            await asyncio.wait_for(waiting, 10)
        return await client.ask(b"sleep:0:second")

    assert asyncio.run(play()) == b"second"
    assert len(asked) == 2


def test_a_host_that_cannot_be_reached_is_gone(hosts):
    host = hosts()
    address = host.address
    host.kill()

    async def locate():
        return address

    async def play():
        with pytest.raises(HostGone):
            await TurnClient(locate).ask(b"sleep:0:x")

    asyncio.run(play())


def test_a_client_without_the_token_is_not_answered(hosts):
    ip, port, token = hosts().address
    request = b"sleep:0:x"
    with socket.create_connection((ip, port), timeout=5) as sock:
        sock.sendall(bytes(len(token)) + HEADER.pack(1, 0, len(request)) + request)
        assert sock.recv(100) == b""  # closed without an answer
    with socket.create_connection((ip, port), timeout=5) as sock:  # with the token: answered
        sock.sendall(token + HEADER.pack(1, 0, len(request)) + request)
        reply = b""
        while len(reply) < HEADER.size + 1:
            reply += sock.recv(100) or b"!closed"
    assert reply == HEADER.pack(1, 0, 1) + b"x"


def test_the_runner_notices_a_host_that_vanished_without_closing(hosts):
    """No FIN comes from a dead node: keepalive probes and a bound on unacknowledged data
    make the connection fail instead of leaving every later turn to time out."""
    client, _ = client_to([hosts()])

    async def options():
        await client.connect()
        sock = (await client._writer()).get_extra_info("socket")
        return sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE), sock.getsockopt(
            socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT
        )

    assert asyncio.run(options()) == (1, UNACKNOWLEDGED_S * 1000)
