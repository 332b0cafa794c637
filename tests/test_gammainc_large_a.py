"""gammainc / gammaincc / their a-derivative / random_gamma_grad for large a near x = a (Temme's
uniform expansion, tracejit/scipy/_igamma_temme.py), against mpmath.

Before the fix the power series and continued fraction ran into their 1e5-step cap from
a ~ 1.4e8 on (they need ~sqrt(74 a) steps near x = a): gammainc(1e10, 1e10) was 0.341 (SciPy and
mpmath: 0.5000013), gammainc(1e15, 1e15) 0.0013, gammainc(1e300, 1e300) -inf after warnings, and
the a-derivative was wrong with them; below the cap they lost up to ~40 eps * (1 + y^2).

Reference: mpmath.gammainc's hypergeometric series does not converge for a >~ 1e5 near x = a, so
P and Q are mpmath quadratures (30 digits) of the gamma density in the variable
s = (t - a) / sqrt(a), where the integrand is ~exp(-s^2 / 2) for every a (the offsets of x from a
and of a +- h from a are formed at log10(a) + 50 digits). The smaller of P and Q is integrated
(the other is 1 minus it). The reference is checked against mpmath.gammainc where that converges.
dP/da is a central difference of that reference with h = 1e-9 sqrt(a) (P varies with a on the
scale sqrt(a): truncation ~1e-18, rounding ~1e-20 relative).

Error bounds (float64): with y^2 = a (lambda - 1 - log lambda), lambda = x / a, the smaller of P
and Q is ~exp(-y^2) / ..., and y is formed from x and a with a few roundings (each <= eps / 2),
so an error of a few eps * y^2 is inherent (SciPy shows the same); the rest of the evaluation
adds a few eps. Measured over random a in [10, 1e300], |x - a| < 0.3 a: at most 2.9 eps (1 + y^2)
for P, Q and 2.7 eps (1 + y^2) for dP/da; the tests allow 8 eps (1 + y^2). float32 results are
the float64 ones rounded once: within one float32 ulp of the reference.
"""
import functools
import math
from fractions import Fraction

import numpy as np
import pytest

mpmath = pytest.importorskip("mpmath")

import tracejit
import tracejit.lax as tlax
from tracejit.scipy.special import gammainc, gammaincc

mp = mpmath.mp
mpf = mpmath.mpf
EPS64 = 2.0 ** -52
EPS32 = 2.0 ** -23

A_VALUES = [1e2, 1e3, 1e5, 1e10, 1e15, 1e100, 1e300]
A_VALUES_F32 = [1e2, 1e3, 1e5, 1e10, 1e15, 1e30]
# x = a (1 + t); t = z sqrt(2 / a) puts y ~ |z| (the size of -log of the smaller of P and Q).
Z_VALUES = [-8.0, -3.0, -1.0, -0.3, -1e-3, 0.0, 1e-3, 0.3, 1.0, 3.0, 8.0]
# fixed small relative offsets as well (for large a these give exactly 0 / 1)
T_VALUES = [-0.29, -0.1, -0.01, -1e-6, 1e-6, 0.01, 0.1, 0.29]


def _points(a):
    ts = [z * math.sqrt(2.0 / a) for z in Z_VALUES] + [t for t in T_VALUES]
    ts = sorted({t for t in ts if abs(t) < 0.3})
    return np.array([a * (1.0 + t) for t in ts])


def _l1pmx(v):
    """log1p(v) - v for an mpf v without cancellation."""
    if abs(v) >= mpf("1e-3"):
        return mpmath.log1p(v) - v
    s, p, k = mpf(0), v * v, 2
    while True:
        term = p / k if k % 2 else -p / k
        s += term
        if abs(term) <= abs(s) * mpf(10) ** (-mp.dps - 5):
            return s
        p *= v
        k += 1


def _ref_pq_mp(a, x, dps=30):
    """(P, Q) as mpf for mpf a, x."""
    with mp.workdps(int(max(0, mpmath.log10(a))) + dps + 20):
        ra = mpmath.sqrt(a)
        s0 = (x - a) / ra
        lc = a * mpmath.log(a) - a - mpmath.loggamma(a) - mpmath.log(ra)
    with mp.workdps(dps + 10):
        s0, lc, ra = +s0, +lc, +ra
        l0 = a * _l1pmx(s0 / ra) + lc          # the integrand is scaled by its value at s0

        def f(s):
            v = s / ra
            if v <= -1:
                return mpf(0)
            return mpmath.exp(a * _l1pmx(v) + lc - l0) / (1 + v)
        w = 1 / max(mpf(1), abs(s0))            # the integrand's decay scale from s0
        ds = sorted(set([d * w for d in (0.25, 0.5, 1, 2, 4, 8, 16, 32, 64)] + [5, 10, 20, 40]))
        if s0 >= 0:
            q = mpmath.quad(f, [s0] + [s0 + d for d in ds] + [mpmath.inf]) * mpmath.exp(l0)
            return 1 - q, q
        pts = [-ra] + sorted(s0 - d for d in ds if s0 - d > -ra) + [s0]
        p = mpmath.quad(f, pts) * mpmath.exp(l0)
        return p, 1 - p


