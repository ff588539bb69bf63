"""Q-learning merchants: kind `qlearning`, the learners of Calvano, Calzolari, Denicolò and
Pastorello, "Artificial Intelligence, Algorithmic Pricing, and Collusion" (AER 2020), by
default exactly their baseline.

A learner knows a grid of m prices per seat, from p_N - xi (p_M - p_N) to p_M + xi (p_M - p_N)
(p_N, p_M: the seat's Nash and joint-profit prices of the scenario's price game,
market.equilibrium), and learns a Q-table over states (every merchant's grid price in the
last k periods) and its own prices. Before a match it has a learning phase (a `Session`):
learners in every seat repeat the price game, a period being a day of expected demand,
until they converge (contestants.qlearning_kernel says how; the payoff of an action profile
is the price game's one-period profit, `PriceGame.profits`). Q starts at the discounted
payoff against rivals who choose uniformly at random:
Q0_i(s, a_i) = mean over a_-i of pi_i(a_i, a_-i) / (1 - delta_i).

Who learns with whom: the learners of a match in which every merchant is a learner, and all
agree on the session's shape and stopping rule (grid_points, memory, stable_periods,
max_periods), learn together, as in the paper. Any other learner learns in self-play: a
learner of its own params in every seat, and brings its seat's Q-table to the match. Either
way a session is decided by the scenario, its learners' params (bar `learn`) and the seed
of the match's repetition, so the matches of a tournament seed that need the same session
(a learner's self-play against each of its rivals) learn the same, and the sessions of the
matches played together are learnt once each, in one kernel call (`learn`).

In the match it prices from its Q-table, starting in the state where learning ended (so a
converged session plays its limit cycle), the state moving with the prices the market
shows: each rival's price counts as the nearest price of that rival seat's grid (a hidden
price as the one it last counted). `learn: frozen` (the default) plays the greedy action;
`learn: online` goes on exploring (eps continuing from where the session stopped) and
updating its own copy of Q each day with its realised profit of the day before (the change in
its cash and receivables) and the state the market's prices make.

It learns one product's price game of a market without stock (demand: expected,
stock_limited: false), which is what the day's profit is then; scenarios with more products
or stock are refused when the tournament is checked.
"""

from __future__ import annotations

import json
import math
import os
import threading
import zlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar, Literal, Self

import numba
import numpy as np
from pydantic import Field

from contestants import qlearning_kernel as kernel
from contestants.base import ContestantConfigError, Params, RunOptions, Seating
from contestants.baselines import RuleMerchant, Team
from market import elementary
from market.equilibrium import EquilibriumError, equilibria, price_games
from market.scenario import MAX_FACTOR, Scenario
from market.types import MarketView

MAX_Q_ENTRIES = 2**26  # per session: 512 MB of float64; 5 merchants x 15 prices (memory 1) is 57 million


class QLearningParams(Params):
    grid_points: int = Field(15, ge=2, le=1000, description="m: prices on each seat's grid")
    grid_extension: float = Field(
        0.1,
        ge=0,
        le=MAX_FACTOR,
        description="xi: the grid runs from p_N - xi (p_M - p_N) to p_M + xi (p_M - p_N)",
    )
    memory: int = Field(
        1, ge=1, le=8, description="k: a state is every merchant's price in the last k periods"
    )
    alpha: float = Field(0.15, gt=0, le=1, description="learning rate")
    beta: float = Field(4e-6, ge=0, le=1, description="exploration decay: eps_t = exp(-beta t)")
    delta: float = Field(0.95, ge=0, lt=1, description="discount factor")
    stable_periods: int = Field(
        100_000,
        ge=1,
        le=10**12,
        description="converged: no greedy action changed in any state for this many periods in a row",
    )
    max_periods: int = Field(
        10_000_000, ge=1, le=10**12, description="the learning phase ends here, converged or not"
    )
    learn: Literal["frozen", "online"] = Field(
        "frozen", description="in the match: play the learnt greedy strategy, or keep learning"
    )


# learners learn together only when these agree
SESSION_FIELDS = ("grid_points", "memory", "stable_periods", "max_periods")


def price_grid(scenario: Scenario, learners: Sequence[QLearningParams]) -> np.ndarray:
    """Each seat's prices [seat, m]: grid_points evenly spaced from p_N - xi (p_M - p_N) to
    p_M + xi (p_M - p_N), with the seat's Nash and joint-profit prices of the scenario's one
    product among len(learners) merchants."""
    (benchmarks,) = equilibria(scenario, len(learners)).values()
    nash, monopoly = np.array(benchmarks.nash.prices), np.array(benchmarks.monopoly.prices)
    return np.array(
        [
            np.linspace(
                p_n - p.grid_extension * (p_m - p_n), p_m + p.grid_extension * (p_m - p_n), p.grid_points
            )
            for p, p_n, p_m in zip(learners, nash, monopoly)
        ]
    )


