"""The record's typed errors, in one place so every module of results/ can raise them."""

from __future__ import annotations

from common.errors import UserError


class DatabaseError(UserError):
    """The database URL cannot be parsed, or the database cannot be opened or reached.

    The message is one line and never contains a password.
    """


class NotFound(UserError):
    """No tournament or match with the id asked for, or nothing stored under a name asked for."""


class InputFileError(UserError):
    """A file the user gave cannot be used: one line naming the file, where in it, and what is wrong."""
