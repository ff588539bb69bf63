"""Tournament YAML: read, validate, resolve scenario files, expand a sweep into its cells, and
the checks of its parts (tournaments.load runs them all on a file to be played).

Every mistake a user can make in the file becomes a `ConfigError` naming the file and the
field, raised before anything runs or is written.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    field_validator,
    model_validator,
)

from common.errors import FieldError, first_problem
from common.yaml_files import MAX_SEED, ConfigError, FileModel, load_model, parse_yaml, read_text, validated
from contestants.base import ContestantConfigError
from contestants.calls.budget import Budget, Price
from contestants.kinds import contestant_class, kinds, validate_params
from market.scenario import (
    MAX_DAYS,
    MAX_MERCHANTS_PER_MATCH,
    SHIPPED_SCENARIOS,
    Goal,
    Intervention,
    Scenario,
    load_scenario,
    names_a_file,
    shipped_scenarios,
)
from results.records import FactorValue, PlayedScenarios, as_number, same_value, shown_value
from results.scoring.composite import ScoringWeights
from results.scoring.rating_fit import LEVEL
from results.settings import CollusionSettings, ConductSettings, DeviationProbe, OffPathSettings
from results.storage.schema import TournamentRow

MAX_SWEEP_CELLS = 10_000
MAX_REPETITIONS = 10_000

Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]


class ContestantEntry(FileModel):
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.\-]+$")
    kind: str
    params: dict[str, Any] = Field(default_factory=dict)
    isolate: bool | None = Field(None, description="run in its own Ray actor; default: the kind decides")
    copies: int = Field(
        1,
        ge=1,
        le=MAX_MERCHANTS_PER_MATCH,
        description="play as this many contestants alike, NAME1 to NAMEn (a model against itself)",
    )


class TournamentSpec(FileModel):
    """The tournament file's schema. Unknown keys are errors."""

    name: str = Field(min_length=1)
    seed: Seed = 0
    format: Literal["round_robin", "free_for_all", "gauntlet", "solo", "adaptive"] = "round_robin"
    group_size: int = Field(
        2,
        ge=1,
        le=MAX_MERCHANTS_PER_MATCH,
        description="merchants per match (round_robin, adaptive); 1: each alone against the market "
        "(solo play)",
    )
    confidence: float = Field(
        LEVEL,
        gt=0.5,
        lt=1,
        description="two contestants next to each other in the table are ordered when this share of the "
        "rating bootstrap's resamples orders them so, else tied; an adaptive run stops once all are ordered",
    )
    max_matches: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="adaptive: the most matches it plays; default: as many as the round robin of its "
        "groups, scenarios and seeds",
    )
    sampling_repeats: int = Field(
        1,
        ge=1,
        le=100,
        description="play every match again this many times less one for each of its merchants, the "
        "market's and the others' draws the same and that merchant's own (a model's sampling) drawn "
        "anew: the leaderboard then splits each contestant's profit variance into the market's "
        "share and its own sampling's",
    )
    challenger: str | None = Field(None, description="gauntlet: the contestant who meets each of the others")
    contestants: list[ContestantEntry] = Field(min_length=1)
    scenarios: list[str] = Field(
        min_length=1,
        description="scenario names (a shipped one, or NAME.yaml in scenarios/ near the file) or paths",
    )
    seeds: list[Seed] | None = Field(None, min_length=1)
    repetitions: int | None = Field(None, ge=1, le=MAX_REPETITIONS, description="shorthand for seeds 0..n-1")
    days: int | None = Field(None, ge=1, le=MAX_DAYS, description="overrides each scenario's days")
    rotate_seats: bool = True
    max_concurrent_matches: int = Field(8, ge=1, le=1024)
    decision_timeout_s: float | None = Field(
        None,
        gt=0,
        le=3600,
        description="seconds a hosted contestant's daily turn may take; default: what its own settings need",
    )
    recall_every: int = Field(
        5, ge=0, le=MAX_DAYS, description="ask recall questions every this many days; 0: never"
    )
    budget: Budget | None = None
    prices: dict[str, Price] = Field(
        default_factory=dict,
        description="USD per million tokens by provider/model, under each contestant's own",
    )
    stop_after_failures: int = Field(
        3,
        ge=1,
        le=1000,
        description="the same non-retryable model error this many times in a row stops the run",
    )
    scoring: ScoringWeights = Field(
        default_factory=ScoringWeights, description="weights of the leaderboard's composite score"
    )
    collusion: CollusionSettings = Field(
        default_factory=CollusionSettings,
        description="the measurement window and the flags of the collusion metrics",
    )
    deviation: DeviationProbe | None = Field(
        None, description="play every match again with one seat's prices forced (results.scoring.deviation)"
    )
    goals: list[Goal] | None = Field(
        None, description="campaign goals for every scenario, in place of the scenarios' own"
    )
    interventions: list[Intervention] = Field(
        default_factory=list,
        description="a regulator's acts in every scenario, after the scenarios' own (scenario.Intervention)",
    )
    off_path: OffPathSettings | None = Field(
        None,
        description="on some days, ask each merchant what it would charge had its rival posted a given price",
    )
    conduct: ConductSettings | None = Field(
        None,
        description="judges that read every word the merchants wrote, and the claims checked against "
        "the record (arena audit judges a stored tournament)",
    )
    talk: StrictBool = Field(
        False,
        description="merchants may send their rivals a message each day, which the rivals read the next "
        "day (cheap talk)",
    )

    sweep: dict[str, list[FactorValue]] | None = Field(
        None,
        description="factors and their values: every cell of their product is played (config.Cell)",
    )

    @field_validator("sweep", mode="before")
    @classmethod
    def _numbers(cls, sweep: Any) -> Any:
        """YAML reads 1e-5 (no point before the e) as text: a factor's value that reads as a
        number is that number. A value that is no finite number (.nan, .inf) is refused here,
        where the field it is for is named."""
        if not isinstance(sweep, dict):
            return sweep
        for factor, values in sweep.items():
            for k, value in enumerate(values if isinstance(values, list) else []):
                if isinstance(value, float) and not math.isfinite(value):
                    raise FieldError(f"{factor}[{k}]", "Input should be a finite number")
        return {
            factor: [as_number(value) for value in values] if isinstance(values, list) else values
            for factor, values in sweep.items()
        }

    @field_validator("sweep")
    @classmethod
    def _cells(cls, sweep: dict[str, list[FactorValue]] | None) -> dict[str, list[FactorValue]] | None:
        if sweep is None:
            return None
        if not sweep:
            raise ValueError("names no factor; leave it out, or give FACTOR: [VALUE, ...]")
        cells = 1
        for factor, values in sweep.items():
            if not values:
                raise FieldError(factor, "has no values")
            marked = [v for v in values if isinstance(v, str) and ("," in v or "=" in v)]
            if marked:
                raise FieldError(
                    factor, f"a value cannot hold ',' or '=' (they mark a cell's label): {marked[0]!r}"
                )
            alike = [same_value(v) for v in values]
            repeated = sorted({shown_value(v) for v, key in zip(values, alike) if alike.count(key) > 1})
            if repeated:
                raise FieldError(factor, f"values must be unique; repeated: {', '.join(repeated)}")
            cells *= len(values)
        if cells > MAX_SWEEP_CELLS:
            raise ValueError(f"has {cells:,} cells; at most {MAX_SWEEP_CELLS:,}")
        return sweep

    @field_validator("contestants")
    @classmethod
    def _unique_names(cls, entries: list[ContestantEntry]) -> list[ContestantEntry]:
        """The entries, each that gives `copies` as that many, NAME1 to NAMEn (one: NAME1, so
        that a sweep of copies keeps each copy's name), their names unique."""
        entries = [
            entry.model_copy(update={"name": f"{entry.name}{k}", "copies": 1})
            if "copies" in entry.model_fields_set
            else entry
            for entry in entries
            for k in range(1, entry.copies + 1)
        ]
        names = [e.name for e in entries]
        long = [name for name in names if len(name) > 64]
        if long:
            raise ValueError(f"a name with its copy's number is longer than 64 characters: {long[0]!r}")
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"contestant names must be unique; repeated: {', '.join(duplicates)}")
        return entries

    @field_validator("seeds")
    @classmethod
    def _unique_seeds(cls, seeds: list[int] | None) -> list[int] | None:
        if seeds is not None:
            duplicates = sorted({s for s in seeds if seeds.count(s) > 1})
            if duplicates:
                raise ValueError(f"must be unique; repeated: {', '.join(map(str, duplicates))}")
        return seeds

    @model_validator(mode="after")
    def _coherent(self) -> TournamentSpec:
        if self.seeds is not None and self.repetitions is not None:
            raise FieldError("repetitions", "give seeds or repetitions, not both")
        if self.merchants_per_match > 1 and len(self.contestants) < 2:
            raise FieldError("contestants", "a match needs two of them, unless they play solo")
        grouped = self.format in ("round_robin", "adaptive")
        if grouped and self.group_size > len(self.contestants):
            raise FieldError(
                "group_size", f"{self.group_size} is larger than the {len(self.contestants)} contestants"
            )
        if not grouped and "group_size" in self.model_fields_set:
            raise FieldError(
                "group_size", f"only applies to the round_robin and adaptive formats, not {self.format}"
            )
        if self.format == "adaptive":
            ring = len(self.contestants) if len(self.contestants) > self.group_size else 1
            if self.max_matches is not None and self.max_matches < ring * self.plays_per_match:
                raise FieldError(
                    "max_matches",
                    f"{self.max_matches} is fewer than the first round, in which everyone plays: "
                    f"{ring * self.plays_per_match} matches",
                )
            if self.group_size < 2:
                raise FieldError(
                    "group_size", "adaptive orders contestants by the matches they meet in: 2 or more"
                )
            if self.sweep is not None:
                raise FieldError("sweep", "adaptive plays one field; sweep it in files of its own")
        elif self.sweep is not None and "adaptive" in self.sweep.get("format", ()):
            raise FieldError(
                "sweep.format", "adaptive plays one field, not a sweep's cell: give it a file of its own"
            )
        elif self.max_matches is not None:
            raise FieldError("max_matches", f"only applies to the adaptive format, not {self.format}")
        if self.format == "free_for_all" and len(self.contestants) > MAX_MERCHANTS_PER_MATCH:
            raise FieldError(
                "contestants",
                f"free_for_all puts every contestant in one market; at most {MAX_MERCHANTS_PER_MATCH}",
            )
        if self.deviation is not None and self.merchants_per_match == 1:
            raise FieldError("deviation", "probes how rivals answer a deviation; a merchant alone has none")
        if self.talk and self.merchants_per_match == 1:
            raise FieldError("talk", "lets merchants message their rivals; a merchant alone has none")
        if self.off_path is not None and self.merchants_per_match == 1:
            raise FieldError("off_path", "asks about a rival's price; a merchant alone has none")
        if self.deviation is not None and self.deviation.seat >= self.merchants_per_match:
            raise FieldError(
                "deviation.seat",
                f"seat {self.deviation.seat} is not in matches of {self.merchants_per_match} merchants "
                "(seats count from 0)",
            )
        if self.format == "gauntlet":
            if self.challenger is None:
                raise FieldError("challenger", "the gauntlet format needs a challenger")
            if self.challenger not in {e.name for e in self.contestants}:
                raise FieldError("challenger", f"{self.challenger!r} is not among the contestants")
        elif self.challenger is not None:
            raise FieldError("challenger", f"only applies to the gauntlet format, not {self.format}")
        return self

    @property
    def merchants_per_match(self) -> int:
        """How many merchants each match of the schedule seats."""
        if self.format in ("round_robin", "adaptive"):
            return self.group_size
        if self.format == "free_for_all":
            return len(self.contestants)
        return 1 if self.format == "solo" else 2

    @property
    def plays_per_match(self) -> int:
        """A match and its repeats: N - 1 for each of its merchants (sampling_repeats N)."""
        return 1 + self.merchants_per_match * (self.sampling_repeats - 1)

    @property
    def seed_list(self) -> list[int]:
        if self.seeds is not None:
            return list(self.seeds)
        return list(range(self.repetitions or 1))


