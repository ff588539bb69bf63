"""The Q-learning merchant (kind `qlearning`): its compiled learning phase against a plain
Python learner drawing the same random stream, Q's start, the grid, the stopping rule,
determinism, and how learners play a match (frozen, online, against a rule, together)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_examples import examples

from contestants import qlearning_kernel as kernel
from contestants.base import ContestantConfigError
from contestants.qlearning import (
    QLearner,
    QLearningParams,
    Session,
    initial_q,
    learn,
    payoff_table,
    price_grid,
)
from market.equilibrium import price_games
from market.scenario import Scenario, load_scenario
from tournaments.config import ContestantEntry
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_contestants
from tournaments.schedule import MatchSpec, repetition_seed

MASK = 2**64 - 1
FAST = {"beta": 2e-4, "stable_periods": 2_000, "max_periods": 200_000}  # sessions of ~40,000 periods


# ---- a plain Python learner --------------------------------------------------------------


def splitmix64(state: int) -> tuple[int, int]:
    """SplitMix64 on Python integers (its published constants)."""
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def plain_session(payoffs, q, alpha, beta, delta, stable, max_periods, state, seed):
    """Calvano's learners, written out: greedy actions recomputed from Q every period, a
    change of greedy action seen by comparing whole argmax tables before and after."""
    n, profiles = payoffs.shape
    states, m = q.shape[1], q.shape[2]
    rng, unchanged = seed, 0
    for t in range(1, max_periods + 1):
        before = q.argmax(axis=2)
        actions = []
        for i in range(n):
            rng, x = splitmix64(rng)
            if (x >> 11) * 2.0**-53 < math.exp(-beta[i] * t):
                rng, x = splitmix64(rng)
                actions.append(((x >> 32) * m) >> 32)
            else:
                actions.append(int(before[i, state]))
        profile = sum(a * m ** (n - 1 - i) for i, a in enumerate(actions))
        following = (state * profiles + profile) % states
        targets = [payoffs[i, profile] + delta[i] * q[i, following].max() for i in range(n)]
        for i, a in enumerate(actions):
            q[i, state, a] = (1.0 - alpha[i]) * q[i, state, a] + alpha[i] * targets[i]
        state = following
        unchanged = 0 if (q.argmax(axis=2) != before).any() else unchanged + 1
        if unchanged >= stable:
            return t, True, state
    return max_periods, False, state


def compiled(payoffs, q, alpha, beta, delta, stable, max_periods, start, seed):
    """One session through the kernel; its (periods, converged, final state)."""
    out = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.bool_), np.zeros(1, dtype=np.int64)
    kernel.learn(
        payoffs[None],
        q[None],
        np.array([alpha], float),
        np.array([beta], float),
        np.array([delta], float),
        np.array([stable]),
        np.array([max_periods]),
        np.array([start]),
        np.array([seed], dtype=np.uint64),
        *out,
    )
    return int(out[0][0]), bool(out[1][0]), int(out[2][0])


@st.composite
def tiny_sessions(draw):
    n, m, memory = draw(st.sampled_from([(2, 2, 1), (2, 3, 1), (3, 2, 1), (2, 2, 2)]))
    profiles = m**n
    payoffs = np.array(
        draw(st.lists(st.floats(0, 1, width=32), min_size=n * profiles, max_size=n * profiles))
    ).reshape(n, profiles)
    q = initial_q(payoffs, [0.9] * n, m, memory)
    alpha = draw(st.lists(st.floats(0.05, 1), min_size=n, max_size=n))
    beta = draw(st.lists(st.sampled_from([3e-4, 1e-3, 3e-3]), min_size=n, max_size=n))
    delta = draw(st.lists(st.floats(0, 0.95), min_size=n, max_size=n))
    return (
        payoffs,
        q,
        alpha,
        beta,
        delta,
        draw(st.integers(50, 500)),
        draw(st.integers(0, profiles**memory - 1)),
        draw(st.integers(0, MASK)),
    )


@settings(max_examples=examples(30))
@given(tiny_sessions())
def test_the_kernel_learns_exactly_as_a_plain_python_learner_with_the_same_random_stream(session):
    payoffs, q, alpha, beta, delta, stable, start, seed = session
    mine = q.copy()
    expected = plain_session(payoffs, q, alpha, beta, delta, stable, 3_000, start, seed)
    assert compiled(payoffs, mine, alpha, beta, delta, stable, 3_000, start, seed) == expected
    assert np.array_equal(mine, q)


# ---- the stopping rule, by hand --------------------------------------------------------------


def test_greedy_actions_that_never_change_stop_learning_after_exactly_stable_periods():
    """Action 0 pays 2 or 3, action 1 pays 0 or 1; with alpha = delta = 0.5 and Q0 = (5, 1),
    every Q(s, 0) stays at least 2 + 0.5 * 4 = 4 and every Q(s, 1) below 1 + 0.5 * 6 = 4, so
    no greedy action ever changes."""
    own = np.array([[2.0, 3.0], [0.0, 1.0]])  # [own action, rival's action]
    payoffs = np.stack([own.reshape(-1), own.T.reshape(-1)])
    q = initial_q(payoffs, [0.5, 0.5], 2, 1)
    assert q[0, 0].tolist() == [5.0, 1.0]
    assert compiled(payoffs, q.copy(), [0.5, 0.5], [0.01, 0.01], [0.5, 0.5], 700, 10_000, 3, 42)[:2] == (
        700,
        True,
    )
    assert compiled(payoffs, q.copy(), [0.5, 0.5], [0.01, 0.01], [0.5, 0.5], 700, 500, 3, 42)[:2] == (
        500,
        False,
    )


def test_the_periods_counted_run_from_the_last_change_of_a_greedy_action():
    """No exploration (beta so high that eps is 0), alpha 1, delta 0: Q(s, a) becomes the
    profit of the last play of a in s. The symmetric game pays pi(0, 0) = 0.5, pi(0, 1) = 3,
    pi(1, 0) = 0, pi(1, 1) = 2, so Q0(0) = 1.75 > Q0(1) = 1 in every state. From state (0, 0):
    period 1 plays (0, 0): Q((0,0), 0) = 0.5 < 1, the greedy action of (0, 0) becomes 1
    (a change); period 2 plays (1, 1) from (0, 0); period 3 plays (0, 0) from (1, 1): Q((1,1), 0)
    = 0.5, a change; period 4 plays (1, 1) from (0, 0), and (1, 1) from (1, 1) from then on, with
    no change. So learning stops after 3 + stable periods, in state (1, 1)."""
    own = np.array([[0.5, 3.0], [0.0, 2.0]])
    payoffs = np.stack([own.reshape(-1), own.T.reshape(-1)])
    q = initial_q(payoffs, [0.0, 0.0], 2, 1)
    assert q[0, 0].tolist() == [1.75, 1.0]
    assert compiled(payoffs, q, [1.0, 1.0], [1000.0, 1000.0], [0.0, 0.0], 50, 10_000, 0, 7) == (53, True, 3)
    for seat in (0, 1):
        assert q[seat, 0].tolist() == [0.5, 2.0] and q[seat, 3].tolist() == [
            0.5,
            2.0,
        ]  # states (0, 0) and (1, 1)
        assert q[seat, 1].tolist() == q[seat, 2].tolist() == [1.75, 1.0]  # never visited


# ---- the game learnt --------------------------------------------------------------------------


def test_the_grid_runs_from_below_nash_to_above_monopoly_as_in_the_paper():
    """Calvano et al.'s baseline: p_N = 1.4729, p_M = 1.9250 (their section I.B), 15 prices
    from p_N - 0.1 (p_M - p_N) to p_M + 0.1 (p_M - p_N), for each seat."""
    grids = price_grid(load_scenario("calvano"), [QLearningParams()] * 2)
    low, high = 1.4729 - 0.1 * (1.9250 - 1.4729), 1.9250 + 0.1 * (1.9250 - 1.4729)
    assert grids.shape == (2, 15)
    assert grids[:, 0] == pytest.approx([low, low], abs=1e-4) and grids[:, -1] == pytest.approx(
        [high, high], abs=1e-4
    )
    assert np.allclose(np.diff(grids, axis=1), (high - low) / 14, atol=1e-5)


@pytest.mark.parametrize("seats, m", [(2, 15), (3, 4)])
def test_q_starts_at_the_discounted_payoff_against_rivals_who_choose_uniformly(seats, m):
    scenario = load_scenario("calvano")
    params = [QLearningParams(grid_points=m, delta=0.9 - 0.1 * i) for i in range(seats)]
    grids = price_grid(scenario, params)
    q = initial_q(payoff_table(scenario, grids), [p.delta for p in params], m, memory=1)
    (game,) = price_games(scenario, seats).values()
    for i in range(seats):
        for a in range(m):
            rivals = [grids[j] for j in range(seats) if j != i]
            profits = [
                game.profits(np.insert(np.array(others), i, grids[i, a]))[i]
                for others in itertools.product(*rivals)
            ]
            assert q[i, :, a] == pytest.approx(
                np.full(m**seats, np.mean(profits) / (1 - params[i].delta)), rel=1e-12
            )


def test_a_session_learns_the_same_for_the_same_seed_whatever_the_threads_and_differently_for_another(
    monkeypatch,
):
    scenario = load_scenario("calvano")
    params = QLearningParams(**FAST)
    sessions = [Session(scenario, (params, params), seed) for seed in (5, 6, 7)]
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    alone = learn(sessions)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    together = learn([Session(scenario, (params, params), seed) for seed in (7, 5, 6, 5)])
    for one, other in zip(alone, [together[1], together[2], together[0]]):
        assert np.array_equal(one.q, other.q) and (one.state, one.periods, one.converged) == (
            other.state,
            other.periods,
            other.converged,
        )
    assert together[1] is together[3]  # a session asked for twice is learnt once
    assert not np.array_equal(alone[0].q, alone[1].q)
    assert all(one.converged for one in alone)


# ---- in a match ----------------------------------------------------------------------------


def play(
    kinds: list[tuple[str, dict]], days: int = 12, seed: int = 3, scenario: Scenario | None = None
) -> tuple[Match, object]:
    entries = {
        f"{kind}{i}": ContestantEntry(name=f"{kind}{i}", kind=kind, params=params)
        for i, (kind, params) in enumerate(kinds)
    }
    spec = MatchSpec(key=f"q-{seed}", index=0, scenario="calvano", seed=seed, days=days, seats=tuple(entries))
    scenario = scenario or load_scenario("calvano")
    match = Match(spec, scenario, MatchRules(seed=11), plan_contestants(entries.values()))
    return match, play_here([match])[0]


def replay(learnt, played: list[list[float]]) -> list[int]:
    """The state a learner is in before each day, given each day's prices by seat, from
    where `learnt` ended (memory 1: a state is yesterday's profile of nearest grid prices)."""
    m = learnt.grids.shape[1]
    state, states = learnt.state, []
    for prices in played:
        states.append(state)
        state = sum(
            int(np.argmin(np.abs(learnt.grids[j] - p))) * m ** (len(prices) - 1 - j)
            for j, p in enumerate(prices)
        )
    return states


def days_by_seat(finished, seats: list[str]) -> list[list[float]]:
    prices: dict[int, dict[str, float]] = {}
    for record in finished.days_played:
        prices.setdefault(record.day, {})[record.merchant] = record.prices["good"]
    return [[prices[day][name] for name in seats] for day in sorted(prices)]


def test_learners_meeting_only_learners_learn_together_then_play_greedily_from_where_learning_ended():
    match, finished = play([("qlearning", FAST), ("qlearning", FAST)])
    seats = list(match.spec.seats)
    learnt = match.inline[seats[0]].learnt
    assert match.inline[seats[1]].learnt is learnt  # one session, both seats
    session = Session(match.scenario, (QLearningParams(**FAST),) * 2, repetition_seed(11, 3))
    (alone,) = learn([session])
    assert np.array_equal(alone.q, learnt.q) and alone.periods == learnt.periods
    played = days_by_seat(finished, seats)
    states = replay(learnt, played)
    m = learnt.grids.shape[1]
    payoffs = payoff_table(match.scenario, learnt.grids)
    for day, (prices, state) in enumerate(zip(played, states)):
        greedy = [learnt.grids[i, int(np.argmax(learnt.q[i, state]))] for i in range(2)]
        assert prices == greedy, f"day {day + 1}"
        profile = sum(
            int(np.argmin(np.abs(learnt.grids[j] - p))) * m ** (1 - j) for j, p in enumerate(prices)
        )
        profits = [r.cash_end - r.cash_start for r in finished.days_played if r.day == day + 1]
        assert profits == pytest.approx(
            payoffs[:, profile].tolist(), rel=1e-12
        )  # the market's profit is the table's
    for name in seats:
        assert (
            finished.metrics[name]["converged"] == 1.0
            and finished.metrics[name]["learning_periods"] == learnt.periods
        )


def test_a_learner_that_meets_a_rule_plays_its_self_play_strategy_frozen():
    match, finished = play([("fixed_price", {}), ("qlearning", FAST)])
    learner = match.inline["qlearning1"]
    (self_play,) = learn([Session(match.scenario, (QLearningParams(**FAST),) * 2, repetition_seed(11, 3))])
    assert np.array_equal(learner.learnt.q, self_play.q) and np.shares_memory(learner.q, learner.learnt.q[1])
    played = days_by_seat(finished, list(match.spec.seats))
    for prices, state in zip(played, replay(self_play, played)):
        assert prices[1] == self_play.grids[1, int(np.argmax(self_play.q[1, state]))]
    assert np.array_equal(learner.q, self_play.q[1])  # frozen
    assert finished.metrics["qlearning1"]["learning_periods"] == self_play.periods
    assert "converged" not in finished.metrics["fixed_price0"]


def test_an_online_learner_updates_its_own_copy_of_q_from_the_market_each_day():
    """The update of each day, replayed from the day records: the state from the posted
    prices, its own action from its own price, the reward its realised profit."""
    params = {**FAST, "learn": "online"}
    match, finished = play([("qlearning", params), ("fixed_price", {})], days=30)
    learner = match.inline["qlearning0"]
    learnt, p = learner.learnt, QLearningParams(**params)
    played = days_by_seat(finished, list(match.spec.seats))
    profits = [r.cash_end - r.cash_start for r in finished.days_played if r.merchant == "qlearning0"]
    q, states = learnt.q[0].copy(), replay(learnt, played)
    for day in range(len(played) - 1):
        state, following = states[day], states[day + 1]
        action = int(np.argmin(np.abs(learnt.grids[0] - played[day][0])))
        q[state, action] = (1 - p.alpha) * q[state, action] + p.alpha * (
            profits[day] + p.delta * q[following].max()
        )
    assert np.array_equal(learner.q, q)
    assert not np.array_equal(learner.q, learnt.q[0])  # it learnt in the match
    assert not np.shares_memory(learner.q, learnt.q) and np.array_equal(
        learnt.q,
        learn([Session(match.scenario, (QLearningParams(**FAST),) * 2, repetition_seed(11, 3))])[0].q,
    )


def with_reset(day: int, seats: list[int]) -> Scenario:
    data = load_scenario("calvano").model_dump()
    data["interventions"] = [{"name": "reset", "kind": "memory_reset", "start_day": day, "seats": seats}]
    return Scenario.model_validate(data)


def test_a_memory_reset_sends_a_frozen_learner_back_to_q0_from_its_day_and_leaves_the_other_seat():
    """Q0 of seat 0 in every state: its payoff averaged over the rival's grid prices, / (1 -
    delta); frozen, it then prices at Q0's best action every day, whatever the state."""
    match, finished = play([("qlearning", FAST), ("qlearning", FAST)], days=12, scenario=with_reset(6, [0]))
    seats = list(match.spec.seats)
    first, second = (match.inline[name] for name in seats)
    learnt = first.learnt
    m = learnt.grids.shape[1]
    q0 = payoff_table(match.scenario, learnt.grids)[0].reshape(m, m).mean(axis=1) / (1 - 0.95)
    played = days_by_seat(finished, seats)
    assert [prices[0] for prices in played[5:]] == [learnt.grids[0, int(np.argmax(q0))]] * 7
    states = replay(learnt, played)
    assert [prices[0] for prices in played[:5]] == [
        learnt.grids[0, int(np.argmax(learnt.q[0, state]))] for state in states[:5]
    ]
    assert np.allclose(first.q, np.broadcast_to(q0, first.q.shape), rtol=1e-12)
    assert np.shares_memory(second.q, learnt.q[1])  # the other seat kept what it learnt
    assert [prices[1] for prices in played] == [
        learnt.grids[1, int(np.argmax(learnt.q[1, state]))] for state in states
    ]


def test_an_online_learner_reset_on_a_day_plays_as_before_until_then_and_explores_afresh_from_it():
    """Exploration eps = exp(-beta t) counts t from the reset day (0 periods explored before it)."""
    params = {**FAST, "learn": "online"}
    lineup = [("qlearning", params), ("fixed_price", {})]
    match, finished = play(lineup, days=60, scenario=with_reset(31, [0]))
    _, untouched = play(lineup, days=60)
    learner = match.inline["qlearning0"]
    assert learner.explored == 0 and learner.days == 30  # priced days 31 to 60 since the reset
    reset, kept = (days_by_seat(f, list(match.spec.seats)) for f in (finished, untouched))
    assert reset[:30] == kept[:30] and reset[30:] != kept[30:]


@pytest.mark.parametrize(("seats", "grid_points", "allowed"), [(5, 15, True), (6, 15, False), (5, 16, False)])
def test_learners_for_up_to_five_firms_of_fifteen_prices_fit_the_limit_of_a_q_table(
    seats, grid_points, allowed
):
    """A session's tables hold seats x m^(seats + 1) entries (memory 1): five firms of 15
    prices, 56,953,125, fit the limit of 2^26 (512 MB); six, or five of 16 prices, do not."""
    params = QLearningParams(grid_points=grid_points)
    check = lambda: QLearner.check_scenario(params, load_scenario("calvano"), seats)  # noqa: E731
    if allowed:
        check()
    else:
        with pytest.raises(ContestantConfigError, match="entries, more than 67,108,864"):
            check()
