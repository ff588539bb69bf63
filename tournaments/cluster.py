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
        _use_token_if_available()
    try:
        ray.init(address=address or "local", include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    except ConnectionError as exc:
        hint = "" if _token_available() else f" ({TOKEN_HINT})"
        raise ClusterError(f"cannot reach the Ray cluster at {address}: {str(exc).splitlines()[0]}{hint}") from None
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


TOKEN_HINT = (
    "if it uses token authentication, as `ray start` does where ~/.ray/auth_token exists, "
    "copy that file from the head node to this machine or set RAY_AUTH_TOKEN"
)


def _token_available() -> bool:
    from ray._private.authentication.authentication_token_setup import AuthenticationTokenLoader

    return AuthenticationTokenLoader.instance().has_token(ignore_auth_mode=True)


def _use_token_if_available() -> None:
    """Send the cluster's token when this machine has one and RAY_AUTH_MODE is unset.

    Ray does this by itself only for a cluster it finds on its own, not for an address given
    to it, yet `ray start --head` turns token authentication on whenever a token exists (and
    any local `ray.init()`, an earlier `arena run` included, writes one). A cluster without
    authentication ignores the token."""
    from ray._private.authentication import authentication_token_setup

    quiet = logging.getLogger(authentication_token_setup.__name__)
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        authentication_token_setup.maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
    finally:
        quiet.setLevel(level)