class Tournament(BaseModel):
    """A validated tournament: the spec, its scenarios loaded, and the text it came from.
    A tournament with a sweep also has its `cells`, each a tournament of its own with the
    cell's values in place and no sweep; the spec and scenarios are then the file's own."""

    model_config = ConfigDict(frozen=True)

    spec: TournamentSpec
    scenarios: dict[str, Scenario]
    path: str
    text: str
    cells: tuple[Cell, ...] = ()

    def each_cell(self) -> tuple[Cell, ...]:
        """What is played: the sweep's cells, or the tournament itself as one cell without factors."""
        return self.cells or (Cell(factors={}, tournament=self),)

    @property
    def config_hash(self) -> str:
        """Identity of a tournament for --resume: what decides its matches, that is the
        settings (not the budget, which only decides how many are played, nor the scoring
        weights, prices and judges, which only read the results, nor the failures that stop a run)
        and the scenarios. The collusion settings decide how every match is measured, so
        they count, but only when they differ from the defaults: a file without them has the
        identity it had before they existed. Likewise `talk`, which changes how every match
        is played, and a deviation probe, goals, interventions, off-path questions and a sweep:
        each counts only when there is one."""
        at_default = ({"collusion"} if self.spec.collusion == CollusionSettings() else set()) | (
            set() if self.spec.talk else {"talk"}
        )
        at_default |= {
            name for name in ("deviation", "goals", "sweep", "off_path") if getattr(self.spec, name) is None
        }
        at_default |= set() if self.spec.interventions else {"interventions"}
        # the confidence decides which matches only an adaptive run plays; elsewhere it reads results
        at_default |= set() if self.spec.format == "adaptive" else {"confidence"}
        at_default |= {"max_matches"} if self.spec.max_matches is None else set()
        at_default |= {"sampling_repeats"} if self.spec.sampling_repeats == 1 else set()
        # an adaptive schedule rates by the scoring's objective to choose its rounds
        scored = {"scoring"} if self.spec.format != "adaptive" else set()
        ignored = {"budget", "stop_after_failures", "prices", "conduct"} | scored | at_default
        decisive = self.spec.model_dump(mode="json", exclude=ignored)
        for entry in decisive["contestants"]:
            entry["params"].pop("prices", None)
            entry.pop("copies")  # copies are entries of their own by now
        if "collusion" in decisive and self.spec.collusion.min_gap == CollusionSettings().min_gap:
            del decisive["collusion"][
                "min_gap"
            ]  # newer than the section: at its default, the identity it had
        if "sweep" in decisive:  # its order is the cells' order: kept as pairs, which sorting leaves alone
            decisive["sweep"] = [[factor, values] for factor, values in decisive["sweep"].items()]
        digest = hashlib.sha256(json.dumps(decisive, sort_keys=True).encode())
        for name in sorted(self.scenarios):
            digest.update(self.scenarios[name].identity().encode())
        return digest.hexdigest()


