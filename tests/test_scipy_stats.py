"""tracejit.scipy.stats against closed forms evaluated with mpmath, support edges, jit/vmap/grad."""
import math

import mpmath as mp
import numpy as np
import pytest

import tracejit as jax
from tracejit.scipy import stats

mp.mp.dps = 30
RNG = np.random.default_rng(7)


def _close(got, ref, rtol=1e-13):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(ref, np.float64), rtol=rtol, atol=0)


def _ref(fn, *cols):
    return np.array([float(fn(*[mp.mpf(float(v)) for v in vs])) for vs in zip(*cols)])


def test_norm():
    x = RNG.uniform(-30, 8, 30)
    _close(stats.norm.logpdf(x, 0.5, 2.0),
           _ref(lambda x: -((x - 0.5) / 2) ** 2 / 2 - mp.log(2 * mp.sqrt(2 * mp.pi)), x))
    _close(stats.norm.cdf(x), _ref(mp.ncdf, x))
    _close(stats.norm.logcdf(x), _ref(lambda v: mp.log(mp.ncdf(v)), x))
    _close(stats.norm.sf(-x), _ref(mp.ncdf, x))
    _close(stats.norm.logsf(-x), _ref(lambda v: mp.log(mp.ncdf(v)), x))
    q = RNG.uniform(0, 1, 20)
    _close(stats.norm.cdf(stats.norm.ppf(q, 1.0, 3.0), 1.0, 3.0), q, rtol=1e-14)
    _close(stats.norm.isf(q), -stats.norm.ppf(q))


def test_continuous_logpdfs_vs_mpmath():
    x = RNG.uniform(0.05, 5, 12)
    a = RNG.uniform(0.5, 4, 12)
    _close(stats.gamma.logpdf(x, a, 0.0, 1.5),
           _ref(lambda x, a: (a - 1) * mp.log(x / 1.5) - x / 1.5 - mp.loggamma(a) - mp.log(1.5), x, a))
    _close(stats.gamma.cdf(x, a), _ref(lambda x, a: mp.gammainc(a, 0, x, regularized=True), x, a), rtol=1e-12)
    _close(stats.gamma.sf(x, a), _ref(lambda x, a: mp.gammainc(a, x, mp.inf, regularized=True), x, a), rtol=1e-12)
    _close(stats.chi2.logpdf(x, a), _ref(lambda x, k: (k / 2 - 1) * mp.log(x) - x / 2 - (k / 2) * mp.log(2)
                                         - mp.loggamma(k / 2), x, a))
    _close(stats.chi2.cdf(x, a), _ref(lambda x, k: mp.gammainc(k / 2, 0, x / 2, regularized=True), x, a), rtol=1e-12)
    u = RNG.uniform(0.01, 0.99, 12)
    b = RNG.uniform(0.5, 4, 12)
    _close(stats.beta.logpdf(u, a, b), _ref(lambda x, a, b: (a - 1) * mp.log(x) + (b - 1) * mp.log(1 - x)
                                             - mp.log(mp.beta(a, b)), u, a, b))
    _close(stats.beta.cdf(u, a, b), _ref(lambda x, a, b: mp.betainc(a, b, 0, x, regularized=True), u, a, b),
           rtol=1e-12)
    _close(stats.beta.sf(u, a, b), _ref(lambda x, a, b: mp.betainc(a, b, x, 1, regularized=True), u, a, b),
           rtol=1e-12)
    _close(stats.t.logpdf(x, a, 0.3, 1.2), _ref(
        lambda x, n: mp.loggamma((n + 1) / 2) - mp.loggamma(n / 2) - mp.log(mp.sqrt(n * mp.pi) * 1.2)
        - (n + 1) / 2 * mp.log(1 + ((x - 0.3) / 1.2) ** 2 / n), x, a))
    _close(stats.cauchy.logpdf(x, 0.2, 2.0), _ref(lambda x: -mp.log(mp.pi * 2 * (1 + ((x - 0.2) / 2) ** 2)), x))
    _close(stats.cauchy.cdf(-x * 1e6), _ref(lambda v: mp.atan(v) / mp.pi + mp.mpf(1) / 2, -x * 1e6), rtol=1e-12)
    _close(stats.laplace.logpdf(x - 2, 0.5, 1.5), _ref(lambda v: -mp.log(3) - abs(v - 0.5) / 1.5, x - 2))
    _close(stats.laplace.cdf(x - 2), _ref(lambda v: mp.exp(v) / 2 if v < 0 else 1 - mp.exp(-v) / 2, x - 2))
    _close(stats.logistic.logpdf(x * 100), _ref(lambda v: -v - 2 * mp.log(1 + mp.exp(-v)), x * 100))
    _close(stats.logistic.logcdf(-x * 100), _ref(lambda v: -mp.log(1 + mp.exp(-v)), -x * 100))
    _close(stats.expon.logpdf(x, 0.0, 2.0), -x / 2 - math.log(2))
    _close(stats.expon.cdf(x), _ref(lambda v: 1 - mp.exp(-v), x))
    _close(stats.expon.ppf(stats.expon.cdf(x)), x, rtol=1e-13)
    _close(stats.pareto.logpdf(x + 1, a), _ref(lambda v, b: mp.log(b) - (b + 1) * mp.log(v), x + 1, a))
    _close(stats.vonmises.logpdf(x, a * 50), _ref(lambda v, k: k * mp.cos(v) - mp.log(2 * mp.pi * mp.besseli(0, k)),
                                                   x, a * 50))
    _close(stats.uniform.logpdf(x, 0.0, 10.0), np.full_like(x, -math.log(10.0)))