@functools.lru_cache(maxsize=None)
def _ref_pq(a, x):
    return _ref_pq_mp(mpf(a), mpf(x))


@functools.lru_cache(maxsize=None)
def _ref_dpda(a, x):
    a_, x_ = mpf(a), mpf(x)
    with mp.workdps(int(max(0, math.log10(a))) + 50):
        h = mpmath.sqrt(a_) * mpf("1e-9")
        ap, am = a_ + h, a_ - h
    pp, qp = _ref_pq_mp(ap, x_)
    pm, qm = _ref_pq_mp(am, x_)
    with mp.workdps(40):
        # the smaller of P and Q carries the digits; dQ/da = -dP/da
        return (pp - pm) / (2 * h) if pp < qp else -(qp - qm) / (2 * h)


def _y2(a, x):
    lam = x / a
    return a * ((lam - 1.0) - math.log1p(lam - 1.0))


def _check_rel(got, ref, bound, what):
    got = float(got)
    ref = float(ref)
    if ref == 0.0 or abs(ref) < 1e-300:            # underflowed reference: must underflow too
        assert abs(got) <= 1e-290, (what, got, ref)
        return
    err = abs(got - ref) / abs(ref)
    assert err <= bound, (what, got, ref, err, bound)


def _check_reference():
    """The quadrature reference against mpmath.gammainc where its series converges."""
    for a in (100.0, 1000.0):
        for x in _points(a)[::3]:
            with mp.workdps(40):
                p_mp = mpmath.gammainc(mpf(a), 0, mpf(x), regularized=True)
                q_mp = mpmath.gammainc(mpf(a), mpf(x), mpmath.inf, regularized=True)
            p, q = _ref_pq(a, x)
            assert abs(p - p_mp) <= mpf("1e-25") * p_mp and abs(q - q_mp) <= mpf("1e-25") * q_mp


def _run(mode, fn, a, x):
    if mode == "eager":
        return np.asarray(fn(a, x))
    if mode == "jit":
        return np.asarray(tracejit.jit(fn)(a, x))
    return np.asarray(tracejit.vmap(fn)(a, x))


def _batch(a_values, points, dtype=np.float64):
    """All (a, x) pairs in one batch (one compilation under jit)."""
    av = np.concatenate([np.full(len(points(a)), a) for a in a_values]).astype(dtype)
    xs = np.concatenate([points(a) for a in a_values]).astype(dtype)
    return av, xs


@pytest.mark.parametrize("mode", ["eager", "jit", "vmap"])
def test_p_q_float64_vs_mpmath(mode):
    if mode == "eager":
        _check_reference()
    av, xs = _batch(A_VALUES, _points)
    p = _run(mode, gammainc, av, xs)
    q = _run(mode, gammaincc, av, xs)
    assert p.dtype == np.float64 and q.dtype == np.float64
    for i, (a, x) in enumerate(zip(av, xs)):
        P, Q = _ref_pq(a, x)
        bound = 8 * EPS64 * (1.0 + _y2(a, x))
        _check_rel(p[i], P, bound, ("P", mode, a, x))
        _check_rel(q[i], Q, bound, ("Q", mode, a, x))
        assert abs(p[i] + q[i] - 1.0) <= 2 * EPS64, (mode, a, x, p[i], q[i])


def test_x_equal_a_float64():
    """x = a exactly: P = 1/2 + 1/(3 sqrt(2 pi a)) + O(a^-3/2) (DLMF 8.12.4 with eta = 0)."""
    a = np.array(A_VALUES)
    for p, q in ((gammainc(a, a), gammaincc(a, a)),
                 (tracejit.jit(gammainc)(a, a), tracejit.jit(gammaincc)(a, a))):
        p, q = np.asarray(p), np.asarray(q)
        for i, ai in enumerate(a):
            P, Q = _ref_pq(ai, ai)
            _check_rel(p[i], P, 8 * EPS64, ("P", ai))
            _check_rel(q[i], Q, 8 * EPS64, ("Q", ai))
        lead = 0.5 + 1.0 / (3.0 * np.sqrt(2.0 * np.pi * a))
        np.testing.assert_allclose(p, lead, rtol=1e-5)


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_p_q_float32_vs_mpmath(mode):
    av, xs = _batch(A_VALUES_F32, _points, np.float32)
    p = _run(mode, gammainc, av, xs)
    q = _run(mode, gammaincc, av, xs)
    assert p.dtype == np.float32 and q.dtype == np.float32
    for i in range(len(xs)):
        ai, xi = float(av[i]), float(xs[i])           # the float32 values, exactly
        P, Q = _ref_pq(ai, xi)
        for got, ref, name in ((p[i], P, "P"), (q[i], Q, "Q")):
            ref = float(ref)
            if ref < 1e-37:                            # below float32's normal range
                assert abs(float(got) - ref) <= 1e-44, (name, mode, ai, xi, got, ref)
            else:
                assert abs(float(got) - ref) <= EPS32 * ref, (name, mode, ai, xi, got, ref)
        assert abs(float(p[i]) + float(q[i]) - 1.0) <= 2 * EPS32


