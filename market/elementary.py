"""exp, sin and powers correctly rounded: the double nearest the exact value, which is one
number, the same on every machine.

numpy's exp and power, and the C library's exp, sin and pow that numpy and Python call, are
not: numpy computes exp with vectorised code of its own on a CPU with AVX-512 (about one value
in twenty then differs in its last bit from the C library's), and glibc picks, by CPU, a
variant compiled with or without fused multiply-adds, which differ in rarer values. A market's
choice probabilities come from exp, and numpy's samplers switch method on them (its binomial
at p = 1/2), so a draw could depend on the machine that made it. Every exp, sin and power whose
value reaches a draw, a decision or a stored result is taken from here instead. The C
library's exp is itself correctly rounded in all but about one value in 1,500, so what was
computed through it (numpy without AVX-512) nearly always stays as it was.
The one exp left to the C library is the Q-learners' chance of exploring inside their compiled
training loop (contestants/qlearning_kernel.py), where a draw would have to fall within its
last bit to go otherwise.

`exp` uses only the operations IEEE 754 rounds exactly (+, -, *, rint, ldexp), each its own
numpy or Python operation, none fused, so it gives the same bits on every CPU, numpy's SIMD
loops included: e^x = 2^m 2^(j/256) e^r, with the table of 2^(j/256) held to 2^-80,
|r| <= ln 2 / 512, e^r by its Taylor series, and the sum carried to about 2^-70 of the value
(Knuth's exact sum). Where that leaves the rounding undecided (the value within 2^-67 of the
midpoint between two doubles: about one value in 12,000), or the result is subnormal or near
overflow, the value is computed in decimal with 50 digits (Python's decimal, itself
correctly rounded) instead. The same steps serve numpy arrays and, for a few values, where
numpy's overhead per operation would cost more, Python floats.

`sin` and `power` are computed in decimal value by value, and remembered: they serve few
values (the seasons' factor of a day, a discount factor to a whole power)."""

from __future__ import annotations

import decimal
import functools
import math
from typing import Any

import numpy as np

_DIGITS = decimal.Context(prec=50, Emin=-99999, Emax=99999)
_STEPS = 256  # the table holds 2^(j / _STEPS)
_INVERSE_STEP = _STEPS / math.log(2)
_SHORT = 1.5 * 2.0**16  # (r + _SHORT) - _SHORT: r to a multiple of 2^-36, 27 bits as |r| < 2^-9
_ERROR = 2.0**-67  # bound on the fast steps' relative error (about 2^-70), with a margin
_FEW = 32  # arrays up to this size are computed a float at a time
_BLOCK = 16384  # larger ones in blocks of this size, which stay in the CPU's cache


def _short(value: float, bits: int) -> float:
    """`value` with its lowest `bits` bits clear."""
    return float(np.array(np.array(value).view(np.int64) & ~np.int64((1 << bits) - 1)).view(np.float64))


def _ln2_parts() -> tuple[float, float, float]:
    """ln 2 / _STEPS as three doubles, the first two with their low 19 bits clear, so that k
    times either is exact for every |k| < 2^19 (|x| < 1400)."""
    exact = _DIGITS.divide(_DIGITS.ln(2), _STEPS)
    first = _short(float(exact), 19)
    exact = _DIGITS.subtract(exact, decimal.Decimal(first))
    second = _short(float(exact), 19)
    return first, second, float(_DIGITS.subtract(exact, decimal.Decimal(second)))


def _table() -> tuple[list[float], list[float]]:
    """2^(j/_STEPS), j = 0.._STEPS-1, as hi + lo: hi with 26 significant bits, so that hi
    times a number of 27 bits is exact; lo the rest, to 2^-80 (the powers by repeated
    products in 50 digits)."""
    step = _DIGITS.exp(_DIGITS.divide(_DIGITS.ln(2), _STEPS))
    hi, lo, exact = [], [], decimal.Decimal(1)
    for _ in range(_STEPS):
        hi.append(_short(float(exact), 26))
        lo.append(float(_DIGITS.subtract(exact, decimal.Decimal(hi[-1]))))
        exact = _DIGITS.multiply(exact, step)
    return hi, lo


_LN2_1, _LN2_2, _LN2_3 = _ln2_parts()
_HI, _LO = _table()
_HI_ARRAY, _LO_ARRAY = np.array(_HI), np.array(_LO)


