"""What a tournament's model calls will take, before any is made (`arena validate --estimate`).

Every match of the schedule is rehearsed, here, in this process: the market runs day by day,
rule merchants play as they would, and each language-model merchant builds its real prompts
(the rules, its memory as it grows, the day's report, reflections, recall and off-path
questions) but its provider answers itself (contestants.llm.rehearsal): answers of the usual
size, whose operations are the best response to the merchant's day, so that it stays in
business and every day of the match is counted. The prompts' tokens are counted as each
provider counts them.

Every figure is a range, from one step a day to the most. One step a day is what the
rehearsal counted: a merchant deciding in one answer a day making the calls it is asked for
(none repaired), an agent's day one step (its operations and end_day at once), each answer of
the usual size and every prompt token priced as fresh input. It is not a floor: a real model's
answers may be shorter (its tokens then a few percent fewer), and a prompt cache serves input
at a lower price. The most: a decision's every call writing its max_tokens and every decision
repaired once; an agent's `max_steps` a day (a rehearsal whose days take every step), each
answer max_tokens long. Hidden reasoning is only in the most. A contestant that needs an actor
of its own and calls no model (one slow or fragile on purpose) is rehearsed as a fixed_price
merchant in its seat. With a deviation probe, the deviated path's calls count but for those
that ask what the match itself asked (the same request, so its answer is in the response cache
by then), unless the contestant keeps no cache.

A rehearsal stops where the run would: where even the smallest request of a day does not fit
a model's window (contestants.llm.merchant), the estimate is refused with the run's own line,
for the run would stop there too. A rehearsed day on which a merchant's turn failed otherwise
(a fault) is counted and said, as is a bankruptcy: the estimate leaves out what such days would
have called. What a contestant's calls may take at most is its kind's to say
(Contestant.calls_outlook).

A tournament with a `conduct:` section has its judges' calls foreseen apart from the
merchants': each judge reads every item of the words of each rehearsed match (one step a day's
rehearsal) as the run would read them from the stored match (results.scoring.conduct.words_of,
narrowed by the section's `read:`), with its real prompts, counted as its provider counts them,
and a typical judgement as its answer (contestants.llm.rehearsal); the range runs from answers of
that size to every answer max_tokens long. Words a rehearsal does not write are not foreseen
(docs/conduct.md, Estimates).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from common.conduct import Source, Words
from common.yaml_files import ConfigError
from contestants.base import CallsOutlook, RehearsedDay, RunOptions
from contestants.calls.coordinator import CallsStopped
from contestants.kinds import judge_for
from results.records import Fault, ModelCallRecord, StoppedMatch, total_cost
from results.scoring.conduct import products_of, words_of
from tournaments.conduct import judge_records
from tournaments.config import ContestantEntry, Tournament
from tournaments.deviation_paths import DEVIATED_SUFFIX
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import ContestantPlan, plan_contestants, plan_tournament
from tournaments.schedule import schedule

Span = tuple[int, int]  # one step a day, the most


@dataclass
class Estimate:
    """One contestant's model calls over the whole tournament (or all contestants': "total"),
    each figure from one step a day to the most (see the module's docstring); or one judge's
    (`contestant` its name), from answers of the usual size to the most."""

    contestant: str
    model: str
    calls: Span = (0, 0)
    by_purpose: dict[str, Span] = field(default_factory=dict)
    input_tokens: Span = (0, 0)
    output_tokens: Span = (0, 0)
    cost: tuple[float, float] | None = (0.0, 0.0)  # USD; None: a model without a price
    bankrupt: int = 0  # rehearsed matches the merchant went bankrupt in: their later days are not counted
    failed: int = 0  # rehearsed days its turn failed on (faults): their calls are not counted
    failure: str | None = None  # the first of them: where, and why

    def add(self, other: Estimate) -> None:
        for purpose, count in other.by_purpose.items():
            self.by_purpose[purpose] = _sum(self.by_purpose.get(purpose, (0, 0)), count)
        self.calls = _sum(self.calls, other.calls)
        self.input_tokens = _sum(self.input_tokens, other.input_tokens)
        self.output_tokens = _sum(self.output_tokens, other.output_tokens)
        self.cost = None if self.cost is None or other.cost is None else _sum(self.cost, other.cost)
        self.bankrupt += other.bankrupt
        self.failed += other.failed
        self.failure = self.failure or other.failure


def _sum(a: tuple[Any, Any], b: tuple[Any, Any]) -> Any:
    return (a[0] + b[0], a[1] + b[1])


@dataclass
class Estimates:
    """A tournament's model calls before any is made: its contestants' (one Estimate per
    contestant that calls a model, then their total) and, apart, its judges' (one per judge of
    its `conduct:` section, named as its judgements are, then their total; none without one)."""

    contestants: list[Estimate]
    judges: list[Estimate]


def estimate(tournament: Tournament) -> Estimates:
    """Per contestant that calls a model (and model, where a sweep varies it), in the file's
    order, and per judge, in the section's order, over every cell of a sweep; each with its
    total."""
    contestants: dict[tuple[str, str], Estimate] = {}
    judges: dict[tuple[str, str], Estimate] = {}
    for cell in tournament.each_cell():
        merchants, judging = _estimate_cell(cell.tournament)
        for found, ones in ((contestants, merchants), (judges, judging)):
            for one in ones:
                found.setdefault((one.contestant, one.model), Estimate(one.contestant, one.model)).add(one)
    return Estimates(_with_total(contestants.values()), _with_total(judges.values()) if judges else [])


def _with_total(estimates: Collection[Estimate]) -> list[Estimate]:
    total = Estimate("total", "")
    for one in estimates:
        total.add(one)
    return [*estimates, total]


def _estimate_cell(tournament: Tournament) -> tuple[list[Estimate], list[Estimate]]:
    """The cell's contestants' estimates and its judges'."""
    spec = tournament.spec
    plans = plan_tournament(spec)
    outlooks = {
        name: outlook
        for name, plan in plans.items()
        if (outlook := plan.kind.calls_outlook(plan.params, spec.prices)) is not None
    }
    read = spec.conduct.read if spec.conduct is not None else ()
    one_step = _rehearse(tournament, plans, outlooks, "fewest", read)
    # the market plays the same in both rehearsals (an agent's operations are the same either way)
    steps = any(outlook.steps for outlook in outlooks.values())
    longest = _rehearse(tournament, plans, outlooks, "longest").calls if steps else {}
    merchants = [
        _of(
            name,
            outlook,
            one_step.calls[name],
            longest.get(name, []),
            one_step.bankrupt[name],
            one_step.failed[name],
        )
        for name, outlook in outlooks.items()
    ]
    return merchants, _judging(tournament, one_step.words)