def _grad_points(a):
    ts = [z * math.sqrt(2.0 / a) for z in (-4.0, -1.0, 0.0, 0.3, 4.0)]
    return np.array([a * (1.0 + t) for t in ts if abs(t) < 0.3])


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_dp_da_vs_mpmath_central_differences(mode):
    dp = tracejit.vmap(tracejit.grad(gammainc, argnums=0))
    dq = tracejit.vmap(tracejit.grad(gammaincc, argnums=0))
    if mode == "jit":
        dp, dq = tracejit.jit(dp), tracejit.jit(dq)
    av, xs = _batch(A_VALUES, _grad_points)
    gp, gq = np.asarray(dp(av, xs)), np.asarray(dq(av, xs))
    for i, (a, x) in enumerate(zip(av, xs)):
        ref = _ref_dpda(a, x)
        bound = 8 * EPS64 * (1.0 + _y2(a, x))
        _check_rel(gp[i], ref, bound, ("dP/da", mode, a, x))
        _check_rel(gq[i], -ref, bound, ("dQ/da", mode, a, x))
    # scalar grad, and float32 (computed in float64, rounded once)
    g = tracejit.grad(gammainc, argnums=0)
    if mode == "jit":
        g = tracejit.jit(g)
    _check_rel(g(1e10, 1e10 + 1e5), _ref_dpda(1e10, 1e10 + 1e5), 8 * EPS64 * 2, "scalar")
    av, xs = _batch([1e3, 1e10, 1e30], _grad_points, np.float32)
    g32 = np.asarray(dp(av, xs))
    assert g32.dtype == np.float32
    for i in range(len(xs)):
        ref = float(_ref_dpda(float(av[i]), float(xs[i])))
        assert abs(float(g32[i]) - ref) <= 2 * EPS32 * abs(ref), (av[i], xs[i], g32[i], ref)


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_random_gamma_grad_large_a(mode):
    """d sample / d alpha = -(dP/da) / (dP/dx) = -(dP/da) x Gamma(a) / (x^a e^-x)."""
    fn = tlax.random_gamma_grad if mode == "eager" else tracejit.jit(tlax.random_gamma_grad)
    av, xs = _batch([1e5, 1e10, 1e15, 1e100, 1e300], _grad_points)
    got = np.asarray(fn(av, xs))
    for i, (a, x) in enumerate(zip(av, xs)):
        with mp.workdps(int(math.log10(a)) + 50):
            pref = mpmath.exp(mpf(a) * mpmath.log(mpf(x)) - mpf(x) - mpmath.loggamma(mpf(a)))
            ref = -mpf(x) * _ref_dpda(a, x) / pref
        _check_rel(got[i], ref, 8 * EPS64 * (1.0 + _y2(a, x)), ("random_gamma_grad", a, x))
    # the sample's derivative tends to x / a (~1 near x = a) as a grows
    assert abs(float(fn(1e300, 1e300)) - 1.0) < 1e-12


def test_large_a_takes_few_loop_steps(monkeypatch):
    """Near x = a the series / continued fraction are no longer iterated (they needed ~sqrt(74 a)
    steps, up to the 1e5 cap); parked lanes converge at once, also for a ~ 1e300 (the parked
    continued fraction overflowed there and ran 1e5 steps)."""
    import tracejit.scipy._incomplete as inc
    counts = []

    def counting(cond, body, init):
        c, n = init, 0
        while bool(np.asarray(cond(c))):
            c, n = body(c), n + 1
        counts.append(n)
        return c
    monkeypatch.setattr(inc, "while_loop", counting)
    for a in (1e5, 1e10, 1e300):
        xs = _points(a)
        gammainc(np.full_like(xs, a), xs)
        gammaincc(np.full_like(xs, a), xs)
    assert counts and max(counts) <= 100, counts
    counts.clear()
    gammainc(np.array([1e300, 1e300]), np.array([5e299, 2e300]))   # the loops' own regions
    assert counts and max(counts) <= 100, counts


def test_temme_coefficients_exact():
    """The generated Taylor coefficients against values known in closed form (DLMF 8.12.8 and
    Temme's tables): c_0 = -1/3 + eta/12 - 2 eta^2/135 + eta^3/864 + ..., c_1(0) = -1/540,
    c_2(0) = 25/6048, c_3(0) = 101/155520, c_1'(0) = -1/288."""
    from tracejit.scipy._igamma_temme import temme_coefficients, temme_table
    d = temme_coefficients(4, 6)
    assert d[0][:4] == [Fraction(-1, 3), Fraction(1, 12), Fraction(-2, 135), Fraction(1, 864)]
    assert d[1][0] == Fraction(-1, 540) and d[1][1] == Fraction(-1, 288)
    assert d[2][0] == Fraction(25, 6048) and d[3][0] == Fraction(101, 155520)
    D, Dp = temme_table()
    full = temme_coefficients()
    assert all(D[k, n] == float(full[k][n]) for k in range(D.shape[0]) for n in range(D.shape[1]))
    np.testing.assert_array_equal(Dp[:, 0], D[:, 1])
