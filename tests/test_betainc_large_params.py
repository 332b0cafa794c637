"""betainc where a parameter is large (tracejit/scipy/_betainc.py), and its a-, b-gradients.

Before the fix, near the mean:
- both large: the continued fraction ran into its step cap from a ~ 1e8 on:
  betainc(1e10, 1e10, 0.5) was 0.50078, betainc(1e15, 1e15, 0.5) was 56.5 (JAX: -5.8 and -175),
  and below the cap it lost up to ~2,000 eps (a = b = 1e4);
- one under 100, the other large: betainc(20, 1e12, x) was off by 1e-5, betainc(20, 1e100, x)
  gave 1.0 for 0.711, betainc(99, 1e30, x) gave -3.5e270, betainc(5, 1e300, x) NaN.

References:
- symmetry, exact: I_x(a, a) + I_{1-x}(a, a) = 1 and I_{1/2}(a, a) = 1/2 (x and 1 - x both exact);
- mpmath: a quadrature in the standardized variable v = (t - x0) / sigma at 40 + log10(a + b)
  digits, with exact inputs, breakpoints on the scale of the density's decay at x;
- SciPy (Boost) for 100 <= a, b <= 1e5, where it agrees with mpmath to a few eps.
- mpmath for one small parameter p and a large q: quadratures of the two tails in s = log t
  (the density's branch point at t = 0 goes to s = -inf).
Measured: within 24 eps of mpmath for a, b up to 1e300 and |v| <= 5; within 61 eps for
p in [1e-3, 100), q in [100, 1e300]. The tests allow 64 and 128 eps.
"""
import math

import numpy as np
import pytest

mpmath = pytest.importorskip("mpmath")
scipy_special = pytest.importorskip("scipy.special")

import tracejit
from tracejit.scipy.special import betainc

EPS64 = 2.0 ** -52


def _fns():
    return [("eager", betainc), ("jit", tracejit.jit(betainc))]


def _smaller_tail_reference(a, b, x):
    """I_x(a, b) by an mpmath quadrature of the smaller tail."""
    with mpmath.workdps(int(40 + math.log10(a + b))):
        A, B, X = mpmath.mpf(a), mpmath.mpf(b), mpmath.mpf(x)
        n = A + B
        x0 = A / n
        sigma = mpmath.sqrt(A * B / n ** 3)
        lbeta = mpmath.loggamma(A) + mpmath.loggamma(B) - mpmath.loggamma(n)
        vx = (X - x0) / sigma

        def density(v):
            t = x0 + sigma * v
            if not 0 < t < 1:
                return mpmath.mpf(0)
            return mpmath.exp((A - 1) * mpmath.log(t) + (B - 1) * mpmath.log1p(-t) - lbeta) * sigma
        side = -1 if vx <= 0 else 1
        rate = max(1, abs(sigma * ((A - 1) / X - (B - 1) / (1 - X))))
        pts = [vx + side * k / rate for k in (0, 0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256)]
        tail = mpmath.quad(density, pts[::-1] if side < 0 else pts)
        return float(tail if side < 0 else 1 - tail)


def _points_near_mean(seed, per_decade_range, spread):
    rng = np.random.default_rng(seed)
    out = []
    for lo, hi in per_decade_range:
        for _ in range(3):
            a = 10 ** rng.uniform(lo, hi)
            b = a * 10 ** rng.uniform(-1, 1) if rng.uniform() < 0.5 else 10 ** rng.uniform(2, hi)
            n = a + b
            x0 = a / n
            sigma = math.sqrt(x0) * math.sqrt(b / n) / math.sqrt(n)
            x = x0 + rng.uniform(-spread, spread) * sigma
            if 0 < x < 1 and sigma > 1e-14 * x0:         # x resolves the standardized offset
                out.append((a, b, x))
    return [np.array(c) for c in zip(*out)]


