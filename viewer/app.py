"""`arena serve`: a read-only web view of an arena database, on Starlette.

Pages (each at a URL that can be shared): the tournaments; a tournament's leaderboard, progress
and matches; a match's charts (plotly.js, served from the plotly package: nothing is fetched
from elsewhere), incidents, conduct (where it was judged) and day-by-day table; one day of a
match, every merchant's books, operations and model calls, the words its judges labelled
marked. The tournaments' page and a tournament's page ask every few
seconds whether the record changed (`/changes`) and, when it did, read themselves again in
place, so that they follow a tournament that is running; every page says in a banner when the
database cannot be read.

The database is opened for reading only. A server reached from other machines (`token`) asks
for the token once (in the address, `?token=...`), then knows the browser by a cookie."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from importlib.resources import files
from pathlib import Path
from typing import Any

from jinja2 import ChoiceLoader, Environment, PackageLoader, StrictUndefined
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Route

from common import serving
from common.serving import LOOPBACK
from results.errors import DatabaseError, NotFound
from results.presentation.plotly_charts import figure_csv
from results.presentation.transcript import step_lines
from results.storage import store
from results.storage.db import describe_failure, engine_for
from results.storage.schema import LARGEST_ID
from viewer import pages

PLOTLY_JS = Path(str(files("plotly") / "package_data" / "plotly.min.js"))  # the plotly package ships it


def cookie_name(request: Request) -> str:
    """The token's cookie, named after the port: a browser sends a host's cookies to all its
    ports, and two viewers on one machine must not take each other's."""
    return f"arena_token_{request.url.port}"


TEMPLATES = Environment(
    loader=ChoiceLoader(
        [PackageLoader("viewer", "templates"), PackageLoader("results.presentation", "templates")]
    ),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
TEMPLATES.globals["step_lines"] = step_lines
TEMPLATES.globals["marked"] = pages.marked


def open_for_reading(url: str | None) -> Engine:
    """The database at `url` opened for reading only (results.storage.db.engine_for): the viewer can
    never change the record it shows."""
    return engine_for(url, read_only=True)


def create_app(engine: Engine, token: str | None = None, warm: bool = False) -> Starlette:
    """The viewer over `engine`; with `token`, every request must show it; `warm`: compute
    the leaderboards first, before anyone asks."""
    leaderboards = pages.Leaderboards(engine)
    if warm:
        leaderboards.warm()
    viewer = Viewer(engine, leaderboards)
    routes = [
        Route("/", viewer.home),
        Route("/tournaments/{tournament}", viewer.tournament),
        Route("/tournaments/{tournament}/progress.json", viewer.progress),
        Route("/matches/{match}", viewer.match),
        Route("/matches/{match}/charts/{chart}.csv", viewer.chart_csv),
        Route("/matches/{match}/days/{day}", viewer.day),
        Route("/compare", viewer.compare),
        Route("/compare/charts/{chart}.csv", viewer.compare_csv),
        Route("/changes", viewer.changes),
        Route("/static/plotly.min.js", plotly_js),
    ]
    # Beyond loopback a token is asked for; on loopback only a page of this machine's own
    # names is answered, so that a website whose name was pointed at 127.0.0.1 cannot read it
    middleware = (
        [Middleware(TokenCheck, token=token)]
        if token is not None
        else [Middleware(TrustedHostMiddleware, allowed_hosts=list(LOOPBACK))]
    )
    return Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={
            NotFound: not_found,
            HTTPException: bad_request,
            SQLAlchemyError: viewer.database_failed,
            DatabaseError: viewer.database_failed,
            Exception: failed,
        },
    )


class Viewer:
    """The viewer's pages over one database, each an endpoint: the page's context read by
    viewer.pages and rendered with its template."""

    def __init__(self, engine: Engine, leaderboards: pages.Leaderboards) -> None:
        self.engine, self.leaderboards = engine, leaderboards

    def home(self, request: Request) -> Response:
        return render(request, "home.html.j2", pages.home(self.engine))

    def tournament(self, request: Request) -> Response:
        tournament_id = stored(request, "tournament")
        return render(
            request,
            "tournament.html.j2",
            pages.tournament(
                self.engine,
                self.leaderboards,
                tournament_id,
                number(request, "page"),
                request.query_params.get("metric") or None,
            ),
        )

    def progress(self, request: Request) -> Response:
        return JSONResponse(pages.progress(self.engine, stored(request, "tournament")).as_json())

    def match(self, request: Request) -> Response:
        return render(
            request,
            "match.html.j2",
            pages.match(self.engine, stored(request, "match"), number(request, "page")),
        )

    def chart_csv(self, request: Request) -> Response:
        match_id = stored(request, "match")
        shown = pages.match(self.engine, match_id, 1, with_calls=False)["part"]
        charts = [*shown.charts, *(shown.deviation.charts if shown.deviation is not None else [])]
        return chart_download([c.plot for c in charts], stored(request, "chart"), f"match-{match_id}")

    def compared(self, request: Request) -> dict[str, Any]:
        return pages.compare(self.engine, number(request, "a", None), number(request, "b", None))

    def compare(self, request: Request) -> Response:
        return render(request, "compare.html.j2", self.compared(request))

    def compare_csv(self, request: Request) -> Response:
        return chart_download(self.compared(request)["charts"], stored(request, "chart"), "compare")

    def day(self, request: Request) -> Response:
        return render(
            request,
            "day.html.j2",
            pages.day(self.engine, stored(request, "match"), stored(request, "day")),
        )

    def changes(self, request: Request) -> Response:
        return JSONResponse({"version": [*store.changes(self.engine), self.leaderboards.refreshed]})

    def database_failed(self, request: Request, exc: Exception) -> Response:
        reason = describe_failure(self.engine, exc) if isinstance(exc, SQLAlchemyError) else str(exc)
        problem = f"The database cannot be read right now: {reason}"
        if request.url.path.endswith((".json", "/changes")):
            return JSONResponse({"problem": problem}, status_code=503)
        return render(request, "problem.html.j2", {"title": "database unavailable", "problem": problem}, 503)


