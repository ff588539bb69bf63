"""The base of every error a user can fix, and the one reading of a pydantic validation error.

Every room raises its own kinds of UserError (a file, a database, a cluster, an output
folder); the CLI prints any of them as one line and exits with status 2. It lives on the
lowest floor so that every room can derive from it.
"""

from __future__ import annotations

from typing import NamedTuple

from pydantic import ValidationError


class UserError(Exception):
    """A mistake the user can fix (a file, a field, an option, an address). Its message is
    one line, names what is wrong and where, and holds no secret."""


class FieldError(ValueError):
    """Raised by a whole-model check to name the field it is about (pydantic reports such
    errors at the model's own location, which names no field)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


class Problem(NamedTuple):
    """The first error of a validation, as pydantic gives it: where (the parts of its
    location), what is wrong, and the error's type; with the two ways arena words it."""

    location: tuple[str | int, ...]
    message: str
    kind: str
    named_field: str | None = None  # what a FieldError raised by a whole-model check names

    @property
    def field(self) -> str | None:
        """Where, as a user names a field of a file: `contestants[2].params.markup`."""
        parts = [*self.location, *(self.named_field.split(".") if self.named_field else [])]
        joined = ".".join(f"[{part}]" if isinstance(part, int) else str(part) for part in parts)
        return joined.replace(".[", "[") or None

    @property
    def explained(self) -> str:
        """What is wrong, as a user is told of a file: an unknown key said so, pydantic's
        "Value error, " prefix dropped."""
        return "unknown key" if self.kind == "extra_forbidden" else self.message.removeprefix("Value error, ")

    def said_at_path(self) -> str:
        """`operations.0.price: message` (the message alone when the whole value is wrong), in
        pydantic's own words: how a model is shown what was wrong with its answer (the words
        its prompts have always had)."""
        path = ".".join(str(part) for part in self.location)
        return f"{path}: {self.message}" if path else self.message


def first_problem(exc: ValidationError) -> Problem:
    """The first error of `exc`."""
    error = exc.errors()[0]
    cause = (error.get("ctx") or {}).get("error")
    named = cause.field if isinstance(cause, FieldError) else None
    return Problem(tuple(error["loc"]), error["msg"], error["type"], named)
