"""Accuracy regressions from the second audit (wrong results against mpmath): kl_div/rel_entr near
p = q, logit near 1/2, logsumexp with b = 0 at a = inf, cauchy.ppf/isf/logpdf tails, gennorm.cdf's
lower tail, vonmises/wrapcauchy concentrated densities, gumbel log-tails, expon.logcdf, betabinom
for large n. Each reference is computed here with mpmath at 50 digits."""
import math

import mpmath as mp
import numpy as np
import pytest

import tracejit
import tracejit.scipy.special as sp
from tracejit.scipy import stats

EPS = np.finfo(np.float64).eps


def _ref(fn, *cols):
    out = []
    with mp.workdps(50):
        for args in zip(*cols):
            out.append(float(fn(*[mp.mpf(float(a)) for a in args])))
    return np.array(out)


def _check(ours_fn, ref, cols, rtol, atol=0.0):
    args = [np.asarray(c, dtype=np.float64) for c in cols]
    for got in (np.asarray(ours_fn(*args)), np.asarray(tracejit.jit(ours_fn)(*args))):
        err = np.abs(got - ref)
        bad = ~(err <= rtol * np.abs(ref) + atol)
        assert not bad.any(), list(zip(*[np.asarray(c)[bad] for c in cols], got[bad], ref[bad]))


def test_kl_div_rel_entr_near_equal():
    rng = np.random.default_rng(0)
    q = 10.0 ** rng.uniform(-300, 300, 40)
    p = q * (1.0 + rng.uniform(-1e-6, 1e-6, 40))
    # ratios up to 1/2 away from 1 (kl_div cancelled by up to ~3e-10 relative at |p/q - 1| = 1e-3)
    q2 = 10.0 ** rng.uniform(-300, 300, 40)
    p2 = q2 * (1.0 + rng.uniform(-0.49, 0.49, 40) * 10.0 ** rng.uniform(-4, 0, 40))
    p = np.concatenate([p, p2, [1e-20, 2.0, 1.0]])
    q = np.concatenate([q, q2, [1e300, 1.0, 0.999]])   # p / q subnormal; an ordinary lane; SciPy's miss
    _check(sp.kl_div, _ref(lambda a, b: a * mp.log(a / b) - a + b, p, q), (p, q), 64 * EPS)
    _check(sp.rel_entr, _ref(lambda a, b: a * mp.log(a / b), p, q), (p, q), 64 * EPS)


def test_logit_near_half():
    rng = np.random.default_rng(1)
    p = np.concatenate([0.5 + rng.uniform(-1e-6, 1e-6, 30), rng.uniform(0.3, 0.7, 10)])
    _check(sp.logit, _ref(lambda v: mp.log(v / (1 - v)), p), (p,), 8 * EPS)


def test_logsumexp_zero_weight_on_inf():
    got = float(sp.logsumexp(np.array([np.inf, 1.0]), b=np.array([0.0, 2.0])))
    assert abs(got - (1.0 + math.log(2.0))) <= 4 * EPS * 2


def test_cauchy_ppf_isf_logpdf_tails():
    rng = np.random.default_rng(2)
    q = np.concatenate([10.0 ** rng.uniform(-300, -1, 30), 1.0 - 10.0 ** rng.uniform(-16, -1, 20),
                        rng.uniform(0.0, 1.0, 20)])
    ref = _ref(lambda v: -mp.cot(mp.pi * v), q)
    _check(stats.cauchy.ppf, ref, (q,), 16 * EPS)
    _check(stats.cauchy.isf, -ref, (q,), 16 * EPS)
    assert np.isnan(np.asarray(stats.cauchy.ppf(np.array([-0.1, 1.1])))).all()
    x = np.concatenate([10.0 ** rng.uniform(150, 308, 20), -10.0 ** rng.uniform(150, 308, 20), [3.0, -0.5]])
    _check(stats.cauchy.logpdf, _ref(lambda v: -mp.log(mp.pi) - mp.log1p(v * v), x), (x,), 8 * EPS)


def test_gennorm_cdf_tails():
    xs, bs = np.meshgrid([-30.0, -10.0, -3.2, -3.1, -2.5, -1.5, -1e-10, 1e-10, 0.7], [0.5, 2.0, 3.5, 8.0])
    # (gammainc(0.02, 1.8e25) takes 25 s eagerly: beta = 50 only where |x|^50 stays moderate)
    xs = np.concatenate([xs.ravel(), [-1e-10, 1e-10, -0.9, 0.9]])
    bs = np.concatenate([bs.ravel(), [50.0] * 4])

    def ref(x, b):
        tail = mp.gammainc(1 / b, abs(x) ** b, mp.inf, regularized=True) / 2
        return tail if x < 0 else 1 - tail

    _check(stats.gennorm.cdf, _ref(ref, xs, bs), (xs, bs), 1e-12)


