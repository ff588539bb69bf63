"""`--help` teaches: every command's help ends with an example that is a real invocation of
that command, and no flag shows a value it does not take."""

from __future__ import annotations

import shlex

import pytest
import typer
from typer.testing import CliRunner

from arena.cli import app

ARENA = typer.main.get_command(app)
COMMANDS = sorted(ARENA.commands)


def help_of(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.stdout


def example(printed: str) -> list[str]:
    """The words of the help's last line, which must be `Example: uv run arena ...`."""
    last = printed.rstrip().splitlines()[-1].strip()
    assert last.startswith("Example: uv run arena "), last
    return shlex.split(last.removeprefix("Example: uv run arena "))


def test_every_command_is_covered():
    assert {"run", "leaderboard", "tournaments", "matches", "show", "report"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_a_commands_help_ends_with_an_example_of_it_that_parses(name):
    words = example(help_of(name))
    assert words[0] == name
    command = ARENA.commands[name]
    command.make_context(name, words[1:])  # refuses an option it lacks, a value of the wrong type


def test_the_help_of_arena_itself_ends_with_an_example_that_parses():
    name, *args = example(help_of())
    ARENA.commands[name].make_context(name, args)


@pytest.mark.parametrize("name", [*COMMANDS, None])
def test_no_flag_shows_a_value(name):
    printed = help_of(*([name] if name else []))
    assert "<bool>" not in printed
    flags = [line for line in printed.splitlines() if "--help" in line]
    assert flags and all(line.split("--help")[1].split()[:3] == ["Show", "this", "message"] for line in flags)


def test_an_example_that_names_no_such_option_would_be_caught():
    """The check the examples pass is one that fails: an option the command lacks."""
    with pytest.raises(Exception, match="No such option"):
        ARENA.commands["leaderboard"].make_context("leaderboard", ["--tournaments", "1"])
