"""hyp1f1 at extreme arguments against mpmath: tiny ``a`` and large negative ``x`` (``b > a``).

Both classes returned wrong results before the fix:

* tiny ``a`` (1e-300 .. 1e-6, x up to 700): the series' step formed ``(a + k) - 1`` (which rounds
  a tiny ``a`` to 0) and stopped as soon as one term was below eps * sum, although the terms grow
  again by (a + k) x / ((b + k)(k + 1)); ``hyp1f1(1e-17, 1, 60)`` gave 1.0 (true 1.936e7);
* ``x << 0`` with ``b > a``: Kummer's ``exp(x) * M(b - a, b, -x)`` was 0 * inf = NaN (or 0) once
  ``exp(x)`` underflows (x < -745).

References: mpmath with its working precision raised above -log10(a) (mpmath at 50 digits itself
returns 1.0 for a < 1e-50: it rounds a + 1). Tolerances come from measurement (float64):
worst relative error of the values, eager, jit and jit(vmap) alike,
  tiny-a points and sweep (24 random, x up to 700):      1.4e-14 (1.3e-14 at hyp1f1(1e-300, 1e-5, 700));
  x = -800 / -1000 / -1e5 points:                         2.4e-15 / 1.9e-15 / 1.1e-14;
  sweep with |x| <= 3000 (eager):                         4.7e-14;
  sweep with |x| up to 1e5 (jit only: ~|x| loop steps):   4.6e-12 (the rounding of the term
  recurrence grows with the ~|x| terms summed);
  derivatives (jit(grad)) vs mpmath.diff:                 5.3e-12 (d/db at (0.5, 1000, -1000):
  Kummer's d/db = S_a + S_b cancels), others <= 4e-13.
"""
import math

import mpmath as mp
import numpy as np
import pytest

import tracejit
from tracejit.scipy.special import hyp1f1


def _mp_ref(a, b, x):
    """mpmath at a precision that resolves a + 1 for tiny a."""
    dps = 50 + max(0, int(-math.log10(abs(a)))) if a != 0 else 50
    with mp.workdps(dps):
        return float(mp.hyp1f1(mp.mpf(float(a)), mp.mpf(float(b)), mp.mpf(float(x)), maxterms=10 ** 6))


def _refs(a, b, x):
    return np.array([_mp_ref(*v) for v in zip(a, b, x)])


def _rel(got, ref):
    got = np.asarray(got, np.float64)
    return np.abs(got - ref) / np.abs(ref)


_EAGER_JIT = [pytest.param(hyp1f1, id="eager"), pytest.param(tracejit.jit(hyp1f1), id="jit")]

# (a, b, x, mpmath value at 50+ digits)
_TINY_A = [(1e-17, 1.0, 60.0, 19361823.13929277),
           (1e-300, 1e-05, 700.0, 1014159775.4409082),
           (1e-12, 0.01, 30.0, 1028.4056566036963)]
_NEG_X = [(1.0, 2.0, -800.0, 0.00125),
          (0.5, 1000.0, -1000.0, 0.7070404819949422),
          (1.0, 100000.0, -100000.0, 0.499998749996875)]


@pytest.mark.parametrize("f", _EAGER_JIT)
@pytest.mark.parametrize("a,b,x,ref", _TINY_A)
def test_tiny_a_points(f, a, b, x, ref):
    assert float(f(a, b, x)) == pytest.approx(ref, rel=5e-14)


@pytest.mark.parametrize("a,b,x,ref", _NEG_X)
def test_large_negative_x_points(a, b, x, ref):
    if abs(x) <= 1000:      # eager costs ~|x| loop steps of Python dispatch: only the shorter ones
        assert float(hyp1f1(a, b, x)) == pytest.approx(ref, rel=2e-14)
    assert float(tracejit.jit(hyp1f1)(a, b, x)) == pytest.approx(ref, rel=5e-14)


def test_tiny_a_sweep():
    rng = np.random.default_rng(17)
    n = 24
    a = 10 ** rng.uniform(-300, -6, n)
    b = 10 ** rng.uniform(-5, 2, n)
    x = rng.uniform(0, 700, n)
    ref = _refs(a, b, x)
    assert _rel(hyp1f1(a, b, x), ref).max() < 1e-13
    assert _rel(tracejit.jit(hyp1f1)(a, b, x), ref).max() < 1e-13
    # vmap over scalar calls agrees with the batched call
    np.testing.assert_allclose(tracejit.jit(tracejit.vmap(hyp1f1))(a, b, x), ref, rtol=1e-13)


def _neg_x_class(rng, n, xmax):
    a = rng.uniform(-5, 10, n)
    b = np.maximum(a, 0.0) + 10 ** rng.uniform(-1, math.log10(xmax), n)
    x = -10 ** rng.uniform(math.log10(50), math.log10(xmax), n)
    return a, b, x


def test_large_negative_x_sweep_eager():
    a, b, x = _neg_x_class(np.random.default_rng(5), 24, 3000.0)
    assert (x < -745).sum() >= 8            # exp(x) underflows for these
    ref = _refs(a, b, x)
    assert _rel(hyp1f1(a, b, x), ref).max() < 2e-13


def test_large_negative_x_sweep_jit():
    a, b, x = _neg_x_class(np.random.default_rng(6), 24, 1e5)
    ref = _refs(a, b, x)
    assert _rel(tracejit.jit(hyp1f1)(a, b, x), ref).max() < 1e-11


@pytest.mark.parametrize("a,b,x", [(1e-12, 0.01, 30.0), (1.0, 2.0, -800.0), (0.5, 1000.0, -1000.0),
                                   (1.5, 20.0, -900.0)])
@pytest.mark.parametrize("argnum", [0, 1, 2])
def test_derivatives_fixed_paths(a, b, x, argnum):
    args = [mp.mpf(v) for v in (a, b, x)]

    def fn(t):
        v = list(args)
        v[argnum] = t
        return mp.hyp1f1(*v)
    with mp.workdps(60):
        ref = float(mp.diff(fn, args[argnum]))
    got = float(tracejit.jit(tracejit.grad(hyp1f1, argnums=argnum))(a, b, x))
    assert got == pytest.approx(ref, rel=1e-10)
    # and against central differences of the function itself (h relative 1e-6: ~1e-8 agreement)
    h = 1e-6 * abs((a, b, x)[argnum])
    up, dn = [a, b, x], [a, b, x]
    up[argnum] += h
    dn[argnum] -= h
    cd = (float(hyp1f1(*up)) - float(hyp1f1(*dn))) / (2 * h)
    assert got == pytest.approx(cd, rel=1e-6)
