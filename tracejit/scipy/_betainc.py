"""The regularized incomplete beta function ``I_x(a, b)`` for ``tracejit.scipy.special.betainc``.

Three methods, chosen per element:

- The continued fraction (modified Lentz for the value; the forward recurrence carrying the
  derivatives in ``a`` and ``b``), with the symmetry ``I_x(a, b) = 1 - I_{1-x}(b, a)``; for b < 1
  above the mean, where that subtraction cancelled (up to ~11,000 eps), a series of one-signed
  terms for the complement (``_small_b_upper``). Its prefactor takes ``x^a`` from ``pow`` and,
  for a, b >= 10, Stirling's form: measured against mpmath for a, b in [1e-3, 100] (8,000 random
  points, x uniform, near 0, near 1 and near the mean): at most 93 eps (SciPy: 115); 58 eps where
  min(a, b) < 10 or I > 1e-8, more only in the tails of a, b >= 10, where |log I| and
  |log B(a, b)| (~100) are rounded. The fraction needs about sqrt(a + b) steps near the mean
  ``a / (a + b)`` and forms its prefactor ``x^a (1-x)^b / B(a, b)`` from terms of size ~a: from
  a ~ 1e4 it lost accuracy (2,000 eps at a = b = 1e4), at a = b = 1e10 it stopped at its step
  cap (0.50078 for 0.5) and at 1e15 it returned 56.5.
- For ``a, b >= 100``: quadrature in the standardized variable ``v = (t - x0) / sigma``
  (``x0 = a / (a + b)``, ``sigma^2 = a b / (a + b)^3``), where the beta density is
  ``exp(E(v) - C) / sqrt(2 pi) / ((1 + r1)(1 + r2))`` with ``r1 = sigma v / x0``,
  ``r2 = -sigma v / (1 - x0)``, ``E = a log1pmx(r1) + b log1pmx(r2)`` (the linear terms cancel
  exactly) and ``C`` the Stirling corrections of ``B(a, b)``: no term of size ~a is formed. The
  smaller tail (below x if x is under the mean, above it otherwise) is integrated with the
  exp-sinh rule (186 fixed nodes, step 1/32) in ``w = lambda |v - v_x|``, where ``lambda`` is the
  density's logarithmic decay rate at ``x``. ``x - x0`` is formed from ``x (a + b) - a`` with
  error-free sums and products (Dekker), since ``x0`` rounded would shift ``v`` by
  ``eps sqrt(a + b)``. The derivatives in ``a`` and ``b`` are the same quadrature weighted by
  ``d log(density) / da = log1p(r1) + (log a - digamma(a)) - (log n - digamma(n))``.
  Measured against mpmath (quadrature at 40 + log10(a + b) digits) for a, b from 100 to 1e300
  within 5 sigma of the mean: at most 24 eps relative.
- For one parameter p < 100 and the other q >= 100 (the density is nearly a gamma density; the
  continued fraction was off by 1e-5 at (20, 1e12), gave -3.5e270 at (99, 1e30), NaN at
  (5, 1e300)): below the mean a series of positive terms, above it an exp-sinh quadrature in
  log t (``_gamma_like``). Measured against mpmath: at most 61 eps relative for p in [1e-3, 100),
  q up to 1e300, from 4 standard deviations below the mean to 10 above.
"""
from __future__ import annotations

import math

import numpy as np

import tracejit.numpy as jnp
from tracejit.scipy._common import finish, promote_args_inexact
from tracejit.scipy._common import log1pmx, tangent_sum, two_sum
from tracejit.scipy._incomplete import _EPS, _TINY, _iterate, _sp, _where
from tracejit.transforms.api_ad import custom_jvp
from tracejit.transforms.symbolic_zeros import SymbolicZero

# ---------------------------------------------------------------------------- large a and b

_QUAD_MIN_PARAM = 100.0
_STEP = 1.0 / 32
_TAU = np.arange(-128, 58) * _STEP                      # nodes from w = 2e-19 to w = 90
_NODE = np.exp(0.5 * np.pi * np.sinh(_TAU))
_WEIGHT = _STEP * 0.5 * np.pi * np.cosh(_TAU) * _NODE
_VELTKAMP = 134217729.0                                  # 2^27 + 1