def test_truncnorm_far_tail():
    a, b = 30.0, 31.0
    x = np.array([30.1, 30.5])
    with mp.workdps(60):
        z = mp.ncdf(-a) - mp.ncdf(-b)
        ref = [float(-mp.mpf(v) ** 2 / 2 - mp.log(mp.sqrt(2 * mp.pi)) - mp.log(z)) for v in x]
        cref = [float(mp.log((mp.ncdf(-a) - mp.ncdf(-mp.mpf(v))) / z)) for v in x]
    _close(stats.truncnorm.logpdf(x, a, b), ref, rtol=1e-12)
    _close(stats.truncnorm.logcdf(x, a, b), cref, rtol=1e-11)
    assert stats.truncnorm.logpdf(29.0, a, b) == -np.inf
    assert float(stats.truncnorm.cdf(32.0, a, b)) == 1.0


def test_discrete():
    k = np.arange(0, 8)
    _close(stats.poisson.logpmf(k, 3.5), _ref(lambda k: k * mp.log(3.5) - 3.5 - mp.loggamma(k + 1), k))
    _close(stats.poisson.cdf(k, 3.5), np.cumsum(stats.poisson.pmf(k, 3.5)), rtol=1e-13)
    _close(stats.binom.pmf(k, 7, 0.3), _ref(lambda k: mp.binomial(7, k) * mp.mpf(0.3) ** k * mp.mpf(0.7) ** (7 - k), k))
    _close(stats.nbinom.pmf(k, 2.5, 0.4), _ref(
        lambda k: mp.gamma(k + 2.5) / (mp.gamma(2.5) * mp.factorial(k)) * mp.mpf(0.4) ** 2.5 * mp.mpf(0.6) ** k, k))
    _close(stats.geom.pmf(k[1:], 0.3), 0.3 * 0.7 ** (k[1:] - 1.0))
    _close(stats.bernoulli.pmf(np.array([0, 1]), 0.3), [0.7, 0.3])
    assert stats.poisson.logpmf(-1, 2.0) == -np.inf and stats.poisson.logpmf(1.5, 2.0) == -np.inf
    assert stats.binom.logpmf(8, 7, 0.3) == -np.inf and stats.geom.logpmf(0, 0.3) == -np.inf
    assert stats.bernoulli.logpmf(2, 0.3) == -np.inf
    np.testing.assert_array_equal(stats.bernoulli.cdf(np.array([-1.0, 0.0, 0.5, 1.0]), 0.3), [0.0, 0.7, 0.7, 1.0])
    np.testing.assert_array_equal(stats.bernoulli.ppf(np.array([0.5, 0.8]), 0.3), [0.0, 1.0])


def test_support_edges():
    assert stats.gamma.logpdf(-1.0, 2.0) == -np.inf
    assert stats.beta.logpdf(1.5, 2.0, 2.0) == -np.inf
    assert stats.expon.logpdf(-0.1) == -np.inf
    assert stats.pareto.logpdf(0.5, 2.0) == -np.inf
    assert stats.uniform.logpdf(1.5) == -np.inf
    assert stats.gamma.logpdf(0.0, 1.0) == 0.0
    assert float(stats.gamma.cdf(-1.0, 2.0)) == 0.0 and float(stats.beta.cdf(2.0, 2.0, 3.0)) == 1.0
    assert np.isnan(stats.uniform.ppf(1.5)) and np.isnan(stats.expon.ppf(-0.5))


def test_multivariate_normal_and_dirichlet():
    n = 3
    A = RNG.normal(size=(n, n))
    cov = A @ A.T + n * np.eye(n)
    mean = RNG.normal(size=n)
    x = RNG.normal(size=(5, n))
    d = x - mean
    ref = (-0.5 * np.einsum("bi,ij,bj->b", d, np.linalg.inv(cov), d) - 0.5 * np.linalg.slogdet(cov)[1]
           - 0.5 * n * math.log(2 * math.pi))
    _close(stats.multivariate_normal.logpdf(x, mean, cov), ref, rtol=1e-12)
    _close(jax.jit(stats.multivariate_normal.logpdf)(x, mean, cov), ref, rtol=1e-12)
    _close(stats.multivariate_normal.logpdf(x, mean, 2.0),
           -0.5 * (d * d).sum(-1) / 2.0 - 0.5 * n * math.log(2 * math.pi * 2.0))
    g = jax.grad(lambda m: stats.multivariate_normal.logpdf(x[0], m, cov))(mean)
    _close(g, np.linalg.solve(cov, x[0] - mean), rtol=1e-10)
    alpha = np.array([1.5, 2.0, 3.0])
    p = np.array([0.2, 0.3, 0.5])
    ref = float(mp.loggamma(6.5) - mp.loggamma(1.5) - mp.loggamma(2) - mp.loggamma(3)
                + 0.5 * mp.log(0.2) + mp.log(0.3) + 2 * mp.log(0.5))
    _close(stats.dirichlet.logpdf(p, alpha), ref)
    _close(stats.dirichlet.logpdf(p[:2], alpha), ref)
    assert stats.dirichlet.logpdf(np.array([0.5, 0.6, -0.1]), alpha) == -np.inf


