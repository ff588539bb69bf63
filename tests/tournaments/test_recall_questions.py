"""Recall questions: asked on schedule, about the merchant's own past, scored against the record."""

from __future__ import annotations

import json
import time
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from arena.cli import app, printing
from contestants.base import DeadlinePassed, Params, RecallQuestion
from contestants.baselines import FixedPrice, FixedPriceParams
from contestants.calls.coordinator import CallsStopped
from market.env import MarketEnv
from results.recording import save_match
from results.storage.db import engine_for
from results.storage.store import list_matches, match_detail, start_tournament
from tournaments.config import ContestantEntry
from tournaments.load import load_tournament
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_contestants
from tournaments.run import run_tournament
from tournaments.schedule import MatchSpec
from tournaments.seats import take_turn


class Forgetful(FixedPrice):
    """Decides as fixed_price from its Observations, and remembers their cash 10% too high
    and nothing else."""

    kind: ClassVar[str] = "forgetful_for_tests"
    params_model: ClassVar[type[Params]] = FixedPriceParams
    remembers_the_record: ClassVar[bool] = False
    decides_from_view: ClassVar[bool] = False

    def reset(self, *, merchant: str, scenario, seed: int) -> None:
        super().reset(merchant=merchant, scenario=scenario, seed=seed)
        self.cash: dict[int, float] = {}

    def decide(self, observation):
        if observation.yesterday is not None:
            self.cash[observation.yesterday.day] = observation.yesterday.cash_end
        return super().decide(observation)

    def recall(self, question: RecallQuestion) -> float | None:
        value = self.cash.get(question.day) if question.fact == "cash" else None
        return None if value is None else value * 1.1


FORGETFUL = f"{__name__}:Forgetful"  # a kind of the tests' own, named by where it is


@pytest.fixture(scope="module")
def multi_product(root):
    return load_tournament(root / "tournaments" / "round_robin.yaml").scenarios["multi_product"]


def play(scenario, recall_every: int, kinds=("fixed_price", FORGETFUL), days: int = 24):
    entries = {f"m{i}": ContestantEntry(name=f"m{i}", kind=kind) for i, kind in enumerate(kinds)}
    spec = MatchSpec(
        key="recall-test", index=0, scenario=scenario.name, seed=1, days=days, seats=tuple(entries)
    )
    return play_here(
        [
            Match(
                spec,
                scenario,
                MatchRules(seed=4, recall_every=recall_every),
                plan_contestants(entries.values()),
            )
        ]
    )[0]


def test_recall_questions_follow_the_schedule_and_the_record(multi_product):
    match = play(multi_product, recall_every=4)
    assert sorted({p.day for p in match.recalls}) == [4, 8, 12, 16, 20, 24]
    records = {(r.merchant, r.day): r for r in match.days_played}
    for recalled in match.recalls:
        assert 1 <= recalled.asked_day <= recalled.day - 2  # never yesterday: that is in today's observation
        record = records[(recalled.merchant, recalled.asked_day)]
        truth = {"cash": record.cash_end}.get(recalled.fact)
        if truth is None:
            table = {"inventory": record.inventory, "price": record.prices, "ordered": record.ordered}[
                recalled.fact
            ]
            truth = table[recalled.product]
        assert recalled.truth == truth
    # both merchants get the same question on a question day
    by_day = {}
    for recalled in match.recalls:
        by_day.setdefault(recalled.day, set()).add((recalled.asked_day, recalled.fact, recalled.product))
    assert all(len(questions) == 1 for questions in by_day.values())
    assert len({q for qs in by_day.values() for q in qs}) > 1  # and the questions vary