def render(request: Request, template: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    page = TEMPLATES.get_template(template).render(request=request, **context)
    return HTMLResponse(page, status_code=status)


def number(request: Request, name: str, default: str | None = "1") -> int:
    """A positive whole number from the query (a page, a match), `default` where it is
    not given (None: it must be)."""
    raw = request.query_params.get(name, default) or ""
    value = whole(raw)
    if value is None:
        raise HTTPException(400, f"{name}: a whole number from 1, not {raw[:40]!r}")
    return value


def stored(request: Request, name: str) -> int:
    """An id (or a day, a chart) from the path; one no database could hold is not there."""
    value = whole(request.path_params[name])
    if value is None:
        raise NotFound(f"no {name} {request.path_params[name][:40]!r}")
    return value


def chart_download(charts: list[dict[str, Any]], index: int, name: str) -> Response:
    if not 1 <= index <= len(charts):
        raise NotFound(f"{name} has no chart {index}")
    return PlainTextResponse(
        figure_csv(charts[index - 1]),
        media_type="text/csv",
        headers={"content-disposition": f'attachment; filename="{name}-chart-{index}.csv"'},
    )


def plotly_js(request: Request) -> Response:
    return FileResponse(PLOTLY_JS, media_type="text/javascript", headers={"cache-control": "max-age=86400"})


def not_found(request: Request, exc: Exception) -> Response:
    what = str(exc) if isinstance(exc, NotFound) else f"no page at {request.url.path}"
    return render(request, "problem.html.j2", {"title": "not found", "problem": what}, 404)


def bad_request(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return not_found(request, exc)
    return render(
        request, "problem.html.j2", {"title": "cannot show this", "problem": exc.detail}, exc.status_code
    )


def failed(request: Request, exc: Exception) -> Response:
    problem = f"arena serve failed on this page: {type(exc).__name__}: {exc}"
    return render(request, "problem.html.j2", {"title": "page failed", "problem": problem}, 500)


def whole(raw: str) -> int | None:
    """`raw` as a whole number from 1 to LARGEST_ID, written in ASCII digits; else None."""
    if not (raw.isascii() and raw.isdigit()) or len(raw) > len(str(LARGEST_ID)):
        return None
    value = int(raw)
    return value if 1 <= value <= LARGEST_ID else None


class TokenCheck(BaseHTTPMiddleware):
    """Only a request that shows the token: in the address once (`?token=`: the browser is
    given a cookie and sent to the same address without it, so that it stays out of the
    history), then by the cookie, which holds a keyed hash of the token, not the token; or as
    a bearer token, for scripts."""

    def __init__(self, app: Any, token: str) -> None:
        super().__init__(app)
        self.token = token
        self.cookie = hmac.new(token.encode(), b"arena serve", hashlib.sha256).hexdigest()

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        given = request.query_params.get("token")
        if given is not None and secrets.compare_digest(given.encode(), self.token.encode()):
            response = RedirectResponse(str(request.url.remove_query_params("token")), 303)
            # lax: the browser keeps it through the redirect that opening the printed link makes,
            # from wherever it was clicked; the viewer only reads, so nothing rides on that
            response.set_cookie(cookie_name(request), self.cookie, httponly=True, samesite="lax")
            return response
        scheme, _, bearer = request.headers.get("authorization", "").partition(" ")
        bearer = bearer.strip() if scheme.lower() == "bearer" else ""
        cookie = request.cookies.get(cookie_name(request), "")
        if secrets.compare_digest(cookie.encode(), self.cookie.encode()) or (
            bearer and secrets.compare_digest(bearer.encode(), self.token.encode())
        ):
            return await call_next(request)
        problem = (
            "This viewer needs the token `arena serve` printed when it started: open the address "
            "it printed, with ?token=... in it."
        )
        if not request.url.path.endswith((".json", ".csv", "/changes")):
            page = TEMPLATES.get_template("problem.html.j2").render(
                request=request, title="token needed", problem=problem, watch=False
            )
            return HTMLResponse(page, status_code=401)
        return JSONResponse({"problem": problem}, status_code=401)


class InThread(serving.InThread):
    """The viewer over `engine` on 127.0.0.1 at a free port, in a thread of this process: for
    tests, benchmarks and scripts that look at pages while they work."""

    def __init__(self, engine: Engine, token: str | None = None) -> None:
        super().__init__(create_app(engine, token), serving.listening("127.0.0.1", 0))