def test_float32_and_jit_vmap_grad():
    x32 = np.linspace(-2, 2, 7, dtype=np.float32)
    for f in (stats.norm.logpdf, stats.norm.cdf, stats.logistic.logpdf, stats.cauchy.cdf, stats.laplace.logpdf):
        out = f(x32)
        assert out.dtype == np.float32, f
        _close(out, f(x32.astype(np.float64)), rtol=2e-6)
    f = lambda x, a: (stats.gamma.logpdf(x, a) + stats.norm.logcdf(x) + stats.t.logpdf(x, a)
                      + stats.beta.logpdf(x / 4, a, 2.0) + stats.poisson.logpmf(3.0, x))
    xs, as_ = np.array([0.5, 1.0, 2.0]), np.array([1.5, 2.5, 3.0])
    eager = f(xs, as_)
    _close(jax.jit(f)(xs, as_), eager, rtol=1e-13)
    _close(jax.vmap(f)(xs, as_), eager, rtol=1e-13)
    h = 1e-6
    for x, a in zip(xs, as_):
        g = jax.grad(f, argnums=(0, 1))(x, a)
        fd_x = (float(f(x + h, a)) - float(f(x - h, a))) / (2 * h)
        fd_a = (float(f(x, a + h)) - float(f(x, a - h))) / (2 * h)
        assert float(g[0]) == pytest.approx(fd_x, rel=1e-6)
        assert float(g[1]) == pytest.approx(fd_a, rel=1e-6)
    gc = jax.grad(lambda a: stats.gamma.cdf(1.5, a))(2.0)
    fd = (float(stats.gamma.cdf(1.5, 2.0 + h)) - float(stats.gamma.cdf(1.5, 2.0 - h))) / (2 * h)
    assert float(gc) == pytest.approx(fd, rel=1e-6)


def test_more_distributions():
    k = np.arange(0, 6)
    ref = _ref(lambda k: mp.binomial(5, k) * mp.beta(k + 1.5, 5 - k + 2.5) / mp.beta(1.5, 2.5), k)
    _close(stats.betabinom.pmf(k, 5, 1.5, 2.5), ref)
    assert stats.betabinom.logpmf(6, 5, 1.5, 2.5) == -np.inf
    x = np.array([[2, 1, 0], [1, 1, 1]])
    p = np.array([0.2, 0.3, 0.5])
    _close(stats.multinomial.pmf(x, 3, p), [3 * 0.2 ** 2 * 0.3, 6 * 0.2 * 0.3 * 0.5])
    assert stats.multinomial.logpmf(np.array([1, 1, 0]), 3, p) == -np.inf
    xs = RNG.uniform(-3, 3, 10)
    _close(stats.gennorm.logpdf(xs, 1.5), _ref(lambda v: mp.log(0.75 / mp.gamma(mp.mpf(2) / 3)) - abs(v) ** 1.5, xs))
    _close(stats.gennorm.cdf(xs, 2.0), stats.norm.cdf(xs * math.sqrt(2)), rtol=1e-13)
    _close(stats.gumbel_r.logpdf(xs, 0.5, 2.0), _ref(lambda v: -(v - 0.5) / 2 - mp.exp(-(v - 0.5) / 2) - mp.log(2), xs))
    _close(stats.gumbel_l.logpdf(xs, 0.5, 2.0), _ref(lambda v: (v - 0.5) / 2 - mp.exp((v - 0.5) / 2) - mp.log(2), xs))
    _close(stats.gumbel_r.cdf(xs), _ref(lambda v: mp.exp(-mp.exp(-v)), xs))
    _close(stats.gumbel_l.cdf(xs), _ref(lambda v: 1 - mp.exp(-mp.exp(v)), xs))
    _close(stats.gumbel_l.sf(xs) + stats.gumbel_l.cdf(xs), np.ones_like(xs))
    q = RNG.uniform(0.01, 0.99, 10)
    _close(stats.gumbel_r.cdf(stats.gumbel_r.ppf(q, 1.0, 2.0), 1.0, 2.0), q, rtol=1e-12)
    _close(stats.gumbel_l.cdf(stats.gumbel_l.ppf(q, 1.0, 2.0), 1.0, 2.0), q, rtol=1e-12)
    th = RNG.uniform(0, 2 * math.pi, 10)
    _close(stats.wrapcauchy.pdf(th, 0.3), _ref(lambda t: (1 - 0.09) / (2 * mp.pi * (1 + 0.09 - 0.6 * mp.cos(t))), th))
    assert stats.wrapcauchy.logpdf(7.0, 0.3) == -np.inf