def _two_prod(a, b):
    """(p, e) with p + e == a * b exactly (Dekker; |a|, |b| < 1e300)."""
    p = a * b

    def split(v):
        c = _VELTKAMP * v
        hi = c - (c - v)
        return hi, v - hi
    ah, al = split(a)
    bh, bl = split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _in_quadrature_region(a, b):
    return (jnp.minimum(a, b) >= _QUAD_MIN_PARAM) & jnp.isfinite(a + b)


def _quadrature(a, b, x, derivs=True):
    """(I, dI/da, dI/db) for a, b >= 100, 0 < x < 1 (the derivatives 0 unless ``derivs``)."""
    sp = _sp()
    n, n_err = two_sum(a, b)
    # x n - a, exactly up to the final roundings; scaled by a power of two (exact) so that the
    # product's splitting cannot overflow
    scale = _where(n > 1e250, 2.0 ** -600, 1.0)
    p, q = _two_prod(x, n * scale)
    u = (((p - a * scale) + q) + x * (n_err * scale)) / (n * scale)     # x - a / (a + b)
    x0 = a / n
    y0 = b / n
    sigma = jnp.sqrt(x0) * jnp.sqrt(y0) / jnp.sqrt(n)
    vx = u / sigma
    lower = vx <= 0.0
    side = _where(lower, -1.0, 1.0)
    # decay rate of log(density) per unit v at x, going away from the mean (>= 1)
    rate = jnp.maximum(-side * sigma * ((a - 1.0) / x - (b - 1.0) / (1.0 - x)), 1.0)
    node = jnp.asarray(_NODE)
    dv = (side / rate)[..., None] * node                 # v - v_x at the nodes
    r1 = (u[..., None] + sigma[..., None] * dv) / x0[..., None]
    r2 = -(u[..., None] + sigma[..., None] * dv) / y0[..., None]
    inside = (r1 > -1.0) & (r2 > -1.0)
    r1 = _where(inside, r1, 0.0)
    r2 = _where(inside, r2, 0.0)
    stirling = sp._stirling_correction
    c = stirling(a) + stirling(b) - stirling(n)
    e = a[..., None] * log1pmx(r1) + b[..., None] * log1pmx(r2) - c[..., None]
    dens = _where(inside, jnp.exp(e) / ((1.0 + r1) * (1.0 + r2)), 0.0)
    dens = dens * (jnp.asarray(_WEIGHT) / math.sqrt(2.0 * math.pi))
    tail = jnp.sum(dens, axis=-1) / rate
    value = _where(lower, tail, 1.0 - tail)
    if not derivs:
        zero = jnp.zeros_like(value)
        return value, zero, zero
    # d log(density) / da = log t - digamma(a) + digamma(n), t = x0 (1 + r1), log x0 = log a - log n
    lmd_n = sp._log_minus_digamma(n, n)
    score_a = jnp.log1p(r1) + (sp._log_minus_digamma(a, a) - lmd_n)[..., None]
    score_b = jnp.log1p(r2) + (sp._log_minus_digamma(b, b) - lmd_n)[..., None]
    tail_a = jnp.sum(dens * score_a, axis=-1) / rate
    tail_b = jnp.sum(dens * score_b, axis=-1) / rate
    return value, _where(lower, tail_a, -tail_a), _where(lower, tail_b, -tail_b)


def _quadrature_lanes(a, b, x, ok, derivs=True):
    """(mask, I, dI/da, dI/db): the elements the quadrature computes, with its values there."""
    quad = ok & _in_quadrature_region(a, b)
    return (quad,) + _quadrature(_where(quad, a, 100.0), _where(quad, b, 100.0), _where(quad, x, 0.5), derivs)


# ---------------------------------------------------------------------------- one small, one large

def _small_large_region(a, b):
    lo = jnp.minimum(a, b)
    hi = jnp.maximum(a, b)
    return (lo < _QUAD_MIN_PARAM) & (hi >= _QUAD_MIN_PARAM) & jnp.isfinite(hi)


