"""Typed errors of the provider layer. Every message is one line and holds no secret."""

from __future__ import annotations

from common.errors import UserError
from contestants.llm.too_long import TooLong


class ProviderConfigError(UserError):
    """A provider that cannot be set up: unknown provider, bad setting, missing model file.

    `field` names the offending setting where there is one.
    """

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class MissingCredentialsError(ProviderConfigError):
    """The environment variable that should hold the API key is unset or empty."""

    def __init__(self, variable: str, model: str):
        super().__init__(
            f"{model}: environment variable {variable} is not set (it must hold the API key)", "api_key_env"
        )
        self.variable = variable


class ProviderError(RuntimeError):
    """A call that failed for good: retries exhausted, or a failure that is not worth retrying.

    `kind` is one of "status", "timeout", "connection", "bad_response", "error"; `status` is
    the HTTP status where there was one; `detail` is the last failure in one line (the server's
    own message where it sent one), secrets masked; `code` the server's name for the error;
    `retryable` says whether that failure was of a kind worth retrying (its retries ran out) or
    not (retrying cannot help); `too_long`: the server refused the request as longer than the
    model's window, and what it said of it (its caller makes the request shorter).
    """

    def __init__(
        self,
        message: str,
        *,
        model: str,
        kind: str,
        status: int | None,
        attempts: int,
        detail: str = "",
        retryable: bool = False,
        code: str | None = None,
        too_long: TooLong | None = None,
    ):
        super().__init__(message)
        self.model = model
        self.kind = kind
        self.status = status
        self.attempts = attempts
        self.detail = detail or message
        self.retryable = retryable
        self.code = code
        self.too_long = too_long
