"""Connecting to Ray: join a cluster or start a local one for the length of a run."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def enter(working_dir: str) -> None:
    """Work in the folder `arena run` was started in, so relative paths in a contestant's
    settings (a response cache, a model file) mean what they meant there, not wherever Ray
    starts its workers (with `uv run` that is a per-session copy of the project). Skipped on
    a node that lacks the folder."""
    if os.path.isdir(working_dir):
        os.chdir(working_dir)


def result(ref: Any) -> asyncio.Future:
    """An asyncio future of a Ray ObjectRef's value. `await ref` goes through Ray's
    deprecated ObjectRef.as_future(), which costs a logged warning and several times the
    CPU of this on every call: it was the driver's largest cost in a tournament of instant
    matches."""
    return asyncio.wrap_future(ref.future())


class ClusterError(ConnectionError):
    """The Ray cluster named by --address or RAY_ADDRESS cannot be reached."""


@contextmanager
def ray_session(address: str | None) -> Iterator[None]:
    """Join the cluster at `address` (or $RAY_ADDRESS), or start a local one for this run
    (never a cluster found lying around: that is what --address is for).

    Ray is imported here, not at module level, so the CLI starts fast when it only reads results.
    """
    import ray

    if ray.is_initialized():
        yield
        return
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is not None:
        _check_reachable(address)
    try:
        ray.init(address=address or "local", include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    except ConnectionError as exc:
        raise ClusterError(f"cannot reach the Ray cluster at {address}: {str(exc).splitlines()[0]}") from None
    try:
        yield
    finally:
        ray.shutdown()


def _check_reachable(address: str, seconds: float = 5.0) -> None:
    """Fail in seconds, not minutes: Ray itself retries an unreachable address for a long time."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(f"--address must be HOST:PORT, not {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=seconds).close()
    except OSError as exc:
        raise ClusterError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None
