"""The contestant kinds a tournament file can name, each by where its class is ("module:Class"),
imported when the kind is first asked for: a run imports only the kinds it plays (the language
model's SDKs are heavy), and contestants.base, which the kinds' modules import, knows none of them.
"""

from __future__ import annotations

from pkgutil import resolve_name
from typing import Any

from pydantic import ValidationError

from common.errors import first_problem
from contestants.base import Contestant, ContestantConfigError, Params, RunOptions

_TARGETS: dict[str, str] = {
    "fixed_price": "contestants.baselines:FixedPrice",
    "random": "contestants.baselines:RandomMerchant",
    "reorder_point": "contestants.baselines:ReorderPoint",
    "undercut": "contestants.baselines:Undercut",
    "cost_plus": "contestants.baselines:CostPlus",
    "best_response": "contestants.baselines:BestResponse",
    "tit_for_tat": "contestants.baselines:TitForTat",
    "grim_trigger": "contestants.baselines:GrimTrigger",
    "cartel": "contestants.baselines:Cartel",
    "latency": "contestants.baselines:Latency",
    "chaos": "contestants.baselines:Chaos",
    "qlearning": "contestants.qlearning:QLearner",
    "llm": "contestants.llm.merchant:LLMMerchant",
}
_CLASSES: dict[str, type[Contestant]] = {}  # the kinds imported so far: a match asks for each of its seats'


def register_kind(kind: str, target: str) -> None:
    """Make a contestant kind available to tournament files; `target` is "module:Class",
    imported on first use."""
    if kind in _TARGETS:
        raise ValueError(f"contestant kind {kind!r} registered twice")
    _TARGETS[kind] = target


def kinds() -> dict[str, type[Contestant]]:
    """Every kind's class (importing them all)."""
    return {kind: contestant_class(kind) for kind in _TARGETS}


def contestant_class(kind: str) -> type[Contestant]:
    try:
        target = _TARGETS[kind]
    except KeyError:
        known = ", ".join(sorted(_TARGETS))
        raise ContestantConfigError(f"unknown contestant kind {kind!r} (known: {known})", "kind") from None
    if kind not in _CLASSES:
        _CLASSES[kind] = resolve_name(target)
    return _CLASSES[kind]


def validate_params(kind: str, params: dict[str, Any]) -> Params:
    """Check a contestant's YAML parameters without building it."""
    cls = contestant_class(kind)
    try:
        return cls.params_model.model_validate(params)
    except ValidationError as exc:
        problem = first_problem(exc)
        raise ContestantConfigError(problem.explained, problem.field) from None


def create(kind: str, params: dict[str, Any], options: RunOptions | None = None) -> Contestant:
    return contestant_class(kind)(validate_params(kind, params), options or RunOptions())
