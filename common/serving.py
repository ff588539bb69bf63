"""Serving a front door's pages from this process: the viewer (`arena serve`) and the people's
seats (`arena run`), on one listening socket each, by uvicorn."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn
from starlette.applications import Starlette

from common.errors import UserError

LOOPBACK = ("127.0.0.1", "localhost")  # the names of this machine alone
ANY_ADDRESS = ("0.0.0.0", "::")  # every address of this machine


def listening(host: str, port: int) -> socket.socket:
    """A socket on host:port (0: any free one), listening: from then on a browser given its
    address waits for the server rather than being refused. UserError, one line, where it
    cannot be."""
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
        listener.listen(128)
    except OSError as exc:
        listener.close()
        raise UserError(f"--host/--port: cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    return listener


def address(host: str, listener: socket.socket) -> str:
    """The address a browser is given for `listener` on `host` (as the user named it, or this
    machine's name for a server on all its addresses): http://HOST:PORT, an IPv6 host in []."""
    port = listener.getsockname()[1]
    shown = socket.gethostname() if host in ANY_ADDRESS else host
    return f"http://[{shown}]:{port}" if ":" in shown else f"http://{shown}:{port}"


def server(app: Starlette) -> uvicorn.Server:
    """uvicorn serving `app`, telling only of what fails (the pages asked for are not logged)."""
    return uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))


class InThread:
    """`app` served on `listener` (bound on `host`) by a daemon thread of this process, once it
    has started."""

    def __init__(self, app: Starlette, listener: socket.socket, host: str = "127.0.0.1") -> None:
        self.address = address(host, listener)
        self.server = server(app)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [listener]}, daemon=True)
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError(f"the server on {self.address} stopped as it started")
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
