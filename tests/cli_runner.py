"""typer's CliRunner, but the click command of an app is built once rather than at every
invoke: typer reads every command's signature anew each time, more CPU than most of the
commands the tests run."""

from __future__ import annotations

import functools
from typing import Any
from unittest import mock

import typer.main
import typer.testing
from click.testing import Result

_built = functools.cache(typer.main.get_command)


class CliRunner(typer.testing.CliRunner):
    def invoke(self, app: typer.Typer, *args: Any, **kwargs: Any) -> Result:
        with mock.patch.object(typer.testing, "_get_command", _built):
            return super().invoke(app, *args, **kwargs)