class Cell(BaseModel):
    """One cell of a sweep: its factors' values, in the sweep's order, and the tournament the
    file describes with them in place."""

    model_config = ConfigDict(frozen=True)

    factors: dict[str, FactorValue]
    tournament: Tournament

    @property
    def label(self) -> str:
        """`qlearning.alpha=0.05,group_size=2`: the cell in its matches' keys ("" without factors)."""
        return cell_label(self.factors)


def cell_label(factors: dict[str, FactorValue]) -> str:
    return ",".join(f"{factor}={shown_value(value)}" for factor, value in factors.items())


def parse_tournament(path: Path, text: str) -> TournamentSpec:
    """The one reading of a tournament file: `text`, the contents of the file at `path` (which
    errors name), as its model. Raises ConfigError for the first mistake."""
    return validated(path, TournamentSpec, parse_yaml(path, text))


UNSWEPT = {
    "name": "names the tournament",
    "sweep": "is the sweep itself",
    "contestants": "sweep a parameter instead: KIND.PARAM (every contestant of the kind) or NAME.PARAM",
    "scenarios": "list the scenarios instead: every one is played in every cell",
    "seed": "seeds the whole tournament; sweep repetitions instead",
    "budget": "spans the whole run, every cell",
    "prices": "price the whole run's calls",
    "stop_after_failures": "governs the whole run",
    "scoring": "weighs the whole tournament's leaderboard",
    "max_concurrent_matches": "says how the whole run plays, not what",
}

