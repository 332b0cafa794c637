"""Beta-binomial distribution (``jax.scipy.stats.betabinom``).

Examples
--------
>>> from tracejit.scipy.stats import betabinom
>>> round(float(betabinom.pmf(1, 2, 1.0, 1.0)), 12)  # uniform on {0, 1, 2}
0.333333333333
"""
import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import NEG_INF, log_poisson_term, promote, where

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, a, b, loc=0):
    """``log C(n, k) + betaln(k + a, n - k + b) - betaln(a, b)`` at integers ``0 <= k - loc <= n``.

    Examples
    --------
    >>> from tracejit.scipy.stats import betabinom
    >>> round(float(betabinom.logpmf(0, 2, 1.0, 1.0)), 12)
    -1.098612288668
    """
    k, n, a, b, loc = promote(k, n, a, b, loc)
    x = k - loc
    ok = (x >= 0) & (x <= n) & (x == jnp.floor(x))
    xs = where(ok, x, jnp.zeros_like(x))
    # The six log-gammas (each up to ~n log n) cancelled: betabinom.logpmf(1, 1e12, 1, 1) was
    # -27.6292 for -27.6310, (5e11, 1e12, 1, 1) -27.6326. log C(n, k) = -log(n + 1) - betaln(k + 1,
    # n - k + 1) (accurate betaln), and the remaining log-gamma ratios L(y, d) = lgamma(y + d) -
    # lgamma(y) = d log y + R(y, d) regrouped with the d log y terms as logs of ratios where R is
    # small (|d| <= y / 100): counts large (|a - 1| <= (k + 1) / 100, |b - 1| <= (n - k + 1) / 100)
    #   (a - 1) log((k + 1) / (n + 1)) + (b - 1) log((n - k + 1) / (n + 1)) - log(n + 1)
    #     + R(k + 1, a - 1) + R(n - k + 1, b - 1) - R(n + 1, a + b - 1) - betaln(a, b),
    # parameters large (k <= a / 100, n - k <= b / 100)
    #   k log(a / (a + b)) + (n - k) log(b / (a + b)) + R(a, k) + R(b, n - k) - R(a + b, n) + log C(n, k),
    # else log C(n, k) + betaln(k + a, n - k + b) - betaln(a, b).
    use = ok & (a > 0) & (b > 0) & jnp.isfinite(n) & jnp.isfinite(a) & jnp.isfinite(b)
    n_ = where(use, n, 2.0)
    a_ = where(use, a, 1.0)
    b_ = where(use, b, 1.0)
    k_ = where(use, xs, 1.0)
    m_ = n_ - k_
    ab = a_ + b_
    log_comb = -jnp.log1p(n_) - special.betaln(k_ + 1.0, m_ + 1.0)
    by_counts = (jnp.abs(a_ - 1.0) <= 0.01 * (k_ + 1.0)) & (jnp.abs(b_ - 1.0) <= 0.01 * (m_ + 1.0))
    by_params = (k_ <= 0.01 * a_) & (m_ <= 0.01 * b_) & (jnp.minimum(a_, b_) >= 10.0)
    counts = ((a_ - 1.0) * _log_frac(k_ + 1.0, m_, n_ + 1.0) + (b_ - 1.0) * _log_frac(m_ + 1.0, k_, n_ + 1.0)
              - jnp.log1p(n_) + _lgamma_rest(k_ + 1.0, a_ - 1.0) + _lgamma_rest(m_ + 1.0, b_ - 1.0)
              - _lgamma_rest(n_ + 1.0, ab - 1.0) - special.betaln(a_, b_))
    # C(n, k) p^k q^(n-k) with p = a / (a + b) cancels like binom's (terms ~n log n; 1.4e-8 absolute
    # at n = 1.7e8): for n >= 10 in Poisson terms, Loader's form, as binom.logpmf
    lpt = log_poisson_term
    binomial = where(n_ >= 10.0, lpt(k_, n_ * (a_ / ab))[0] + lpt(m_, n_ * (b_ / ab))[0] - lpt(n_, n_)[0],
                     k_ * _log_frac(a_, b_, ab) + m_ * _log_frac(b_, a_, ab) + log_comb)
    params = binomial + _lgamma_rest(a_, k_) + _lgamma_rest(b_, m_) - _lgamma_rest(ab, n_)
    general = log_comb + special.betaln(k_ + a_, m_ + b_) - special.betaln(a_, b_)
    comb = special.gammaln(n + 1.0) - special.gammaln(xs + 1.0) - special.gammaln(n - xs + 1.0)
    direct = comb + special.betaln(xs + a, n - xs + b) - special.betaln(a, b)
    val = where(use, where(by_counts, counts, where(by_params, params, general)), direct)
    return where(ok, val, NEG_INF)


def _log_frac(u, rest, total):
    """log(u / total) for total = u + rest (u, rest >= 0): log1p(-rest / total) where u is the larger
    part (the rounded ratio near 1 loses the small complement)."""
    small = u <= rest
    return where(small, jnp.log(u / total), jnp.log1p(-rest / total))


def _lgamma_rest(y, d):
    """R(y, d) = lgamma(y + d) - lgamma(y) - d log y for y > 0, y + d > 0: Stirling's form where
    y and y + d are >= 10 (poch's, no ~y log y terms), else the log-gammas directly."""
    st = (y >= 10.0) & (y + d >= 10.0)
    stirling = special._log_poch_rest(where(st, y, 10.0), where(st, d, 0.0))
    yd = where(st, 1.0, y)
    dd = where(st, 0.0, d)
    direct = special.gammaln(yd + dd) - special.gammaln(yd) - special.xlogy(dd, yd)
    return where(st, stirling, direct)


def pmf(k, n, a, b, loc=0):
    """Probability mass.

    Examples
    --------
    >>> from tracejit.scipy.stats import betabinom
    >>> round(float(betabinom.pmf(2, 2, 1.0, 1.0)), 12)
    0.333333333333
    """
    return jnp.exp(logpmf(k, n, a, b, loc))
