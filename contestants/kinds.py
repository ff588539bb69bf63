"""The contestant kinds a tournament file can name: arena's own by name, each by where its class
is ("module:Class"), imported when the kind is first asked for, so that a run imports only the
kinds it plays (the language model's SDKs are heavy) and contestants.base, which the kinds'
modules import, knows none of them; and any kind of your own by where its class is, written
as the kind itself (`kind: my_package.merchants:Steady`), which every process of a run
imports alike. A judge of merchants' words is made here too (`judge_for`), its class imported
as lazily.
"""

from __future__ import annotations

from pkgutil import resolve_name
from typing import Any

from pydantic import ValidationError

from common.errors import first_problem
from contestants.base import Contestant, ContestantConfigError, Judge, Params, RunOptions

_TARGETS: dict[str, str] = {
    "fixed_price": "contestants.baselines:FixedPrice",
    "random": "contestants.baselines:RandomMerchant",
    "reorder_point": "contestants.baselines:ReorderPoint",
    "undercut": "contestants.baselines:Undercut",
    "cost_plus": "contestants.baselines:CostPlus",
    "best_response": "contestants.baselines:BestResponse",
    "tit_for_tat": "contestants.baselines:TitForTat",
    "grim_trigger": "contestants.baselines:GrimTrigger",
    "cartel": "contestants.talking:Cartel",
    "bluffer": "contestants.talking:Bluffer",
    "friendly": "contestants.talking:Friendly",
    "qlearning": "contestants.qlearning:QLearner",
    "llm": "contestants.llm.merchant:LLMMerchant",
    "human": "contestants.human.seat:HumanSeat",
}
JUDGE = "contestants.llm.judge:ModelJudge"  # a model reading the words with a rubric
_CLASSES: dict[str, type[Contestant]] = {}  # the kinds imported so far: a match asks for each of its seats'


def kinds() -> dict[str, type[Contestant]]:
    """arena's own kinds' classes (importing them all)."""
    return {kind: contestant_class(kind) for kind in _TARGETS}


def contestant_class(kind: str) -> type[Contestant]:
    """The class of `kind`: one of arena's, or "module:Class" of your own. ContestantConfigError,
    in one line, for a kind that is neither."""
    if kind not in _CLASSES:
        _CLASSES[kind] = _imported(kind)
    return _CLASSES[kind]


def _imported(kind: str) -> type[Contestant]:
    if kind in _TARGETS:
        own: type[Contestant] = resolve_name(_TARGETS[kind])
        return own
    if ":" not in kind:
        known = ", ".join(sorted(_TARGETS))
        yours = "or a class of your own as module:Class"
        raise ContestantConfigError(f"unknown contestant kind {kind!r} (known: {known}; {yours})", "kind")
    try:
        found = resolve_name(kind)
    except Exception as exc:  # whatever importing the module raised
        lines = str(exc).strip().splitlines()
        why = f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")
        raise ContestantConfigError(f"contestant kind {kind!r} cannot be imported ({why})", "kind") from None
    if not (isinstance(found, type) and issubclass(found, Contestant)):
        raise ContestantConfigError(f"contestant kind {kind!r} is not a Contestant class", "kind")
    return found


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


def judge_for(settings: dict[str, Any], options: RunOptions = RunOptions()) -> Judge:
    """A judge made from `settings`: the `llm` kind's parameters (model, temperature,
    max_tokens, base_url, api_key_env, ...) and an optional `name` (default: the model).
    ContestantConfigError, in one line naming the field, for a setting that is wrong."""
    cls: type[Judge] = resolve_name(JUDGE)
    try:
        params = cls.params_model.model_validate(settings)
    except ValidationError as exc:
        problem = first_problem(exc)
        raise ContestantConfigError(problem.explained, problem.field) from None
    return cls(params, options)