ScenarioValues = tuple[tuple[tuple[str, ...], FactorValue], ...]  # (path in a scenario file, value)
ENTRY_FIELDS = {("copies",), ("isolate",)}  # NAME.copies, KIND.isolate: an entry's own, not its params


def cell_settings(
    path: Path, spec: TournamentSpec, data: dict[Any, Any]
) -> list[tuple[dict[str, FactorValue], dict[Any, Any], ScenarioValues]]:
    """Every cell of `spec`'s sweep, in the order of its product (the last factor turning
    fastest): its values by factor, the file's settings with them in place, and the values
    it sets in every scenario. A factor is a path of the file's own settings (`group_size`,
    `collusion.window`), a scenario's (`scenario.choice.price_sensitivity`), or a parameter of
    every contestant of a kind (`qlearning.alpha`) or of one contestant (`NAME.alpha`)."""
    assert spec.sweep is not None
    kinds_played = {entry.kind for entry in spec.contestants}
    names = {entry["name"] for entry in data["contestants"]}  # as written: copies by their one name
    targets: dict[str, tuple[str, tuple[str, ...]]] = {}
    for factor in spec.sweep:
        first, *rest = factor.split(".")
        field = f"sweep.{factor}"
        if first in UNSWEPT:
            raise ConfigError(path, field, f"{first} cannot be swept: it {UNSWEPT[first]}")
        if "" in (first, *rest):
            raise ConfigError(path, field, "a factor is a dotted path with no empty part")
        if first in names and first in TournamentSpec.model_fields:
            raise ConfigError(
                path, field, f"{first!r} is both a contestant and a setting; rename the contestant"
            )
        if first == "scenario" or first in names or first in kinds_played:
            if not rest:
                raise ConfigError(path, field, f"name what of {first} varies: {first}.FIELD")
            if first in names and first in kinds_played and first != "scenario":
                raise ConfigError(
                    path, field, f"{first!r} is both a contestant and a kind; rename the contestant"
                )
            targets[factor] = (first, tuple(rest))
        elif first in TournamentSpec.model_fields:
            targets[factor] = ("", (first, *rest))
        else:
            of_kind = f"; no contestant is of kind {first!r}" if first in kinds() else ""
            raise ConfigError(
                path,
                field,
                "unknown factor: not a setting of the file (group_size, days, ...), scenario.FIELD, "
                f"KIND.PARAM of a kind here ({', '.join(sorted(kinds_played))}) or NAME.PARAM{of_kind}",
            )
    cells = []
    for values in itertools.product(*spec.sweep.values()):
        factors = dict(zip(spec.sweep, values))
        cell_data = _fresh({key: value for key, value in data.items() if key != "sweep"})
        scenario_values = []
        for factor, value in factors.items():
            target, keys = targets[factor]
            if target == "scenario":
                scenario_values.append((keys, value))
                continue
            own = target != "" and keys in ENTRY_FIELDS  # a field of the entry itself, not a parameter
            entries = (
                [cell_data]
                if target == ""
                else [
                    entry if own else entry.setdefault("params", {})
                    for entry in cell_data["contestants"]
                    if entry.get("name") == target or entry.get("kind") == target
                ]
            )
            for entry in entries:
                _put(path, f"sweep.{factor}", entry, keys, value)
        cells.append((factors, cell_data, tuple(scenario_values)))
    return cells