def test_errors_are_relative_and_missing_answers_are_none(multi_product):
    match = play(multi_product, recall_every=2, days=40)
    exact = [p for p in match.recalls if p.merchant == "m0"]
    assert exact and all(p.relative_error == 0.0 for p in exact)
    forgetful = [p for p in match.recalls if p.merchant == "m1"]
    cash = [p for p in forgetful if p.fact == "cash"]
    other = [p for p in forgetful if p.fact != "cash"]
    assert cash and other
    for p in cash:
        assert p.relative_error == pytest.approx(0.1 * abs(p.truth) / max(abs(p.truth), 1.0))
    assert all(p.answer is None and p.relative_error is None for p in other)


def test_arena_show_prints_the_recall_questions_as_stored(multi_product, tmp_path, monkeypatch):
    """A table of them, one row a merchant's question (its error as a percentage, "no answer"
    where it gave none), and in --json `recall_questions`, each the record asked and answered."""
    match = play(multi_product, recall_every=4, days=8)
    url = f"sqlite:///{tmp_path}/t.db"
    engine = engine_for(url)
    tournament = start_tournament(
        engine, "t", "t.yaml", "", "h", 1, [("m0", "fixed_price", {}), ("m1", FORGETFUL, {})], 1
    )
    match_id = save_match(engine, tournament, match)
    engine.dispose()

    shown = CliRunner().invoke(app, ["show", str(match_id), "--db", url, "--json"])
    assert json.loads(shown.stdout)["recall_questions"] == [r.model_dump() for r in match.recalls]
    monkeypatch.setattr(printing.out, "width", 200)  # one line per row
    printed = CliRunner().invoke(app, ["show", str(match_id), "--db", url]).stdout
    table = printed.split("recall questions", 1)[1].split("┘", 1)[0]
    cells = [
        [c.strip() for c in line.split("│")[1:-1]] for line in table.splitlines() if line.startswith("│")
    ]
    expected = [
        [
            str(r.day),
            r.merchant,
            "no answer" if r.relative_error is None else f"{100 * r.relative_error:.1f}%",
        ]
        for r in match.recalls
    ]
    assert len(expected) == 4 and [[row[0], row[1], row[-1]] for row in cells] == expected


def test_recall_every_zero_asks_nothing_and_questions_do_not_change_play(multi_product):
    silent, asked = play(multi_product, recall_every=0), play(multi_product, recall_every=3)
    assert silent.recalls == []
    assert [r.cash_end for r in silent.days_played] == [r.cash_end for r in asked.days_played]


class Moody(FixedPrice):
    """Recalls and decides as told: answer, raise, or take a pause first."""

    kind: ClassVar[str] = "moody_for_tests"  # named by no entry: take_turn is called directly
    params_model: ClassVar[type[Params]] = FixedPriceParams

    def __init__(
        self,
        recall_does: str = "answer",
        decide_pause: float = 0.0,
        pause: float = 0.05,
        decide_raises: type[Exception] | None = None,
    ):
        super().__init__(FixedPriceParams())
        self.recall_does, self.decide_pause, self.pause = recall_does, decide_pause, pause
        self.decide_raises = decide_raises
        self.asked: list[str] = []

    def recall(self, question: RecallQuestion) -> float | None:
        self.asked.append("recall")
        if self.recall_does == "raise":
            raise RuntimeError("no memory")
        if self.recall_does == "stop":
            raise CallsStopped("the run's desk is gone")
        if self.recall_does == "dawdle":
            time.sleep(self.pause)
        return 42.0

    def decide(self, observation):
        self.asked.append("decide")
        time.sleep(self.decide_pause)
        if self.decide_raises is not None:
            raise self.decide_raises()
        return super().decide(observation)


@pytest.fixture()
def first_day(multi_product):
    env = MarketEnv(multi_product, ["m0"])
    observations, _ = env.reset(seed=1)
    return multi_product, observations["m0"]


def moody(scenario, **how) -> Moody:
    contestant = Moody(**how)
    contestant.reset(merchant="m0", scenario=scenario, seed=0)
    return contestant


QUESTION = RecallQuestion(day=1, fact="cash", product=None)


