"""random_gamma_grad / igamma_grad_a where the gamma prefix x^a e^-x / Gamma(a) underflows, and at
large a away from x = a.

Two bugs, one class (the a-derivative g = (dP/da) / prefix, which random_gamma_grad returns as -x g):

- In the continued-fraction region, lanes whose prefix underflowed (log prefix < -760) were parked
  at a dummy point, so g came from the wrong (a, x): random_gamma_grad(1, 800) was 57.03 (exact
  7.2630758339611345; JAX 7.263075832), random_gamma_grad(1, 1e300) 6.8e300 (exact 691.35).
- log(x) - digamma(a) was formed from two values of size ~log a: at a ~ 1e300, x = 1.4 a it lost
  ~1000 eps.

References:
- x > a: dx/da = -(dP/da) / (dP/dx) = integral_0^inf (1 + u/x)^(a-1) e^-u (log(x + u) - digamma(a)) du
  (substitute t = x + u in d/da of Q = Gamma(a, x) / Gamma(a)), by mpmath quadrature at 30 digits. A
  smooth, exponentially decaying integrand: no cancellation anywhere.
- a >= 1e200, x = t a with |t - 1| >= 0.05: along the level curve a (t - 1 - log t) = const of P,
  dx/da = t - (t - 1 - log t) / (1 - 1/t); the corrections are O(1 / (a (t - 1 - log t))) < 1e-196.

Measured (300 random points of each kind): at most 4.8 eps relative; the tests allow 16 eps.
"""
import numpy as np
import pytest

mpmath = pytest.importorskip("mpmath")

import tracejit
import tracejit.lax as tlax

EPS64 = 2.0 ** -52


def _tail_reference(a, x):
    """-(dP/da) / (dP/dx) for x > a, by quadrature."""
    with mpmath.workdps(30):
        a = mpmath.mpf(a)
        x = mpmath.mpf(x)
        c = mpmath.log(x) - mpmath.digamma(a)

        def integrand(u):
            return mpmath.exp((a - 1) * mpmath.log1p(u / x) - u) * (c + mpmath.log1p(u / x))
        return mpmath.quad(integrand, [0, 1, 10, 100, mpmath.inf])


def _level_curve_slope(t):
    """dx/da of a gamma quantile x = t a for a -> inf at fixed t != 1."""
    return t - (t - 1.0 - np.log(t)) / (1.0 - 1.0 / t)


def _fns():
    return [("eager", tlax.random_gamma_grad), ("jit", tracejit.jit(tlax.random_gamma_grad))]


def _underflow_points(seed, n):
    """Points on the continued-fraction side where the prefix underflows, or nearly."""
    rng = np.random.default_rng(seed)
    a = np.empty(n)
    x = np.empty(n)
    for i in range(n):
        kind = i % 3
        if kind == 0:              # small a, x from the underflow edge to the float max
            a[i] = 10 ** rng.uniform(-6, 3)
            x[i] = 10 ** rng.uniform(np.log10(1.3 * a[i] + 800.0), 308.2)
        elif kind == 1:            # large a, x > 1.3 a (outside Temme's region)
            a[i] = 10 ** rng.uniform(3, 307.5)
            x[i] = min(a[i] * rng.uniform(1.31, 10.0), 1.7e308)
        else:                      # across the edge where the prefix underflows (x ~ 745)
            a[i] = 10 ** rng.uniform(-6, 2.5)
            x[i] = rng.uniform(600.0, 900.0)
    return a, x


@pytest.mark.parametrize("mode,fn", _fns())
def test_reported_point(mode, fn):
    # the example: random_gamma_grad(1, 800) was 57.03166296899587
    got = float(fn(np.float64(1.0), np.float64(800.0)))
    assert abs(got - 7.2630758339611345) <= 4 * EPS64 * 7.27, (mode, got)


