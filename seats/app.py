"""The people's pages served: each person reaches their seat by a link of their own, with a
secret token in it, and the app shows that seat's open page (seats.pages) and takes what is sent
for it, over the desk's people's side (contestants.desk.PeopleSide). It reads and writes nothing
else.

`GET /seat/{token}` shows the seat's open page once its person has come, else, or with none
open, a waiting page of who of the session's people have come, with a button to take the seat
until its own person has. `POST /seat/{token}` of that button (COME) marks them come
(PeopleSide.join); any other answers the open page with the fields of its form as typed (the seat reads
them, by the market's checks), if the page it was sent from is that page: its key (in hidden
fields) must be the open page's, and the seat is the link's, never the form's. A post for any
other page (a stale tab, a second click, a page withdrawn when its time was up, another seat's)
is not taken, and says so on the open page. Then 303 to the GET (post, redirect, get: a reload
sends nothing twice).

A token that is no seat's is answered 404, alike for every path, naming nothing. The pages run no
script (a Content-Security-Policy forbids any), are never cached, and are framed by no site.
"""

from __future__ import annotations

import logging
import secrets
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from common.serving import InThread
from contestants.base import ANSWER
from contestants.desk import OpenPage, PeopleSide
from seats.pages import KEY_FIELDS, key_fields, open_page, waiting_page

LOG = logging.getLogger(__name__)

HEADERS = {
    # the pages' own styles are inline, their icon a data: address; nothing else may load or run
    "content-security-policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "cache-control": "no-store",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",  # the token is in the address
}

NOTICES = {
    "sent": "Sent.",
    "closed": "That page had closed (answered already, or its time was up): what you sent was not taken.",
}
"""What a page says of the person's last post, by the word its address carries after it."""

UNKEPT = (
    "What you sent could not be kept just now, so it was not taken: the page is still open, send it again."
)
LARGEST_POST = 1 << 20  # bytes: a form far larger than any a person fills
COME = {"come": "yes"}
"""What the waiting page's button posts: its person has come to the seat. Only a person's click
seats them, never the link's opening: a chat that fetches a link to preview it comes to no seat."""


def seats_app(people: PeopleSide, links: Mapping[str, str]) -> Starlette:
    """The pages of the seats in `links` (a token -> its seat's merchant) over `people`."""
    pages = SeatPages(people, links)
    return Starlette(
        routes=[
            Route("/seat/{token}", pages.show, methods=["GET"]),
            Route("/seat/{token}", pages.send, methods=["POST"]),
        ],
        exception_handlers={404: nothing_here, 405: nothing_here, Exception: failed},
    )


class SeatPages:
    """The endpoints. The desk's calls may wait on another process (the run's desk is an actor):
    they are made on a worker thread, never on the server's loop."""

    def __init__(self, people: PeopleSide, links: Mapping[str, str]) -> None:
        self.people, self.links = people, dict(links)
        self.names = list(dict.fromkeys(links.values()))  # the session's seats, in the links' order

    async def show(self, request: Request) -> Response:
        merchant = self.seat(request)
        if merchant is None:
            return nothing_here(request)
        notice = NOTICES.get(request.query_params.get("said", ""))
        joined = await run_in_threadpool(self.people.joined)
        if merchant in joined:
            opened = await run_in_threadpool(self.people.page, merchant)
            if opened is not None:
                return page(open_page(opened, request.url.path, notice))
        people = [(name, name in joined) for name in self.names]
        return page(waiting_page(merchant, people, request.url.path, notice, come=merchant in joined))

    async def send(self, request: Request) -> Response:
        merchant = self.seat(request)
        if merchant is None:
            return nothing_here(request)
        posted = await posted_form(request)
        if posted is None:
            return page("<!DOCTYPE html><title>Too large</title><p>That form is too large to take.", 413)
        if posted == COME:
            await run_in_threadpool(self.people.join, merchant)
            return RedirectResponse(request.url.path, 303, headers=HEADERS)
        opened = await run_in_threadpool(self.people.page, merchant)
        if opened is None or not sent_from(opened, posted):
            return said(request, "closed")
        fields = {name: posted[name] for name in own_fields(opened) if name in posted}
        try:
            taken = await run_in_threadpool(self.people.submit, opened.asked.key, fields)
        except Exception:
            LOG.exception("a page's answer could not be kept")
            return page(open_page(opened, request.url.path, UNKEPT, fields), 503)
        return said(request, "sent" if taken else "closed")

    def seat(self, request: Request) -> str | None:
        """The merchant whose link the request came by; None: no seat's. Every token is compared
        in full, in constant time, whichever matches."""
        token = request.path_params["token"].encode()
        found = [merchant for t, merchant in self.links.items() if secrets.compare_digest(t.encode(), token)]
        return found[0] if found else None


def sent_from(opened: OpenPage, posted: Mapping[str, str]) -> bool:
    """Whether `posted` was sent from the page `opened`: it names that page's key, all of it
    and nothing else."""
    return {name: posted[name] for name in KEY_FIELDS if name in posted} == key_fields(opened.asked.key)


def own_fields(opened: OpenPage) -> list[str]:
    """The names of the fields of the page's form: what it sends beside them is not the seat's to read."""
    asked = opened.asked
    if asked.form is None:
        return [ANSWER]
    return [f.name for f in asked.form.fields]


async def posted_form(request: Request) -> dict[str, str] | None:
    """The fields of a form posted as a browser posts one (URL-encoded, UTF-8), the last of a
    name repeated; None if it is larger than LARGEST_POST."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > LARGEST_POST:
            return None
    return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))


def page(html: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(html, status_code=status, headers=HEADERS)


def said(request: Request, word: str) -> Response:
    """After a post: back to the seat's page, saying `word`'s notice."""
    return RedirectResponse(f"{request.url.path}?said={word}", 303, headers=HEADERS)


def nothing_here(request: Request, exc: Exception | None = None) -> Response:
    """The answer to an address that is no seat's page: the same, whatever was asked."""
    return page("<!DOCTYPE html><title>Not found</title><p>There is no page here.", 404)


def failed(request: Request, exc: Exception) -> Response:
    """A page that failed (the desk out of reach): said without detail; the server logs it."""
    return page("<!DOCTYPE html><title>Failed</title><p>This page failed just now: load it again.", 500)


@dataclass
class ServedSeats:
    """The pages served in a thread of this process: `links`, each seat's address by merchant."""

    links: dict[str, str]
    served: InThread

    def stop(self) -> None:
        self.served.stop()


def serve_seats(
    people: PeopleSide, merchants: list[str], listener: socket.socket, host: str = "127.0.0.1"
) -> ServedSeats:
    """The pages of `merchants`' seats over `people`, served on `listener` (common.serving.
    listening on `host`) by a daemon thread of this process, once it has started; a token of
    its own in each seat's link."""
    tokens = {merchant: secrets.token_urlsafe(24) for merchant in merchants}
    served = InThread(
        seats_app(people, {token: merchant for merchant, token in tokens.items()}), listener, host
    )
    return ServedSeats(
        {merchant: f"{served.address}/seat/{token}" for merchant, token in tokens.items()}, served
    )
