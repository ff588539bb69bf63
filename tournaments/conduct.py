"""Judging a tournament's matches: every judge of a `conduct:` section reads every item of the
words of each stored match (results.scoring.conduct.words_of) and its judgements are stored a
match and a judge at a time (results.storage.judgements), so that judging stopped midway
resumes at the first pair not judged, its calls answered again from the response cache. The
run judges its stored matches once it has played them (tournaments.run); `arena audit` judges
a stored tournament.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine

from common.conduct import Judgement, Words
from common.yaml_files import ConfigError
from contestants.base import ContestantConfigError, Judge, JudgeFailed, RunOptions
from contestants.calls.budget import Spend
from contestants.calls.coordinator import CallCoordinatorCore, CallsStopped, LocalCallCoordinator, Status
from contestants.kinds import judge_for
from results import recording
from results.presentation.conduct_tables import CallsTaken
from results.records import ModelCallRecord
from results.scoring.conduct import products_of, words_of
from results.settings import ConductSettings
from results.storage import store
from results.storage.judgements import judged, judges_of, save_judgements, save_judging
from results.storage.schema import stored_id
from tournaments.config import TournamentSpec

JUDGING_THREADS = 4
"""(match, judge) pairs judged at once: a hosted judge's calls overlap (its endpoint's limits
and the budget are the call coordinator's to keep); the embedded model answers one at a time."""


@dataclass(frozen=True)
class Judging:
    """What one judging of a tournament did: the (match, judge) pairs it judged and those
    judged before, the items its judges read and what their model calls took (answers from the
    response cache among them), apart from the merchants' own."""

    judged: int
    skipped: int
    items: int
    calls: CallsTaken


def checked_judges(
    path: str | Path,
    settings: ConductSettings,
    contestants: Collection[str],
    options: RunOptions = RunOptions(),
) -> list[Judge]:
    """The judges of `settings` (read from the file at `path`), each checked as a contestant
    is (its settings, then what needs the world outside the file: its API key, a parameter its
    model refuses); ConfigError naming the judge's field, for two judges of one name, or for a
    judge named as one of the `contestants` (its calls are recorded under its name)."""
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
        if judge.name in contestants:
            raise ConfigError(
                path,
                f"conduct.judges[{i}]",
                f"judge {judge.name!r} is named as a contestant: give it a `name`",
            )
        judges.append(judge)
    return judges


def judge_names(settings: ConductSettings) -> list[str]:
    """The names the judges of `settings` judge under."""
    return [judge_for(entry, RunOptions()).name for entry in settings.judges]


class JudgingProgress:
    """How far a judging is: (match, judge) pairs judged of those to judge, told to `told`
    after each pair; `planned` pairs from the start (a run's: every match it will play, by
    every judge), more as more are given than planned."""

    def __init__(self, told: Callable[[int, int], None], planned: int = 0):
        self.told, self.total, self.done, self.waiting = told, planned, 0, 0
        self.lock = threading.Lock()

    def given(self, pairs: int) -> None:
        with self.lock:
            self.waiting += pairs
            self.total = max(self.total, self.done + self.waiting)

    def one_done(self) -> None:
        with self.lock:  # told in order, one pair at a time (it draws a bar, writes a line)
            self.done, self.waiting = self.done + 1, self.waiting - 1
            self.told(self.done, self.total)


class JudgingCutShort(Exception):
    """A pair stopped between two items, as another pair failed or the run ended."""


