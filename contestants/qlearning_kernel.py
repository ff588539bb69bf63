"""The learning phase of Q-learning sessions, compiled with numba: many sessions side by
side, one thread per session at a time (`prange`).

A session is n learners repeating one price game (Calvano et al., AER 2020). Each period
t = 1, 2, ... every learner i, in state s (the action profiles of the last k periods),
explores with probability eps_t = exp(-beta_i t) (a uniform action) and otherwise plays its
greedy action argmax_a Q_i(s, a); the profile p they played gives each its profit pi_i(p) and
the next state s'; then each updates the entry it used:

    Q_i(s, a_i) <- (1 - alpha_i) Q_i(s, a_i) + alpha_i (pi_i(p) + delta_i max_a Q_i(s', a)).

The session has converged when no learner's greedy action changed in any state for `stable`
consecutive periods; it stops then, or after `max_periods` periods.

What makes it fast enough for Calvano's experiment (a thousand sessions of ~10^6 periods):
the payoffs are a table over action profiles, a state is an integer, each learner's greedy
action per state is kept (so max_a Q_i(s', a) is one read, and a change of greedy action is
seen when the one updated entry passes it, or, when the greedy entry itself falls, by a
rescan of that state's m entries), and nothing is allocated inside the loop.

Random numbers come from a SplitMix64 generator per session, written here, seeded by the
caller: a session's draws are its own, whatever thread runs it and whichever sessions run
beside it, and the numba global generator is never used. Per period and learner: one draw
decides whether it explores (explore iff (x >> 11) 2^-53 < eps_t), and only an exploring
learner draws its action ((x >> 32) m >> 32), learners in seat order.

Indexing: an action profile is p = sum_j a_j m^(n-1-j) (seat 0 the most significant digit,
so that a payoff table [seat, profile] is table[seat].reshape((m,) * n)[a_0, ..., a_{n-1}]);
with memory k a state is s = sum_l p_{t-l} M^l over the last k profiles (M = m^n; the newest
the least significant), so s' = (s mod M^(k-1)) M + p. Ties in argmax go to the lowest action.
"""

from __future__ import annotations

import math

import numba
import numpy as np

GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)
_UNIT = 2.0**-53


@numba.njit(cache=True, inline="always")
def splitmix64(state: np.uint64) -> tuple[np.uint64, np.uint64]:
    """The generator's next state and its output (Steele, Lea and Flood's SplitMix64)."""
    state = state + GOLDEN_GAMMA
    z = state
    z = (z ^ (z >> np.uint64(30))) * _MIX_1
    z = (z ^ (z >> np.uint64(27))) * _MIX_2
    return state, z ^ (z >> np.uint64(31))


@numba.njit(cache=True, inline="always")
def _argmax(q: np.ndarray, i: int, s: int) -> int:
    """The lowest action of the highest Q_i(s, .)."""
    best = 0
    value = q[i, s, 0]
    for a in range(1, q.shape[2]):
        if q[i, s, a] > value:
            best, value = a, q[i, s, a]
    return best


@numba.njit(cache=True, nogil=True)
def _session(
    payoffs: np.ndarray,  # [seat, profile]
    q: np.ndarray,  # [seat, state, action], updated in place
    alpha: np.ndarray,  # [seat]
    beta: np.ndarray,
    delta: np.ndarray,
    stable: int,
    max_periods: int,
    state: int,
    seed: np.uint64,
) -> tuple[int, bool, int]:
    """One session from `state`; the periods it ran, whether it converged, its last state."""
    n, profiles = payoffs.shape
    states, m = q.shape[1], q.shape[2]
    older = states // profiles  # M^(k-1)
    greedy = np.empty((n, states), dtype=np.int64)
    for i in range(n):
        for s in range(states):
            greedy[i, s] = _argmax(q, i, s)
    actions = np.empty(n, dtype=np.int64)
    rng = seed
    unchanged = 0
    for t in range(1, max_periods + 1):
        profile = 0
        for i in range(n):
            rng, x = splitmix64(rng)
            # the C library's exp (market/elementary.py says why that is left to the machine)
            if (x >> np.uint64(11)) * _UNIT < math.exp(-beta[i] * t):
                rng, x = splitmix64(rng)
                a = np.int64(((x >> np.uint64(32)) * np.uint64(m)) >> np.uint64(32))
            else:
                a = greedy[i, state]
            actions[i] = a
            profile = profile * m + a
        following = (state % older) * profiles + profile
        changed = False
        for i in range(n):
            a = actions[i]
            old = q[i, state, a]
            new = (1.0 - alpha[i]) * old + alpha[i] * (
                payoffs[i, profile] + delta[i] * q[i, following, greedy[i, following]]
            )
            q[i, state, a] = new
            g = greedy[i, state]
            if a == g:
                if new < old:
                    best = _argmax(q, i, state)
                    if best != g:
                        greedy[i, state] = best
                        changed = True
            elif new > q[i, state, g] or (new == q[i, state, g] and a < g):
                greedy[i, state] = a
                changed = True
        state = following
        unchanged = 0 if changed else unchanged + 1
        if unchanged >= stable:
            return t, True, state
    return max_periods, False, state


@numba.njit(cache=True, parallel=True, nogil=True)
def learn(
    payoffs: np.ndarray,  # [session, seat, profile]
    q: np.ndarray,  # [session, seat, state, action]: the initial Q, learnt in place
    alpha: np.ndarray,  # [session, seat]
    beta: np.ndarray,
    delta: np.ndarray,
    stable: np.ndarray,  # [session]
    max_periods: np.ndarray,
    start: np.ndarray,  # [session]: the first state
    seeds: np.ndarray,  # [session] uint64
    periods: np.ndarray,  # [session], out: periods run
    converged: np.ndarray,  # [session] bool, out
    final: np.ndarray,  # [session], out: the state after the last period
) -> None:
    """Every session's learning phase, side by side; the results go into the `out` arrays
    and `q`."""
    for b in numba.prange(payoffs.shape[0]):
        periods[b], converged[b], final[b] = _session(
            payoffs[b], q[b], alpha[b], beta[b], delta[b], stable[b], max_periods[b], start[b], seeds[b]
        )
