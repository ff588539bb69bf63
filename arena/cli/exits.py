"""How `arena` ends: its exit statuses, and the one line a mistake the user can fix prints."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer

from arena.cli.printing import error_line
from common.errors import UserError

EXIT_USER_ERROR = 2  # a mistake in a file or an option
EXIT_BUDGET = 3  # the budget stopped the run: what was played is saved and shown
EXIT_BROKEN_MODEL = 4  # a contestant's model refused its calls (the run, or `validate --ping`)
EXIT_DATABASE = 5  # the database failed during the run
EXIT_NOT_REPRODUCED = 6  # `arena replicate`: a figure fell outside its band


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn a mistake the user can fix into one line on stderr and exit status 2."""
    try:
        yield
    except UserError as exc:
        error_line(str(exc))
        raise typer.Exit(EXIT_USER_ERROR) from None
