"""Incomplete gamma functions, exponential integrals and hypergeometric functions for ``tracejit.scipy.special`` (the incomplete beta function is in ``_betainc.py``).

Each is a power series or a continued fraction iterated in one
``lax.while_loop`` over the whole (broadcast) array until every element has
converged, so it works eagerly, under ``jit`` and ``vmap``. Derivatives come
from ``custom_jvp`` rules: analytic in ``x``; for ``gammainc``/``gammaincc``
also in ``a`` (the loops carry the derivative of their terms, as JAX's
``igamma_grad_a``).
"""
from __future__ import annotations

import math

import numpy as np

import tracejit.numpy as jnp
from tracejit.ops.control_flow_functions import while_loop
from tracejit.transforms.api_ad import custom_jvp
from tracejit.scipy._common import finish, log1pmx, promote_args_inexact
from tracejit.scipy._igamma_temme import in_temme_region, temme_parts
from tracejit.transforms.api_ad import stop_gradient

_EPS = 2.0 ** -53
_TINY = 1e-300
_MAXITER = 4000
# The incomplete gamma loops need ~sqrt(74 a) steps near x = a (Temme's expansion covers a > 10).
_IGAMMA_MAXITER = 100000
_EULER = 0.5772156649015329


def _sp():
    from tracejit.scipy import special
    return special


def _where(c, a, b):
    return jnp.where(c, a, b)


def _iterate(step, converged, state, maxiter=_MAXITER):
    """Run ``state = step(n, state)`` (n = 1, 2, ...) elementwise until ``converged(new, old)``
    holds for every element; converged elements are frozen (iterating a continued fraction's
    recurrence past convergence only accumulates rounding)."""
    active0 = jnp.ones(jnp.shape(state[0]), dtype=bool)

    def cond(c):
        n, active, _ = c
        return (n <= maxiter) & jnp.any(active)

    def body(c):
        n, active, old = c
        new = step(n, old)
        new = tuple(_where(active, v, o) for v, o in zip(new, old))
        return n + 1.0, active & ~converged(new, old), new
    return while_loop(cond, body, (jnp.asarray(1.0), active0, tuple(state)))[2]


def _log_gamma_prefix(a, x):
    """log(x^a e^-x / Gamma(a)) for a, x > 0 (Stirling form for a >= 10: no cancellation)."""
    sp = _sp()
    big = a >= 10.0
    ab = _where(big, a, 10.0)
    xb = _where(big, x, 10.0)
    t = (xb - ab) / ab
    # a (log(x/a) - (x-a)/a): the series form near x = a, log of the exact ratio away from it
    core = _where(jnp.abs(t) < 0.3, ab * log1pmx(t), ab * jnp.log(xb / ab) + (ab - xb))
    stirling = core + 0.5 * jnp.log(ab / (2 * math.pi)) - sp._stirling_correction(ab)
    a_small = _where(big, 1.0, a)                # no overflow warnings from the unused lanes
    direct = a_small * jnp.log(x) - x - sp._lgamma64(a_small)
    return _where(big, stirling, direct)


def _igammac_small_a(a, x):
    """Q(a, x) for a < 1, x < 2 without forming 1 - P:
    Q = -expm1(a log x - lgamma(1 + a)) - x^a / Gamma(a) sum_{n>=1} (-x)^n / (n! (a + n))."""
    sp = _sp()
    lg1p = sp._lgamma1p(a)
    head = -jnp.expm1(a * jnp.log(x) - lg1p)
    t = jnp.ones_like(x)
    s = jnp.zeros_like(x)
    for n in range(1, 32):
        t = t * (-x) / n
        s = s + t / (a + n)
    # x^a / Gamma(a) = a x^a / Gamma(1 + a)
    return head - a * jnp.exp(a * jnp.log(x) - lg1p) * s


def _gamma_prefix(a, x):
    return jnp.exp(_log_gamma_prefix(a, x))


def _igamma_series(a, x):
    """(S1, dS1/da) with P(a, x) = prefix * S1 / a, S1 = sum_n x^n / ((a+1) ... (a+n)).

    S1 rather than S1 / a: dP/da = prefix / a (S1 (log x - digamma(a + 1)) + dS1/da) has no
    cancellation at small a (with S1 / a, two terms of size 1/a^2 cancel)."""
    one = jnp.ones_like(x)
    zero = jnp.zeros_like(x)

    def step(n, c):
        s, t, ds, h = c
        h = h + 1.0 / (a + n)               # sum_{1<=j<=n} 1/(a+j)
        t = t * x / (a + n)
        return s + t, t, ds - t * h, h
    s, _, ds, _ = _iterate(step, lambda new, old: jnp.abs(new[1]) <= _EPS * jnp.abs(new[0]),
                           (one, one, zero, zero), maxiter=_IGAMMA_MAXITER)
    return s, ds


