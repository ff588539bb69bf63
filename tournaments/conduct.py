"""Judging a tournament's matches: every judge of a `conduct:` section reads every item of the
words of each stored match (results.scoring.conduct.words_of) and its judgements are stored a
match and a judge at a time (results.storage.judgements), so that judging stopped midway
resumes at the first pair not judged, its calls answered again from the response cache. The
run judges its matches once they are stored; `arena audit` judges a stored tournament.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine

from common.conduct import Judgement, Words
from common.yaml_files import ConfigError
from contestants.base import ContestantConfigError, Judge, JudgeFailed, RunOptions
from contestants.calls.budget import Spend
from contestants.calls.coordinator import CallCoordinatorCore, CallsStopped, LocalCallCoordinator, Status
from contestants.kinds import judge_for
from results.records import ModelCallRecord, total_cost
from results.scoring.conduct import words_of
from results.settings import ConductSettings
from results.storage import store
from results.storage.judgements import judged, save_judgements, save_majority
from results.storage.schema import MatchRow, stored_id
from tournaments.config import TournamentSpec

JUDGING_THREADS = 4
"""(match, judge) pairs judged at once: a hosted judge's calls overlap (its endpoint's limits
and the budget are the call coordinator's to keep); the embedded model answers one at a time."""


@dataclass(frozen=True)
class Judging:
    """What one judging of a tournament did: the (match, judge) pairs it judged and those
    judged before, the items its judges read and the model calls they made (answers from the
    response cache among them), apart from the merchants' own."""

    judged: int
    skipped: int
    items: int
    calls: list[ModelCallRecord]

    def cost_line(self) -> str:
        """What the judges' calls took: "12 calls (3,456 tokens, $0.0012; 2 from the cache)"."""
        tokens = sum(c.input_tokens + c.output_tokens for c in self.calls)
        cost = total_cost(c for c in self.calls if not c.cached)
        paid = "cost unknown" if cost is None else f"${cost:.4f}"
        cached = sum(c.cached for c in self.calls)
        return f"{len(self.calls)} calls ({tokens:,} tokens, {paid}; {cached} from the cache)"


def checked_judges(
    path: str | Path, settings: ConductSettings, options: RunOptions = RunOptions()
) -> list[Judge]:
    """The judges of `settings` (read from the file at `path`), each checked as a contestant
    is (its settings, then what needs the world outside the file: its API key, a parameter its
    model refuses); ConfigError naming the judge's field, or two judges of one name."""
    judges: list[Judge] = []
    for i, entry in enumerate(settings.judges):
        try:
            judge = judge_for(entry, options)
            type(judge).preflight(judge.params)
        except ContestantConfigError as exc:
            field = f"conduct.judges[{i}]" + (f".{exc.field}" if exc.field else "")
            raise ConfigError(path, field, str(exc)) from None
        if judge.name in {other.name for other in judges}:
            raise ConfigError(
                path, f"conduct.judges[{i}]", f"a second judge named {judge.name!r}: give one a `name`"
            )
        judges.append(judge)
    return judges


def judge_tournament(
    engine: Engine,
    tournament_id: int,
    settings: ConductSettings,
    options: RunOptions = RunOptions(),
    told: Callable[[int, int], None] = lambda done, total: None,
) -> Judging:
    """Judge every stored match of the tournament that a judge of `settings` (checked:
    `checked_judges`) has not judged, telling `told` (pairs done, pairs to do) after each. A
    judge's call that fails stops the judging (it raises, as every model call does) with what
    was judged before it stored."""
    names = [judge_for(entry, options).name for entry in settings.judges]
    save_majority(engine, tournament_id, settings.majority)
    done = judged(engine, tournament_id)
    matches = store.list_matches(engine, tournament_id)
    todo = [
        (match, k)
        for match in matches
        for k, name in enumerate(names)
        if (stored_id(match.id), name) not in done
    ]
    items, calls = 0, list[ModelCallRecord]()

    def judge_one(job: tuple[MatchRow, int]) -> tuple[int, list[ModelCallRecord]]:
        match, k = job
        judge = judge_for(settings.judges[k], options)
        detail = store.match_detail(engine, stored_id(match.id), with_calls=False)
        words = words_of(detail.days, store.transcript(engine, stored_id(match.id)), settings.read)
        products = list(dict.fromkeys(p for record in detail.days for p in record.prices))
        judgements, records = _judged(judge, words, products)
        save_judgements(engine, tournament_id, match, judgements, records)
        return len(words), records

    pool = ThreadPoolExecutor(JUDGING_THREADS)
    try:
        for n, (read, made) in enumerate(pool.map(judge_one, todo), start=1):
            items, calls = items + read, calls + made
            told(n, len(todo))
    finally:  # a failed call stops the pairs not started; those in flight end (and are stored)
        pool.shutdown(cancel_futures=True)
    return Judging(len(todo), len(matches) * len(names) - len(todo), items, calls)


def _judged(
    judge: Judge, words: Sequence[Words], products: Sequence[str]
) -> tuple[list[tuple[Words, Judgement]], list[ModelCallRecord]]:
    """`judge`'s judgement of each item, and its calls, each recorded with the merchant whose
    words it read and the judge's name in place of a contestant's."""
    judgements, records = [], []
    for item in words:
        made = len(judge.calls)
        judgements.append((item, judge.judge(item, products)))
        records += [
            ModelCallRecord(**call.model_dump(), merchant=item.merchant, contestant=judge.name)
            for call in judge.calls[made:]
        ]
    return judgements, records


def judge_run(
    engine: Engine,
    tournament_id: int,
    spec: TournamentSpec,
    options: RunOptions,
    told: Callable[[int, int], None],
) -> Status | None:
    """A run's stored matches judged by its file's judges, under what is left of its budget
    (the judges' calls count against it as the merchants' do); None when they are all judged,
    else how the calls stopped (the budget spent, or a judge that failed: `broken`)."""
    assert spec.conduct is not None
    coordinator = LocalCallCoordinator(
        CallCoordinatorCore(spec.budget, Spend(*store.spent(engine, tournament_id)), spec.stop_after_failures)
    )
    judging = options.model_copy(update={"call_coordinator": coordinator, "prices": spec.prices})
    try:
        judge_tournament(engine, tournament_id, spec.conduct, judging, told)
    except CallsStopped as exc:
        return Status(str(exc), Spend(*store.spent(engine, tournament_id)), None)
    except JudgeFailed as exc:
        return Status(str(exc), Spend(*store.spent(engine, tournament_id)), exc.judge)
    finally:
        coordinator.close()
    return None