def test_vonmises_wrapcauchy_concentrated():
    x, k = np.meshgrid([0.0, 1e-8, 1e-4, -1e-5, 0.3, 3.0], [0.5, 1e4, 1e8, 1e12])
    x, k = x.ravel(), k.ravel()
    ref = _ref(lambda v, kap: kap * (mp.cos(v) - 1) - mp.log(2 * mp.pi * mp.besseli(0, kap) * mp.exp(-kap)), x, k)
    _check(stats.vonmises.logpdf, ref, (x, k), 64 * EPS, 64 * EPS)
    x, c = np.meshgrid([0.0, 1e-8, 1e-4, 0.3, 3.0, 2 * np.pi - 1e-6], [0.1, 0.5, 0.999, 1 - 1e-6, 1 - 1e-10])
    x, c = x.ravel(), c.ravel()
    ref = _ref(lambda v, cc: mp.log((1 - cc * cc) / (2 * mp.pi * (1 + cc * cc - 2 * cc * mp.cos(v)))), x, c)
    _check(stats.wrapcauchy.logpdf, ref, (x, c), 64 * EPS, 64 * EPS)


def test_gumbel_and_expon_log_tails():
    z = np.array([-4.5, -3.8, -3.2, -2.6, -1.0, 0.0, 2.0, 40.0, 750.0])

    def log_upper(v):       # log(1 - exp(-exp(-v))) (the complement exp(-exp(4.5)) is ~1e-39)
        with mp.workdps(120):
            return mp.log(-mp.expm1(-mp.exp(-v)))

    ref = _ref(log_upper, z)
    _check(stats.gumbel_r.logsf, ref, (z,), 4096 * EPS)
    _check(stats.gumbel_l.logcdf, ref, (-z,), 4096 * EPS)
    y = np.array([1e-20, 0.5, 0.7, 1.0, 9.0, 40.0, 700.0])

    def log_cdf(v):         # log(1 - exp(-v)): e^-700 needs ~330 digits beside 1
        with mp.workdps(400):
            return mp.log(-mp.expm1(-v))

    _check(stats.expon.logcdf, _ref(log_cdf, y), (y,), 8 * EPS)


def test_betabinom_large_n():
    cases = [(1.0, 1e12, 1.0, 1.0), (5e11, 1e12, 1.0, 1.0), (1.0, 1e8, 0.5, 2.0), (5e7, 1e8, 10.0, 3.0),
             (0.0, 1.0, 1e4, 1e4), (1.0, 10.0, 1e4, 1e4), (3.0, 1e4, 1.0, 1.0), (2.0, 7.0, 1.5, 2.5)]
    k, n, a, b = (np.array(c) for c in zip(*cases))

    def ref(kk, nn, aa, bb):
        return mp.log(mp.binomial(nn, kk)) + mp.log(mp.beta(kk + aa, nn - kk + bb)) - mp.log(mp.beta(aa, bb))

    _check(stats.betabinom.logpmf, _ref(ref, k, n, a, b), (k, n, a, b), 0.0, 256 * EPS * 30)


def test_betabinom_parameters_much_larger_than_counts():
    """k <= a / 100, n - k <= b / 100: C(n, k) p^k q^(n-k) (p = a / (a + b)) cancelled like binom's
    (1.4e-8 absolute at n = 1.7e8, 128,000 eps) until it took binom's saddle-point form; with a or b
    below 10 the remainder terms R(b, m) - R(a + b, n) cancelled instead (betabinom.logpmf(0, 1e8,
    0.3, 1e12): 4.3e-12 absolute where the beta-function form is exact to 1e-17)."""
    rng = np.random.default_rng(11)
    n = np.floor(10.0 ** rng.uniform(1, 9, 150))
    k = np.floor(rng.uniform(0, 1, 150) * (n + 1))
    a = (k + 1) * 10.0 ** rng.uniform(2, 6, 150)
    b = (n - k + 1) * 10.0 ** rng.uniform(2, 6, 150)
    k, n, a, b = (np.concatenate([v, [w]]) for v, w in zip((k, n, a, b), (0.0, 1e8, 0.3, 1e12)))

    def ref(kk, nn, aa, bb):
        return (mp.loggamma(nn + 1) - mp.loggamma(kk + 1) - mp.loggamma(nn - kk + 1) + mp.loggamma(kk + aa)
                + mp.loggamma(nn - kk + bb) - mp.loggamma(nn + aa + bb) - mp.loggamma(aa) - mp.loggamma(bb)
                + mp.loggamma(aa + bb))
    want = _ref(ref, k, n, a, b)
    # measured: 308 eps of max(1, |log pmf|) (Loader's form keeps an error of about |k - n p| eps)
    _check(stats.betabinom.logpmf, want, (k, n, a, b), 1024 * EPS, 1024 * EPS)


