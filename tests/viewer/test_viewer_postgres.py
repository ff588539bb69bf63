"""The viewer over PostgreSQL (a server the tests start): read only, and a database that goes
away is a page that says so."""

from __future__ import annotations

import json

import pytest
from postgres_server import PASSWORD
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from tests.viewer.conftest import fill
from tests.viewer.test_viewer import get
from viewer.app import InThread, open_for_reading

pytestmark = pytest.mark.slow


def test_the_viewer_reads_postgresql_only_and_says_when_it_is_gone(postgres, day_record):
    url = postgres.fresh_database()
    stored = fill(url, day_record)
    engine = open_for_reading(url)
    serving = InThread(engine)
    try:
        with pytest.raises(DBAPIError, match="read-only transaction"), engine.begin() as connection:
            connection.execute(text("DELETE FROM match"))
        status, page, _ = get(f"{serving.address}/matches/{stored.matches[0]}")
        assert status == 200 and "corner-shop" in page
        database = url.rsplit("/", 1)[1]
        with postgres.admin() as admin:
            admin.execute(f'DROP DATABASE "{database}" WITH (FORCE)')
        status, page, _ = get(f"{serving.address}/matches/{stored.matches[0]}")
        assert status == 503 and "database cannot be read" in page and "Traceback" not in page
        assert PASSWORD not in page  # the URL's password is never shown
        status, body, _ = get(serving.address + "/changes")
        assert status == 503 and json.loads(body)["problem"].startswith("The database cannot be read")
    finally:
        serving.stop()
        engine.dispose()