def payoff_table(scenario: Scenario, grids: np.ndarray) -> np.ndarray:
    """Every seat's one-period profit [seat, profile] at every profile of grid prices, the
    profile index p = sum_j a_j m^(n-1-j) (contestants.qlearning_kernel)."""
    seats = len(grids)
    (game,) = price_games(scenario, seats).values()
    profiles = np.stack(np.meshgrid(*grids, indexing="ij"), axis=-1)  # [a_0, ..., a_{n-1}, seat]
    return np.moveaxis(game.profits(profiles), -1, 0).reshape(seats, -1)


def initial_q(payoffs: np.ndarray, deltas: Sequence[float], grid_points: int, memory: int) -> np.ndarray:
    """Q0 [seat, state, action] from the payoff table [seat, profile]: in every state, the
    mean of the seat's payoff over the others' actions, / (1 - delta)."""
    seats, m = len(payoffs), grid_points
    states = m ** (seats * memory)
    tables = payoffs.reshape((seats,) + (m,) * seats)
    mean = np.array(
        [np.moveaxis(tables[i], i, 0).reshape(m, -1).mean(axis=1) / (1.0 - deltas[i]) for i in range(seats)]
    )
    return np.repeat(mean[:, None, :], states, axis=1)


@dataclass(frozen=True, eq=False)
class Session:
    """A learning phase: a learner in every seat of the scenario's price game, each with its
    params, seeded from the seed of a match's repetition."""

    scenario: Scenario
    learners: tuple[QLearningParams, ...]
    seed: int

    @cached_property
    def key(self) -> str:
        """What decides the session: sessions of one key learn the same."""
        learners = [p.model_dump(mode="json", exclude={"learn"}) for p in self.learners]
        return json.dumps([self.scenario.model_dump(mode="json"), learners, self.seed], sort_keys=True)

    @property
    def shape(self) -> tuple[int, int, int]:
        """Seats, prices on a grid, memory: what sessions learnt in one kernel call share."""
        first = self.learners[0]
        return len(self.learners), first.grid_points, first.memory

    def draws(self) -> tuple[int, np.uint64]:
        """The first state and the seed of the kernel's generator, from the session's own
        generator, seeded by its seed and its learners' params but not by the scenario: the
        same learners draw the same random numbers in any market, so a market whose money is
        in another currency (`scale`) is learnt exactly alike, and two markets are compared
        on common random numbers."""
        seats, m, memory = self.shape
        learners = json.dumps(
            [p.model_dump(mode="json", exclude={"learn"}) for p in self.learners], sort_keys=True
        )
        rng = np.random.default_rng([self.seed, zlib.crc32(learners.encode())])
        return int(rng.integers(m ** (seats * memory))), rng.integers(2**64, dtype=np.uint64)


@dataclass(frozen=True, eq=False)
class Learnt:
    """A session after its learning phase: the seats' grids [seat, m], Q-tables [seat,
    state, action], the state it ended in, the periods it ran and whether it converged."""

    grids: np.ndarray
    q: np.ndarray
    state: int
    periods: int
    converged: bool


def learn(sessions: Sequence[Session]) -> list[Learnt]:
    """Every session's learning phase, each distinct one (by key) learnt once, side by side
    in one kernel call per shape, on as many threads as this process may use; in the order
    given."""
    distinct = {session.key: session for session in sessions}
    alike: dict[tuple[int, int, int], list[Session]] = defaultdict(list)
    for session in distinct.values():
        alike[session.shape].append(session)
    learnt: dict[str, Learnt] = {}
    for group in alike.values():
        learnt.update(zip((s.key for s in group), _learn_alike(group)))
    return [learnt[session.key] for session in sessions]