def _igammac_cf(a, x):
    """(F, dF/da) with Q(a, x) = prefix * F (continued fraction, forward recurrence, rescaled)."""
    one = jnp.ones_like(x)
    zero = jnp.zeros_like(x)
    # F = 1 / (b1 + a2 / (b2 + a3 / ...)), b_n = x + 2n - 1 - a, a_{n+1} = n (a - n).
    b1 = x + 1.0 - a
    # A_{-1}=1, A_0=0, B_{-1}=0, B_0=1; after n=1: A_1 = 1, B_1 = b1
    # state ends with (f, df/da, f converged); the derivative can converge later than f (for
    # integer a the fraction terminates at n = a while its derivative does not), so both are
    # tested, and f stays at the value it converged to while df goes on.
    # For x > 1e150 the recurrence runs on A_n / x^n and B_n / x^n (b_n / x, a_n / x^2, the same
    # ratios): b_n B_n is about x^2 and overflowed from x ~ 1e154. Other lanes divide by 1 (exact).
    s = _where(x > 1e150, x, 1.0)
    no = jnp.zeros(jnp.shape(x), dtype=bool)
    init = (zero, one / s, one, b1 / s, zero, zero, zero, -one / s, one / b1, one / b1 / b1, no, no)

    def step(n, c):
        Am, A, Bm, B, dAm, dA, dBm, dB, f, df, f_done, _ = c
        an = n * (a - n) / s / s
        dan = n / s / s
        bn = (x + 2.0 * n + 1.0 - a) / s
        An = bn * A + an * Am
        Bn = bn * B + an * Bm
        dAn = -A / s + bn * dA + dan * Am + an * dAm
        dBn = -B / s + bn * dB + dan * Bm + an * dBm
        scale = 1.0 / jnp.where(Bn == 0, 1.0, jnp.abs(Bn))
        As, Bs, dAs, dBs = An * scale, Bn * scale, dAn * scale, dBn * scale
        f_new = As / Bs
        # The rest of the fraction is below rounding in f and df/da once the next partial
        # numerator is: |a_{n+1}| and its a-derivative n + 1 against eps b_n b_{n+1} (~x^2). For
        # x >~ 1e16 that holds at once, while df, a difference of two products, wanders by ~1e-15
        # from step to step and never met the test below: those lanes ran all 100,000 steps
        # (gammainc(0.02, 1.8e25): 25 s eagerly).
        tail_negligible = (n + 1.0) * (jnp.abs(a) + n + 1.0) / s / s <= 0.25 * _EPS * bn * bn
        return (A * scale, As, B * scale, Bs, dA * scale, dAs, dB * scale, dBs,
                _where(f_done, f, f_new), (dAs * Bs - As * dBs) / (Bs * Bs),
                f_done | (jnp.abs(f_new - f) <= _EPS * jnp.abs(f_new)), tail_negligible)

    def converged(new, old):
        return new[11] | (new[10] & (jnp.abs(new[9] - old[9]) <= _EPS * jnp.abs(new[9])))
    out = _iterate(step, converged, init, maxiter=_IGAMMA_MAXITER)
    return out[8], out[9]


def _igamma_parts(a, x):
    """(P, Q, dP/da, g) for a > 0, 0 < x < inf (elements outside use safe values), where
    dP/da = prefix * g (prefix = x^a e^-x / Gamma(a)): g alone stays representable where the
    prefix underflows."""
    sp = _sp()
    use_series = (x < a + 1.0)
    x_ = x
    lp = _log_gamma_prefix(a, x_)
    # In the continued-fraction region F <= 1 / (x + 1 - a) <= 1, so Q = prefix * F is 0 where the
    # prefix underflows. The fraction still runs there: g = (dP/da) / prefix does not underflow
    # (random_gamma_grad(1, 800) needs it).
    cf_zero = ~use_series & (lp < -760.0)
    temme = in_temme_region(a, x)                # large a near x = a: Temme's expansion
    xs = _where(use_series & ~temme, x, 0.0)     # unused lanes converge at once
    # unused lanes at (1, 102): 7 steps (at x = 2a + 100 the first step overflowed for a > 1e154)
    park_cf = use_series | temme
    s, ds = _igamma_series(a, xs)
    f, df = _igammac_cf(_where(park_cf, 1.0, a), _where(park_cf, 102.0, x))
    pref = jnp.exp(lp)
    dlp = sp._log_minus_digamma(x_, a)
    # prefix / a = x^a e^-x / Gamma(1 + a): for a < 1 from lgamma1p, not by dividing the prefix
    # (which holds 1/Gamma(a) ~ a) by a, which for denormal a has few bits (gammainc(5e-324, 0.5)
    # was 2.0)
    a1 = _where(a < 1.0, a, 0.5)
    p_series = _where(a < 1.0, jnp.exp(a1 * jnp.log(x_) - x_ - sp._lgamma1p(a1)) * s, pref * s / a)
    q_cf = _where(cf_zero, 0.0, pref * f)
    small_a = use_series & (a < 1.0)
    q_small = _igammac_small_a(_where(small_a, a, 0.5), _where(small_a, x, 0.5))
    P = _where(use_series, p_series, 1.0 - q_cf)
    Q = _where(use_series, _where(small_a, q_small, 1.0 - p_series), q_cf)
    g_series = (s * sp._log_minus_digamma(x_, a + 1.0) + ds) / a
    g = _where(use_series, g_series, -(f * dlp + df))
    Pt, Qt, dPat, gt = temme_parts(_where(temme, a, 100.0), _where(temme, x, 100.0))
    return (_where(temme, Pt, P), _where(temme, Qt, Q), _where(temme, dPat, pref * g),
            _where(temme, gt, g))


def _igamma_domain(a, x):
    bad = (a <= 0) | (x < 0) | jnp.isnan(a) | jnp.isnan(x) | jnp.isinf(a)
    edge = (x == 0) | jnp.isinf(x)
    ok = ~bad & ~edge
    return bad, ok, _where(ok, a, 1.0), _where(ok, x, 1.0)


def _gammainc64(a, x):
    bad, ok, a_, x_ = _igamma_domain(a, x)
    P = _igamma_parts(a_, x_)[0]
    out = _where(x == 0, 0.0, _where(jnp.isinf(x), 1.0, P))
    return _where(bad, np.nan, out)


