"""``jax.lax.igamma_grad_a`` and ``jax.lax.random_gamma_grad``.

``igamma_grad_a(a, x)`` is ``dP(a, x)/da`` for the regularized lower incomplete gamma function
``P(a, x) = C(a, x) * S(a, x)``, with ``C = x**a * exp(-x) / Gamma(a + 1)`` and the series
``S = sum_n t_n``, ``t_0 = 1``, ``t_n = t_(n-1) * x / (a + n)``. Differentiating term by term,
``dt_n/da = -t_n * H_n`` with ``H_n = sum_(k=1..n) 1 / (a + k)``, so

    dP/da = C * ((log x - digamma(a + 1)) * S - sum_n t_n * H_n).

The series converges for every ``x`` (its terms fall once ``a + n > x``); one ``lax.while_loop``
over the whole array runs it to float64 precision. ``random_gamma_grad(a, x)`` is the implicit
derivative of a gamma sample ``x`` with respect to its shape ``a`` (``P(a, x) = u`` held fixed):
``dx/da = -(dP/da) / (dP/dx)``, ``dP/dx = x**(a - 1) * exp(-x) / Gamma(a)``.

Both compute in float64 and return the operands' dtype; like JAX's they have no derivative rules of
their own (differentiating them raises). Outside the domain (``a <= 0``, ``x < 0``, NaN) they are NaN;
at ``x == 0`` both are 0 and at ``x == inf`` NaN, as JAX's.
"""
from __future__ import annotations

import numpy as np

import tracejit.numpy as jnp
from tracejit.lax.special import _float_operands
from tracejit.ops.control_flow_functions import while_loop
from tracejit.scipy import special as sp
from tracejit.transforms.api_ad import stop_gradient

__all__ = ["igamma_grad_a", "random_gamma_grad"]

_EPS = 2.0 ** -54
_MAXITER = 100000


def _dP_da(a, x):
    """dP/da in float64 on valid, finite, positive (a, x) (other entries are placeholders)."""
    def cond(s):
        n, t, h, S, D = s
        small = jnp.abs(t) * (1.0 + h) <= _EPS * jnp.abs(S)
        return jnp.any(~(small & (a + n > x))) & (jnp.max(n) < _MAXITER)

    def body(s):
        n, t, h, S, D = s
        n = n + 1.0
        t = t * x / (a + n)
        h = h + 1.0 / (a + n)
        return n, t, h, S + t, D - t * h

    zero = jnp.zeros_like(a)
    n, t, h, S, D = while_loop(cond, body, (zero, zero + 1.0, zero, zero + 1.0, zero))
    logC = a * jnp.log(x) - x - sp.gammaln(a + 1.0)
    C = jnp.exp(logC)
    return C * ((jnp.log(x) - sp.digamma(a + 1.0)) * S + D), logC


def _prepare(name, a, x):
    dt, (a, x) = _float_operands(name, a, x)
    a, x = jnp.broadcast_arrays(jnp.asarray(a), jnp.asarray(x))
    a64, x64 = stop_gradient(a.astype(np.float64)), stop_gradient(x.astype(np.float64))
    bad = jnp.isnan(a64) | jnp.isnan(x64) | (a64 <= 0) | (x64 < 0) | jnp.isinf(a64)
    bad = bad | jnp.isinf(x64)                   # JAX gives NaN at x == inf
    edge = x64 == 0
    ok = ~bad & ~edge
    return dt, a64, x64, bad, ok, jnp.where(ok, a64, 1.0), jnp.where(ok, x64, 1.0)


def igamma_grad_a(a, x):
    """Derivative of the regularized lower incomplete gamma function with respect to ``a``
    (``jax.lax.igamma_grad_a``).

    Parameters
    ----------
    a, x : array_like
        Floating operands of one dtype (Python scalars take it); they broadcast.

    Returns
    -------
    Array
        ``d igamma(a, x) / da``, in the operands' dtype.

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.igamma_grad_a(2.0, 3.0)
    Array(-0.19742542)
    """
    dt, a64, x64, bad, ok, a_, x_ = _prepare("igamma_grad_a", a, x)
    d, _ = _dP_da(a_, x_)
    out = jnp.where(bad, np.nan, jnp.where(ok, d, 0.0))
    return out.astype(dt)


def random_gamma_grad(a, x):
    """Derivative of a gamma sample ``x`` with respect to its shape ``a``, the CDF held fixed
    (``jax.lax.random_gamma_grad``): ``-(dP/da) / (dP/dx)`` for ``P = igamma(a, x)``.

    Parameters
    ----------
    a : array_like
        Shape parameters (floating).
    x : array_like
        Gamma samples of shape ``a``, same dtype.

    Returns
    -------
    Array
        ``dx/da``, in the operands' dtype.

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.random_gamma_grad(2.0, 3.0)
    Array(1.32179852)
    """
    dt, a64, x64, bad, ok, a_, x_ = _prepare("random_gamma_grad", a, x)
    d, _ = _dP_da(a_, x_)
    log_pdf = (a_ - 1.0) * jnp.log(x_) - x_ - sp.gammaln(a_)
    out = -d * jnp.exp(-log_pdf)
    out = jnp.where(bad, np.nan, jnp.where(ok, out, 0.0))
    return out.astype(dt)