def _gamma_like(p, q, z, derivs):
    """(P, Q, dP/dp, dP/dq) of I_z(p, q) for p < 100 <= q, 0 < z < 1 (the beta density is close to
    a gamma density in q z): the smaller-looking tail directly, the other as 1 minus it.

    - At or below the mean (z (p + q) <= p): P = z^p (1-z)^q / (p B(p, q)) 2F1(p + q, 1; p + 1; z),
      a series of positive terms (about p + a few sqrt(p) of them);
    - above it: Q = z^p (1-z)^(q-1) / B(p, q) int_0^inf exp(p d + (q - 1) log(1 - z expm1(d)/(1 - z))) dd
      (t = z e^d), by the exp-sinh rule: the density's branch point at t = 0 is at d = -inf.
    The prefactor avoids terms of size p log q: betaln(p, q) = lgamma(p) - p log q + D with
    D = -q log1pmx(p/q) - (p - 1/2) log1p(p/q) + stirling(q) - stirling(p + q)."""
    sp = _sp()
    lmd = sp._log_minus_digamma
    stirling = sp._stirling_correction
    n = p + q
    r = p / q
    below = z * n <= p
    log1m = jnp.log1p(-z)
    d_corr = -q * log1pmx(r) - (p - 0.5) * jnp.log1p(r) + stirling(q) - stirling(n)
    lgamma1p = _where(p <= 1.0, sp._lgamma1p(jnp.minimum(p, 1.0)), sp._lgamma64(jnp.maximum(p, 1.0) + 1.0))
    direct = p * jnp.log(q * z) + q * log1m - lgamma1p
    # for p >= 10 the three terms (each ~p log p) are recombined with Stirling's formula, with
    # q z = p (1 + tau): p log1pmx(tau) + q log1pmx(-z) - log(2 pi p) / 2 - stirling(p)
    p_big = jnp.maximum(p, 10.0)
    tau = (q * z - p_big) / p_big
    stirling_form = (p_big * log1pmx(tau) + q * log1pmx(-z) - 0.5 * jnp.log(2.0 * math.pi * p_big)
                     - stirling(p_big))
    log_pre = _where(p >= 10.0, stirling_form, direct) - d_corr          # log z^p (1-z)^q / (p B)
    lmd_n = lmd(n, n)
    dlog_q = log1m + jnp.log1p(r) - lmd_n + lmd(q, q)                    # d log(pre) / dq
    log_zn = jnp.log(z * n)

    # the series (lanes above the mean are parked at z = 0: they converge at once)
    zs = _where(below, z, 0.0)
    one = jnp.ones_like(z)
    zero = jnp.zeros_like(z)

    def step(k, c):
        # (the value's arithmetic is the same with and without the derivative sums)
        total, term = c[:2]
        term = term * (n + k - 1.0) * zs / (p + k)
        if not derivs:
            return total + term, term
        total_p, total_q, h_p, h_q = c[2:]
        h_q = h_q + 1.0 / (n + k - 1.0)
        h_p = h_p + (1.0 / (n + k - 1.0) - 1.0 / (p + k))
        return total + term, term, total_p + term * h_p, total_q + term * h_q, h_p, h_q
    series = _iterate(step, lambda new, old: new[1] <= _EPS * new[0],
                      (one, one, zero, zero, zero, zero) if derivs else (one, one))
    total = series[0]
    p_series = jnp.exp(log_pre) * total

    # the quadrature of the upper tail
    rate = (q - 1.0) * z / (1.0 - z) - p                  # decay rate at d = 0
    log_qz = jnp.abs(jnp.log(q * z))
    lam = jnp.maximum(rate, 1.0 / (1.0 + log_qz))          # below q z ~ 1 the density is flat first
    d = jnp.minimum(jnp.asarray(_NODE) / lam[..., None], 700.0)
    arg = -(z / (1.0 - z))[..., None] * jnp.expm1(d)
    inside = arg > -1.0
    log_ratio = jnp.log1p(_where(inside, arg, 0.0))
    # (unused lanes below the mean can rise: capped so that they raise no overflow)
    expo = jnp.minimum(p[..., None] * d + (q - 1.0)[..., None] * log_ratio, 700.0)
    integrand = _where(inside, jnp.exp(_where(inside, expo, 0.0)), 0.0)
    integrand = integrand * jnp.asarray(_WEIGHT)
    pre_q = jnp.exp(log_pre + jnp.log(p) - log1m)
    q_quad = pre_q * jnp.sum(integrand, axis=-1) / lam
    if derivs:
        total_p, total_q = series[2:4]
        dp_series = p_series * (log_zn - lmd_n - sp._digamma64(p + 1.0) + total_p / total)
        dq_series = p_series * (dlog_q + total_q / total)
        dq_quad_p = q_quad * (log_zn - lmd_n - sp._digamma64(p)) + pre_q * jnp.sum(integrand * d, axis=-1) / lam
        dq_quad_q = q_quad * dlog_q + pre_q * jnp.sum(integrand * log_ratio, axis=-1) / lam
    else:
        dp_series = dq_series = dq_quad_p = dq_quad_q = zero
    return (_where(below, p_series, 1.0 - q_quad), _where(below, 1.0 - p_series, q_quad),
            _where(below, dp_series, -dq_quad_p), _where(below, dq_series, -dq_quad_q))