def _gammaincc64(a, x):
    bad, ok, a_, x_ = _igamma_domain(a, x)
    Q = _igamma_parts(a_, x_)[1]
    out = _where(x == 0, 1.0, _where(jnp.isinf(x), 0.0, Q))
    return _where(bad, np.nan, out)


def _scipy_limits(p, a, x, lower):
    """SciPy's values where ``lax.igamma`` (XLA's, which tracejit's lax follows) says NaN: the
    a -> 0 limit (P = 1 for x > 0) and the a -> inf limit (P = 0 for finite x)."""
    one, zero = (1.0, 0.0) if lower else (0.0, 1.0)
    p = _where((a == 0) & (x > 0), one, p)
    return _where((a == np.inf) & (x >= 0) & (x < np.inf), zero, p)


def _igamma_derivs(a, x):
    """(dP/da, dP/dx)."""
    bad, ok, a_, x_ = _igamma_domain(a, x)
    dPa = _igamma_parts(a_, x_)[2]
    dPx = jnp.exp((a_ - 1.0) * jnp.log(x_) - x_ - _sp()._lgamma64(a_))
    dPa = _where(ok, dPa, _where(bad, np.nan, 0.0))
    # at x == 0: dP/dx = x^(a-1)/Gamma(a) (inf for a < 1, 1 at a == 1, 0 above)
    at0 = _where(a < 1, np.inf, _where(a == 1, 1.0, 0.0))
    dPx = _where(ok, dPx, _where(bad, np.nan, _where(x == 0, at0, 0.0)))
    return dPa, dPx


def igamma_grad_a(a, x):
    """dP(a, x)/da with ``jax.lax.igamma_grad_a``'s conventions (0 at x = 0 for a > 0, also
    a = inf; NaN at x = inf, a <= 0, x < 0)."""
    dt, (a, x) = promote_args_inexact(a, x)
    dPa, _ = _igamma_derivs(a, x)
    dPa = _where((x == 0) & (a > 0), 0.0, dPa)                # also at a = inf, as JAX
    return finish(_where(jnp.isinf(x), np.nan, dPa), dt)


def random_gamma_grad(a, x):
    """d sample / d alpha of a Gamma(a, 1) sample ``x`` (``jax.lax.random_gamma_grad``): by implicit
    differentiation of P(a, x) = u, -(dP/da) / (dP/dx) = -x g, with dP/da = prefix g and
    dP/dx = prefix / x (no prefix: it underflows where the ratio does not)."""
    dt, (a, x) = promote_args_inexact(a, x)
    bad, ok, a_, x_ = _igamma_domain(a, x)
    out = -x_ * _igamma_parts(a_, x_)[3]
    return finish(_where(ok, out, _where((x == 0) & (a > 0), 0.0, np.nan)), dt)


@custom_jvp
def _gammainc_cj(a, x):
    return _gammainc64(a, x)


@_gammainc_cj.defjvp
def _gammainc_jvp(primals, tangents):
    a, x = primals
    ta, tx = tangents
    dPa, dPx = _igamma_derivs(a, x)
    return _gammainc_cj(a, x), ta * dPa + tx * dPx


@custom_jvp
def _gammaincc_cj(a, x):
    return _gammaincc64(a, x)


@_gammaincc_cj.defjvp
def _gammaincc_jvp(primals, tangents):
    a, x = primals
    ta, tx = tangents
    dPa, dPx = _igamma_derivs(a, x)
    return _gammaincc_cj(a, x), -(ta * dPa + tx * dPx)


def gammainc(a, x):
    """Regularized lower incomplete gamma function ``P(a, x)`` (``jax.scipy.special.gammainc``).

    Parameters
    ----------
    a : array_like
        Non-negative shape parameter (``P(0, x) = 1`` for ``x > 0``; NaN for ``a < 0``).
    x : array_like
        Non-negative argument (NaN for ``x < 0``).

    Notes
    -----
    Temme's uniform asymptotic expansion (DLMF 8.12) for ``a > 10``, ``|x - a| < 0.3 a``
    (fixed cost for any ``a``); elsewhere a power series for ``x < a + 1``, a continued
    fraction otherwise, the prefactor ``x^a e^-x / Gamma(a)`` from Stirling's series for
    ``a >= 10``. Differentiable in ``a`` and ``x``. Against mpmath: ~1e-14 relative (a few
    1e-13 where the result underflows towards 1e-300); in Temme's region within
    ``3 eps (1 + y^2)``, ``y^2 = a (x/a - 1 - log(x/a))`` (inherent in ``exp(-y^2)``).

    Examples
    --------
    >>> from tracejit.scipy.special import gammainc
    >>> float(gammainc(1.0, 2.0))  # 1 - exp(-2)
    0.8646647167633873
    """
    return _regularized_gamma(a, x, lower=True, scipy_limits=True)


def gammaincc(a, x):
    """Regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)`` (``jax.scipy.special.gammaincc``).

    Examples
    --------
    >>> from tracejit.scipy.special import gammaincc
    >>> float(gammaincc(1.0, 2.0))  # exp(-2)
    0.1353352832366127
    """
    return _regularized_gamma(a, x, lower=False, scipy_limits=True)


def igamma(a, x):
    """``P(a, x)`` without SciPy's limits at ``a = 0`` and ``a = inf`` (NaN there): what
    ``lax.igamma`` builds on, setting XLA's values at those edges itself.

    Examples
    --------
    >>> import numpy as np
    >>> float(igamma(0.0, 2.0)), float(gammainc(0.0, 2.0))
    (nan, 1.0)
    """
    return _regularized_gamma(a, x, lower=True, scipy_limits=False)


