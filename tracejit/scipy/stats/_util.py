"""Helpers of ``tracejit.scipy.stats``: promotion to a common floating dtype and log-space
differences."""
from __future__ import annotations

import math

import numpy as np

import tracejit.numpy as jnp
from tracejit.numpy._util import convert, to_operand
from tracejit.scipy._common import result_float_dtype
from tracejit.scipy._common import log1pmx


def promote(*args):
    """The arguments as arrays of their common floating dtype (integers promote to float64)."""
    dt = result_float_dtype(*args)
    return [convert(to_operand(a), dt) for a in args]


def where(c, a, b):
    return jnp.where(c, a, b)


def log_probability(p, complement):
    """log(p) given p and its complement 1 - p, each computed directly: log1p(-complement) where p
    is near 1 (log of a p rounded near 1 loses the complement: gamma.logsf(0.01, 10) was 0.0 for
    -2.7e-27)."""
    low = p <= 0.5
    # each branch's unused operand replaced: the other branch's inf (log1p(-1)) would make the
    # gradient inf * 0 = NaN
    return where(low, jnp.log(where(low, p, 1.0)), jnp.log1p(-where(low, 0.0, complement)))


def _special():
    from tracejit.scipy import special
    return special


_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def log_poisson_term(k, mu):
    """(log p_k, k >= 10, k where below 10 else 0) for p_k = mu^k e^-mu / Gamma(k + 1), k >= 0, mu > 0
    (k need not be an integer: the gamma density is k p_k(x) / x).

    log p_k = -stirlerr(k) - bd0(k, mu) - log(2 pi k) / 2 (Loader's saddle-point form: no
    cancellation between k log mu, mu and lgamma(k + 1), each ~1e16 at k ~ mu ~ 1e15, where the
    direct form gave -16.0 for -18.19); bd0 = k log(k / mu) - k + mu = mu phi(t) with t = k/mu - 1,
    phi(t) = (1 + t) log1p(t) - t = (1 + t) (log1p(t) - t) + t^2 near t = 0."""
    ks = jnp.maximum(k, 1.0)
    big = ks >= 10.0
    kb = jnp.where(big, ks, 10.0)
    ksm = jnp.where(big, 1.0, ks)
    stirl = jnp.where(big, _special()._stirling_correction(kb),
                      _special().gammaln(ksm + 1.0) - (ksm + 0.5) * jnp.log(ksm) + ksm - _HALF_LOG_2PI)
    t = (ks - mu) / mu
    near = jnp.abs(t) < 0.5
    tn = jnp.where(near, t, 0.0)
    # away from k = mu, bd0 = k log(k / mu) - k + mu from the two logs (k / mu can overflow or
    # round to 0: gamma.logpdf(1e300, 20) was NaN)
    bd0 = jnp.where(near, mu * ((1.0 + tn) * log1pmx(tn) + tn * tn), ks * (jnp.log(ks) - jnp.log(mu)) - ks + mu)
    lp = -stirl - bd0 - 0.5 * jnp.log(2.0 * math.pi * ks)
    # k < 10: k log mu - mu - lgamma(k + 1) directly (no cancellation there; the saddle-point
    # form would carry the rounding of mu (1 + t) log1p(t) ~ -log mu for tiny mu)
    kd = jnp.where(big, 0.0, k)
    return jnp.where(big, lp, _special().xlogy(kd, mu) - mu - _special().gammaln(kd + 1.0)), big, kd


def log_diff_exp(u, v):
    """log(exp(u) - exp(v)) for u >= v."""
    return u + jnp.log(-jnp.expm1(v - u))


# 8-point Gauss-Legendre rule on [-1, 1]: exact for polynomials of degree 15
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(8)


def log_ndtr_diff(u, v):
    """log(Phi(u) - Phi(v)) for u >= v, mirrored into the lower tail when both are positive.

    Over a short interval (width h with h (|midpoint| + 1) <= 1/2) the difference of the two
    log-CDFs cancels (truncnorm.pdf on [0, 1e-10] was 7e-7 off): there it is the integral of the
    density by the 8-point Gauss-Legendre rule (error ~ (1/2)^16 / 16!), summed in log space."""
    from tracejit.scipy.special import log_ndtr
    mirror = v > 0
    upper = log_diff_exp(log_ndtr(-v), log_ndtr(-u))
    lower = log_diff_exp(log_ndtr(u), log_ndtr(v))
    wide = where(mirror, upper, lower)
    half = 0.5 * (u - v)
    mid = 0.5 * (u + v)
    short = (half * (jnp.abs(mid) + 1.0) <= 0.25) & (half > 0)
    h = where(short, half, 0.25)
    m = where(short, mid, 0.0)
    t = m[..., None] + h[..., None] * jnp.asarray(_GL_NODES)
    expo = -0.5 * t * t
    top = jnp.max(expo, axis=-1)
    total = jnp.sum(jnp.asarray(_GL_WEIGHTS) * jnp.exp(expo - top[..., None]), axis=-1)
    narrow = jnp.log(h) + top + jnp.log(total) - _HALF_LOG_2PI
    return where(short, narrow, wide)


NEG_INF = -np.inf
