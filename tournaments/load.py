"""A tournament file loaded for running (`arena run`, `arena validate`): read and validated
(tournaments.config), then checked against all it will play, before anything is played or
written: its contestants against their kinds, each scenario found and loaded and the file's
goals, deviation probe and off-path questions checked against it, the seeds an adaptive run may
reach, and each language-model contestant's first day rehearsed (tournaments.first_day). A
sweep's every cell is checked so.

Every mistake becomes a `ConfigError` naming the file and the field.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from common.yaml_files import MAX_SEED, ConfigError, parse_yaml, read_text, validated
from market.scenario import Goal, Scenario
from results.scoring.metrics import METRICS
from tournaments.conduct import checked_judges
from tournaments.config import (
    Cell,
    ScenarioValues,
    Tournament,
    TournamentSpec,
    cell_label,
    cell_settings,
    check_contestants,
    check_contestants_play,
    played_scenario,
)
from tournaments.first_day import check_first_days
from tournaments.schedule import largest_seed


def load_tournament(path: str | Path, text: str | None = None) -> Tournament:
    """The tournament file at `path` (or `text` as if it were there), checked for running: its
    contestants' parameters, its scenarios found and loaded, that every contestant can play
    them and the first day of each that calls a model; with a sweep, every cell checked so."""
    path = Path(path)
    text = read_text(path) if text is None else text
    data = parse_yaml(path, text)
    spec = validated(path, TournamentSpec, data)
    if spec.sweep is None:
        return _checked(path, text, spec)
    cells = []
    for factors, cell_data, scenario_values in cell_settings(path, spec, data):
        try:
            cell = _checked(path, text, validated(path, TournamentSpec, cell_data), scenario_values)
        except ConfigError as exc:
            where = f"{exc.field}: {exc.message}" if exc.file == str(path) and exc.field else str(exc)
            raise ConfigError(path, "sweep", f"cell {cell_label(factors)}: {where}") from None
        cells.append(Cell(factors=factors, tournament=cell))
    scenarios = {
        scenario.name: scenario
        for i in range(len(spec.scenarios))
        for scenario in [played_scenario(path, spec, i)]
    }
    return Tournament(spec=spec, scenarios=scenarios, path=str(path), text=text, cells=tuple(cells))


def _checked(path: Path, text: str, spec: TournamentSpec, scenario_values: ScenarioValues = ()) -> Tournament:
    """The tournament `spec` describes (read from the file at `path`, whose text is `text`),
    checked for running; every scenario with `scenario_values` set in it."""
    check_contestants(path, spec)
    if spec.conduct is not None:
        checked_judges(path, spec.conduct, [entry.name for entry in spec.contestants])
    if spec.goals is not None:
        check_goals(path, "goals", spec.goals)
    scenarios: dict[str, Scenario] = {}
    for i in range(len(spec.scenarios)):
        scenario = played_scenario(path, spec, i, scenario_values)
        if spec.goals is None:
            check_goals(path, f"scenarios[{i}]", scenario.goals, f"scenario {scenario.name!r}: ")
        if scenario.name in scenarios:
            raise ConfigError(path, f"scenarios[{i}]", f"scenario {scenario.name!r} is listed twice")
        try:
            scenario.check_merchants(spec.merchants_per_match)
        except ValueError as exc:
            raise ConfigError(
                path, f"scenarios[{i}]", f"{exc} ({spec.format} puts {spec.merchants_per_match} in each)"
            ) from None
        days = spec.days or scenario.days
        late = [act for act in scenario.interventions if act.last_day > days]
        if late:
            raise ConfigError(
                path,
                "days" if spec.days else f"scenarios[{i}]",
                f"intervention {late[0].name!r} of scenario {scenario.name!r} ends on day "
                f"{late[0].last_day}, after the last of its matches' {days} days",
            )
        scenarios[scenario.name] = scenario
        check_contestants_play(path, spec, scenario)
        if spec.deviation is not None:
            check_deviation(path, spec, scenario, f"scenarios[{i}]")
        if spec.off_path is not None:
            check_off_path(path, spec, scenario, f"scenarios[{i}]")
    tournament = Tournament(spec=spec, scenarios=scenarios, path=str(path), text=text)
    largest = largest_seed(tournament)
    if largest > MAX_SEED:
        raise ConfigError(
            path,
            "seeds",
            f"adaptive may play a group past these seeds, on the integers after the largest, up to "
            f"{largest}; a seed may be at most {MAX_SEED}: give smaller seeds",
        )
    check_first_days(tournament)
    return tournament


GOAL_METRICS = [name for name in METRICS if name != "goals_met"]  # what a goal may be set on


def check_goals(path: Path, field: str, goals: Sequence[Goal], within: str = "") -> None:
    """ConfigError for the first goal on no metric arena computes, or with a bound its metric
    cannot reach (a share outside 0 to 1, a count or a day below 0)."""
    for k, goal in enumerate(goals):
        metric = METRICS.get(goal.metric)
        named = f"{field}[{k}]" if field == "goals" else field
        if metric is None or goal.metric == "goals_met":
            raise ConfigError(
                path,
                f"{named}.metric" if field == "goals" else named,
                f"{within}goal on unknown metric {goal.metric!r} (metrics: {', '.join(GOAL_METRICS)})",
            )
        low, high = {"share": (0.0, 1.0), "count": (0.0, math.inf), "day": (0.0, math.inf)}.get(
            metric.unit, (-math.inf, math.inf)
        )
        if not low <= goal.bound <= high:
            bound = "at_least" if goal.at_least is not None else "at_most"
            raise ConfigError(
                path,
                f"{named}.{bound}" if field == "goals" else named,
                f"{within}{goal.metric} is a {metric.unit}, so {goal.bound:g} cannot bound it",
            )


def check_deviation(path: Path, spec: TournamentSpec, scenario: Scenario, field: str) -> None:
    """ConfigError if `scenario`'s matches cannot be probed as `spec.deviation` says: the
    deviation must end before the match does (a day after it to watch), its seat must be open
    from its first day (not a new entrant still to come), a price must be one the market takes,
    and best_response and nash need the scenario's price game."""
    probe = spec.deviation
    assert probe is not None
    days = spec.days or scenario.days
    if probe.last_day >= days:
        raise ConfigError(
            path,
            "deviation.days" if probe.days > 1 else "deviation.day",
            f"the deviation ends on day {probe.last_day}, but {field} ({scenario.name!r}) has {days} "
            "days: it must end before the last",
        )
    opening = scenario.opening_days(spec.merchants_per_match)
    if probe.seat < len(opening) and opening[probe.seat] > probe.day:
        raise ConfigError(
            path,
            "deviation.seat",
            f"seat {probe.seat} of {field} ({scenario.name!r}) opens on day {opening[probe.seat]}, after "
            f"the deviation's first day {probe.day}",
        )
    ceiling = min(p.price_ceiling for p in scenario.products)
    _check_price_target(path, "deviation.to", probe.to, ceiling, spec, scenario, field)