def _small_large_lanes(a, b, x, ok, derivs=True):
    """(mask, I, dI/da, dI/db) where one parameter is under 100 and the other at least 100: the
    continued fraction is inaccurate there (betainc(20, 1e12, x) off by 1e-5 near the mean,
    betainc(99, 1e30, x) 3.8e32 or -inf). With b the small one, I_x(a, b) = 1 - I_{1-x}(b, a)."""
    sl = ok & _small_large_region(a, b)
    mirror = b < a
    p = _where(sl, _where(mirror, b, a), 1.0)
    q = _where(sl, _where(mirror, a, b), 200.0)
    z = _where(sl, _where(mirror, 1.0 - x, x), 0.5)
    lower, upper, d_p, d_q = _gamma_like(p, q, z, derivs)
    return (sl, _where(mirror, upper, lower), _where(mirror, -d_q, d_p), _where(mirror, -d_p, d_q))


# ---------------------------------------------------------------------------- continued fraction

def _betacf(a, b, x):
    """Continued fraction of I_x(a, b) (modified Lentz), valid for x < (a+1)/(a+b+2)."""
    qab = a + b
    qap = a + 1.0
    qam = a - 1.0
    one = jnp.ones_like(x)
    d0 = 1.0 - qab * x / qap
    d0 = _where(jnp.abs(d0) < _TINY, _TINY, d0)
    d0 = 1.0 / d0
    init = (one, d0, d0, 2.0 * one)

    def fix(v):
        return _where(jnp.abs(v) < _TINY, _TINY, v)

    def step(m, c):
        cc, d, h, _ = c
        m2 = 2.0 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 / fix(1.0 + aa * d)
        cc = fix(1.0 + aa / cc)
        h = h * d * cc
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 / fix(1.0 + aa * d)
        cc = fix(1.0 + aa / cc)
        delta = d * cc
        return cc, d, h * delta, delta
    return _iterate(step, lambda new, old: jnp.abs(new[3] - 1.0) <= _EPS, init)[2]


def _lgamma_shift(a, b):
    """lgamma(a + b) - lgamma(a) for a > 0, 0 < b <= 1 with an absolute error of a few eps times
    the result (the difference of the two lgammas lost eps |lgamma(a)|): shifted to a' = a + k >= 10
    by lgamma(a + b) - lgamma(a) = [lgamma(a' + b) - lgamma(a')] - sum_j log1p(b / (a + j)), then
    Stirling's formula, (a' - 1/2) log1p(b / a') + b (log(a' + b) - 1) + stirling(a' + b) - stirling(a')."""
    stirling = _sp()._stirling_correction
    shift = jnp.zeros_like(a)
    total = jnp.zeros_like(a)
    for j in range(10):
        below = a + j < 10.0
        shift = shift + _where(below, 1.0, 0.0)
        total = total + _where(below, jnp.log1p(b / (a + j)), 0.0)
    a1 = a + shift
    return ((a1 - 0.5) * jnp.log1p(b / a1) + b * (jnp.log(a1 + b) - 1.0)
            + stirling(a1 + b) - stirling(a1) - total)