def test_random_gamma_grad_where_prefix_underflows():
    a, x = _underflow_points(0, 36)
    ref = np.array([float(_tail_reference(ai, xi)) for ai, xi in zip(a, x)])
    for mode, fn in _fns():
        got = np.asarray(fn(a, x))
        rel = np.abs(got - ref) / np.abs(ref)
        worst = int(np.argmax(rel))
        assert rel[worst] <= 16 * EPS64, (mode, a[worst], x[worst], got[worst], ref[worst])


@pytest.mark.parametrize("mode,fn", _fns())
def test_random_gamma_grad_huge_a_both_sides(mode, fn):
    # the series side (t < 1) and the fraction side (t > 1), outside Temme's region |t - 1| < 0.3,
    # and inside it
    rng = np.random.default_rng(7)
    t = np.concatenate([rng.uniform(0.01, 0.69, 20), rng.uniform(1.31, 20.0, 20),
                        rng.uniform(0.9, 0.95, 5), rng.uniform(1.05, 1.25, 5)])
    a = 10 ** rng.uniform(200, 306, t.size)
    x = t * a
    got = np.asarray(fn(a, x))
    ref = _level_curve_slope(x / a)
    rel = np.abs(got - ref) / np.abs(ref)
    worst = int(np.argmax(rel))
    assert rel[worst] <= 16 * EPS64, (a[worst], x[worst], got[worst], ref[worst])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_igamma_grad_a_stays_zero_where_prefix_underflows(dtype):
    # dP/da = prefix * g really is 0 (or a subnormal) there: the fraction now runs on those lanes
    a = np.array([1.0, 0.5, 20.0, 3.0], dtype)
    x = np.array([800.0, 1e30, 1e4, 3e38 if dtype == np.float32 else 1.7e308], dtype)
    for fn in (tlax.igamma_grad_a, tracejit.jit(tlax.igamma_grad_a)):
        got = np.asarray(fn(a, x))
        assert got.dtype == dtype
        assert np.all(np.abs(got.astype(np.float64)) < 1e-300), got        # finite, (near) 0


def _asymptotic_reference(a, x):
    """-(dP/da) / (dP/dx) for x >= 1e8 from Q = density * R, R = sum_k (a-1)(a-2)...(a-k) / x^k
    (asymptotic; for a <= 1e3, x >= 1e8 eight terms are exact to far below float64):
    the ratio is R (log x - digamma(a)) + dR/da."""
    with mpmath.workdps(40):
        a, x = mpmath.mpf(a), mpmath.mpf(x)

        def ratio(aa):
            total, term = mpmath.mpf(0), mpmath.mpf(1)
            for k in range(8):
                total += term
                term *= (aa - 1 - k) / x
            return total
        return float(ratio(a) * (mpmath.log(x) - mpmath.digamma(a)) + mpmath.diff(ratio, a))


@pytest.mark.parametrize("mode", ["jit", "eager"])
def test_random_gamma_grad_huge_x(mode):
    """For x >~ 1e16 the continued fraction's a-derivative, a difference of two products, wandered
    by ~1e-15 from step to step and never met its convergence test: every such lane ran the 100,000
    step cap (gammainc(0.02, 1.8e25) took 25 s eagerly) and random_gamma_grad ended up to 8.8 eps
    (of 2^-53) off. It now stops once the fraction's tail is below rounding. On these 400 points:
    at most 6.7 eps before, 4.5 now."""
    rng = np.random.default_rng(7)
    a = np.exp(rng.uniform(np.log(1e-3), np.log(1e3), 400))
    x = np.exp(rng.uniform(np.log(1e9), np.log(1e149), 400))
    if mode == "eager":
        a, x = a[:8], x[:8]
    fn = tlax.random_gamma_grad if mode == "eager" else tracejit.jit(tlax.random_gamma_grad)
    got = np.asarray(fn(a, x))
    want = np.array([_asymptotic_reference(ai, xi) for ai, xi in zip(a, x)])
    err = np.abs(got - want) / np.abs(want) / 2.0 ** -53
    assert err.max() <= 6.0, (err.max(), a[err.argmax()], x[err.argmax()])
