"""Log-probabilities of tracejit.scipy.stats where a naive formula cancels.

- ``t.logpdf`` for large df formed gammaln((df + 1) / 2) - gammaln(df / 2): t.logpdf(0, 1e15) was
  2.16 (above the largest possible log-density, -0.919), t.logpdf(1, 1e20) -24.1 for -1.419.
  Reference: mpmath at 40 digits. Measured: at most 0.8 eps relative; the test allows 4 eps.
- ``logcdf`` / ``logsf`` of gamma, chi2, beta and cauchy took the log of a probability rounded near
  1: gamma.logsf(0.01, 10) was 0.0 for -2.73e-27, gamma.logcdf(25, 0.5) 1.5e-5 off. They now use
  log1p of the complement there. Reference: SciPy, which computes these tails directly.
"""
import numpy as np
import pytest

mpmath = pytest.importorskip("mpmath")
scipy_stats = pytest.importorskip("scipy.stats")

import tracejit
from tracejit.scipy import stats

EPS64 = 2.0 ** -52


def _t_logpdf_reference(x, df):
    with mpmath.workdps(40):
        x, df = mpmath.mpf(x), mpmath.mpf(df)
        return float(mpmath.loggamma((df + 1) / 2) - mpmath.loggamma(df / 2) - mpmath.log(df * mpmath.pi) / 2
                     - (df + 1) / 2 * mpmath.log1p(x * x / df))


@pytest.mark.parametrize("jit", [False, True])
def test_t_logpdf_large_and_small_df(jit):
    rng = np.random.default_rng(0)
    df = np.concatenate([10 ** rng.uniform(-3, 20, 40), [19.9, 20.0, 20.1, 1e15]])
    x = np.concatenate([rng.standard_normal(40) * 3, [0.5, 0.5, 0.5, 0.0]])
    fn = tracejit.jit(stats.t.logpdf) if jit else stats.t.logpdf
    got = np.asarray(fn(x, df))
    ref = np.array([_t_logpdf_reference(*p) for p in zip(x, df)])
    rel = np.abs(got - ref) / np.abs(ref)
    assert np.all(rel <= 4 * EPS64), (df[np.argmax(rel)], rel.max() / EPS64)


CASES = [
    # (distribution, method, args): tails where the other probability rounds to 1
    ("gamma", "logsf", (0.01, 10.0)), ("gamma", "logcdf", (25.0, 0.5)), ("gamma", "logcdf", (60.0, 3.0)),
    ("chi2", "logsf", (0.01, 10.0)), ("chi2", "logcdf", (90.0, 4.0)),
    ("beta", "logcdf", (0.999, 2.0, 3.0)), ("beta", "logsf", (1e-4, 2.0, 3.0)),
    ("cauchy", "logcdf", (1e6,)), ("cauchy", "logsf", (-1e6,)),
    # and the ordinary side, unchanged
    ("gamma", "logcdf", (0.01, 10.0)), ("gamma", "logsf", (25.0, 0.5)), ("chi2", "logcdf", (2.0, 2.0)),
    ("beta", "logsf", (0.999, 2.0, 3.0)), ("cauchy", "logsf", (1e6,)),
]


@pytest.mark.parametrize("dist,method,args", CASES)
def test_log_tails_against_scipy(dist, method, args):
    want = getattr(getattr(scipy_stats, dist), method)(*args)
    for fn in (getattr(getattr(stats, dist), method), tracejit.jit(getattr(getattr(stats, dist), method))):
        got = float(fn(*args))
        # 32 eps: beta's tails come from betainc's continued fraction (13 eps off at beta.sf(0.999, 2, 3))
        assert abs(got - want) <= 32 * EPS64 * abs(want), (dist, method, args, got, want)


@pytest.mark.parametrize("dist,method,args", [("gamma", "logcdf", (1e-9, 3.0)), ("gamma", "logsf", (200.0, 3.0)),
                                               ("chi2", "logcdf", (1e-9, 4.0)), ("beta", "logcdf", (1e-9, 2.0, 3.0))])
