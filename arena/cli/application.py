"""The `arena` application: its help, how a command is registered on it, and its usage errors
as one line, as every mistake a user can fix is."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption

from arena.cli.exits import EXIT_USER_ERROR
from arena.cli.printing import err, error_line

ARENA = "uv run arena"  # how a command is typed: from the clone, with no install step


class _HelpTakesNoValue:
    """Typer's rich help would print `<bool>` beside `--help` as if it took a value."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        _no_value_shown([option])
        return option


class _FlagsTakeNoValue(_HelpTakesNoValue, TyperCommand):
    """A command whose help shows no value beside a flag (`--json`), `--help` included."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _no_value_shown(self.params)


def _no_value_shown(params: Iterable[object]) -> None:
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag:
            param.metavar = ""  # what the help shows for the option's value


class _OneLineErrors(_HelpTakesNoValue, TyperGroup):
    """The `arena` command: a mistake in its options or arguments that Typer finds itself (a
    number out of its range, a choice it does not offer, an unknown option or command, one
    missing) is one line and exit status 2, as every mistake a user can fix is, not a usage box.
    `arena` alone still shows the help."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        given = list(sys.argv[1:] if args is None else args)
        if not standalone_mode or not given:
            return super().main(given, prog_name, complete_var, standalone_mode, windows_expand_args, **extra)
        try:
            status = super().main(given, prog_name, complete_var, False, windows_expand_args, **extra)
        except typer.TyperException as exc:  # what Typer's parser raises: a usage error
            error_line(_usage_problem(exc))
            sys.exit(getattr(exc, "exit_code", EXIT_USER_ERROR))
        except typer.Abort:
            err.print("Aborted!", markup=False, highlight=False)
            sys.exit(1)
        sys.exit(status if isinstance(status, int) else 0)


def _usage_problem(exc: typer.TyperException) -> str:
    """A usage error in one line, naming the option or argument as the usage line shows it (an
    argument by its metavar): `--day: Input should be ...`, `MATCH_ID: Input should be ...`."""
    if isinstance(exc, typer.BadParameter) and exc.param is not None and exc.message:
        named = exc.param.get_error_hint().replace("'", "")
        problem = f"{named}: {exc.message.removeprefix('Value error, ')}"
    else:
        problem = exc.format_message()
    return " ".join(problem.split())


app = typer.Typer(
    cls=_OneLineErrors,
    help="Tournaments of merchant agents in one shared market, recorded in SQLite and rated on the Elo "
    "scale.\n\n"
    f"Start with: {ARENA} run tournaments/round_robin.yaml\n\n"
    f"An interrupted run continues with: {ARENA} run FILE --resume. "
    f"To play on an existing Ray cluster: {ARENA} run FILE --address ADDR.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # a docstring's paragraphs are rewrapped to the terminal, not broken where the source is
    rich_markup_mode="markdown",
    epilog=f"Example: `{ARENA} run tournaments/round_robin.yaml`",
)


def command(example: str, name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register an `arena` command whose help ends with `example` (its arguments after
    `ARENA`)."""
    return app.command(name, cls=_FlagsTakeNoValue, epilog=f"Example: `{ARENA} {example}`")
