"""The one retry policy of every provider.

A failed attempt is first normalised into a `Failure` (each provider maps its SDK's
exceptions, see `sdk_failure`); the policy then decides on the Failure alone:

- retried: HTTP 408, 429 and 5xx, timeouts, connection errors; but not a 429 that says the
  account's quota is spent (`insufficient_quota`), which waiting does not mend;
- not retried: any other 4xx, a response that is not what the API promises, anything else; a
  request refused as longer than the model's window is marked so (`Failure.too_long`, see
  contestants.llm.too_long): sent again as it is, it would be refused again, so its caller
  makes it shorter;
- the wait before a retry is the server's Retry-After when it sent one, else exponential
  backoff with full jitter; never past the total deadline;
- at most `max_retries` retries, each attempt bounded by `timeout` seconds, all of them
  together by `total_timeout`;
- no attempt starts, and no wait is begun, past `start_by` (the caller's own deadline: an
  attempt under way is left to end, so that the caller's next call cannot overlap it); an
  attempt that would start past it raises DeadlinePassed (contestants.base): the turn is
  late, which is not a failure of the call.

After the last failure a `ProviderError` with a one-line message is raised; known secrets
are masked out of it, and it carries no chained SDK exception (whose request holds the key).
"""

from __future__ import annotations

import email.utils
import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import tenacity

from contestants.base import DeadlinePassed
from contestants.llm.errors import ProviderError
from contestants.llm.too_long import TooLong, too_long

log = logging.getLogger(__name__)

T = TypeVar("T")

FailureKind = Literal["status", "timeout", "connection", "bad_response", "error"]