def _two_sum(a: Any, b: Any) -> tuple[Any, Any]:
    """s = fl(a + b) and the exact error a + b - s (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _steps(x: Any, k: Any, hi: Any, lo: Any) -> tuple[Any, Any]:
    """e^x / 2^(k // _STEPS) rounded, and whether that rounding is the correct one, of floats
    or of arrays: k = x _STEPS / ln 2 rounded to a whole number, hi + lo = 2^((k mod _STEPS) /
    _STEPS)."""
    # r = x - k ln2/_STEPS as r + r_lo: x - k part1 is exact (Sterbenz), k part2 too
    r, r_lo = _two_sum(x - k * _LN2_1, -(k * _LN2_2))
    r_lo = r_lo - k * _LN2_3
    cut = (r + _SHORT) - _SHORT
    r_lo = r_lo + (r - cut)
    r = cut
    # e^(r + r_lo) = (1 + r + q)(1 + r_lo) = 1 + r + t, |t| < 1e-6
    q = r * r * (0.5 + r * (1 / 6 + r * (1 / 24 + r * (1 / 120 + r * (1 / 720)))))
    t = q + r_lo * (1.0 + r + q)
    # (hi + lo)(1 + r + t), hi r exact
    s, s_err = _two_sum(hi, hi * r)
    rest = s_err + (hi * t + lo * (1.0 + r + t))
    bound = s * _ERROR
    return s + rest, s + (rest - bound) == s + (rest + bound)


def exp(x: np.ndarray) -> np.ndarray:
    """e^x of every element, correctly rounded (to nearest, ties to even); float64."""
    x = np.asarray(x, dtype=float)
    if x.size <= _FEW:
        return np.array([_exp_float(v) for v in x.reshape(-1).tolist()]).reshape(x.shape)
    out = np.empty(x.shape)
    flat, into = x.reshape(-1), out.reshape(-1)
    for start in range(0, flat.size, _BLOCK):
        into[start : start + _BLOCK] = _exp_block(flat[start : start + _BLOCK])
    return out


def _exp_float(x: float) -> float:
    if not -708.0 <= x <= 709.0:  # a result subnormal, near overflow or past it; or NaN
        return _exp_decimal(x)
    k = round(x * _INVERSE_STEP)
    y, decided = _steps(x, k, _HI[k & (_STEPS - 1)], _LO[k & (_STEPS - 1)])
    return math.ldexp(y, k >> 8) if decided else _exp_decimal(x)  # k // _STEPS


def _exp_block(x: np.ndarray) -> np.ndarray:
    fast = (x >= -708.0) & (x <= 709.0)
    some = x if fast.all() else np.where(fast, x, 0.0)
    k = np.rint(some * _INVERSE_STEP)
    steps = k.astype(np.int64)
    j = steps & (_STEPS - 1)
    y, decided = _steps(some, k, _HI_ARRAY.take(j), _LO_ARRAY.take(j))
    y = np.ldexp(y, steps >> 8)  # k // _STEPS
    for i in np.flatnonzero(~(decided & fast)).tolist():
        y[i] = _exp_decimal(float(x[i]))
    return y


@functools.lru_cache(maxsize=4096)
def _exp_decimal(x: float) -> float:
    if math.isnan(x) or abs(x) > 800.0:
        return x if math.isnan(x) else math.inf if x > 0 else 0.0  # far past the range of doubles
    return float(_DIGITS.exp(decimal.Decimal(x)))  # float() of a decimal is correctly rounded


_PI = decimal.Decimal("3.14159265358979323846264338327950288419716939937510582097494")


def sin(x: float | np.ndarray) -> np.ndarray:
    """sin of every element, correctly rounded; float64."""
    return np.array([_sin(v) for v in np.ravel(x).tolist()], dtype=float).reshape(np.shape(x))


@functools.lru_cache(maxsize=4096)
def _sin(x: float) -> float:
    """sin x correctly rounded: its Taylor series in decimal, 60 digits, after reducing x to
    [-pi, pi]."""
    with decimal.localcontext(decimal.Context(prec=60)):
        a = decimal.Decimal(x) % (2 * _PI)  # in (-2 pi, 2 pi)
        if a > _PI:
            a -= 2 * _PI
        elif a < -_PI:
            a += 2 * _PI
        total, term, n = a, a, 1
        while True:
            term = -term * a * a / ((n + 1) * (n + 2))
            n += 2
            if total + term == total:
                return float(total)
            total += term


@functools.lru_cache(maxsize=4096)
def _power(base: float, exponent: int) -> float:
    return float(_DIGITS.power(decimal.Decimal(base), exponent))


def power(base: float, exponents: np.ndarray) -> np.ndarray:
    """base^k for every whole number k of `exponents`, correctly rounded; float64."""
    return np.array([_power(base, k) for k in np.ravel(exponents).tolist()], dtype=float).reshape(
        np.shape(exponents)
    )