def test_a_hosted_turn_answers_the_question_before_deciding(first_day):
    scenario, observation = first_day
    contestant = moody(scenario)
    turn = take_turn(contestant, observation, QUESTION, deadline=5.0)
    assert contestant.asked == ["recall", "decide"]
    assert turn.recalled == 42.0 and not turn.late and turn.decision
    contestant = moody(scenario)
    assert take_turn(contestant, observation, None, deadline=5.0).recalled is None
    assert contestant.asked == ["decide"]  # no question today: nothing asked


def test_a_recall_that_raises_or_dawdles_has_no_answer_but_the_decision_stands(first_day):
    """The turn was asked 4.98 s of its 5 s ago: the question's answer, 0.05 s in coming, is
    late; the decision then has 5 s of its own."""
    scenario, observation = first_day
    for how in ("raise", "dawdle"):
        turn = take_turn(
            moody(scenario, recall_does=how),
            observation,
            QUESTION,
            deadline=5.0,
            arrived=time.monotonic() - 4.98,
        )
        assert turn.recalled is None and not turn.late and turn.decision


def test_a_decision_past_the_deadline_is_late(first_day):
    """0.05 s to decide against 0.02 s allowed is late; an instant decision, with 5 s, is not."""
    scenario, observation = first_day
    assert take_turn(moody(scenario, decide_pause=0.05), observation, QUESTION, deadline=0.02).late
    assert not take_turn(moody(scenario, decide_pause=0.0), observation, QUESTION, deadline=5.0).late


def test_a_contestant_that_gives_up_on_the_deadline_is_late_and_any_other_exception_propagates(first_day):
    """DeadlinePassed from `decide` (a model's call that could not start in time) is a late
    turn with the recall answer kept; a bug propagates, for the host to report."""
    scenario, observation = first_day
    turn = take_turn(moody(scenario, decide_raises=DeadlinePassed), observation, QUESTION, deadline=5.0)
    assert turn.late and turn.decision is None and turn.recalled == 42.0
    with pytest.raises(ZeroDivisionError):
        take_turn(moody(scenario, decide_raises=ZeroDivisionError), observation, QUESTION, deadline=5.0)


def test_a_question_whose_asking_stops_the_runs_services_stops_the_turn(first_day):
    """A person's question page whose desk failed is no unanswered question: the run stops."""
    scenario, observation = first_day
    contestant = moody(scenario, recall_does="stop")
    with pytest.raises(CallsStopped):
        take_turn(contestant, observation, QUESTION, deadline=5.0)
    assert contestant.asked == ["recall"]


@pytest.mark.usefixtures("ray_local")
def test_hosted_merchants_answer_recall_questions_as_inline_ones_do(tmp_path):
    """The question rides in the hosted merchant's daily call; its answers, and the match,
    are those of the same merchant played inline (its rival is played inline in both runs:
    one host is what the question's ride needs)."""
    tables = {}
    for isolate in ("false", "true"):
        config = tmp_path / f"recall-{isolate}.yaml"
        config.write_text(
            f"""
name: recall
seed: 9
scenarios: [multi_product]
repetitions: 1
days: 12
recall_every: 3
contestants:
  - {{name: a, kind: reorder_point, isolate: {isolate}}}
  - {{name: b, kind: undercut, isolate: false}}
"""
        )
        engine = engine_for(f"sqlite:///{tmp_path}/{isolate}.db")
        tid = run_tournament(load_tournament(config), engine).tournament_id
        (match,) = list_matches(engine, tid)
        detail = match_detail(engine, match.id)
        tables[isolate] = (
            [p.model_dump() for p in detail.recalls],
            [r.cash_end for r in detail.days],
            detail.faults,
        )
    recalls, cash, faults = tables["true"]
    assert faults == [] and tables["false"][2] == []
    assert sorted({p["day"] for p in recalls}) == [3, 6, 9, 12]
    assert all(p["answer"] is not None for p in recalls)  # the rule baselines remember their records
    assert (recalls, cash) == tables["false"][:2]