NEVER_RETRIED = frozenset({"insufficient_quota"})  # error codes of statuses otherwise retried


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed attempt, in provider-neutral terms. `detail` is short and one line; `code`
    is the server's name for the error where it gives one (OpenAI's `code`, Anthropic's
    error `type`); `too_long`: the request was refused as longer than the model's window, and
    what the server said of it."""

    kind: FailureKind
    detail: str
    status: int | None = None
    retry_after: float | None = None
    code: str | None = None
    too_long: TooLong | None = None

    @property
    def retryable(self) -> bool:
        if self.kind in ("timeout", "connection"):
            return True
        if self.code in NEVER_RETRIED:
            return False
        return (
            self.kind == "status"
            and self.status is not None
            and (self.status in (408, 429) or self.status >= 500)
        )


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 3
    timeout: float = 60.0
    total_timeout: float = 300.0
    backoff_initial: float = 1.0
    backoff_max: float = 30.0


class BadResponse(Exception):
    """The server answered 2xx with something that is not the promised response."""


class _AttemptFailed(Exception):
    def __init__(self, failure: Failure):
        super().__init__(failure.detail)
        self.failure = failure


def call_with_retries(
    attempt: Callable[[float], T],
    *,
    classify: Callable[[BaseException], Failure | None],
    policy: RetryPolicy,
    label: str,
    secrets: Iterable[str] = (),
    start_by: float | None = None,
) -> tuple[T, int]:
    """Run `attempt(timeout_seconds)` under the policy; return its result and the number of attempts.

    `classify` returns None for exceptions that are not call failures (bugs): those propagate
    untouched. `label` ("provider/model") starts every message.
    """
    secrets = tuple(s for s in secrets if s)
    deadline = time.monotonic() + policy.total_timeout
    last_start = deadline if start_by is None else min(deadline, start_by)
    attempts = 0
    backoff = tenacity.wait_random_exponential(multiplier=policy.backoff_initial, max=policy.backoff_max)

    def run_once() -> T:
        nonlocal attempts
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _AttemptFailed(Failure("timeout", f"total timeout of {policy.total_timeout:g} s reached"))
        if time.monotonic() >= last_start:
            raise DeadlinePassed(f"{label}: the turn's deadline passed before an attempt could start")
        attempts += 1
        try:
            return attempt(min(policy.timeout, remaining))
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
        raise _AttemptFailed(failure)  # outside the except block: no SDK exception in __context__

    def wait(state: tenacity.RetryCallState) -> float:
        failure = _failure_of(state)
        return failure.retry_after if failure.retry_after is not None else backoff(state)

    def stop(state: tenacity.RetryCallState) -> bool:
        return (
            state.attempt_number > policy.max_retries or time.monotonic() + state.upcoming_sleep >= last_start
        )

    def before_sleep(state: tenacity.RetryCallState) -> None:
        failure = _failure_of(state)
        log.warning(
            "%s: %s; retry %d of %d in %.2f s",
            label,
            _clean(failure.detail, secrets),
            state.attempt_number,
            policy.max_retries,
            state.upcoming_sleep,
        )

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception(
            lambda exc: isinstance(exc, _AttemptFailed) and exc.failure.retryable
        ),
        wait=wait,
        stop=stop,
        before_sleep=before_sleep,
        reraise=True,
    )
    try:
        return retrying(run_once), attempts
    except _AttemptFailed as exc:
        failure = exc.failure
    raise _given_up(failure, attempts, label, secrets)


def _given_up(failure: Failure, attempts: int, label: str, secrets: tuple[str, ...]) -> ProviderError:
    """The error raised after the last failed attempt: one line, secrets masked."""
    noun = "attempt" if attempts == 1 else "attempts"
    message = _clean(f"{label}: {failure.detail} (gave up after {attempts} {noun})", secrets)
    return ProviderError(
        message,
        model=label,
        kind=failure.kind,
        status=failure.status,
        attempts=attempts,
        detail=_clean(failure.detail, secrets),
        retryable=failure.retryable,
        code=failure.code,
        too_long=failure.too_long,
    )


def _failure_of(state: tenacity.RetryCallState) -> Failure:
    exc = state.outcome.exception() if state.outcome else None
    assert isinstance(exc, _AttemptFailed)
    return exc.failure


def _clean(text: str, secrets: tuple[str, ...], limit: int = 300) -> str:
    """One line, at most `limit` characters, every secret masked."""
    for secret in secrets:
        text = text.replace(secret, "***")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def retry_after(headers: Any) -> float | None:
    """Seconds to wait from a response's retry-after-ms / Retry-After (seconds or HTTP date)."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(float(value) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def sdk_failure(exc: BaseException, sdk: Any) -> Failure | None:
    """Map an exception of the `openai` or `anthropic` SDK (same shape) or of httpx2 to a Failure.

    Both SDKs raise APIStatusError (with the response) for HTTP errors, APITimeoutError (a
    subclass of APIConnectionError) for timeouts, and APIResponseValidationError for bodies
    that do not fit the API. `sdk` is the imported module.
    """
    import httpx2

    if isinstance(exc, sdk.APIStatusError):
        message, code, error = _error_of(exc)
        return Failure(
            "status",
            f"HTTP {exc.status_code}: {message}",
            exc.status_code,
            retry_after(exc.response.headers),
            code,
            too_long(exc.status_code, message, code, error),
        )
    if isinstance(exc, (sdk.APITimeoutError, httpx2.TimeoutException)):
        return Failure("timeout", "request timed out")
    if isinstance(exc, (sdk.APIConnectionError, httpx2.TransportError)):
        cause = exc.__cause__ or exc
        return Failure("connection", f"connection error ({type(cause).__name__})")
    if isinstance(exc, (sdk.APIResponseValidationError, BadResponse, json.JSONDecodeError)):
        return Failure("bad_response", f"malformed response: {exc}")
    return None


def error_in(body: Any) -> tuple[str, str | None, dict[str, Any] | None] | None:
    """The server's own error message in an error body, its code, and the error object it came
    in; None where the body holds none. The body may be the whole answer (`{"error": {...}}`),
    the error object alone (as the SDKs hand it over; a server that sends no such wrapper:
    vLLM's older versions, Mistral) or the message alone (TGI's, xAI's)."""
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, str) and error.strip():
        return error, None, None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        code = error.get("code") or error.get("type")
        return error["message"], code if isinstance(code, str) else None, error
    return None


def _error_of(exc: Any) -> tuple[str, str | None, dict[str, Any] | None]:
    """The server's own error message where the body has one (else the SDK's), its code, and
    the error object it came in."""
    said = error_in(getattr(exc, "body", None))
    return said if said is not None else (str(getattr(exc, "message", "") or type(exc).__name__), None, None)