def igammac(a, x):
    """``Q(a, x)`` without SciPy's limits at ``a = 0`` and ``a = inf``: ``lax.igammac``'s base.

    Examples
    --------
    >>> float(igammac(np.inf, 2.0)), float(gammaincc(np.inf, 2.0))
    (nan, 1.0)
    """
    return _regularized_gamma(a, x, lower=False, scipy_limits=False)


def _regularized_gamma(a, x, lower, scipy_limits):
    dt, (a, x) = promote_args_inexact(a, x)
    a, x = jnp.broadcast_arrays(a, x)
    p = _gammainc_cj(a, x) if lower else _gammaincc_cj(a, x)
    return finish(_scipy_limits(p, a, x, lower) if scipy_limits else p, dt)


# ---------------------------------------------------------------------------- exponential integrals

def _e1_pos(x):
    """E1(x) for x > 0: alternating series below 1, continued fraction above."""
    small = x <= 1.0
    xs = _where(small, x, 1.0)
    # E1 = -gamma - log x - sum_{k>=1} (-x)^k / (k k!)
    t = jnp.ones_like(xs)
    s = jnp.zeros_like(xs)
    for k in range(1, 26):
        t = t * (-xs) / k
        s = s + t / k
    ser = -_EULER - jnp.log(xs) - s
    xl = _where(small, 2.0, x)
    xl = _where(jnp.isinf(xl), 2.0, xl)
    # e^x E1(x) = 1/(x + 1 - 1/(x + 3 - 4/(x + 5 - ...))) (modified Lentz)
    b0 = xl + 1.0
    init = (jnp.full_like(xl, 1.0 / _TINY), 1.0 / b0, 1.0 / b0, jnp.zeros_like(xl))

    def step(i, c):
        cc, d, h, _ = c
        an = -i * i
        b = xl + 1.0 + 2.0 * i
        d = 1.0 / _where(jnp.abs(an * d + b) < _TINY, _TINY, an * d + b)
        cc = b + an / cc
        cc = _where(jnp.abs(cc) < _TINY, _TINY, cc)
        delta = cc * d
        return cc, d, h * delta, delta
    h = _iterate(step, lambda new, old: jnp.abs(new[3] - 1.0) <= _EPS, init)[2]
    cf = h * jnp.exp(-xl)
    return _where(small, ser, _where(jnp.isinf(x), 0.0, cf))


def _ei_pos(x):
    """Ei(x) for x > 0: series (positive terms) up to 40, asymptotic series above."""
    small = x <= 40.0
    xs = _where(small, x, 1.0)

    def step(k, c):
        t, s = c
        t = t * xs / (k + 1.0)
        return t, s + t / (k + 1.0)
    _, s = _iterate(step, lambda new, old: new[0] <= _EPS * jnp.abs(new[1]), (xs, xs), maxiter=500)
    ser = _EULER + jnp.log(xs) + s
    xl = _where(small, 50.0, x)
    xl_f = _where(jnp.isinf(xl), 50.0, xl)
    t = jnp.ones_like(xl_f)
    acc = jnp.ones_like(xl_f)
    for k in range(1, 40):
        t = t * k / xl_f
        acc = acc + t
    asym = jnp.exp(xl_f) / xl_f * acc
    asym = _where(jnp.isinf(xl), np.inf, asym)
    return _where(small, ser, asym)


def _exp1_64(x):
    pos = x > 0
    out = _e1_pos(_where(pos, x, 1.0))
    out = _where(x == 0, np.inf, out)
    return _where((x < 0) | jnp.isnan(x), np.nan, _where(pos, out, out))


def _expi64(x):
    pos = x > 0
    xp = _where(pos, x, 1.0)
    xn = _where(x < 0, -x, 1.0)
    out = _where(pos, _ei_pos(xp), -_e1_pos(xn))
    out = _where(x == 0, -np.inf, out)
    return _where(jnp.isnan(x), x, out)


@custom_jvp
def _exp1_cj(x):
    return _exp1_64(x)


_exp1_cj.defjvps(lambda t, ans, x: t * (-jnp.exp(-x) / x))


@custom_jvp
def _expi_cj(x):
    return _expi64(x)


_expi_cj.defjvps(lambda t, ans, x: t * (jnp.exp(x) / x))


def exp1(x):
    """Exponential integral ``E1(x) = int_x^inf e^-t / t dt`` (``jax.scipy.special.exp1``); NaN for x < 0.

    Examples
    --------
    >>> from tracejit.scipy.special import exp1
    >>> float(exp1(1.0))  # doctest: +ELLIPSIS
    0.219383934395520...
    """
    dt, (x,) = promote_args_inexact(x)
    return finish(_exp1_cj(x), dt)


def expi(x):
    """Exponential integral ``Ei(x)`` (``jax.scipy.special.expi``); ``Ei(x) = -E1(-x)`` for x < 0.

    Examples
    --------
    >>> from tracejit.scipy.special import expi
    >>> float(expi(1.0))  # doctest: +ELLIPSIS
    1.89511781635593...
    """
    dt, (x,) = promote_args_inexact(x)
    return finish(_expi_cj(x), dt)


# ---------------------------------------------------------------------------- expn

