"""Whether each language-model contestant of a tournament can play its first day, checked as
the file is loaded (tournaments.load), before anything is played or written.

For each scenario it plays, its first match of the schedule opens as a run opens it (the same
seeds), and the merchant takes its first turn rehearsed (contestants.llm.rehearsal): it builds
its real requests of the day, counted as its model counts them, and calls no model. Where even
the smallest of them does not fit its model's window with room for max_tokens (the rules, the
day's report and its notes; an agent compacts first), it stops the rehearsal where it would
stop the run, with the run's own line (CallsStopped), and the file is refused with that line.

Only the first day is checked here: later reports are longer (yesterday's results, rivals'
messages), and an agent's notes grow, so a window that holds the first day may not hold every
day. `arena validate --estimate` rehearses every day of every match (tournaments.estimate). An
entrant that opens after the first day is not checked here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from common.yaml_files import ConfigError
from contestants.base import RunOptions
from contestants.calls.coordinator import CallsStopped
from market.engine import Market
from market.scenario import Scenario
from tournaments.plan import ContestantPlan, plan_tournament
from tournaments.schedule import MatchSpec, match_seeds, schedule

if TYPE_CHECKING:  # the file's models import this module to check what they load
    from tournaments.config import Tournament, TournamentSpec


def check_first_days(tournament: Tournament) -> None:
    """ConfigError (naming the contestant, with the line its run would stop with) for the
    first contestant met in the schedule that calls a model and cannot play its first day of a
    scenario."""
    spec = tournament.spec
    plans = plan_tournament(spec)
    names = [entry.name for entry in spec.contestants]
    options = RunOptions(rehearse="fewest", no_cache=True, prices=spec.prices)
    checked: set[tuple[str, str]] = set()  # (contestant, scenario)
    for match in schedule(tournament):
        for seat, name in enumerate(match.seats):
            if not plans[name].calls_models or (name, match.scenario) in checked:
                continue
            checked.add((name, match.scenario))
            stopped = _stop(plans[name], match, seat, tournament.scenarios[match.scenario], spec, options)
            if stopped is not None:
                raise ConfigError(
                    tournament.path,
                    f"contestants[{names.index(name)}]",
                    f"{stopped} (its first day of {match.scenario!r}, rehearsed)",
                )


def _stop(
    plan: ContestantPlan,
    match: MatchSpec,
    seat: int,
    scenario: Scenario,
    spec: TournamentSpec,
    options: RunOptions,
) -> str | None:
    """Why the run would stop at the first turn of the contestant of `plan` in `seat` of
    `match` (tournaments.match: the market and the merchant seeded as there), rehearsed with
    `options`; None where it would not, or where its seat opens later."""
    seeds = match_seeds(spec.seed, match.draws, len(match.seats))
    market = Market(scenario, [match.seats], match.days, spec.talk)
    market.reset(seeds[:1])
    if not market.playing[seat]:
        return None
    [observation] = market.observations(market.view(), [seat])
    merchant = plan.make(options)
    merchant.reset(merchant=match.seats[seat], scenario=scenario, seed=seeds[1 + seat])
    try:
        merchant.decide(observation)
    except CallsStopped as exc:
        return str(exc)
    return None
