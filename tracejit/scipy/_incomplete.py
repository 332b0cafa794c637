"""Incomplete gamma functions and exponential integrals for ``tracejit.scipy.special`` (the
incomplete beta function is in ``_betainc.py``, ``hyp1f1`` in ``_hyp1f1.py``).

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