def _small_b_upper(a, b, x, log_x, log_1mx):
    """I_x(a, b) for b < 1 above (a + 1) / (a + b + 2), where it is O(b) and 1 - I_{1-x}(b, a)
    cancelled (betainc(17.5, 0.0026, 0.95) was 2,400 eps off). With y = 1 - x,
    I_y(b, a) = A x^a G, A = y^b / (b B(a, b)), G = 2F1(1, a + b; b + 1; y) (Euler's transform of
    2F1(b, 1 - a; b + 1; y)), and G = x^-a + D, D = sum_n (c_n - e_n) y^n with c_n = (a + b)_n / (b + 1)_n,
    e_n = (a)_n / n!: the differences d_n = c_n - e_n follow d_{n+1} = d_n (a + b + n) / (b + 1 + n)
    + e_n b (1 - a) / ((b + 1 + n)(n + 1)), all of one sign, so I = 1 - A - A x^a D =
    -expm1(log A) - A x^a D has no cancelled O(1) term. log A = b log y - lgamma1p(b)
    + [lgamma(a + b) - lgamma(a)] (``_lgamma_shift``). About 20 to 90 terms (y <= 2/3)."""
    y = 1.0 - x                       # exact for x >= 1/2; the series is insensitive to y's rounding below
    log_a = b * log_1mx - _sp()._lgamma1p(b) + _lgamma_shift(a, b)
    zero = jnp.zeros_like(x)

    def step(n, c):
        total, t, e = c
        k = n - 1.0
        t = y * (t * (a + b + k) / (b + 1.0 + k) + e * b * (1.0 - a) / ((b + 1.0 + k) * (k + 1.0)))
        e = y * e * (a + k) / (k + 1.0)
        return total + t, t, e
    # past the terms' rise (n > a y / (1 - y) <= 2 here) a term under eps of the sum ends it
    total = _iterate(step, lambda new, old: (jnp.abs(new[1]) <= _EPS * jnp.abs(new[0]))
                     & (jnp.abs(new[1]) <= jnp.abs(old[1])), (zero, zero, jnp.ones_like(x)))[0]
    return -jnp.expm1(log_a) - jnp.exp(log_a + a * log_x) * total


def _methods(a, b, x, ok, derivs):
    """Each element's method: ``(quad, small_large, cf)``, the first two ``(mask, I, dI/da, dI/db)``
    and ``cf = (swap, aa, bb, xx, log_xx, log_yy, pref)`` for the continued fraction of
    ``I_xx(aa, bb)`` (swapped to ``1 - I_{1-x}(b, a)`` above ``(a + 1) / (a + b + 2)``), whose
    other lanes are parked at (1, 1, 0.5), where it converges at once. ``pref`` is
    ``xx^aa yy^bb / B(aa, bb)``: ``xx^aa`` by ``pow`` where ``xx`` is exact (x, or 1 - x for x >= 1/2),
    as ``h (h rest)`` with ``h = xx^(aa/2)`` so that neither factor underflows (``exp(aa log xx)``
    lost eps |aa log xx|: ~400 eps in the far tails), the rest from log1p(-x) rather than the log of
    a rounded 1 - x (for x ~ 1e-14, 1 - x has lost 1% of x, and times b ~ 1e14 that was a 100%
    error)."""
    quad = _quadrature_lanes(a, b, x, ok, derivs)
    small_large = _small_large_lanes(a, b, x, ok, derivs)
    cf = ok & ~quad[0] & ~small_large[0]
    a_ = _where(cf, a, 1.0)
    b_ = _where(cf, b, 1.0)
    x_ = _where(cf, x, 0.5)
    swap = x_ > (a_ + 1.0) / (a_ + b_ + 2.0)
    aa = _where(swap, b_, a_)
    bb = _where(swap, a_, b_)
    xx = _where(swap, 1.0 - x_, x_)
    log_x = jnp.log(x_)
    log_1mx = jnp.log1p(-x_)
    log_xx = _where(swap, log_1mx, log_x)
    log_yy = _where(swap, log_x, log_1mx)
    half = 0.5 * aa
    h = _where(swap & (x_ < 0.5), jnp.exp(half * log_xx), jnp.power(xx, half))
    rest = bb * log_yy - _sp()._betaln64(aa, bb)
    pref = h * (h * jnp.exp(rest))
    # both >= 10: Stirling's form, sqrt(aa bb / (2 pi n)) exp(E + stirling(n) - stirling(aa) -
    # stirling(bb)), E = aa log1pmx(t / aa) + bb log1pmx(-t / bb), t = xx n - aa (error-free
    # products): E is small near the mean, where |rest| ~ |betaln| (up to 138) was the error
    big = (aa >= 10.0) & (bb >= 10.0)
    ab = _where(big, aa, 10.0)
    bs = _where(big, bb, 10.0)
    xs = _where(big, xx, 0.5)
    n, n_err = two_sum(ab, bs)
    hi, lo = _two_prod(xs, n)
    t = ((hi - ab) + lo) + xs * n_err
    stirling = _sp()._stirling_correction
    e = (ab * log1pmx(jnp.maximum(t / ab, -1.0)) + bs * log1pmx(jnp.maximum(-t / bs, -1.0))
         + (stirling(n) - stirling(ab) - stirling(bs)))
    stirling_pref = jnp.sqrt(ab * bs / (2.0 * math.pi * n)) * jnp.exp(e)
    pref = _where(big & (jnp.abs(e) < jnp.abs(rest) + jnp.abs(bb * log_yy)), stirling_pref, pref)
    return quad, small_large, (swap, aa, bb, xx, log_xx, log_yy, pref), (a_, b_, x_, log_x, log_1mx)


