"""The error that stops a run's model calls."""

from __future__ import annotations


class CallsStopped(RuntimeError):
    """The run's calls have stopped (its budget is spent, or a contestant's model is broken):
    no new call may start. Not a fault of the merchant: the match it was asked in is left
    unplayed. The message is the reason, one line."""
