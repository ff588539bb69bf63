"""What a tournament's model calls will take, before any is made (`arena validate --estimate`).

Every match of the schedule is rehearsed, here, in this process: the market runs day by day,
rule merchants play as they would, and each language-model merchant builds its real prompts
(the rules, its memory as it grows, the day's report, reflections, recall and off-path
questions) but its provider answers itself with an answer of the usual size (contestants.llm.rehearsal). The
prompts' tokens are counted as each provider counts them, so the estimate of input tokens is
close; answers are the usual size, not the model's, and hidden reasoning is not foreseen,
so `high` gives the bound of every call writing its max_tokens and every decision being
repaired once. A contestant that needs an actor of its own and calls no model (latency,
chaos) is rehearsed as the fixed_price merchant it is built on. With a deviation probe, the
deviated path's calls count but for those that ask what the match itself asked (the same
request, so its answer is in the response cache by then), unless the contestant keeps no
cache.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Literal

from contestants.base import RunOptions
from contestants.llm.pricing import cost, prices_from
from contestants.llm.providers import validate_settings
from contestants.llm.types import TokenUsage
from results.records import FinishedMatch, ModelCallRecord, total_cost
from tournaments.config import ContestantEntry, Tournament
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import ContestantPlan, plan_contestants, plan_tournament
from tournaments.schedule import schedule


@dataclass
class Estimate:
    """One contestant's model calls over the whole tournament (or all contestants': "total")."""

    contestant: str
    model: str
    calls: dict[str, int] = field(default_factory=dict)  # by purpose
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = 0.0  # USD expected; None: a model without a price
    # USD if every call wrote its max_tokens and every decision was repaired once, an agent's
    # every day took all its steps; None: a model without a price
    high: float | None = 0.0
    steps: tuple[int, int] | None = None  # an agent's steps: at fewest (one a day), at most

    def add(self, other: Estimate) -> None:
        for purpose, count in other.calls.items():
            self.calls[purpose] = self.calls.get(purpose, 0) + count
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost = None if self.cost is None or other.cost is None else self.cost + other.cost
        self.high = None if self.high is None or other.high is None else self.high + other.high
        if other.steps is not None:
            fewest, most = self.steps or (0, 0)
            self.steps = (fewest + other.steps[0], most + other.steps[1])


def estimate(tournament: Tournament) -> list[Estimate]:
    """Per contestant that calls a model (and model, where a sweep varies it), in the file's
    order, over every cell of a sweep; then the total."""
    estimates: dict[tuple[str, str], Estimate] = {}
    for cell in tournament.each_cell():
        for one in _estimate_cell(cell.tournament):
            estimates.setdefault((one.contestant, one.model), Estimate(one.contestant, one.model)).add(one)
    total = Estimate("total", "")
    for one in estimates.values():
        total.add(one)
    return [*estimates.values(), total]


def _estimate_cell(tournament: Tournament) -> list[Estimate]:
    spec = tournament.spec
    plans = plan_tournament(spec)
    calls = _rehearsed_calls(tournament, plans, True)
    agents = any(
        plan.calls_models and getattr(plan.params, "mode", None) == "agent" for plan in plans.values()
    )
    longest = _rehearsed_calls(tournament, plans, "longest") if agents else {}
    return [
        _of(plans[name], calls[name], spec.prices, longest.get(name, [])) for name in plans if calls[name]
    ]


def _rehearsed_calls(
    tournament: Tournament, plans: dict[str, ContestantPlan], how: bool | Literal["longest"]
) -> dict[str, list[ModelCallRecord]]:
    """The calls of every match of the schedule rehearsed (`how`: RunOptions.rehearse), by
    contestant; of a probed match's deviated path, those the match did not ask already."""
    spec = tournament.spec
    rehearsed = plan_contestants(_rehearsed(entry, plans[entry.name]) for entry in spec.contestants)
    rules = MatchRules.of(spec, RunOptions(rehearse=how, no_cache=True, prices=spec.prices))
    calls: dict[str, list[ModelCallRecord]] = defaultdict(list)
    caches = {name: _caches(plan) for name, plan in plans.items()}
    for match in schedule(tournament):
        played = play_here([Match(match, tournament.scenarios[match.scenario], rules, rehearsed)])[0]
        assert isinstance(played, FinishedMatch)  # a rehearsal calls no model: its calls never stop
        asked = {call.request_hash for call in played.calls}
        deviated = played.deviation.calls if played.deviation is not None else []
        for call in [
            *played.calls,
            *(c for c in deviated if not (caches[c.contestant] and c.request_hash in asked)),
        ]:
            calls[call.contestant].append(call)
    return calls


def _caches(plan: ContestantPlan) -> bool:
    """Whether the contestant's answers are kept in the response cache (a model's `no_cache` off)."""
    if not plan.calls_models:
        return False
    params: Any = plan.params
    return not validate_settings(params.model, params.provider_settings).no_cache


def _rehearsed(entry: ContestantEntry, plan: ContestantPlan) -> ContestantEntry:
    """The entry rehearsed for it: a contestant that needs an actor of its own and calls no
    model (latency, chaos) is the fixed-price merchant underneath."""
    if plan.kind.needs_actor and not plan.calls_models:
        return ContestantEntry(name=entry.name, kind="fixed_price")
    return entry


def _of(
    plan: ContestantPlan, calls: list[ModelCallRecord], prices: dict, longest: list[ModelCallRecord]
) -> Estimate:
    """A language-model contestant's rehearsed calls, summed. The bound has every call write
    max_tokens and every decision asked again with its answer (a repair); for an agent, every
    day take all its steps (`longest`: the calls of that rehearsal), every answer max_tokens long."""
    params: Any = plan.params
    prices = {**prices_from(prices), **validate_settings(params.model, params.provider_settings).prices}
    input_tokens, output_tokens = sum(c.input_tokens for c in calls), sum(c.output_tokens for c in calls)
    steps = None
    if params.mode == "agent":
        most = sum(c.purpose == "step" for c in longest)
        steps = (most // params.max_steps, most)  # one a day at fewest
        worst = TokenUsage(
            input_tokens=sum(c.input_tokens for c in longest), output_tokens=params.max_tokens * len(longest)
        )
    else:
        decisions = [c for c in calls if c.purpose == "decide"]
        worst = TokenUsage(
            input_tokens=input_tokens + sum(c.input_tokens + params.max_tokens for c in decisions),
            output_tokens=params.max_tokens * (len(calls) + len(decisions)),
        )
    return Estimate(
        plan.name,
        params.model,
        dict(Counter(c.purpose for c in calls)),
        input_tokens,
        output_tokens,
        total_cost(calls),
        cost(params.model, worst, prices),
        steps,
    )