def _expn64(n, x):
    """E_n(x) for integer n >= 0, x >= 0: series for x <= 1, continued fraction above."""
    sp = _sp()
    bad = (n < 0) | (n != jnp.floor(n)) | (x < 0) | jnp.isnan(x) | jnp.isnan(n)
    n_ = _where(bad, 1.0, n)
    small = x <= 1.0
    xs = _where(small & (x > 0), x, 0.5)
    # E_n(x) = (-x)^(n-1)/(n-1)! (psi(n) - log x) - sum_{k >= 0, k != n-1} (-x)^k / ((k - n + 1) k!)
    nm1 = n_ - 1.0
    t = jnp.ones_like(xs)            # (-x)^k / k!
    acc = jnp.zeros_like(xs)
    t_pole = jnp.zeros_like(xs)
    for k in range(40):
        is_pole = nm1 == k
        acc = acc - _where(is_pole, 0.0, t / _where(is_pole, 1.0, k - nm1))
        t_pole = _where(is_pole, t, t_pole)
        t = t * (-xs) / (k + 1)
    ser = acc + t_pole * (sp._digamma64(jnp.maximum(n_, 1.0)) - jnp.log(xs))
    xl = _where(small, 2.0, x)
    xl = _where(jnp.isinf(xl), 2.0, xl)
    # e^x E_n(x) = 1/(x + n - 1*n/(x + n + 2 - 2(n+1)/(x + n + 4 - ...))) (modified Lentz)
    b0 = xl + n_
    init = (jnp.full_like(xl, 1.0 / _TINY), 1.0 / b0, 1.0 / b0, jnp.zeros_like(xl))

    def step(i, c):
        cc, d, h, _ = c
        an = -i * (n_ - 1.0 + i)
        b = xl + n_ + 2.0 * i
        d = 1.0 / _where(jnp.abs(an * d + b) < _TINY, _TINY, an * d + b)
        cc = b + an / cc
        cc = _where(jnp.abs(cc) < _TINY, _TINY, cc)
        delta = cc * d
        return cc, d, h * delta, delta
    h = _iterate(step, lambda new, old: jnp.abs(new[3] - 1.0) <= _EPS, init)[2]
    cf = h * jnp.exp(-xl)
    out = _where(small, ser, _where(jnp.isinf(x), 0.0, cf))
    # n = 0: e^-x / x exactly
    xz = _where(x > 0, x, 1.0)
    out = _where(n_ == 0, jnp.exp(-xz) / xz, out)
    at0 = _where(n_ > 1, 1.0 / _where(n_ > 1, n_ - 1.0, 1.0), np.inf)
    out = _where(x == 0, at0, out)
    return _where(bad, np.nan, out)


@custom_jvp
def _expn_cj(n, x):
    return _expn64(n, x)


@_expn_cj.defjvp
def _expn_jvp(primals, tangents):
    n, x = primals
    _, tx = tangents
    # d/dx E_n = -E_{n-1}  (E_{-1}(x) = e^-x (1 + x) / x^2 for n = 0)
    xs = _where(x > 0, x, 1.0)
    prev = _where(n >= 1, _expn_cj(jnp.maximum(n - 1.0, 0.0), x), jnp.exp(-xs) * (1.0 + xs) / (xs * xs))
    return _expn_cj(n, x), -tx * prev


def expn(n, x):
    """Generalized exponential integral ``E_n(x) = int_1^inf e^(-x t) / t^n dt`` (``jax.scipy.special.expn``).

    ``n`` holds non-negative integers (NaN otherwise), ``x >= 0``; differentiable in ``x``.

    Examples
    --------
    >>> from tracejit.scipy.special import expn
    >>> round(float(expn(1, 1.0)), 14)  # E1(1)
    0.21938393439552
    >>> float(expn(3, 0.0))  # 1 / (n - 1)
    0.5
    """
    dt, (n, x) = promote_args_inexact(n, x)
    n, x = jnp.broadcast_arrays(n, x)
    return finish(_expn_cj(stop_gradient(n), x), dt)


# ---------------------------------------------------------------------------- hyp1f1

# |x| of up to ~1e5 needs ~|x| + 10 sqrt|x| terms (the terms peak near k = |x|)
_HYP1F1_MAXITER = 250000
# Cody-Waite split of log(2): q * _LN2_HI is exact for |q| < 2^20
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_RESCALE = 600.0                      # the loop keeps its sums below 2^600 by exact powers of 2
_INF_F = float('inf')


def _exp2_int(s, e):
    """s * 2^e for integer-valued float e (two exact powers of two: no premature under/overflow)."""
    h = jnp.floor(e / 2.0)
    return s * jnp.exp2(h) * jnp.exp2(e - h)


def _two_sum(p, q):
    """(s, e) with s = fl(p + q) and s + e = p + q exactly."""
    s = p + q
    v = s - p
    return s, (p - (s - v)) + (q - v)