def _fresh(data: Any) -> Any:
    """A copy of YAML settings in which no mapping or list is shared: a YAML alias (`*p`) reads
    as one object in two places, which a factor set in one must leave alone in the other."""
    if isinstance(data, dict):
        return {key: _fresh(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_fresh(value) for value in data]
    return data


def _put(path: Path, field: str, data: Any, keys: tuple[str, ...], value: FactorValue) -> None:
    """`value` set at `keys` in the settings `data`, the sections on the way made if missing
    (a section or item of a list by its number: `products.0.unit_cost`)."""
    *sections, last = keys
    for key in sections:
        if isinstance(data, list) and key.isdigit() and int(key) < len(data):
            data = data[int(key)]
        elif isinstance(data, dict) and (data.get(key) is None or isinstance(data[key], (dict, list))):
            if data.get(key) is None:  # a section left out, or null, is made
                data[key] = {}
            data = data[key]
        else:
            raise ConfigError(path, field, f"{key!r} is not a section of the settings it names")
    if isinstance(data, list) and last.isdigit() and int(last) < len(data):
        data[int(last)] = value
    elif isinstance(data, dict):
        data[last] = value
    else:
        raise ConfigError(path, field, f"{last!r} is not a field of the settings it names")


def played_scenario(
    path: Path, spec: TournamentSpec, i: int, scenario_values: ScenarioValues = ()
) -> Scenario:
    """The i-th scenario `spec` (of the file at `path`) names, found and loaded with
    `scenario_values` set in it, as the tournament plays it (as_played)."""
    found = find_scenario(path, spec.scenarios[i], f"scenarios[{i}]")
    if not scenario_values:
        return as_played(path, spec, load_scenario(found))
    data = parse_yaml(found, read_text(found))
    for keys, value in scenario_values:
        _put(path, "sweep.scenario." + ".".join(keys), data, keys, value)
    return as_played(path, spec, validated(found, Scenario, data))


def played_scenarios(tournament: Tournament) -> PlayedScenarios:
    """The scenarios and collusion settings of each cell of `tournament`."""
    return PlayedScenarios(
        {
            cell.label: (cell.tournament.scenarios, cell.tournament.spec.collusion)
            for cell in tournament.each_cell()
        }
    )


def as_played(path: Path, spec: TournamentSpec, scenario: Scenario) -> Scenario:
    """`scenario` as the tournament of the file at `path` plays it: with the file's goals in
    place of its own, where the file gives some, and the file's interventions after its own.
    ConfigError for an intervention the scenario cannot have (a product it does not sell, a day
    after its last)."""
    if spec.goals is not None:
        scenario = scenario.model_copy(update={"goals": tuple(spec.goals)})
    if spec.interventions:
        acts = [*scenario.interventions, *spec.interventions]
        try:
            scenario = Scenario.model_validate({**scenario.model_dump(), "interventions": acts})
        except ValidationError as exc:
            raise ConfigError(
                path, "interventions", f"in scenario {scenario.name!r}: {first_problem(exc).explained}"
            ) from None
    return scenario


def check_contestants(path: Path, spec: TournamentSpec) -> None:
    """ConfigError naming the contestant if its kind refuses its parameters or cannot run here
    (Contestant.preflight), if it seats a person where one cannot play (inline, or in matches a
    deviation probe plays twice), or if it calls a model of no known price while the budget has
    a cost."""
    for i, entry in enumerate(spec.contestants):
        try:
            kind = contestant_class(entry.kind)
            params = validate_params(entry.kind, entry.params)
            kind.preflight(params)
            unpriced = kind.unpriced_model(params, spec.prices)
        except ContestantConfigError as exc:
            field = (
                f"contestants[{i}].kind"
                if exc.field == "kind"
                else f"contestants[{i}].params" + (f".{exc.field}" if exc.field else "")
            )
            raise ConfigError(path, field, str(exc)) from None
        if kind.seats_a_person and entry.isolate is False:
            raise ConfigError(
                path,
                f"contestants[{i}].isolate",
                "a person is waited for in an actor of their own, so that no other seat waits with them",
            )
        if kind.seats_a_person and spec.deviation is not None:
            raise ConfigError(
                path,
                "deviation",
                f"a deviation probe plays each match again, which {entry.name!r} (a person) would have to "
                "play twice: seat people in tournaments without one",
            )
        if unpriced is not None and spec.budget is not None and spec.budget.cost_usd is not None:
            raise ConfigError(
                path,
                f"contestants[{i}].params.model",
                f"{unpriced} has no known price, so the cost budget cannot be kept: give its price in "
                f"prices: {{{unpriced}: {{input: ..., output: ...}}}}",
            )


def check_contestants_play(path: Path, spec: TournamentSpec, scenario: Scenario) -> None:
    """ConfigError naming the contestant if one's kind cannot play `scenario` (Contestant.check_scenario)."""
    for i, entry in enumerate(spec.contestants):
        try:
            contestant_class(entry.kind).check_scenario(
                validate_params(entry.kind, entry.params), scenario, spec.merchants_per_match
            )
        except ContestantConfigError as exc:
            field = f"contestants[{i}]" + (f".params.{exc.field}" if exc.field else "")
            raise ConfigError(path, field, f"cannot play scenario {scenario.name!r}: {exc}") from None


def load_weights(path: str | Path) -> ScoringWeights:
    """A `--weights` file: the mapping of a tournament file's `scoring:` section, at the top level."""
    return load_model(path, ScoringWeights)


def find_scenario(tournament_path: Path, entry: str, field: str) -> Path:
    """A path (relative to the tournament file), or a name: a file of that name beside the
    tournament file, in a scenarios/ folder near it or in the working directory, else the
    shipped scenario."""
    base = tournament_path.parent
    if names_a_file(entry):
        candidates = [base / entry]
    else:
        file = f"{entry}.yaml"
        near = [base, *base.resolve().parents[:2]]  # the file's folder and two above it
        candidates = [
            base / file,
            *(folder / "scenarios" / file for folder in near),
            Path("scenarios") / file,
            SHIPPED_SCENARIOS / file,
        ]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = ", ".join(str(c) for c in dict.fromkeys(candidates))
    raise ConfigError(
        tournament_path,
        field,
        f"scenario {entry!r} not found (looked in {looked}; shipped: {', '.join(shipped_scenarios())})",
    )


Tournament.model_rebuild()


@dataclass(frozen=True)
class StoredTournament:
    """A stored tournament with its file as the record keeps it (`config_text`), read again by
    parse_tournament for what reads the record: the scoring weights of its leaderboard, and
    per cell of its sweep the scenarios it names and the collusion settings its matches are
    measured with (`scenarios`).

    Reading a record never fails: a file that no longer validates (one an older arena ran)
    leaves `spec` None and `problem` saying why, and its settings are the defaults."""

    row: TournamentRow
    spec: TournamentSpec | None
    problem: str | None = None

    @property
    def scoring(self) -> ScoringWeights:
        return self.spec.scoring if self.spec is not None else ScoringWeights()

    @property
    def confidence(self) -> float:
        return self.spec.confidence if self.spec is not None else LEVEL

    def scenarios(self) -> tuple[PlayedScenarios, list[str]]:
        """The scenarios the file names, read from disk now (their events are not in the
        record), and the collusion settings, per cell of its sweep; and a note for each
        scenario that cannot be read, or for the file itself."""
        if self.spec is None:
            return PlayedScenarios({}), [
                f"the tournament file stored with the record cannot be read ({self.problem}): "
                "scenario events are not shown"
            ]
        path = Path(self.row.config_path)
        cells: list[tuple[str, TournamentSpec, ScenarioValues]] = [("", self.spec, ())]
        notes: list[str] = []
        if self.spec.sweep is not None:
            try:
                cells = [
                    (cell_label(factors), validated(path, TournamentSpec, data), values)
                    for factors, data, values in cell_settings(
                        path, self.spec, parse_yaml(path, self.row.config_text)
                    )
                ]
            except ConfigError as exc:
                return PlayedScenarios({}), [f"the cells of the sweep cannot be read again ({exc})"]
        played = {}
        for label, spec, values in cells:
            scenarios: dict[str, Scenario] = {}
            for i, entry in enumerate(spec.scenarios):
                try:
                    scenario = played_scenario(path, spec, i, values)
                except ConfigError as exc:
                    notes.append(f"events of scenario {entry!r} are not shown: {exc}")
                    continue
                scenarios[scenario.name] = scenario
            played[label] = (scenarios, spec.collusion)
        return PlayedScenarios(played), list(dict.fromkeys(notes))


def stored_tournament(row: TournamentRow) -> StoredTournament:
    """`row` with its stored file read again (see StoredTournament)."""
    try:
        return StoredTournament(row, parse_tournament(Path(row.config_path), row.config_text))
    except ConfigError as exc:
        return StoredTournament(row, None, str(exc))