def test_log_tail_gradients_are_finite(dist, method, args):
    # where the complement is 0 the unused branch is log1p(-1) = -inf: its gradient must not leak
    # into the used one as inf * 0 = NaN (it did while the operands were not replaced)
    fn = getattr(getattr(stats, dist), method)
    g = tracejit.jit(tracejit.grad(fn))(*args)
    h = 1e-6 * args[0]
    fd = (float(fn(args[0] + h, *args[1:])) - float(fn(args[0] - h, *args[1:]))) / (2 * h)
    assert np.isfinite(float(g)) and abs(float(g) - fd) <= 1e-5 * abs(fd) + 1e-300, (float(g), fd)


def _log_gamma_density(x, a):
    with mpmath.workdps(80):
        x, a = mpmath.mpf(x), mpmath.mpf(a)
        return float((a - 1) * mpmath.log(x) - x - mpmath.loggamma(a))


@pytest.mark.parametrize("jit", [False, True])
def test_log_densities_for_large_shapes(jit):
    # gamma.logpdf(1e20, 1e20) was 0.0 (true -23.94), chi2.logpdf(2e20, 2e20) 0.0 (-24.64),
    # poisson.logpmf(1e15, 1e15) -16.0 (-18.19): three terms of size ~a log a cancelled. Measured
    # against mpmath: at most 1.9 eps.
    rng = np.random.default_rng(1)
    a = np.concatenate([10 ** rng.uniform(0, 20, 30), [9.99, 10.0, 1e20]])
    x = np.concatenate([a[:30] * np.exp(rng.uniform(-0.3, 0.3, 30)), [12.0, 12.0, 1e20]])
    k = np.floor(a)
    wrap = tracejit.jit if jit else (lambda f: f)
    got = np.asarray(wrap(stats.gamma.logpdf)(x, a))
    ref = np.array([_log_gamma_density(*p) for p in zip(x, a)])
    assert np.all(np.abs(got - ref) <= 4 * EPS64 * np.abs(ref)), np.max(np.abs(got - ref) / np.abs(ref)) / EPS64
    got = np.asarray(wrap(stats.chi2.logpdf)(2.0 * x, 2.0 * a))
    ref = ref - np.log(2.0)
    assert np.all(np.abs(got - ref) <= 4 * EPS64 * np.abs(ref)), np.max(np.abs(got - ref) / np.abs(ref)) / EPS64
    got = np.asarray(wrap(stats.poisson.logpmf)(k, x))
    with mpmath.workdps(80):
        ref = np.array([float(mpmath.mpf(ki) * mpmath.log(xi) - xi - mpmath.loggamma(mpmath.mpf(ki) + 1))
                        for ki, xi in zip(k, x)])
    assert np.all(np.abs(got - ref) <= 4 * EPS64 * np.abs(ref)), np.max(np.abs(got - ref) / np.abs(ref)) / EPS64
    # far from the mean, and where k / mu overflows or rounds to 0
    assert float(stats.gamma.logpdf(1e300, 20.0)) == -1e300
    assert abs(float(stats.poisson.logpmf(20, 1e-300)) - (-13857.846174425027)) <= 4 * EPS64 * 13858


def _mp_binom(k, n, p):
    k, n, p = mpmath.mpf(k), mpmath.mpf(n), mpmath.mpf(p)
    return (mpmath.loggamma(n + 1) - mpmath.loggamma(k + 1) - mpmath.loggamma(n - k + 1) + k * mpmath.log(p)
            + (n - k) * mpmath.log1p(-p))


def _mp_nbinom(k, n, p):
    k, n, p = mpmath.mpf(k), mpmath.mpf(n), mpmath.mpf(p)
    return mpmath.loggamma(n + k) - mpmath.loggamma(n) - mpmath.loggamma(k + 1) + n * mpmath.log(p) + k * mpmath.log1p(-p)


def _mp_beta(x, a, b):
    x, a, b = mpmath.mpf(x), mpmath.mpf(a), mpmath.mpf(b)
    return ((a - 1) * mpmath.log(x) + (b - 1) * mpmath.log1p(-x)
            - (mpmath.loggamma(a) + mpmath.loggamma(b) - mpmath.loggamma(a + b)))