@dataclass(frozen=True)
class MatchWords:
    """A rehearsed match's words as its judges would read them: the items, and the products
    of its market."""

    key: str
    items: list[Words]
    products: list[str]


@dataclass
class Rehearsed:
    """Every match of a schedule rehearsed, by contestant: its calls (of a probed match's
    deviated path, those the match did not ask already), in how many matches it went bankrupt,
    and where and why its turn failed (each day as "day D of MATCH: fault"); and each match's
    words, of the sources asked for."""

    calls: dict[str, list[ModelCallRecord]] = field(default_factory=lambda: defaultdict(list))
    bankrupt: Counter[str] = field(default_factory=Counter)
    failed: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    words: list[MatchWords] = field(default_factory=list)

    def fail(self, key: str, faults: list[Fault]) -> None:
        """Count the `faults` of the match (or path) `key`."""
        for fault in faults:
            self.failed[fault.merchant].append(f"day {fault.day} of {key}: {fault.detail}")


def _rehearse(
    tournament: Tournament,
    plans: dict[str, ContestantPlan],
    outlooks: dict[str, CallsOutlook],
    day: RehearsedDay,
    read: Collection[Source] = (),
) -> Rehearsed:
    """Every match of the schedule rehearsed with agents' days as `day` says, and its words of
    the sources in `read` kept. ConfigError, with the run's own line, where a rehearsal stops
    as the run would."""
    spec = tournament.spec
    rehearsed = plan_contestants(_rehearsed(entry, plans[entry.name]) for entry in spec.contestants)
    rules = MatchRules.of(spec, RunOptions(rehearse=day, no_cache=True, prices=spec.prices))
    found = Rehearsed()
    cached = {name for name, outlook in outlooks.items() if outlook.cached}  # a request asked again is free
    for match in schedule(tournament):
        played = play_here([Match(match, tournament.scenarios[match.scenario], rules, rehearsed)])[0]
        if isinstance(played, StoppedMatch):  # a rehearsal calls no model: only a request that cannot fit
            raise ConfigError(tournament.path, None, f"{played.reason} (rehearsed: match {match.key})")
        found.bankrupt.update(m.contestant for m in played.merchants if m.bankrupt_day is not None)
        if read:  # the main path's, as the run stores it (a deviated path's words are not judged)
            days = played.days_played
            found.words.append(
                MatchWords(match.key, words_of(days, played.transcript, read), products_of(days))
            )
        found.fail(match.key, played.faults)
        deviated = played.deviation.calls if played.deviation is not None else []
        if played.deviation is not None:
            found.fail(match.key + DEVIATED_SUFFIX, played.deviation.faults)
        asked = {call.request_hash for call in played.calls}
        for call in [
            *played.calls,
            *(c for c in deviated if not (c.contestant in cached and c.request_hash in asked)),
        ]:
            found.calls[call.contestant].append(call)
    return found