@pytest.mark.parametrize("fn,args", [
    (lambda p: sp.kl_div(p, 0.4), 0.3), (lambda p: sp.kl_div(p, 0.4), 0.4000001), (sp.logit, 0.5000001),
    (lambda q: stats.cauchy.ppf(q), 1e-3), (lambda x: stats.gennorm.cdf(x, 2.0), -3.0),
    (lambda x: stats.vonmises.logpdf(x, 50.0), 0.01), (lambda x: stats.wrapcauchy.logpdf(x, 0.9), 0.2),
    (lambda x: stats.gumbel_r.logsf(x), -3.0), (lambda x: stats.expon.logcdf(x), 5.0),
    (lambda a: stats.betabinom.logpmf(3.0, 1e6, a, 2.0), 1.5)])
def test_gradients_match_finite_differences(fn, args):
    g = float(tracejit.grad(fn)(args))
    h = 1e-6 * max(abs(args), 1e-3)
    fd = (float(fn(args + h)) - float(fn(args - h))) / (2 * h)
    assert np.isfinite(g) and abs(g - fd) <= 1e-5 * max(abs(fd), 1.0), (g, fd)


def _wofz_ref(z):
    """w(z) = exp(-z^2) erfc(-iz) at 40 digits, rounded to complex128 (inf where a part overflows)."""
    with mp.workdps(40):
        w = mp.exp(-mp.mpc(z) ** 2) * mp.erfc(-1j * mp.mpc(z))
        return complex(float(w.real), float(w.imag))


def test_wofz_lower_half_plane_overflow_and_huge_arguments():
    """Below the real axis w(z) = 2 exp(-z^2) - w(-z). Where exp(-z^2) overflowed, forming its
    complex value as re + 1j im made 0 * inf = NaN (wofz(-27j) was NaN, true inf + 0j), and where it
    underflowed at huge |Re z| the phase 2xy overflowed and cos(inf) = NaN times 0 gave NaN
    (wofz(-8.6e299 - 5.1e299j), true -2.86e-301 - 4.86e-301j)."""
    rng = np.random.default_rng(3)
    # overflowing: y^2 - x^2 > 710, y < 0
    y_over = -rng.uniform(27.0, 30.0, 12)
    x_over = rng.uniform(-1.0, 1.0, 12) * np.sqrt(y_over ** 2 - 712.0)
    # huge |z|, |x| > |y|, y < 0: the exponential term underflows to 0 and w(z) ~ i / (sqrt(pi) z)
    r = 10.0 ** rng.uniform(10, 300, 12)
    t = rng.uniform(-0.24, -0.01, 12) * np.pi
    t = np.where(rng.random(12) < 0.5, t, -np.pi - t)
    z = np.concatenate([x_over + 1j * y_over, r * np.cos(t) + 1j * r * np.sin(t), [-27j, 0.3685 - 29.998j]])
    want = np.array([_wofz_ref(v) for v in z])
    for got in (np.asarray(sp.wofz(z)), np.asarray(tracejit.jit(sp.wofz)(z))):
        for part in (np.real, np.imag):
            g, w = part(got), part(want)
            assert not np.isnan(g).any(), z[np.isnan(g)]
            fin = np.isfinite(w)
            np.testing.assert_array_equal(g[~fin], w[~fin])
            # below the axis the exponential term's condition number is ~2 |z|^2 (the docstring's
            # error bound); where it underflowed (huge |z|) only the asymptotic form remains
            rtol = np.where(np.abs(z) > 1e5, 1e-14, 16.0 * np.abs(z) ** 2 * 2.0 ** -53)
            err = np.abs(g - w) / np.maximum(np.abs(w), 1e-300)
            assert (err[fin] <= rtol[fin]).all(), (z[fin][err[fin] > rtol[fin]], err[fin].max())