def _hyp1f1_series(a, b, x, derivs=False, log_scale=None, a_lo=None):
    """sum_k (a)_k / (b)_k x^k / k! (run to convergence per element); with ``derivs`` also
    its a- and b-derivatives, carried term by term. Without ``derivs`` the loop is not run
    here: (step, converged, state) come back for ``_hyp1f1_64``'s loop, the state being
    (t_k, sum, sum |t_k|, k, exponent). With ``derivs`` the loop is run and (sum, a-derivative,
    b-derivative, sum |t_k| / |sum|) come back.

    ``a_lo`` is a low-order part of ``a`` (a + a_lo exact, e.g. b - a after Kummer's transform).
    With ``log_scale`` (<= 0) the sums come back multiplied by exp(log_scale) without
    overflowing or underflowing in between: the terms start at exp(r) (log_scale = q log 2 + r)
    and the loop carries a power-of-two exponent (Kummer's e^x M(b - a, b, -x) at x << 0 is
    0 * inf when formed as a product).

    Stopping rule: the term ratio t_{k+1}/t_k = (a+k) x / ((b+k)(k+1)) is bounded for j >= k by
    R(j) = x (|a| + j) / ((b + j)(j + 1)), which is unimodal in j (its log-derivative has the
    sign of -j^2 - 2|a| j + (|a| - 1)(|a| - b)), so sup_{j>=k} R(j) = R(max(k, j*)) with
    j* = sqrt((|a|-1)(|a|-b)) - |a|. The loop stops once that sup is < 1 and the geometric tail
    bound |t_k| R/(1 - R) is below eps |sum| (a plain |t_k| <= eps |sum| stops at k = 1 for tiny
    a, whose later terms grow again), or the series has terminated (a a non-positive integer).

    The derivatives get their own convergence test: at a non-positive integer ``a`` the
    series terminates while its a-derivative does not."""
    zero = jnp.zeros_like(x)
    if log_scale is None:
        q = zero
        one = jnp.ones_like(x)
    else:
        q = jnp.round(log_scale / math.log(2.0))
        one = jnp.exp((log_scale - q * _LN2_HI) - q * _LN2_LO)
    A = jnp.abs(a)
    disc = (A - 1.0) * (A - b)
    jstar = _where(disc > 0, jnp.sqrt(jnp.maximum(disc, 0.0)) - A, 0.0)
    terminates = (a <= 0) & (a == jnp.floor(a))
    big = 2.0 ** _RESCALE

    def step(k, c):
        if derivs:
            t, s, ta, sa, tb, sb, u, kk, e = c
        else:
            t, s, u, kk, e = c
        # a + k - 1 and b + k - 1 as exact double-doubles: (a + k) - 1 rounds a tiny a away, and
        # the rounding of fl(b + k - 1) keeps one sign over a whole binade of k (a bias of
        # ~|x| eps in the sum at large |x|)
        ak, ak_lo = _two_sum(a, k - 1.0)
        bk, bk_lo = _two_sum(b, k - 1.0)
        if a_lo is not None:
            ak_lo = ak_lo + a_lo
        r = x / k / bk
        r = r - r * (bk_lo / bk)              # x / (k (b + k - 1))
        rho = r * ak + r * ak_lo              # t_k = t_{k-1} rho
        if derivs:
            ta = ta * rho + t * r
            tb = tb * rho - t * rho / bk
        t = t * rho
        if derivs:
            new = [t, s + t, ta, sa + ta, tb, sb + tb, u + jnp.abs(t)]
        else:
            # the value alone also carries u = sum |t_k| (>= |s|), rescaled with it (it stays below
            # 2^600 times the number of terms)
            new = [t, s + t, u + jnp.abs(t)]
        m = jnp.abs(new[0])
        for v in new[1:6]:                    # (not u: the rescaling points stay those of old)
            m = jnp.maximum(m, jnp.abs(v))
        over = m > big
        new = [_where(over, v * (1.0 / big), v) for v in new]
        return tuple(new) + (kk + 1.0, _where(over, e + _RESCALE, e))

    def converged(new, old):
        t, s, kk = new[0], new[1], new[-2]
        j = jnp.maximum(kk, jstar)
        bj = b + j
        rsup = x * (A + j) / (_where(bj > 0, bj, 1.0) * (j + 1.0))
        ok = (b + kk > 0) & (rsup < 1.0)
        rs = _where(ok, rsup, 0.0)

        def small(term, total):
            return ok & (jnp.abs(term) * rs <= _EPS * jnp.abs(total) * (1.0 - rs))
        done = small(t, s) | (terminates & (kk > -a) & (t == 0))
        if derivs:
            done = done & small(new[2], new[3]) & small(new[4], new[5])
        return done
    if not derivs:
        return step, converged, (one, one, one, zero, q)
    _, s, _, sa, _, sb, u, _, e = _iterate(step, converged, (one, one, zero, zero, zero, zero, one, zero, q),
                                           maxiter=_HYP1F1_MAXITER)
    return tuple(_exp2_int(v, e) for v in (s, sa, sb)) + (u / jnp.abs(s),)


# Where the sum of |terms| exceeds |sum| by more than 2^_CANCEL_ODE the value is taken from the
# Taylor-step integration of Kummer's equation instead (its error, a few eps per step, is below the
# series' there); where that does not apply and it exceeds 2^_CANCEL_NAN (half the digits) it is NaN.
_CANCEL_ODE = 2.0 ** 10
_CANCEL_NAN = 2.0 ** 26
# Taylor steps keep |lambda h| <= _ODE_RHO for the local exponents lambda of Kummer's equation and
# |h| <= |x0| / _ODE_FRAC (x = 0 is its singular point): the Taylor terms of both solutions then
# decay from the first terms on, and the forward recurrence for the coefficients stays stable (with
# larger steps the other solution's coefficients, excited by rounding, grow like e^{|lambda h|}).
_ODE_RHO = 2.0
_ODE_FRAC = 3.0
_ODE_MAXTERMS = 200.0