def _learn_alike(sessions: list[Session]) -> list[Learnt]:
    seats, m, memory = sessions[0].shape
    grids = [price_grid(s.scenario, s.learners) for s in sessions]
    payoffs = np.stack([payoff_table(s.scenario, g) for s, g in zip(sessions, grids)])
    q = np.stack(
        [initial_q(table, [p.delta for p in s.learners], m, memory) for s, table in zip(sessions, payoffs)]
    )
    alpha, beta, delta = (
        np.array([[getattr(p, name) for p in s.learners] for s in sessions], dtype=float)
        for name in ("alpha", "beta", "delta")
    )
    stable, max_periods = (
        np.array([getattr(s.learners[0], name) for s in sessions], dtype=np.int64)
        for name in ("stable_periods", "max_periods")
    )
    draws = [s.draws() for s in sessions]
    start = np.array([first for first, _ in draws], dtype=np.int64)
    seeds = np.array([seed for _, seed in draws], dtype=np.uint64)
    periods, final = np.zeros(len(sessions), dtype=np.int64), np.zeros(len(sessions), dtype=np.int64)
    converged = np.zeros(len(sessions), dtype=np.bool_)
    with _ONE_CALL_AT_A_TIME:
        numba.set_num_threads(kernel_threads(len(sessions)))
        kernel.learn(
            payoffs, q, alpha, beta, delta, stable, max_periods, start, seeds, periods, converged, final
        )
    return [
        Learnt(grids[b], q[b], int(final[b]), int(periods[b]), bool(converged[b]))
        for b in range(len(sessions))
    ]


# numba's fallback threading layer (workqueue) cannot take parallel calls from two threads at once
_ONE_CALL_AT_A_TIME = threading.Lock()


def kernel_threads(sessions: int) -> int:
    """Threads for the kernel: no more than the sessions, nor than the CPUs this process may
    use (OMP_NUM_THREADS where set: Ray sets it to a task's CPUs; else numba's count)."""
    # numba.config sets its settings from the environment at run time: its types do not list them
    most = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]
    allowed = int(os.environ.get("OMP_NUM_THREADS") or most)
    return max(1, min(sessions, allowed, most))