@pytest.mark.parametrize("jit", [False, True])
def test_binom_nbinom_beta_log_mass_for_large_parameters(jit):
    # binom.logpmf(5e14, 1e15, 0.5) was -21.25 (true -17.50), nbinom.logpmf(9.9e16, 1e15, 0.01) -61.75
    # (-22.79), beta.logpdf(0.5, 1e15, 1e15) 17.5 (17.39). The Poisson means (n p, n q, ...) are
    # rounded once: that costs |k - n p| eps (d/dmu (k log mu - mu) = k / mu - 1), about 1e-11 at
    # n ~ 1e15; the rest is within a few eps of max(1, |value|) (measured at most 4).
    rng = np.random.default_rng(2)
    n = np.floor(10 ** rng.uniform(0, 16, 40))
    p = rng.uniform(0.001, 0.999, 40)
    k = np.clip(np.floor(n * p + rng.standard_normal(40) * np.sqrt(n * p * (1 - p) + 1)), 0, n)
    r = np.floor(n * (1 - p) / p)
    wrap = tracejit.jit if jit else (lambda f: f)
    cases = ((stats.binom.logpmf, _mp_binom, (k, n, p), np.abs(k - n * p)),
             (stats.nbinom.logpmf, _mp_nbinom, (r, n + 0.5, p), np.abs(r - (r + n + 0.5) * (1 - p))),
             (stats.beta.logpdf, _mp_beta, (p, n * p + 0.5, n * (1 - p) + 0.5), np.abs(n * p + 0.5 - (n + 1) * p)))
    with mpmath.workdps(80):
        for fn, ref_fn, args, spread in cases:
            got = np.asarray(wrap(fn)(*args))
            ref = np.array([float(ref_fn(*t)) for t in zip(*args)])
            tol = EPS64 * (16 * np.maximum(np.abs(ref), 1.0) + 8 * (spread + 1.0))
            assert np.all(np.abs(got - ref) <= tol), (fn.__module__, np.max(np.abs(got - ref) / tol))


def _mp_truncnorm(x, a, b):
    """(pdf, logcdf) of the standard normal truncated to [a, b], mpmath at 50 digits (tails via erfc)."""
    with mpmath.workdps(50):
        x, a, b = (mpmath.mpf(v) for v in (x, a, b))

        if a + b > 0:                                   # 1 - Phi(t): no rounding to 1 in the upper tail
            def tail(t):
                return -mpmath.erfc(t / mpmath.sqrt(2)) / 2
        else:                                           # Phi(t)
            def tail(t):
                return mpmath.erfc(-t / mpmath.sqrt(2)) / 2
        mass = tail(b) - tail(a)
        return float(mpmath.npdf(x) / mass), float(mpmath.log((tail(x) - tail(a)) / mass))


@pytest.mark.parametrize("jit", [False, True])
def test_truncnorm_on_short_intervals(jit):
    # truncnorm.pdf(5e-11, 0, 1e-10) was 9999993350 (1e10), logcdf(9.99e-11, 0, 1e-10) 4.6e-4 off:
    # a difference of two log-CDFs. Measured: pdf within 2 eps at [0, 1e-10] and 0.6 eps (1 + a^2)
    # in the tails, logcdf within 12 eps (of 1) and 0.4 eps (1 + a^2).
    rng = np.random.default_rng(4)
    a = np.concatenate([[0.0, 0.0], rng.uniform(-35, 35, 30)])
    width = np.concatenate([[1e-10, 1e-10], 10 ** rng.uniform(-12, -1, 30)])
    b = a + width
    x = np.concatenate([[5e-11, 9.99e-11], a[2:] + rng.uniform(0, 1, 30) * width[2:]])
    wrap = tracejit.jit if jit else (lambda f: f)
    pdf = np.asarray(wrap(stats.truncnorm.pdf)(x, a, b))
    logcdf = np.asarray(wrap(stats.truncnorm.logcdf)(x, a, b))
    ref = np.array([_mp_truncnorm(*t) for t in zip(x, a, b)])
    # exp(-x^2 / 2) at |x| ~ 35 carries the rounding of x^2: the condition number is ~x^2
    cond = 1.0 + np.maximum(a * a, b * b)
    assert np.all(np.abs(pdf - ref[:, 0]) <= 8 * EPS64 * cond * ref[:, 0]), np.max(np.abs(pdf / ref[:, 0] - 1) / cond) / EPS64
    # (the logcdf is far worse conditioned still: ~|x| / width in x)
    assert np.all(np.abs(logcdf - ref[:, 1]) <= 16 * EPS64 * cond * np.maximum(np.abs(ref[:, 1]), 1.0)), \
        np.max(np.abs(logcdf - ref[:, 1]) / np.maximum(np.abs(ref[:, 1]), 1.0) / cond) / EPS64
