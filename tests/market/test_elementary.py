"""market.elementary: exp, sin and powers correctly rounded, a few values at a time or whole
arrays; and the market's choice shares and draws built on them, which are then the same
whatever numpy's own exp gives on the CPU at hand."""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from market import elementary
from market.demand import allocate_markets, logit_shares

FEW = 32  # elementary.exp computes up to this many values a float at a time, more as arrays
NUMPY_EXP = np.exp


def nearest_exp(x: float) -> float:
    """The double nearest e^x: decimal's exp to 60 digits, then float(), which rounds a
    decimal to the nearest double."""
    with decimal.localcontext(decimal.Context(prec=60, Emin=-999999, Emax=999999)):
        return float(decimal.Decimal(x).exp())


def both_ways(values: list[float]) -> tuple[list[float], list[float]]:
    """exp of `values` a float at a time, and as part of an array of more than FEW."""
    few = elementary.exp(np.array(values)).tolist()
    many = elementary.exp(np.array(values * (FEW // len(values) + 1))).tolist()[: len(values)]
    return few, many


@settings(max_examples=300)
@given(st.lists(st.floats(-750.0, 712.0), min_size=1, max_size=8))
def test_exp_is_the_double_nearest_e_to_the_x(values):
    few, many = both_ways(values)
    expected = [nearest_exp(x) for x in values]
    assert few == expected and many == expected


@pytest.mark.parametrize(
    "x",
    [
        -10.00460894206643,  # the fast steps leave the rounding undecided: decimal decides
        -2.8423432520644454,
        -15.607866781811596,  # glibc 2.36's exp is a bit off here (the FMA variant)
        -2.234505965798231,
        -708.5,  # subnormal
        -745.13,  # the least subnormal
        709.78,  # the largest finite
        709.79,  # overflow
        0.0,
        -0.0,
        1e-300,
    ],
)
def test_exp_where_it_is_hard(x):
    few, many = both_ways([x])
    assert few == many == [nearest_exp(x)]


def test_the_hard_cases_above_take_the_slow_path():
    """The first two cases above exercise the decimal path (else that test would not)."""
    x = np.array([-10.00460894206643, -2.8423432520644454, -1.5])
    k = np.rint(x * elementary._INVERSE_STEP)
    j = k.astype(np.int64) & 255
    _, decided = elementary._steps(x, k, elementary._HI_ARRAY.take(j), elementary._LO_ARRAY.take(j))
    assert decided.tolist() == [False, False, True]


def test_exp_of_infinities_and_nan():
    few, many = both_ways([math.inf, -math.inf, math.nan])
    for got in (few, many):
        assert got[:2] == [math.inf, 0.0] and math.isnan(got[2])
    assert elementary.exp(np.zeros((2, 0))).shape == (2, 0)
    assert elementary.exp(np.float64(1.0)) == math.e and elementary.exp(np.float64(1.0)).shape == ()


@given(st.floats(0.0, 1e4))
def test_sin_is_within_an_ulp_of_the_c_librarys(x):
    assert abs(float(elementary.sin(x)) - math.sin(x)) <= math.ulp(math.sin(x))


def test_sin_of_small_angles_is_the_angle():
    """Below 2^-26, sin x = x (1 - x^2/6 + ...) rounds to x."""
    assert elementary.sin(np.array([0.0, 1e-9, 2.0**-27])).tolist() == [0.0, 1e-9, 2.0**-27]


@given(st.floats(1e-3, 1.0), st.lists(st.integers(0, 400), min_size=1, max_size=5))
def test_power_is_the_double_nearest_the_exact_power(base, exponents):
    """The exact rational power, rounded once: float() of a Fraction rounds to nearest."""
    expected = [float(Fraction(base) ** k) for k in exponents]
    assert elementary.power(base, np.array(exponents)).tolist() == expected


@given(st.lists(st.floats(-40.0, 5.0), min_size=2, max_size=6), st.floats(-40.0, 5.0))
def test_the_choice_shares_are_those_of_exact_exps(utility, outside):
    """Shares as defined: w_k = the double nearest exp(u_k - max u), each over the sum of the
    w in option order (numpy sums fewer than 8 terms in order), no purchase last: a function
    of the utilities alone, the same on every machine."""
    options = [*utility, outside]
    top = max(options)
    weights = [nearest_exp(u - top) for u in options]
    total = 0.0
    for w in weights:
        total += w
    assert logit_shares(np.array([utility]), outside)[0].tolist() == [w / total for w in weights]


def one_ulp_up(x, *args, **kwargs):
    """numpy's exp, one ulp higher: as AVX-512's can be against the C library's."""
    return np.nextafter(NUMPY_EXP(x, *args, **kwargs), np.inf)


@given(st.floats(-6.0, -1.0), st.floats(-6.0, -1.0), st.integers(0, 2**32))
def test_the_draws_do_not_depend_on_numpys_exp(first, second, seed):
    """The case of issue 52: the last merchant's utility equals the no-purchase one, so in
    numpy's multinomial its probability is 1/2 in exact arithmetic, where numpy's binomial
    switches method. Before the shares' exp was correctly rounded, numpy's exp one ulp higher
    (one CPU against another) often moved that 1/2 by an ulp, and then drew other customers."""

    def drawn() -> list[list[float]]:
        utility = np.array([[first, second, -3.0]])
        wanted, sold, none = allocate_markets(
            np.array([60.0]), utility, -3.0, np.array([[40.0, 40.0, 40.0]]), [np.random.default_rng(seed)]
        )
        return [wanted.tolist(), sold.tolist(), none.tolist()]

    here = drawn()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(np, "exp", one_ulp_up)
        assert drawn() == here