class QLearner(RuleMerchant):
    """A Q-learning merchant (see the module's docstring): its kind's `prepare` runs the
    learning phases of all its merchants in the matches about to be played, and its `rule`
    prices each from its Q-table. Asked alone (hosted in an actor), it learns its self-play
    on its first day, seeded by its own seed. It reports `converged` (1 or 0) and
    `learning_periods` of its session."""

    kind: ClassVar[str] = "qlearning"
    params_model: ClassVar[type[Params]] = QLearningParams
    params: QLearningParams

    def __init__(self, params: Params, options: RunOptions = RunOptions()):
        super().__init__(params, options)
        self.learnt: Learnt | None = None  # its session, once learnt; then (`adopt`):
        self.seat = 0
        self.q = np.zeros((0, 0))  # its Q-table [state, action] (its own copy, online)
        self.state = 0
        self.books: float | None = None  # cash and receivables at the start of the last day priced
        self.days = 0  # days priced
        self.explored = 0  # periods of exploration before the match's first day (none after a reset)

    def reset(self, *, merchant: str, scenario: Scenario, seed: int) -> None:
        super().reset(merchant=merchant, scenario=scenario, seed=seed)
        self.learnt = None

    @classmethod
    def check_scenario(cls, params: Params, scenario: Scenario, merchants: int) -> None:
        assert isinstance(params, QLearningParams)
        name = scenario.name
        if len(scenario.products) != 1:
            raise ContestantConfigError(
                f"qlearning learns the price game of one product; scenario {name!r} has "
                f"{len(scenario.products)}"
            )
        if scenario.demand.stock_limited:
            raise ContestantConfigError(
                f"qlearning learns a price game without stock; scenario {name!r} limits sales by stock "
                "(it needs demand: {mode: expected, stock_limited: false})"
            )
        entry = next((act for act in scenario.interventions if act.kind == "entry"), None)
        if entry is not None:
            raise ContestantConfigError(
                "qlearning learns the game of every seat before the match, and intervention "
                f"{entry.name!r} has a seat enter later"
            )
        try:
            highest = price_grid(scenario, [params] * merchants).max()
        except (ValueError, EquilibriumError) as exc:
            raise ContestantConfigError(str(exc)) from None
        (product,) = scenario.products
        if highest > product.price_ceiling:
            raise ContestantConfigError(
                f"qlearning's price grid reaches {highest:.4g}, above the market's ceiling "
                f"{product.price_ceiling:.4g} for {product.id}",
                "grid_extension",
            )
        entries = merchants * params.grid_points ** (merchants * params.memory + 1)
        if entries > MAX_Q_ENTRIES:
            raise ContestantConfigError(
                f"a Q-table of {merchants} merchants with {params.grid_points} prices and memory "
                f"{params.memory} has {entries:,} entries, more than {MAX_Q_ENTRIES:,}",
                "grid_points",
            )

    @classmethod
    def prepare(cls, seatings: list[Seating]) -> None:
        for seating, learnt in zip(seatings, learn([cls.session(s) for s in seatings])):
            member = seating.contestant
            assert isinstance(member, QLearner)
            member.adopt(learnt, seating.seat)

    @classmethod
    def session(cls, seating: Seating) -> Session:
        """The session this merchant learns in: with the others, if all are learners that
        agree on SESSION_FIELDS; else its self-play."""
        own = seating.contestant.params
        assert isinstance(own, QLearningParams)
        mates = [p for kind, p in seating.lineup if kind == cls.kind and isinstance(p, QLearningParams)]
        together = len(mates) == len(seating.lineup) and all(
            getattr(p, f) == getattr(own, f) for p in mates for f in SESSION_FIELDS
        )
        learners = tuple(mates) if together else (own,) * len(seating.lineup)
        return Session(seating.scenario, learners, seating.seed)

    def adopt(self, learnt: Learnt, seat: int) -> None:
        """Play seat `seat` of `learnt` (a copy of its Q-table to update, if online), from the
        state where it ended."""
        self.learnt, self.seat = learnt, seat
        self.q = learnt.q[seat].copy() if self.params.learn == "online" else learnt.q[seat]
        self.state, self.books, self.days, self.explored = learnt.state, None, 0, learnt.periods

    def forget(self, scenario: Scenario) -> None:
        """A regulator's memory reset (market.scenario.Intervention): its Q-table back to Q0 and
        its exploration from its first period, as if it had never learnt; its state, the
        prices it last saw, stays."""
        learnt = self.learnt
        assert learnt is not None
        seats, m = learnt.grids.shape
        deltas = [self.params.delta] * seats  # its own Q0 needs its own delta alone
        self.q = initial_q(payoff_table(scenario, learnt.grids), deltas, m, self.params.memory)[self.seat]
        self.days, self.explored = 0, 0

    @classmethod
    def rule(cls, team: Team[Self], view: MarketView) -> tuple[np.ndarray, np.ndarray]:
        n = view.board.seats
        prices = np.empty((len(team.members), 1))
        books = view.cash + view.receivables_due + view.receivables_pending
        resets = [
            act
            for act in team.scenario.interventions
            if act.kind == "memory_reset" and act.start_day == view.day
        ]
        for k, (member, row) in enumerate(zip(team.members, view.rows.tolist())):
            if member.learnt is None:
                cls.prepare(
                    [Seating(member, row % n, ((cls.kind, member.params),) * n, team.scenario, member.seed)]
                )
            seat, first = row % n, row - row % n
            if any(act.binds(seat) for act in resets):
                member.forget(team.scenario)
            posted = view.board.prices[first : first + n, 0].copy()
            posted[seat] = view.prices[k, 0]  # its own, which the board may hide
            prices[k, 0] = member.price(posted, float(books[k]))
        return prices, np.zeros_like(prices)

    def price(self, posted: np.ndarray, books: float) -> float:
        """Today's price, given the prices of yesterday in every seat (`posted`) and this
        merchant's cash and receivables now."""
        learnt, q, params = self.learnt, self.q, self.params
        assert learnt is not None
        seats, m = learnt.grids.shape
        profiles = m**seats
        if self.books is not None:  # yesterday's prices make the new state
            profile = self._profile(learnt.grids, posted)
            following = (self.state % (q.shape[0] // profiles)) * profiles + profile
            if params.learn == "online":
                action = profile // m ** (seats - 1 - self.seat) % m
                target = books - self.books + params.delta * q[following].max()
                q[self.state, action] = (1.0 - params.alpha) * q[self.state, action] + params.alpha * target
            self.state = following
        self.books = books
        self.days += 1
        action = int(np.argmax(q[self.state]))
        if params.learn == "online" and self.rng.random() < float(
            elementary.exp(np.array(-params.beta * (self.explored + self.days)))
        ):
            action = int(self.rng.integers(m))
        return float(learnt.grids[self.seat, action])

    def _profile(self, grids: np.ndarray, posted: np.ndarray) -> int:
        """The profile index of the prices of `grids` nearest `posted`, a seat whose price is
        hidden (NaN) keeping the one it had in the last profile."""
        seats, m = grids.shape
        last = self.state % m**seats
        profile = 0
        for j in range(seats):
            kept = last // m ** (seats - 1 - j) % m
            action = kept if math.isnan(posted[j]) else int(np.argmin(np.abs(grids[j] - posted[j])))
            profile = profile * m + action
        return profile

    def reported_metrics(self) -> dict[str, float]:
        if self.learnt is None:
            return {}
        return {"converged": float(self.learnt.converged), "learning_periods": float(self.learnt.periods)}