def _kummer_ode_group(a, b, x, active):
    """Loop group integrating Kummer's equation x w'' + (b - x) w' - a w = 0 from 0 (w = M = 1,
    w' = a/b) to x by Taylor steps, one Taylor term per iteration (b > 0).

    The first step is the power series at 0 itself, to |h0| = min(|x|, min(1, b/|a|)/2) (term ratio
    <= 1/2, no cancellation); later steps around x0 use the equation's coefficient recurrence
    c_{k+2} = ((k + a) c_k - (k + 1)(k + b - x0) c_{k+1}) / (x0 (k + 1)(k + 2)), carried as
    d_k = c_k h^k. A step ends once two consecutive terms are below eps/4 of |w| + |h w'| at its
    end; (w, h w') are then rescaled by a power of two (the exponent is carried: the solution may
    pass far outside the float range) and the next step's first two terms formed.

    Why it is accurate where the series cancels: there (x < 0 with a > b, x > 0 with a < 0: the
    region where M oscillates, and beyond it where M is the growing solution) the two solutions
    of the equation stay within modest factors of each other along the path, so each step's
    rounding (a few eps) is carried forward without amplification: the error grows about linearly
    with the number of steps (~2 sqrt(|a x|) + b log|x| + |x|/2 steps: 1e-14 at
    hyp1f1(100, 1, -10), 4e-13 at hyp1f1(300.3, 1, -1000)).

    State (x0, h, k, d_k, d_{k+1}, sum d, sum (j d_j), exponent); done at x0 == x after a step."""
    a = _where(active, a, 1.0)
    b = _where(active, b, 1.0)
    x = _where(active, x, 1.0)
    absa = jnp.abs(a)
    sgn = jnp.sign(x)
    h0 = sgn * jnp.minimum(jnp.abs(x), 0.5 * b / jnp.maximum(absa, b))
    d1 = a * h0 / b

    def step(n, c):
        x0, h, k, dp, dc, S, Sd, e = c
        k1 = k + 1.0
        k2 = k + 2.0
        hdc = h * dc
        at0 = x0 == 0
        first = (a + k1) * hdc / ((b + k1) * k2)         # the power series at 0
        second = ((k + a) * (h * dp) * h - k1 * (k + (b - x0)) * hdc) / (_where(at0, 1.0, x0) * k2 * k1)
        dn = _where(at0, first, second)
        S2 = S + dn
        Sd2 = Sd + k2 * dn
        m = jnp.abs(S2) + jnp.abs(Sd2)
        conv = (k >= 1.0) & (jnp.abs(dc) + jnp.abs(dn) <= (0.25 * _EPS) * m)
        q = _where(conv, jnp.round(jnp.log2(m)), 0.0)
        sc = jnp.exp2(-q)
        w0 = S2 * sc
        x1 = _where(conv, x0 + h, x0)          # exact: every h is a difference of two such points
        ax1 = jnp.abs(x1)
        # |h| <= min(|x0| / FRAC, RHO / (|b - x0| / |x0| + sqrt(|a| / |x0|))) up to a factor 2
        hm = ax1 / (_ODE_FRAC + (jnp.abs(b - x1) + jnp.sqrt(absa * ax1)) * (1.0 / _ODE_RHO))
        # the step as the difference of two floats (exact: |h| <= |x1| / 3), so that the points
        # reached are exactly the points the steps were taken to (a rounded x0 + h shifts the
        # solution by eps |x0| per step: that error would grow with the steps like a phase error)
        hn = (x1 + sgn * jnp.minimum(sgn * (x - x1), hm)) - x1
        # after arrival (r = h = 0) the state is a fixed point up to exact rescalings: no freezing
        d1n = (Sd2 * sc) * (hn / _where(h == 0, 1.0, h))
        return (x1, _where(conv, hn, h), _where(conv, 0.0, k1), _where(conv, w0, dc), _where(conv, d1n, dn),
                _where(conv, w0 + d1n, S2), _where(conv, d1n, Sd2), e + q)

    def done(new):
        return ((new[0] == x) & (new[2] == 0.0)) | (new[2] > _ODE_MAXTERMS)
    return step, done, (jnp.zeros_like(x), h0, jnp.zeros_like(x), jnp.ones_like(x), d1, 1.0 + d1, d1, jnp.zeros_like(x))


def _hyp1f1_value(a, b, x, aa, aa_lo, ls):
    """M(a, b, x) (sanitized arguments): the series in the first parameter ``aa`` (b - a after
    Kummer's transformation for x < 0, with its low part ``aa_lo`` and the scale ``ls`` = x), and
    where its terms cancel (sum |t| > 2^10 |sum|) Kummer's equation integrated by Taylor steps
    (``_kummer_ode_group``), both in one ``while_loop``.

    That is the class x < 0 with a > b (the transformed series alternates while k < a - b:
    ``hyp1f1(100, 1, -10)`` summed to 560 instead of 4.76e-4) and its mirror image x > 0 with
    a < 0. For b > 0 only (for b < 0 the wanted solution need not dominate near 0); elsewhere a
    ratio above 2^26 gives NaN. The equation is integrated only where the series' first parameter
    is negative, and stops as soon as that series has converged without cancelling."""
    s_step, s_done, s_state = _hyp1f1_series(aa, b, jnp.abs(x), log_scale=ls, a_lo=aa_lo)
    cand = (aa < 0) & (b > 0) & (x != 0)
    o_step, o_done, o_state = _kummer_ode_group(a, b, x, cand)

    def cond(c):
        n, act_s, act_o, _, _ = c
        return (n <= _HYP1F1_MAXITER) & (jnp.any(act_s) | jnp.any(act_o))

    def body(c):
        n, act_s, act_o, ss, os_ = c
        new_s = tuple(_where(act_s, v, o) for v, o in zip(s_step(n, ss), ss))
        act_s = act_s & ~s_done(new_s, ss)
        new_o = o_step(n, os_)
        # the integration is dropped once the series has converged without cancelling
        settled = ~act_s & (new_s[2] <= _CANCEL_ODE * jnp.abs(new_s[1]))
        act_o = act_o & ~o_done(new_o) & ~settled
        return n + 1.0, act_s, act_o, new_s, new_o
    _, _, _, ss, os_ = while_loop(cond, body, (jnp.asarray(1.0), jnp.ones(jnp.shape(x), dtype=bool), cand,
                                               s_state, o_state))
    val = _exp2_int(ss[1], ss[4])
    ratio = ss[2] / jnp.abs(ss[1])
    use = cand & (ratio > _CANCEL_ODE)
    arrived = os_[0] == x
    ode = _where(arrived, _exp2_int(os_[5], os_[7]), np.nan)
    return _where(use, ode, _where(ratio > _CANCEL_NAN, np.nan, val))