def check_off_path(path: Path, spec: TournamentSpec, scenario: Scenario, field: str) -> None:
    """ConfigError if `scenario`'s matches cannot be asked `spec.off_path`: a day after their
    last, or a nash or monopoly price of a scenario without a price game."""
    asked = spec.off_path
    assert asked is not None
    days = spec.days or scenario.days
    if max(asked.days) > days:
        raise ConfigError(
            path,
            "off_path.days",
            f"day {max(asked.days)} is after the last of {field} ({scenario.name!r}): {days}",
        )
    ceiling = scenario.products[0].price_ceiling
    _check_price_target(path, "off_path.price", asked.price, ceiling, spec, scenario, field)


def _check_price_target(
    path: Path,
    setting: str,
    target: float | str,
    ceiling: float,
    spec: TournamentSpec,
    scenario: Scenario,
    field: str,
) -> None:
    """ConfigError naming `setting` unless `target` can be put to `scenario`'s matches: a price
    at most `ceiling`, or a named one (best_response, nash, monopoly) of its price game."""
    if not isinstance(target, str):
        if target > ceiling:
            raise ConfigError(
                path, setting, f"{target:g} is above {field} ({scenario.name!r})'s price ceiling {ceiling:g}"
            )
        return
    from market.equilibrium import EquilibriumError, equilibria  # scipy: only for a named price

    try:
        equilibria(scenario, spec.merchants_per_match)
    except EquilibriumError as exc:
        raise ConfigError(path, setting, f"{target} needs the price game of {field}: {exc}") from None
