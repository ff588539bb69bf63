"""The `arena` command: run tournaments and read their results.

A module per group of commands (running, equilibrium, reading, outputs), each command parsing
its options, calling tournaments/ and results/, and printing. A mistake the user can fix
prints one line (file, field, problem) and exits with status 2 (exits.user_errors).
"""

# The command modules register their commands as they are imported, in the order `arena --help`
# lists them.
# isort: off
from arena.cli import running, equilibrium, reading, outputs  # noqa: F401

# isort: on
from arena.cli.application import app

__all__ = ["app"]