def _hyp1f1_64(a, b, x, derivs=False):
    """M(a, b, x), with ``derivs`` also (dM/da, dM/db)."""
    bad = jnp.isnan(a) | jnp.isnan(b) | jnp.isnan(x) | ((b <= 0) & (b == jnp.floor(b)))
    a_ = _where(bad, 1.0, a)
    b_ = _where(bad, 1.0, b)
    x_ = _where(bad | jnp.isinf(x), 0.0, x)
    # Kummer's transformation for x < 0: M(a, b, x) = e^x M(b - a, b, -x) (positive terms when b > a);
    # the e^x is folded into the series' scale (e^x alone underflows at x < -745)
    neg = x_ < 0
    d, d_lo = _two_sum(b_, -a_)
    aa = _where(neg, d, a_)
    aa_lo = _where(neg, d_lo, 0.0)
    ls = _where(neg, x_, 0.0)
    if not derivs:
        return _where(bad, np.nan, _hyp1f1_value(a_, b_, x_, aa, aa_lo, ls))
    s, sa, sb, ratio = _hyp1f1_series(aa, b_, jnp.abs(x_), derivs=True, log_scale=ls, a_lo=aa_lo)
    # after the transformation the first parameter is b - a: d/da = -d/d(first), d/db adds it
    da = _where(neg, -sa, sa)
    db = _where(neg, sa + sb, sb)
    # where the value's series cancels by 2^26 or more its derivative series do too (the value
    # comes from the integration of Kummer's equation there, these do not): NaN, not wrong numbers
    lost = ratio > _CANCEL_NAN
    da = _where(lost, np.nan, da)
    db = _where(lost, np.nan, db)
    return tuple(_where(bad, np.nan, v) for v in (s, da, db))


@custom_jvp
def _hyp1f1_cj(a, b, x):
    return _hyp1f1_64(a, b, x)


@_hyp1f1_cj.defjvp
def _hyp1f1_jvp(primals, tangents):
    a, b, x = primals
    ta, tb, tx = tangents
    # d/dx M(a, b, x) = a / b M(a + 1, b + 1, x); the parameter derivatives are series of their own
    _, da, db = _hyp1f1_64(a, b, x, derivs=True)
    return _hyp1f1_cj(a, b, x), tx * (a / b) * _hyp1f1_cj(a + 1.0, b + 1.0, x) + ta * da + tb * db


def hyp1f1(a, b, x):
    """Confluent hypergeometric function ``1F1(a; b; x) = sum_k (a)_k / (b)_k x^k / k!``
    (``jax.scipy.special.hyp1f1``).

    Power series run to convergence (Kummer's transformation for ``x < 0``, its ``e^x`` carried
    as a scale of the terms, so ``x << 0`` does not underflow); NaN at non-positive integer
    ``b``. Differentiable in ``a``, ``b`` and ``x``. Accurate to ~1e-14 where the series has no
    cancellation (``x >= 0`` with ``a, b > 0``, tiny ``a`` included; ``x < 0`` with
    ``b > max(a, 0)``), the error growing to ~5e-12 at ``|x| ~ 1e5``; large ``|x|`` costs
    ~``|x|`` iterations (negative non-integer ``b`` ~``|b|``).

    Where the series' terms cancel (sum of ``|terms|`` above ``2^10 |sum|``: ``x < 0`` with
    ``a > b``, e.g. ``hyp1f1(100, 1, -10)``, and ``x > 0`` with ``a < 0``) and ``b > 0``, Kummer's
    equation is integrated from 0 to ``x`` by Taylor steps instead (about
    ``2 sqrt(|a x|) + b log|x| + |x|/2`` steps of ~20 terms): measured within 3e-14 at
    ``|a|, |x| <= 1000`` away from zeros of the function, 1.5e-12 next to them (below eps times
    its condition number). With ``b < 0`` no method here is accurate there: NaN where the terms
    cancel by ``2^26`` or more, as are ``d/da`` and ``d/db`` wherever they do (``d/dx`` is
    ``a/b hyp1f1(a+1, b+1, x)`` and follows the value; a forward-mode ``jvp`` multiplies the NaN
    ``d/da`` by a zero tangent, reverse mode does not).

    Examples
    --------
    >>> from tracejit.scipy.special import hyp1f1
    >>> round(float(hyp1f1(1.0, 1.0, 2.0)), 12)  # exp(2)
    7.389056098931
    """
    dt, (a, b, x) = promote_args_inexact(a, b, x)
    a, b, x = jnp.broadcast_arrays(a, b, x)
    return finish(_hyp1f1_cj(a, b, x), dt)
