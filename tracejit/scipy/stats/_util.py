"""Helpers of ``tracejit.scipy.stats``: promotion to a common floating dtype and log-space
differences."""
from __future__ import annotations

import numpy as np

import tracejit.numpy as jnp
from tracejit.numpy._util import convert, to_operand
from tracejit.scipy._common import result_float_dtype


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


def log_diff_exp(u, v):
    """log(exp(u) - exp(v)) for u >= v."""
    return u + jnp.log(-jnp.expm1(v - u))


def log_ndtr_diff(u, v):
    """log(Phi(u) - Phi(v)) for u >= v, mirrored into the lower tail when both are positive."""
    from tracejit.scipy.special import log_ndtr
    mirror = v > 0
    upper = log_diff_exp(log_ndtr(-v), log_ndtr(-u))
    lower = log_diff_exp(log_ndtr(u), log_ndtr(v))
    return where(mirror, upper, lower)


NEG_INF = -np.inf