@pytest.mark.parametrize("mode,fn", _fns())
def test_reported_points_and_symmetry(mode, fn):
    a = np.array([1e4, 1e8, 1e10, 1e15, 1e200, 1e300])
    got = np.asarray(fn(a, a, np.full(a.shape, 0.5)))
    assert np.all(np.abs(got - 0.5) <= 2 * EPS64), (mode, got)
    # I_x(a, a) + I_{1-x}(a, a) = 1 with x, 1 - x exact
    rng = np.random.default_rng(3)
    a = 10 ** rng.uniform(2, 300, 40)
    # offsets on the 2^-53 grid: x and 1 - x are both exact
    x = 0.5 + np.round(rng.uniform(-3, 3, 40) * 0.5 / np.sqrt(2 * a) * 2.0 ** 53) * 2.0 ** -53
    lo, hi = np.asarray(fn(a, a, x)), np.asarray(fn(a, a, 1.0 - x))
    assert np.all(np.abs(lo + hi - 1.0) <= 8 * EPS64), (mode, np.abs(lo + hi - 1.0).max())


def test_against_mpmath_near_the_mean():
    ranges = [(2, 3), (3, 5), (5, 8), (8, 15), (15, 300)]
    a, b, x = _points_near_mean(11, ranges, 5.0)
    ref = np.array([_smaller_tail_reference(*p) for p in zip(a, b, x)])
    for mode, fn in _fns():
        got = np.asarray(fn(a, b, x))
        rel = np.abs(got - ref) / ref
        worst = int(np.argmax(rel))
        assert rel[worst] <= 64 * EPS64, (mode, a[worst], b[worst], x[worst], got[worst], ref[worst])


def test_against_scipy_into_the_tails():
    # SciPy is accurate here (a, b <= 1e5); |v| up to 30: results down to ~1e-200
    a, b, x = _points_near_mean(5, [(2, 3), (3, 4), (4, 5)] * 4, 30.0)
    ref = scipy_special.betainc(a, b, x)
    keep = ref > 1e-290
    got = np.asarray(tracejit.jit(betainc)(a, b, x))
    rel = np.abs(got[keep] - ref[keep]) / ref[keep]
    # far in a tail the result is ill-conditioned in x (d log I / d log x ~ |v| x / sigma): both
    # sides round x's offset from the mean once
    n = a + b
    cond = 1.0 + np.abs((x * n - a) / n) * np.abs((a - 1) / x - (b - 1) / (1 - x))
    assert np.all(rel <= 16 * EPS64 * cond[keep]), np.max(rel / cond[keep]) / EPS64


def test_gradients_against_central_differences():
    a, b, x = _points_near_mean(7, [(2, 3), (3, 4), (4, 5)], 3.0)
    ga = tracejit.jit(tracejit.vmap(tracejit.grad(betainc, argnums=(0, 1))))(a, b, x)
    for k, got in enumerate(ga):
        h = 1e-5 * (a if k == 0 else b)
        da = (h if k == 0 else 0.0)
        db = (h if k == 1 else 0.0)
        fd = (scipy_special.betainc(a + da, b + db, x) - scipy_special.betainc(a - da, b - db, x)) / (2 * h)
        got = np.asarray(got)
        scale = np.abs(fd) + 1e-12
        assert np.all(np.abs(got - fd) <= 1e-6 * scale + 1e-12), (k, got, fd)


def _gamma_like_reference(p, q, z):
    """(I_z(p, q), 1 - I_z(p, q)) by mpmath quadratures in s = log t."""
    with mpmath.workdps(int(40 + math.log10(p + q))):
        P, Q, Z = mpmath.mpf(p), mpmath.mpf(q), mpmath.mpf(z)
        lbeta = mpmath.loggamma(P) + mpmath.loggamma(Q) - mpmath.loggamma(P + Q)

        def density(s):
            return mpmath.exp(P * s + (Q - 1) * mpmath.log1p(-mpmath.exp(s)) - lbeta) if s < 0 else mpmath.mpf(0)
        sz = mpmath.log(Z)
        rate = abs(P - (Q - 1) * Z / (1 - Z)) + mpmath.sqrt(P)
        below = [sz - k / rate for k in (1e5, 1e4, 1000, 300, 100, 30, 10, 3, 1, 0.3, 0.1, 0)]
        above = [u for u in (sz + k / rate for k in (0, 0.1, 0.3, 1, 3, 10, 30, 100, 300)) if u < 0] + [0]
        return float(mpmath.quad(density, [-mpmath.inf] + below)), float(mpmath.quad(density, above))


