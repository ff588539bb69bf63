"""Ratings from match rankings that do not depend on the order of the matches.

The model is Bradley–Terry / Plackett–Luce: contestant i has a strength s_i, and in any match
P(i finishes above j) = s_i / (s_i + s_j). Every Plackett–Luce ranking has exactly these
pairwise odds, so the fit breaks each match's ranking into all pairs of its seats and finds the
maximum-likelihood strengths of the pairs with choix (iterative Luce spectral ranking,
`choix.ilsr_pairwise_dense`):

- a pair's winner is the better rank; a shared rank counts half a win to each side;
- the pairs of a match of n seats weigh 1 / (n - 1) each, so a seat's n - 1 pairs weigh as
  much as one two-player game (as in the online Elo of results.scoring.ratings);
- every two contestants are credited with PRIOR_DRAWS of a virtual drawn game. Without it the
  maximum likelihood does not exist when a contestant always wins or always loses (its strength
  runs off to infinity) or when some contestants never meet, even indirectly; with it every
  fit is finite and unique, and the pull towards the mean fades as real games accumulate.

Scale: rating = ANCHOR + 400 * log10(s_i / s_ref), so 400 points are a factor of 10 in odds,
as in Elo. The reference is the geometric mean of the rated contestants (the mean rating is
ANCHOR) or a named contestant (who is then ANCHOR exactly). Ratings are rounded to DIGITS
decimals.

Intervals: the 95% percentile bootstrap, refitting on `resamples` sets of whole matches drawn
with replacement from a numpy Generator seeded with `seed`, so the same matches give the same
intervals. Matches that share their market's draws (a match and its repeats, a tournament's
sampling_repeats) are drawn together, as one: they are not independent evidence. A
contestant absent from a resample has no rating in it; with a named reference, a resample
without the reference is skipped.

Rank: 1 + the number of contestants whose interval lies wholly above this one's (their low
end above its high end), so contestants whose intervals overlap can share a rank.

Order of two contestants (`separations`): the share of resamples in which one rates above the
other says how settled their order is; two next to each other in the table are ordered at a
confidence c when that share is at least c, else statistically tied. How many more matches
would order them is estimated from the spread sigma of their rating difference over the
resamples and their gap d: a bootstrap spread shrinks as 1 / sqrt(n) with the n matches that
either played, so ordering them needs about n (z sigma / d)^2 matches like those, z the
normal quantile of c.

The pairs of one match are not independent (they come from one ranking); resampling whole
matches keeps that dependence in the intervals.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from itertools import combinations, pairwise
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

from results.errors import NotFound

ANCHOR = 1000.0
# Ratings and their resamples are rounded to this many decimals, far below what the fit
# resolves (its tolerance, 1e-6 in log-strength, is 1.7e-4 points). The fit's last bits depend
# on the machine (numpy's exp and log, the linear algebra library's kernels), and contestants
# with alike records, equal in exact arithmetic, fit ratings a few ulps apart. Rounded, they
# are equal, and the same on every machine: no order, rank, share of resamples ordering two
# contestants or stored rating turns on those bits.
DIGITS = 6
ELO_PER_LOG_ODDS = 400.0 / math.log(10.0)
PRIOR_DRAWS = 0.1
RESAMPLES = 200
SEED = 0
LEVEL = 0.95

Ranking = Sequence[tuple[str, int]]
"""(contestant, rank) for every seat of a match; rank 1 best, ties share a rank."""


class Rating(NamedTuple):
    rating: float
    low: float
    high: float
    rank: int


class _Pairs(NamedTuple):
    """The pairs of all matches as parallel arrays: match index, winner, loser, weight."""

    names: list[str]
    match: np.ndarray
    winner: np.ndarray
    loser: np.ndarray
    weight: np.ndarray

    def comparisons(self, times_drawn: np.ndarray) -> np.ndarray:
        """The win matrix (row beat column) with every match counted `times_drawn[match]` times."""
        wins = np.zeros((len(self.names), len(self.names)))
        np.add.at(wins, (self.winner, self.loser), self.weight * times_drawn[self.match])
        return wins


class Fit(NamedTuple):
    """A fit of match rankings: each rated contestant's Rating, and what its interval was drawn
    from: the bootstrap's ratings [resample, contestant] in `names` order (NaN where one is
    absent from a resample), the contestants of each match and the draws it was resampled with
    (the matches of one draw together)."""

    ratings: dict[str, Rating]
    names: list[str]
    samples: np.ndarray
    played: list[frozenset[str]]
    draws: list[int]

    def above(self, upper: str, lower: str) -> float | None:
        """The share of the resamples rating both in which `upper` rates above `lower` (an
        equal rating counts half); None when none rates both."""
        difference = self.difference(upper, lower)
        if not difference.size:
            return None
        return float(np.mean((difference > 0) + 0.5 * (difference == 0)))

    def difference(self, upper: str, lower: str) -> np.ndarray:
        """`upper`'s rating less `lower`'s in each resample that rates both."""
        found = self.samples[:, self.names.index(upper)] - self.samples[:, self.names.index(lower)]
        return found[~np.isnan(found)]

    def matches_of(self, *names: str) -> int:
        """The matches (counting a match and its repeats once) in which any of `names` played."""
        return len({draw for seats, draw in zip(self.played, self.draws) if not seats.isdisjoint(names)})

    def matches_together(self, *names: str) -> int:
        """The matches (counting a match and its repeats once) in which all of `names` played."""
        return len({draw for seats, draw in zip(self.played, self.draws) if seats.issuperset(names)})


def order_key(name: str, rating: float | None) -> tuple[bool, float, str]:
    """Where a contestant goes in a table: the rated by rating, best first, then by name; then
    the unrated by name."""
    return (rating is None, -(rating or 0.0), name)


class Separation(NamedTuple):
    """Two contestants next to each other in a table, `upper` rated above `lower`: the share of
    resamples that order them so, whether that is at least the confidence asked for, and the
    estimated matches more that would make it so (0 once it is; None without an estimate:
    equal ratings, or no spread to scale)."""

    upper: str
    lower: str
    share: float | None
    ordered: bool
    more_matches: int | None


def separations(fit: Fit, order: Sequence[str], confidence: float = LEVEL) -> list[Separation]:
    """For each two contestants next to each other in `order` (rated ones, best first), how
    settled their order is (see the module's docstring)."""
    z = NormalDist().inv_cdf(confidence)
    found = []
    for upper, lower in pairwise(order):
        share = fit.above(upper, lower)
        ordered = share is not None and share >= confidence
        gap = fit.ratings[upper].rating - fit.ratings[lower].rating
        difference = fit.difference(upper, lower)
        spread = float(np.std(difference, ddof=1)) if difference.size > 1 else 0.0
        more: int | None = 0
        if not ordered:
            more = None
            if gap > 0 and spread > 0:
                played = fit.matches_of(upper, lower)
                more = max(1, math.ceil(played * (z * spread / gap) ** 2 - played))
        found.append(Separation(upper, lower, share, ordered, more))
    return found


def fit(
    rankings: Sequence[Ranking],
    *,
    anchor: str | None = None,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    draws: Sequence[Hashable] | None = None,
) -> Fit:
    """The rating, interval and rank of every contestant that met another in some match, with
    what the intervals were drawn from (Fit); `draws`: each match's market draw (default: its
    own), the matches of one resampled together.

    Raises NotFound when `anchor` names no contestant that met another.
    """
    pairs = _pairs(rankings)
    if anchor is not None and anchor not in pairs.names:
        raise NotFound(f"reference contestant {anchor!r} has no rated match here")
    played = [frozenset(name for name, _ in ranking) for ranking in rankings]
    numbered = {draw: k for k, draw in enumerate(dict.fromkeys(draws))} if draws is not None else None
    draw_of = np.array(
        [numbered[d] for d in draws] if numbered and draws is not None else range(len(rankings))
    )
    groups = len(numbered) if numbered is not None else len(rankings)
    if not pairs.names:
        return Fit({}, [], np.empty((resamples, 0)), played, draw_of.tolist())
    reference = None if anchor is None else pairs.names.index(anchor)

    everyone = np.ones(len(rankings))
    strengths = _strengths(pairs.comparisons(everyone), None)
    ratings = _elo_scale(strengths, np.ones(len(pairs.names), dtype=bool), reference)

    generator = np.random.default_rng(seed)
    samples = np.empty((resamples, len(pairs.names)))
    for sample in samples:
        drawn = np.bincount(generator.integers(0, groups, groups), minlength=groups)[draw_of]
        wins = pairs.comparisons(drawn.astype(float))
        present = (wins + wins.T).sum(axis=1) > 0
        sample[:] = _elo_scale(_strengths(wins, strengths), present, reference)
    tail = 100 * (1 - LEVEL) / 2
    low, high = np.nanpercentile(samples, [tail, 100 - tail], axis=0)
    above = (low[np.newaxis, :] > high[:, np.newaxis]).sum(axis=1)
    rated = {
        name: Rating(float(ratings[i]), float(low[i]), float(high[i]), int(1 + above[i]))
        for i, name in enumerate(pairs.names)
    }
    return Fit(rated, pairs.names, samples, played, draw_of.tolist())


def _pairs(rankings: Sequence[Ranking]) -> _Pairs:
    rows: list[tuple[int, str, str, float]] = []
    for index, ranking in enumerate(rankings):
        if len(ranking) < 2:
            continue
        weight = 1.0 / (len(ranking) - 1)
        for (a, rank_a), (b, rank_b) in combinations(ranking, 2):
            if a == b:
                continue
            if rank_a == rank_b:
                rows += [(index, a, b, weight / 2), (index, b, a, weight / 2)]
            else:
                rows.append((index, a, b, weight) if rank_a < rank_b else (index, b, a, weight))
    names = sorted({name for _, a, b, _ in rows for name in (a, b)})
    position = {name: i for i, name in enumerate(names)}
    return _Pairs(
        names,
        np.array([r[0] for r in rows], dtype=np.intp),
        np.array([position[r[1]] for r in rows], dtype=np.intp),
        np.array([position[r[2]] for r in rows], dtype=np.intp),
        np.array([r[3] for r in rows], dtype=float),
    )


def _strengths(wins: np.ndarray, start: np.ndarray | None) -> np.ndarray:
    """Log-strengths (natural log) maximising the likelihood of `wins` plus the virtual draws."""
    import choix  # here, not at the top: it imports scipy.stats, seconds that only a fit should pay

    virtual = PRIOR_DRAWS / 2 * (1.0 - np.eye(len(wins)))
    return choix.ilsr_pairwise_dense(wins + virtual, initial_params=start, max_iter=1000, tol=1e-6)


def _elo_scale(strengths: np.ndarray, present: np.ndarray, reference: int | None) -> np.ndarray:
    """Ratings of the present contestants (NaN for the others, or for all when the reference is
    absent), rounded to DIGITS decimals."""
    points = ELO_PER_LOG_ODDS * strengths
    if not present.any() or (reference is not None and not present[reference]):
        return np.full(len(points), np.nan)
    rated = ANCHOR + (points - (points[present].mean() if reference is None else points[reference]))
    return np.where(present, np.round(rated, DIGITS), np.nan)