def _rehearsed(entry: ContestantEntry, plan: ContestantPlan) -> ContestantEntry:
    """The entry rehearsed for it: a contestant that needs an actor of its own and calls no
    model (one slow or fragile on purpose) is a fixed-price merchant in its seat."""
    if plan.kind.needs_actor and not plan.calls_models:
        return ContestantEntry(name=entry.name, kind="fixed_price")
    return entry


def _of(
    name: str,
    outlook: CallsOutlook,
    one_step: list[ModelCallRecord],
    longest: list[ModelCallRecord],
    bankrupt: int,
    failed: list[str],
) -> Estimate:
    """A contestant's rehearsed calls, summed into ranges: from the calls of the rehearsal
    (`one_step`: an agent's days of one step), every prompt token priced as fresh input, to the
    most its kind says they may take (CallsOutlook.most)."""
    low: Counter[str] = Counter(c.purpose for c in one_step)
    most = outlook.most(one_step, longest)
    high = most.by_purpose
    low_cost = total_cost(one_step)
    return Estimate(
        name,
        outlook.model,
        (low.total(), high.total()),
        {purpose: (low[purpose], high[purpose]) for purpose in dict.fromkeys([*low, *high])},
        (sum(c.input_tokens for c in one_step), most.input_tokens),
        (sum(c.output_tokens for c in one_step), most.output_tokens),
        None if low_cost is None or most.cost is None else (low_cost, most.cost),
        bankrupt,
        len(failed),
        failed[0] if failed else None,
    )


def _judging(tournament: Tournament, matches: Sequence[MatchWords]) -> list[Estimate]:
    """Each judge of the tournament's `conduct:` section, rehearsed, reading every item of
    `matches` (one call an item): its calls summed into ranges as a contestant's are, from
    answers of the usual size to every answer max_tokens long. ConfigError, with the run's own
    line, where an item's request cannot fit the judge's window."""
    spec = tournament.spec
    if spec.conduct is None:
        return []
    options = RunOptions(rehearse="fewest", no_cache=True, prices=spec.prices)
    estimates = []
    for entry in spec.conduct.judges:
        judge = judge_for(entry, options)
        outlook = type(judge).calls_outlook(judge.params, spec.prices)
        if outlook is None:  # a judge that calls no model
            continue
        for match in matches:
            try:
                for item in match.items:
                    judge.judge(item, match.products)
            except CallsStopped as exc:
                raise ConfigError(
                    tournament.path, None, f"{exc} (rehearsed: judging match {match.key})"
                ) from None
        estimates.append(_of(judge.name, outlook, judge_records(judge), [], 0, []))
    return estimates