def _small_large_points(seed, count):
    """(a, b, x): one parameter p in [1e-3, 100), the other q in [100, 1e300], x = z or 1 - z with z
    from 4 standard deviations below the mean of I_z(p, q) to 10 above."""
    rng = np.random.default_rng(seed)
    pts = []
    while len(pts) < count:
        p = 10 ** rng.uniform(-3, 2)
        q = 10 ** rng.uniform(2, 300 if len(pts) % 2 else 8)
        n = p + q
        z0 = p / n
        z = z0 + rng.uniform(-4, 10) * math.sqrt(z0) * math.sqrt(q / n) / math.sqrt(n)
        if not 0 < z < 0.5:
            continue
        if len(pts) % 3:
            pts.append((p, q, z))
        elif 1.0 - z < 1.0:
            pts.append((q, p, 1.0 - z))        # mirrored: the reference takes 1 - x, exact
    return [np.array(c) for c in zip(*pts)]


def test_one_small_one_large_against_mpmath():
    a, b, x = _small_large_points(21, 12)
    ref = np.array([_gamma_like_reference(ai, bi, xi)[0] if ai < bi else _gamma_like_reference(bi, ai, 1.0 - xi)[1]
                    for ai, bi, xi in zip(a, b, x)])
    keep = ref > 1e-290
    for mode, fn in _fns():
        got = np.asarray(fn(a, b, x))
        rel = np.abs(got[keep] - ref[keep]) / ref[keep]
        worst = int(np.argmax(rel))
        assert rel[worst] <= 128 * EPS64, (mode, a[keep][worst], b[keep][worst], x[keep][worst],
                                           got[keep][worst], ref[keep][worst])


def test_gradients_match_the_values_where_a_parameter_is_large():
    # d/da and d/db under jit(vmap(grad)) against 4th-order central differences of the values
    # (which the tests above check against mpmath); both regions, both orientations
    a1, b1, x1 = _small_large_points(5, 30)
    a2, b2, x2 = _points_near_mean(9, [(2, 4), (4, 8)] * 3, 4.0)
    a, b, x = np.concatenate([a1, a2]), np.concatenate([b1, b2]), np.concatenate([x1, x2])
    f = tracejit.jit(betainc)
    value = np.asarray(f(a, b, x))
    # finite differences in a and b: parameters whose steps stay above x's resolution, and values
    # away from 1 (near 1 the differences of the rounded values are noise)
    keep = (a < 1e12) & (b < 1e12) & (value > 1e-4) & (value < 1.0 - 1e-4)
    a, b, x = a[keep], b[keep], x[keep]
    assert a.size >= 25
    grads = tracejit.jit(tracejit.vmap(tracejit.grad(betainc, argnums=(0, 1))))(a, b, x)
    for k, got in enumerate(grads):
        h = 1e-6 * (a if k == 0 else b)
        da, db = (h, 0 * h) if k == 0 else (0 * h, h)

        def diff(s):
            return np.asarray(f(a + s * da, b + s * db, x)) - np.asarray(f(a - s * da, b - s * db, x))
        fd = (8 * diff(0.5) - diff(1.0)) / (6 * h)
        rel = np.abs(np.asarray(got) - fd) / np.abs(fd)
        assert np.median(rel) < 1e-8 and np.all(rel < 1e-5), (k, np.max(rel))
