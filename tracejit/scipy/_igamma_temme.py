"""Temme's uniform asymptotic expansion of the regularized incomplete gamma functions for large
``a`` near the transition point ``x = a`` (DLMF 8.12), for ``tracejit.scipy._incomplete``.

With ``lambda = x / a``, ``eta`` defined by ``eta^2 / 2 = lambda - 1 - log(lambda)`` and
``sign(eta) = sign(lambda - 1)``::

    Q(a, x) = erfc(eta sqrt(a/2)) / 2 + R,    P(a, x) = erfc(-eta sqrt(a/2)) / 2 - R,
    R ~ exp(-a eta^2 / 2) / sqrt(2 pi a) * sum_k c_k(eta) a^-k,

    c_0(eta) = 1 / (lambda - 1) - 1 / eta,
    c_k(eta) = c_{k-1}'(eta) / eta + (-1)^k g_k / (lambda - 1),

where ``g_k`` are the coefficients of Stirling's series ``Gamma(z) ~ e^-z z^z sqrt(2 pi / z)
sum_k g_k z^-k``. The ``c_k`` are evaluated from their Taylor series in ``eta`` (the closed forms
cancel catastrophically near ``eta = 0``). The coefficients are computed here, exactly in
rational arithmetic, the first time they are needed (``temme_table``):

- ``mu = lambda - 1 = sum_m a_m eta^m`` solves ``mu mu' = eta (1 + mu)`` (differentiate the
  definition of eta), which gives ``a_1 = 1`` and for ``m >= 2``
  ``(m + 1) a_m = a_{m-1} - sum_{i=2}^{m-1} (m + 1 - i) a_i a_{m+1-i}``;
- ``c_0 = (eta / mu - 1) / eta`` by a series reciprocal;
- writing ``1 / mu = 1 / eta + c_0``, the recursion becomes
  ``c_k = (c_{k-1}' + (-1)^k g_k) / eta + (-1)^k g_k c_0``: the bracket vanishes at ``eta = 0``
  (asserted), so ``c_k[n] = (n + 2) c_{k-1}[n + 2] + (-1)^k g_k c_0[n]``;
- ``g_k`` from ``exp`` of the series ``sum_m B_2m / (2m (2m - 1)) z^(1 - 2m)`` of
  ``log Gamma(z)`` (exact Bernoulli numbers).

Each coefficient is rounded to float64 once. ``K = 16`` terms in ``1/a`` and ``N = 24`` in
``eta`` were chosen by measurement: for ``a >= 10`` and ``|x - a| / a <= 0.35`` the truncation
is below 2.5e-16 relative (checked against a table with ``K = 40``, ``N = 45``).

``dP/da`` (at fixed ``x``) is the exact derivative of the truncated expansion: with
``d eta / da = -(lambda - 1) / (a eta)`` and ``E = exp(-a eta^2 / 2) / sqrt(2 pi a)``,
``dP/da = E (eta/2 - (lambda-1)/eta - (lambda - 1 - eta^2/2 - 1/(2a)) S - dS/da
+ (dS/deta) (lambda-1) / (a eta))``, ``S = sum_k c_k(eta) a^-k``.
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

import tracejit.numpy as jnp
from tracejit.scipy._common import _bernoulli

TEMME_K = 16            # c_0 .. c_K
TEMME_N = 24            # Taylor terms of each c_k in eta
# Region: a > TEMME_MIN_A and |x - a| < TEMME_MAX_T * a (chosen against mpmath, see
# tests/test_gammainc_large_a.py). There the series / continued fraction need ~sqrt(74 a) steps
# (they stopped at their 1e5-step cap from a ~ 1.4e8 on: gammainc(1e10, 1e10) was 0.341) and lost
# up to ~40 eps (1 + y^2) (y^2 = a (lambda - 1 - log lambda)) from a ~ 10 on; the expansion stays
# within 3 eps (1 + y^2) (the error inherent in exp(-y^2) from rounded operands). Beyond
# |x - a| = 0.3 a the loops take < 100 steps, and for a > 2e4 the smaller of P, Q underflows.
TEMME_MIN_A = 10.0
TEMME_MAX_T = 0.3


def _mu_series(M):
    """[0, a_1, ..., a_M]: lambda - 1 = sum_m a_m eta^m (exact)."""
    a = [Fraction(0), Fraction(1)]
    for m in range(2, M + 1):
        s = sum(((m + 1 - i) * a[i] * a[m + 1 - i] for i in range(2, m)), Fraction(0))
        a.append((a[m - 1] - s) / (m + 1))
    return a


def _stirling_g(K):
    """g_0 .. g_K of Stirling's series for Gamma (g_1 = 1/12, g_2 = 1/288, ...), exact."""
    B = _bernoulli(2 * K + 2)
    L = [Fraction(0)] * (K + 1)                   # log Gamma* = sum_j L_j z^-j
    for m in range(1, K // 2 + 2):
        if 2 * m - 1 <= K:
            L[2 * m - 1] = B[2 * m] / (2 * m * (2 * m - 1))
    g = [Fraction(1)]                             # g = exp(L): n g_n = sum_j j L_j g_{n-j}
    for n in range(1, K + 1):
        g.append(sum((j * L[j] * g[n - j] for j in range(1, n + 1)), Fraction(0)) / n)
    return g


def temme_coefficients(K=TEMME_K, N=TEMME_N):
    """Exact Taylor coefficients d[k][n] (k <= K, n < N): c_k(eta) = sum_n d[k][n] eta^n."""
    M = N + 2 * K + 2
    b = _mu_series(M + 1)[1:]                     # mu / eta = sum_n b_n eta^n, b_0 = 1
    r = [Fraction(1)]                             # eta / mu
    for n in range(1, M + 1):
        r.append(-sum((b[j] * r[n - j] for j in range(1, n + 1)), Fraction(0)))
    c0 = r[1:]                                    # (eta / mu - 1) / eta
    g = _stirling_g(K)
    rows = [c0]
    for k in range(1, K + 1):
        prev = rows[-1]
        sg = (-1) ** k * g[k]
        if prev[1] != -sg:                        # c_{k-1}'(0) + (-1)^k g_k must vanish
            raise AssertionError(f"Temme recursion: pole at eta = 0 does not cancel (k = {k})")
        rows.append([(n + 2) * prev[n + 2] + sg * c0[n] for n in range(len(prev) - 2)])
    return [row[:N] for row in rows]


@functools.lru_cache(maxsize=None)
def temme_table():
    """(D, D') as float64 arrays of shape (K + 1, N): coefficients of c_k and of c_k'."""
    exact = temme_coefficients()
    D = np.array([[float(v) for v in row] for row in exact])
    Dp = np.zeros_like(D)
    Dp[:, :-1] = D[:, 1:] * np.arange(1, D.shape[1])
    return D, Dp


def in_temme_region(a, x):
    return (a > TEMME_MIN_A) & (jnp.abs(x - a) < TEMME_MAX_T * a)


def _eta(t):
    """(eta, 1/sqrt(h)) for |t| <= 0.35, t = lambda - 1, with eta = t sqrt(h),
    h = 2 (t - log1p(t)) / t^2 (no t^2 is formed: eta keeps full precision for t ~ 1e-200).
    With u = t / (2 + t): t - log1p(t) = 2u^2/(1-u) - 2u^3 sum_{j>=1} u^(2j-2) / (2j+1), so
    h = (1 - u) - u (1 - u)^2 sum_{j>=1} u^(2j-2) / (2j+1)."""
    u = t / (2.0 + t)
    u2 = u * u
    s = jnp.zeros_like(u)
    for j in range(16, 0, -1):                    # |u| <= 0.18: u^32 / 33 < 1e-25
        s = s * u2 + 1.0 / (2 * j + 1)
    om = 1.0 - u
    h = om - u * om * om * s
    return t * jnp.sqrt(h), 1.0 / jnp.sqrt(h)


def temme_parts(a, x):
    """(P, Q, dP/da, g) in the Temme region (callers pass safe values, e.g. a = 100, x = a,
    elsewhere), with dP/da = prefix * g, prefix = x^a e^-x / Gamma(a)."""
    from tracejit.scipy import special as sp
    D, Dp = temme_table()
    K = D.shape[0] - 1
    t = (x - a) / a                               # x - a is exact for x / a in [1/2, 2]
    eta, rsh = _eta(t)                            # rsh = (lambda - 1) / eta
    e1 = eta[..., None]
    C = jnp.zeros_like(e1) + D[:, -1]             # shape (..., K + 1)
    dC = jnp.zeros_like(C)
    for n in range(D.shape[1] - 2, -1, -1):
        C = C * e1 + D[:, n]
        dC = dC * e1 + Dp[:, n]
    ia = 1.0 / a
    kk = np.arange(K + 1, dtype=np.float64)
    w = jnp.power(ia[..., None], kk)              # a^-k
    S = jnp.sum(C * w, axis=-1)
    dS_deta = jnp.sum(dC * w, axis=-1)
    dS_da = -ia * jnp.sum(C * (w * kk), axis=-1)
    y = jnp.abs(eta) * jnp.sqrt(0.5 * a)
    ey = sp._exp_neg_sq(y)                        # exp(-a eta^2 / 2), y^2 split exactly
    E = ey / (math.sqrt(2.0 * math.pi) * jnp.sqrt(a))   # 2 pi a overflows for a > 2.8e307
    R = E * S
    half_erfc = 0.5 * sp._erfc64(y)
    neg = eta < 0
    small = jnp.where(neg, half_erfc - R, half_erfc + R)     # the smaller of P and Q
    P = jnp.where(neg, small, 1.0 - small)
    Q = jnp.where(neg, 1.0 - small, small)
    bracket = (0.5 * eta - rsh - (t - 0.5 * eta * eta - 0.5 * ia) * S - dS_da
               + dS_deta * rsh * ia)
    dPa = E * bracket
    # E / prefix = e^{stirling(a)} / a (prefix = e^{-a eta^2/2} sqrt(a / (2 pi)) / e^{stirling})
    g = bracket * jnp.exp(sp._stirling_correction(a)) * ia
    return P, Q, dPa, g