def _domain(a, b, x):
    return (a <= 0) | (b <= 0) | (x < 0) | (x > 1) | jnp.isnan(a) | jnp.isnan(b) | jnp.isnan(x)


def _betainc64(a, b, x):
    bad = _domain(a, b, x)
    ok = ~bad & (x > 0) & (x < 1)
    quad, small_large, (swap, aa, bb, xx, _, _, pref), (a_, b_, x_, log_x, log_1mx) = _methods(
        a, b, x, ok, derivs=False)
    val = pref * _betacf(aa, bb, xx) / aa
    # b < 1 above the mean: I is O(b), evaluated directly rather than as 1 - I_{1-x}(b, a)
    small_b = swap & (b_ < 1.0)
    sb = _small_b_upper(_where(small_b, a_, 1.0), _where(small_b, b_, 0.5), _where(small_b, x_, 0.5),
                        _where(small_b, log_x, -0.6931471805599453), _where(small_b, log_1mx, -0.6931471805599453))
    val = _where(small_b, sb, _where(swap, 1.0 - val, val))
    val = _where(quad[0], quad[1], _where(small_large[0], small_large[1], val))
    out = _where(x == 0, 0.0, _where(x == 1, 1.0, val))
    return _where(bad, np.nan, out)


@custom_jvp
def _betainc_cj(a, b, x):
    return _betainc64(a, b, x)


def _betacf_with_derivs(a, b, x):
    """(K, dK/da, dK/db) of the continued fraction K = 1/(1 + d1/(1 + d2/(1 + ...))) of I_x(a, b)
    by the forward recurrence A_n = A_{n-1} + d_{n-1} A_{n-2} (same for B), carrying the a- and
    b-derivatives of A and B and rescaling by |B_n| every step."""
    one = jnp.ones_like(x)
    zero = jnp.zeros_like(x)

    def apply(c, d, dda, ddb):
        Am, A, Bm, B, dAam, dAa, dBam, dBa, dAbm, dAb, dBbm, dBb = c
        An = A + d * Am
        Bn = B + d * Bm
        dAan = dAa + dda * Am + d * dAam
        dBan = dBa + dda * Bm + d * dBam
        dAbn = dAb + ddb * Am + d * dAbm
        dBbn = dBb + ddb * Bm + d * dBbm
        sc = 1.0 / jnp.where(Bn == 0, 1.0, jnp.abs(Bn))
        return (A * sc, An * sc, B * sc, Bn * sc, dAa * sc, dAan * sc, dBa * sc, dBan * sc,
                dAb * sc, dAbn * sc, dBb * sc, dBbn * sc)

    def step(m, c):
        c = c[:12]
        # odd term d_{2m-1} = -(a+m-1)(a+b+m-1) x / ((a+2m-2)(a+2m-1))
        p, q = a + 2.0 * m - 2.0, a + 2.0 * m - 1.0
        num = -(a + m - 1.0) * (a + b + m - 1.0) * x
        d = num / (p * q)
        dda = -((a + b + m - 1.0) + (a + m - 1.0)) * x / (p * q) - d * (1.0 / p + 1.0 / q)
        ddb = -(a + m - 1.0) * x / (p * q)
        c = apply(c, d, dda, ddb)
        # even term d_{2m} = m (b - m) x / ((a+2m-1)(a+2m))
        p, q = a + 2.0 * m - 1.0, a + 2.0 * m
        d = m * (b - m) * x / (p * q)
        dda = -d * (1.0 / p + 1.0 / q)
        ddb = m * x / (p * q)
        c = apply(c, d, dda, ddb)
        _, A, _, B, _, dAa, _, dBa, _, dAb, _, dBb = c
        return c + (A / B, (dAa * B - A * dBa) / (B * B), (dAb * B - A * dBb) / (B * B))

    def converged(new, old):
        # K and both derivatives: where the fraction terminates (a whole-number second
        # parameter) K converges at once while its derivatives do not (d/db was 9e-4 off at
        # a = b = 1, x = 0.5)
        done = None
        for k in (12, 13, 14):
            ok = jnp.abs(new[k] - old[k]) <= _EPS * jnp.abs(new[k])
            done = ok if done is None else done & ok
        return done
    # after n = 1: A_0 = 0, A_1 = 1, B_0 = 1, B_1 = 1 (K ~ 1/1)
    init = (zero, one, one, one) + (zero,) * 8 + (one, zero, zero)
    out = _iterate(step, converged, init)
    return out[12], out[13], out[14]


