"""The order-independent rating fit: recovery of known strengths, degenerate data, anchor, ranks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from results.errors import NotFound
from results.scoring.rating_fit import ANCHOR, ELO_PER_LOG_ODDS, Rating, fit


def fit_ratings(rankings, **options) -> dict[str, Rating]:
    return fit(rankings, **options).ratings


# true ratings on the Elo scale, mean 1000; m0 best
TRUTH = np.array([1280.0, 1150.0, 1060.0, 1000.0, 940.0, 850.0, 720.0])
NAMES = [f"m{i}" for i in range(len(TRUTH))]


def plackett_luce_matches(
    generator: np.random.Generator, count: int, seats: int = 4
) -> list[list[tuple[str, int]]]:
    """Matches of `seats` merchants drawn at random, ranked by Plackett–Luce with strengths
    10 ** (TRUTH / 400): sorting log-strength plus Gumbel noise draws exactly that ranking."""
    log_strength = (TRUTH - ANCHOR) / ELO_PER_LOG_ODDS
    matches = []
    for _ in range(count):
        chosen = generator.choice(len(TRUTH), seats, replace=False)
        order = chosen[np.argsort(-(log_strength[chosen] + generator.gumbel(size=seats)))]
        matches.append([(NAMES[i], place) for place, i in enumerate(order, start=1)])
    return matches


def test_fitted_order_matches_the_true_order():
    fit = fit_ratings(plackett_luce_matches(np.random.default_rng(7), 600), resamples=30)
    assert sorted(NAMES, key=lambda name: -fit[name].rating) == NAMES
    assert sum(fit[name].rating for name in NAMES) / len(NAMES) == pytest.approx(ANCHOR)
    assert max(abs(fit[name].rating - true) for name, true in zip(NAMES, TRUTH)) < 60
    # the best and the worst are told apart from everyone; ranks never exceed places
    assert fit["m0"].rank == 1 and fit["m6"].rank == 7
    assert all(fit[name].rank <= place for place, name in enumerate(NAMES, start=1))


def test_95_percent_intervals_cover_the_true_ratings_about_95_percent_of_the_time():
    generator = np.random.default_rng(2026)
    covered = checked = 0
    for replication in range(12):
        fit = fit_ratings(plackett_luce_matches(generator, 120), resamples=80, seed=replication)
        for name, true in zip(NAMES, TRUTH):
            covered += fit[name].low <= true <= fit[name].high
            checked += 1
    # 84 intervals, 80 expected at a true 95%: 73 to 83 is 87% to 99%. 80% intervals (67
    # expected) or intervals so wide that all cover fail. Other generator seeds (1 to 5) give
    # 75 to 80: the percentile bootstrap on 120 matches covers a little under 95%.
    assert 73 <= covered <= 83, f"{covered} of {checked} intervals cover the truth"


def test_intervals_contain_the_estimate_and_narrow_with_more_matches():
    generator = np.random.default_rng(3)
    few = fit_ratings(plackett_luce_matches(generator, 40), resamples=100)
    many = fit_ratings(plackett_luce_matches(generator, 400), resamples=100)
    for name in NAMES:
        assert few[name].low <= few[name].rating <= few[name].high
        assert many[name].high - many[name].low < few[name].high - few[name].low


def test_same_matches_in_any_order_give_the_same_ratings():
    matches = plackett_luce_matches(np.random.default_rng(11), 60)
    reordered = [matches[i] for i in np.random.default_rng(12).permutation(len(matches))]
    fit = fit_ratings(matches, resamples=30)
    assert fit_ratings(matches, resamples=30) == fit  # seeded: deterministic
    assert fit_ratings(matches, resamples=30, seed=1) != fit
    shuffled = fit_ratings(reordered, resamples=30)
    for name, rating in fit.items():
        # the point estimate does not depend on order; the bootstrap draws other matches
        assert shuffled[name].rating == pytest.approx(rating.rating, abs=1e-6)


def test_a_contestant_who_always_wins_gets_a_finite_rating_above_the_rest():
    fit = fit_ratings(
        [[("ace", 1), ("b", 2), ("c", 3)], [("ace", 1), ("c", 2), ("b", 3)]] * 10, resamples=100
    )
    assert all(math.isfinite(value) for rating in fit.values() for value in rating)
    assert fit["ace"].rating > fit["b"].high and fit["ace"].rating > fit["c"].high
    assert fit["ace"].rank == 1 and fit["b"].rank == fit["c"].rank == 2


def test_one_decisive_match_gives_the_prior_pulled_gap():
    # a 1-0 record plus PRIOR_DRAWS (0.1) of a draw: odds (1 + 0.05) / 0.05 = 21
    fit = fit_ratings([[("a", 1), ("b", 2)]])
    assert fit["a"].rating - fit["b"].rating == pytest.approx(400 * math.log10(21), abs=0.01)
    assert fit["a"].rating + fit["b"].rating == pytest.approx(2 * ANCHOR)


def test_shared_ranks_count_half_a_win_each():
    fit = fit_ratings([[("a", 1), ("b", 1), ("c", 3)]] * 5)
    assert fit["a"].rating == pytest.approx(fit["b"].rating, abs=1e-6)
    assert fit["c"].rating < fit["a"].rating
    all_tied = fit_ratings([[("a", 1), ("b", 1)]] * 3)
    assert all_tied["a"].rating == pytest.approx(ANCHOR, abs=1e-6) == all_tied["b"].rating


def test_contestants_who_never_met_another_are_not_rated():
    fit = fit_ratings([[("alone", 1)], [("a", 1), ("b", 2)], []])
    assert set(fit) == {"a", "b"}
    assert fit_ratings([[("alone", 1)]]) == {}
    with pytest.raises(NotFound, match="reference contestant 'alone'"):
        fit_ratings([[("alone", 1)]], anchor="alone")


def test_a_named_anchor_is_rated_1000_exactly():
    matches = plackett_luce_matches(np.random.default_rng(5), 80)
    by_mean = fit_ratings(matches, resamples=50)
    anchored = fit_ratings(matches, anchor="m3", resamples=50)
    assert (anchored["m3"].rating, anchored["m3"].low, anchored["m3"].high) == (ANCHOR, ANCHOR, ANCHOR)
    shift = by_mean["m3"].rating - ANCHOR
    for name in NAMES:
        assert anchored[name].rating == pytest.approx(by_mean[name].rating - shift)
    with pytest.raises(NotFound, match="reference contestant 'nobody'"):
        fit_ratings(matches, anchor="nobody")


def test_rank_counts_only_contestants_whose_interval_is_wholly_above():
    # a far ahead of b and c, who are indistinguishable; d far behind
    matches = [[("a", 1), ("b", 2), ("c", 3), ("d", 4)], [("a", 1), ("c", 2), ("b", 3), ("d", 4)]] * 15
    fit = fit_ratings(matches, resamples=100)
    assert [fit[name].rank for name in "abcd"] == [1, 2, 2, 4]
    assert fit["b"].low <= fit["c"].high and fit["c"].low <= fit["b"].high
