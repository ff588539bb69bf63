"""The one protocol every merchant agent follows, and the registry of kinds.

A contestant is created from its YAML entry (`kind` plus parameters), reset at the start of
each match, asked for a decision every day, sometimes asked to recall a past fact, and asked
for its usage (tokens, cost) at the end.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from market.scenario import Scenario
from market.types import Decision, Observation


class ContestantConfigError(ValueError):
    """A contestant entry that cannot be built: unknown kind or bad parameters.

    `field` names the offending parameter (dotted) where there is one.
    """

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class Params(BaseModel):
    """Base of every contestant's parameter model: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class RecallProbe(BaseModel):
    """A question about the merchant's own past: its value of `fact` at the end of `day`."""

    day: int
    fact: Literal["cash", "inventory", "price", "ordered"]
    product: str | None = None


class RunOptions(BaseModel):
    """How this run plays its contestants, apart from what the tournament file says
    (`arena run` flags). The same options reach every contestant, inline or in an actor.

    no_cache: language models answer afresh; their response cache is neither read nor written.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    no_cache: bool = False


class ModelCall(BaseModel):
    """One call a contestant made to a language model, for the accounting table.

    cost is in USD (None: the model has no known price); a cached call cost nothing and
    made no request; request_hash identifies what was asked (the response cache's key).
    prompt_version names the prompt templates the request was built from ("merchant-v1+
    recall-v1"); temperature and seed are what the request asked for (a provider without
    seeds, Anthropic, ignores the seed).
    """

    day: int
    purpose: Literal["decide", "repair", "recall", "reflect"]
    model: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    latency: float
    attempts: int
    cost: float | None
    cached: bool
    request_hash: str
    prompt_version: str
    temperature: float
    seed: int | None


class Usage(BaseModel):
    """What a contestant consumed in a match."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0


class Contestant(ABC):
    """A merchant agent.

    `needs_actor` says the contestant must run in its own Ray actor (it holds a model, is
    slow, or may crash its process). Instant rule baselines run inside the match loop.
    """

    kind: ClassVar[str]
    params_model: ClassVar[type[Params]] = Params
    needs_actor: ClassVar[bool] = False

    def __init__(self, params: Params):
        self.params = params

    @classmethod
    def for_run(cls, params: Params, options: RunOptions) -> Params:
        """The parameters to play with under this run's options (default: unchanged)."""
        return params

    @classmethod
    def preflight(cls, params: Params) -> None:
        """Checks that need the world outside the file (an API key in the environment, a
        model file on disk), run when a tournament is validated, before any match. Raises
        ContestantConfigError."""

    @abstractmethod
    def reset(self, *, merchant: str, scenario: Scenario, seed: int) -> None:
        """Forget everything; a new match starts. `seed` is the merchant's own for the match:
        a kind that draws at random makes its generator from it (np.random.default_rng)."""

    @abstractmethod
    def decide(self, observation: Observation) -> Decision | Any:
        """Today's decision. Anything that is not a Decision is parsed by the market."""

    def recall(self, probe: RecallProbe) -> float | None:
        """Answer a memory probe; None means "don't know"."""
        return None

    def usage(self) -> Usage:
        """Totals of `calls()`."""
        calls = self.calls()
        return Usage(
            calls=len(calls),
            input_tokens=sum(c.input_tokens for c in calls),
            output_tokens=sum(c.output_tokens for c in calls),
            cost=sum(c.cost or 0.0 for c in calls),
        )

    def calls(self) -> list[ModelCall]:
        """The model calls made since the last reset (language-model merchants)."""
        return []


_REGISTRY: dict[str, type[Contestant]] = {}


def register(cls: type[Contestant]) -> type[Contestant]:
    """Class decorator: make a contestant kind available to tournament YAML."""
    if cls.kind in _REGISTRY:
        raise ValueError(f"contestant kind {cls.kind!r} registered twice")
    _REGISTRY[cls.kind] = cls
    return cls


def kinds() -> dict[str, type[Contestant]]:
    _load_builtin_kinds()
    return dict(_REGISTRY)


def contestant_class(kind: str) -> type[Contestant]:
    _load_builtin_kinds()
    try:
        return _REGISTRY[kind]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise ContestantConfigError(f"unknown contestant kind {kind!r} (known: {known})", "kind") from None


def validate_params(kind: str, params: dict[str, Any]) -> Params:
    """Check a contestant's YAML parameters without building it."""
    cls = contestant_class(kind)
    try:
        return cls.params_model.model_validate(params)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or None
        raise ContestantConfigError(error["msg"], field) from None


def create(kind: str, params: dict[str, Any], options: RunOptions | None = None) -> Contestant:
    cls = contestant_class(kind)
    return cls(cls.for_run(validate_params(kind, params), options or RunOptions()))


def _load_builtin_kinds() -> None:
    from contestants import baselines  # noqa: F401  (registers on import)
    from contestants.llm import merchant  # noqa: F401
