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


# ---------------------------------------------------------------------------------------------------
# Cancelling series: x < 0 with a > b (Kummer's transformed series alternates while k < a - b) and its
# mirror image x > 0 with a < 0. The old code summed the series anyway: hyp1f1(100, 1, -10) gave 560
# (true 4.76e-4), hyp1f1(300.3, 1, -100) -5.4e68 (true 1.9e-24). Now Kummer's equation is integrated by
# Taylor steps there. Measured worst relative errors (float64, jit; mpmath at 50 digits):
#   the points below:                                   3e-14 (hyp1f1(300.3, 1, -1000));
#   random a > b, x in [-1000, -0.1], b in [0.01, 100]:  see _CANCEL_TOL;
#   random a in [-1000, -1], x in [0.1, 1000]:           see _CANCEL_TOL.
# Both are below eps times the condition number of the function (|a dM/da / M| etc., up to ~1e3 here).

_CANCEL_POINTS = [(100.0, 1.0, -10.0), (-100.0, 1.0, 10.0), (30.2, 10.0, -5.0), (-50.5, 1.0, 30.0),
                  (300.3, 1.0, -100.0), (1000.7, 3.0, -50.0), (1000.0, 500.0, -43.0), (200.1, 0.01, -50.0),
                  (-300.7, 3.2, 500.0), (300.3, 1.0, -1000.0)]


def _ref50(a, b, x):
    with mp.workdps(50):
        return float(mp.hyp1f1(mp.mpf(float(a)), mp.mpf(float(b)), mp.mpf(float(x)), maxterms=10 ** 6))


def test_cancelling_points_jit():
    a, b, x = (np.array(v) for v in zip(*_CANCEL_POINTS))
    ref = np.array([_ref50(*p) for p in _CANCEL_POINTS])
    err = _rel(tracejit.jit(hyp1f1)(a, b, x), ref)
    assert err.max() < 3e-13, err


def test_cancelling_points_eager():
    pts = _CANCEL_POINTS[:4]                # eager costs Python dispatch per loop step: the short ones
    a, b, x = (np.array(v) for v in zip(*pts))
    ref = np.array([_ref50(*p) for p in pts])
    assert _rel(hyp1f1(a, b, x), ref).max() < 1e-13
    assert float(hyp1f1(100.0, 1.0, -10.0)) == pytest.approx(_ref50(100.0, 1.0, -10.0), rel=1e-13)


_CANCEL_TOL = 5e-12     # measured over 300 random points: 2.5e-13 (a > b), 1.5e-12 (a < 0, near a zero)


def _cancel_class(rng, n):
    b = 10 ** rng.uniform(-2, 2, n)
    a = b + 10 ** rng.uniform(0, 3, n)
    x = -10 ** rng.uniform(-1, 3, n)
    a2 = -10 ** rng.uniform(0, 3, n)
    b2 = 10 ** rng.uniform(-2, 2, n)
    x2 = 10 ** rng.uniform(-1, 3, n)
    return np.concatenate([a, a2]), np.concatenate([b, b2]), np.concatenate([x, x2])


def test_cancelling_sweep_jit_and_vmap():
    a, b, x = _cancel_class(np.random.default_rng(2027), 12)
    ref = np.array([_ref50(*p) for p in zip(a, b, x)])
    keep = (np.abs(ref) > 1e-300) & (np.abs(ref) < 1e300)
    got = np.asarray(tracejit.jit(hyp1f1)(a, b, x))
    assert _rel(got, ref)[keep].max() < _CANCEL_TOL
    np.testing.assert_array_equal(np.asarray(tracejit.jit(tracejit.vmap(hyp1f1))(a, b, x)), got)


def test_cancelling_float32():
    pts = _CANCEL_POINTS[:6]
    a, b, x = (np.array(v, np.float32) for v in zip(*pts))
    ref = np.array([_ref50(*p) for p in zip(a, b, x)])
    got = tracejit.jit(hyp1f1)(a, b, x)
    assert np.asarray(got).dtype == np.float32
    assert _rel(got, ref).max() < 1e-5


@pytest.mark.parametrize("a,b,x", [(100.0, 1.0, -10.0), (-50.5, 1.0, 30.0)])
def test_cancelling_grad_x(a, b, x):
    # d/dx M(a, b, x) = a/b M(a + 1, b + 1, x): through the same integration
    with mp.workdps(50):
        ref = float(mp.diff(lambda t: mp.hyp1f1(a, b, t), mp.mpf(x)))
    got = float(tracejit.jit(tracejit.grad(hyp1f1, argnums=2))(a, b, x))
    assert got == pytest.approx(ref, rel=1e-12)


def test_cancelling_negative_b_is_nan():
    # b < 0 with the series cancelling by 2^26 or more: no method here is accurate, NaN rather than the
    # old wrong number (-4.65e17; the true value is -1.22e8)
    got = float(tracejit.jit(hyp1f1)(44.71557892442384, -31.570706909640524, -72.56200888854437))
    assert np.isnan(got)


def test_infinite_x_limits():
    """x = +-inf ran the series at x = 0 and gave 1.0 (SciPy: inf and 0 for a, b > 0). The limits
    from the asymptotic forms: a, b > 0: inf at +inf (Gamma(b)/Gamma(a) e^x x^(a-b)), 0 at -inf
    (Gamma(b)/Gamma(b-a) |x|^-a); a = 0: 1; NaN where the sign is not settled here."""
    rng = np.random.default_rng(5)
    a = np.concatenate([10.0 ** rng.uniform(-3, 2, 8), [0.0, 0.0, -2.0, -2.5]])
    b = np.concatenate([10.0 ** rng.uniform(-3, 2, 8), [1.0, 3.5, 1.0, 1.0]])
    for x, pos in ((np.inf, np.inf), (-np.inf, 0.0)):
        want = np.where(a > 0, pos, np.where(a == 0, 1.0, np.nan))
        for fn in (hyp1f1, tracejit.jit(hyp1f1)):
            np.testing.assert_array_equal(np.asarray(fn(a, b, np.full_like(a, x))), want)
    # differentiating at an infinite x gives NaN, not the x = 0 derivative
    assert np.isnan(float(tracejit.grad(hyp1f1, argnums=0)(1.0, 2.0, -np.inf)))


def test_jvp_in_x_alone_where_parameter_derivatives_are_nan():
    """d/da and d/db are NaN where their series cancel by 2^26 (hyp1f1(100, 1, -10)); a jvp in x
    alone multiplied them by zero tangents and came out NaN. The rule now builds them only for
    differentiated parameters (symbolic zeros). d/dx = a/b hyp1f1(a + 1, b + 1, x)."""
    want = float(100 * mp.hyp1f1(101, 2, -10))
    f = lambda x: hyp1f1(100.0, 1.0, x)  # noqa: E731
    _, t = tracejit.jvp(f, (-10.0,), (1.0,))
    _, tj = tracejit.jit(lambda x, v: tracejit.jvp(f, (x,), (v,)))(-10.0, 1.0)
    for got in (t, tj):
        assert abs(float(got) - want) <= 1e-12 * abs(want), (float(got), want)