class MatchJudging:
    """The judges of `settings` (checked: `checked_judges`) judging stored matches in a pool of
    threads, each (match, judge) pair not judged before as it is given (`judge`): a run gives
    each match as it stores it, a judging of a stored tournament all of them at once. Each
    pair's judgements are stored as it ends. The first pair that fails stops the others (those
    queued are not started, those in flight stop before their next item, their paid calls
    recorded) and no pair is given after it: a judge that fails is not asked again. `finish`
    waits for the pairs given and raises what stopped the first that failed, if one did."""

    def __init__(
        self,
        engine: Engine,
        tournament_id: int,
        settings: ConductSettings,
        options: RunOptions,
        progress: JudgingProgress,
    ):
        self.engine, self.tournament_id, self.settings = engine, tournament_id, settings
        self.options, self.progress = options, progress
        self.names = judge_names(settings)
        save_judging(engine, tournament_id, self.names, settings.majority)
        # the embedded model answers one call at a time: more would only queue, and time out
        local = any(str(entry.get("model", "")).startswith("local/") for entry in settings.judges)
        self.pool = ThreadPoolExecutor(1 if local else JUDGING_THREADS)
        # over the pairs pending and what they add up, the first failure, the pool's stop and the
        # conduct kept (reentrant: a stop cancels the pairs queued, whose ends take it again)
        self.lock = threading.RLock()
        self.pending: set[Future[tuple[int, CallsTaken]]] = set()
        # every pair given has ended (a pair cancelled by `stop` too, which `wait` would not see)
        self.settled = threading.Condition(self.lock)
        self.failure: BaseException | None = None
        self.stopping = threading.Event()
        self.judged, self.skipped, self.items, self.calls = 0, 0, 0, CallsTaken()

    def judge(self, matches: Sequence[tuple[int, str]]) -> None:
        """Judge the stored matches (id, key) by each judge that has not judged them; none
        once a pair has failed (they are left for the next judging)."""
        if self.stopping.is_set():
            return
        ids = [match_id for match_id, _ in matches]
        # (every stored match at once, a long list: the tournament's pairs, all of them)
        done = judged(self.engine, self.tournament_id, ids if len(ids) <= 500 else None)
        todo = [
            (match, k)
            for match in matches
            for k, name in enumerate(self.names)
            if (match[0], name) not in done
        ]
        self.skipped += len(matches) * len(self.names) - len(todo)
        self.progress.given(len(todo))
        for job in todo:
            with self.lock:  # pending before it can end (its end takes the lock)
                if self.stopping.is_set():  # a pair failed meanwhile: the pool takes no more
                    return
                pair = self.pool.submit(self._judge_one, *job)
                self.pending.add(pair)
            pair.add_done_callback(self._ended)

    def _ended(self, pair: Future[tuple[int, CallsTaken]]) -> None:
        with self.lock:
            self.pending.discard(pair)
            if not self.pending:
                self.settled.notify_all()
            if pair.cancelled():
                return
            failure = pair.exception()
            if failure is None:
                read, taken = pair.result()
                self.judged, self.items, self.calls = self.judged + 1, self.items + read, self.calls + taken
            elif self.failure is None and not isinstance(failure, JudgingCutShort):
                self.failure = failure
        if failure is None:
            self.progress.one_done()
        else:
            self.stop()

    def stop(self) -> None:
        """No pair starts, and those in flight stop before their next item."""
        with self.lock:  # not between `judge`'s look at `stopping` and its pair given
            self.stopping.set()
            self.pool.shutdown(wait=False, cancel_futures=True)

    def finish(self) -> Judging:
        """What the pairs given did, once they have ended, or what stopped the first that
        failed, raised."""
        with self.lock:
            self.settled.wait_for(lambda: not self.pending)
        self.pool.shutdown()
        if self.failure is not None:
            raise self.failure
        return Judging(self.judged, self.skipped, self.items, self.calls)

    def _judge_one(self, match: tuple[int, str], k: int) -> tuple[int, CallsTaken]:
        """One judge's judgements of a match, stored: the items it read, what its calls took."""
        (match_id, key), judge = match, judge_for(self.settings.judges[k], self.options)
        detail = store.match_detail(self.engine, match_id, with_calls=False)
        words = words_of(detail.days, store.transcript(self.engine, match_id), self.settings.read)
        products = products_of(detail.days)
        judgements: list[tuple[Words, Judgement]] = []
        try:
            for item in words:
                if self.stopping.is_set():
                    raise JudgingCutShort()
                judgements.append((item, judge.judge(item, products)))
        except Exception:  # the calls paid before the stop are kept; the pair is judged again
            save_judgements(
                self.engine, self.tournament_id, match_id, key, judge.name, None, judge_records(judge)
            )
            raise
        records = judge_records(judge)
        save_judgements(self.engine, self.tournament_id, match_id, key, judge.name, judgements, records)
        with self.lock:  # the last of the match's judges to end keeps its conduct (or both, alike)
            if set(self.names) <= judges_of(self.engine, match_id):
                recording.record_conduct(self.engine, match_id)
        return len(words), CallsTaken.of(records)


def judge_tournament(
    engine: Engine,
    tournament_id: int,
    settings: ConductSettings,
    options: RunOptions = RunOptions(),
    progress: JudgingProgress | None = None,
) -> Judging:
    """Judge every stored match of the tournament that a judge of `settings` (checked:
    `checked_judges`) has not judged, telling `progress` after each pair. A judge's call that
    fails stops the judging (it raises) with what was judged before it stored."""
    judging = MatchJudging(engine, tournament_id, settings, options, progress or JudgingProgress(_silent))
    judging.judge([(stored_id(match.id), match.key) for match in store.list_matches(engine, tournament_id)])
    done = judging.finish()
    recording.record_tournament_conduct(engine, tournament_id)  # (a majority changed, a judging cut short)
    return done


def _silent(done: int, total: int) -> None:
    pass


def judge_records(judge: Judge) -> list[ModelCallRecord]:
    """`judge`'s calls, recorded under its name (as merchant and contestant: a judge's calls
    are its own, apart from the merchants')."""
    return [
        ModelCallRecord(**call.model_dump(), merchant=judge.name, contestant=judge.name)
        for call in judge.calls
    ]


def judge_under_budget(
    engine: Engine,
    tournament_id: int,
    settings: ConductSettings,
    spec: TournamentSpec | None,
    options: RunOptions,
    progress: JudgingProgress,
) -> Judging | Status:
    """The tournament judged by the judges of `settings` under what is left of the budget of
    its file's `spec` (the judges' calls count against it as the merchants' do; none where the
    file cannot be read), at its file's prices: what the judging did, or how its calls stopped
    (the budget spent, or a judge that failed: `broken`)."""
    budget, prices, stop_after = (
        (spec.budget, spec.prices, spec.stop_after_failures) if spec is not None else (None, {}, 3)
    )
    coordinator = LocalCallCoordinator(
        CallCoordinatorCore(budget, Spend(*store.spent(engine, tournament_id)), stop_after)
    )
    judging = options.model_copy(update={"call_coordinator": coordinator, "prices": prices})
    try:
        return judge_tournament(engine, tournament_id, settings, judging, progress)
    except CallsStopped as exc:
        return Status(str(exc), Spend(*store.spent(engine, tournament_id)), None)
    except JudgeFailed as exc:
        return Status(str(exc), Spend(*store.spent(engine, tournament_id)), exc.judge)
    finally:
        coordinator.close()