def _betainc_grads(a, b, x):
    """(dI/da, dI/db) for a, b > 0, 0 < x < 1 (other elements: 0, NaN in the domain errors)."""
    sp = _sp()
    bad = _domain(a, b, x)
    ok = ~bad & (x > 0) & (x < 1)
    quad, small_large, (swap, aa, bb, xx, log_xx, log_yy, pref), _ = _methods(a, b, x, ok, derivs=True)
    K, dKa, dKb = _betacf_with_derivs(aa, bb, xx)
    pref = pref / aa
    dab = sp._digamma64(aa + bb)
    dlp_a = log_xx - (sp._digamma64(aa) - dab) - 1.0 / aa
    dlp_b = log_yy - (sp._digamma64(bb) - dab)
    ga = pref * (K * dlp_a + dKa)            # d/d(first parameter) of the evaluated I
    gb = pref * (K * dlp_b + dKb)
    # I_x(a, b) = 1 - I_{1-x}(b, a) when swapped
    da = _where(quad[0], quad[2], _where(small_large[0], small_large[2], _where(swap, -gb, ga)))
    db = _where(quad[0], quad[3], _where(small_large[0], small_large[3], _where(swap, -ga, gb)))
    da = _where(ok, da, _where(bad, np.nan, 0.0))
    db = _where(ok, db, _where(bad, np.nan, 0.0))
    return da, db


def _betainc_jvp(primals, tangents):
    """Symbolic zeros: differentiating in x alone (stats' pdf-like uses, grad in x) builds none of
    the a-, b-derivative machinery (the continued fraction's derivative recurrence, the
    quadratures' and series' derivative sums), which was most of jit(grad(betainc))'s compile time."""
    a, b, x = primals
    ta, tb, tx = tangents
    terms = []
    if not isinstance(tx, SymbolicZero):
        sp = _sp()
        inside = (x > 0) & (x < 1)
        xs = _where(inside, x, 0.5)
        dx = jnp.exp((a - 1.0) * jnp.log(xs) + (b - 1.0) * jnp.log1p(-xs) - sp._betaln64(a, b))
        terms.append(tx * _where(inside, dx, 0.0))
    if not (isinstance(ta, SymbolicZero) and isinstance(tb, SymbolicZero)):
        da, db = _betainc_grads(a, b, x)
        terms += [t * d for t, d in ((ta, da), (tb, db)) if not isinstance(t, SymbolicZero)]
    out = _betainc_cj(a, b, x)
    return out, tangent_sum(terms, out)


_betainc_cj.defjvp(_betainc_jvp, symbolic_zeros=True)


def betainc(a, b, x):
    """Regularized incomplete beta function ``I_x(a, b)`` (``jax.scipy.special.betainc``).

    Continued fraction (with the symmetry ``I_x(a, b) = 1 - I_{1-x}(b, a)``), and for
    ``a, b >= 100`` a quadrature of the standardized density, and where one parameter is under
    100 and the other not, a series or a quadrature in ``log t`` (accurate up to ~1e300);
    NaN for ``a <= 0``, ``b <= 0`` or ``x`` outside [0, 1]. Differentiable in ``x``
    (closed form) and in ``a`` and ``b`` (derivatives carried through the continued
    fraction's recurrence; JAX raises for these).

    Examples
    --------
    >>> from tracejit.scipy.special import betainc
    >>> float(betainc(1.0, 1.0, 0.25))
    0.25
    """
    dt, (a, b, x) = promote_args_inexact(a, b, x)
    a, b, x = jnp.broadcast_arrays(a, b, x)
    return finish(_betainc_cj(a, b, x), dt)
