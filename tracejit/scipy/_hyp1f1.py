"""Kummer's confluent hypergeometric function ``hyp1f1(a, b, x)`` = 1F1(a; b; x) for
``tracejit.scipy.special``.

Its power series (after Kummer's transformation for x < 0) runs in one ``lax.while_loop`` over
the whole broadcast array with exact power-of-two rescaling; where the series' terms cancel, the
same loop integrates Kummer's differential equation from 0 to x by Taylor steps. Derivatives come
from a ``custom_jvp`` rule: in x analytically, in a and b from sums carried term by term.
"""
from __future__ import annotations

import math

import numpy as np

import tracejit.numpy as jnp
from tracejit.ops.control_flow_functions import while_loop
from tracejit.scipy._common import finish, promote_args_inexact, tangent_sum, two_sum
from tracejit.scipy._incomplete import _EPS, _iterate, _where
from tracejit.transforms.api_ad import custom_jvp
from tracejit.transforms.symbolic_zeros import SymbolicZero

# |x| of up to ~1e5 needs ~|x| + 10 sqrt|x| terms (the terms peak near k = |x|)
_HYP1F1_MAXITER = 250000
# Cody-Waite split of log(2): q * _LN2_HI is exact for |q| < 2^20
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_RESCALE = 600.0                      # the loop keeps its sums below 2^600 by exact powers of 2


def _exp2_int(s, e):
    """s * 2^e for integer-valued float e (two exact powers of two: no premature under/overflow)."""
    h = jnp.floor(e / 2.0)
    return s * jnp.exp2(h) * jnp.exp2(e - h)


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
        ak, ak_lo = two_sum(a, k - 1.0)
        bk, bk_lo = two_sum(b, k - 1.0)
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


def _taylor_step_end(S, Sd, k, dc, dn, x0, h):
    """The bookkeeping of one Taylor term: with the new term d_{k+2} = ``dn`` added, (sum d,
    sum (j d_j), whether the step has converged (two consecutive terms below eps/4 of |w| + |h w'|),
    the power-of-two exponent q and scale 2^-q applied at its end, the scaled value w0, and the
    point reached, x0 + h once converged: exact, as every h is a difference of two such points)."""
    S2 = S + dn
    Sd2 = Sd + (k + 2.0) * dn
    m = jnp.abs(S2) + jnp.abs(Sd2)
    conv = (k >= 1.0) & (jnp.abs(dc) + jnp.abs(dn) <= (0.25 * _EPS) * m)
    q = _where(conv, jnp.round(jnp.log2(m)), 0.0)
    sc = jnp.exp2(-q)
    return S2, Sd2, conv, q, sc, S2 * sc, _where(conv, x0 + h, x0)


def taylor_ode(x, sgn, h0, d1, next_term, max_step):
    """``(step, initial state)`` of a Taylor-step integration of a second-order linear equation from
    0 (w = 1, h0 w' = ``d1``) to ``x`` (direction ``sgn``), one Taylor term per iteration: shared by
    the Kummer (here) and Gauss (``_hyp2f1``) integrations, which differ in their coefficient
    recurrence and step bound only.

    ``next_term(x0, h, k, d_k, d_{k+1})`` is d_{k+2} (d_j = c_j h^j, the Taylor coefficients of the
    step around x0); ``max_step(x1)`` bounds the next step from the point x1 reached. A converged
    step rescales (w, h w') by a power of two (the exponent is carried) and forms the next step's
    first two terms. State (x0, h, k, d_k, d_{k+1}, sum d, sum (j d_j), exponent); after arrival
    (h = 0) it is a fixed point up to exact rescalings."""
    def step(n, st):
        x0, h, k, dp, dc, S, Sd, e = st
        dn = next_term(x0, h, k, dp, dc)
        S2, Sd2, conv, q, sc, w0, x1 = _taylor_step_end(S, Sd, k, dc, dn, x0, h)
        # the step as the difference of two floats (exact: |h| <= |x1| / 3), so that the points
        # reached are exactly the points the steps were taken to (a rounded x0 + h shifts the
        # solution by eps |x0| per step: that error would grow with the steps like a phase error)
        hn = (x1 + sgn * jnp.minimum(sgn * (x - x1), max_step(x1))) - x1
        d1n = (Sd2 * sc) * (hn / _where(h == 0, 1.0, h))
        return (x1, _where(conv, hn, h), _where(conv, 0.0, k + 1.0), _where(conv, w0, dc), _where(conv, d1n, dn),
                _where(conv, w0 + d1n, S2), _where(conv, d1n, Sd2), e + q)
    zero = jnp.zeros_like(x)
    return step, (zero, h0, zero, jnp.ones_like(x), d1, 1.0 + d1, d1, zero)


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

    def next_term(x0, h, k, dp, dc):
        k1 = k + 1.0
        k2 = k + 2.0
        hdc = h * dc
        at0 = x0 == 0
        first = (a + k1) * hdc / ((b + k1) * k2)         # the power series at 0
        second = ((k + a) * (h * dp) * h - k1 * (k + (b - x0)) * hdc) / (_where(at0, 1.0, x0) * k2 * k1)
        return _where(at0, first, second)

    def max_step(x1):
        ax1 = jnp.abs(x1)
        # |h| <= min(|x0| / FRAC, RHO / (|b - x0| / |x0| + sqrt(|a| / |x0|))) up to a factor 2
        return ax1 / (_ODE_FRAC + (jnp.abs(b - x1) + jnp.sqrt(absa * ax1)) * (1.0 / _ODE_RHO))
    step, state = taylor_ode(x, sgn, h0, d1, next_term, max_step)

    def done(new):
        return ((new[0] == x) & (new[2] == 0.0)) | (new[2] > _ODE_MAXTERMS)
    return step, done, state


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
    d, d_lo = two_sum(b_, -a_)
    aa = _where(neg, d, a_)
    aa_lo = _where(neg, d_lo, 0.0)
    ls = _where(neg, x_, 0.0)
    # x = +-inf (run at x = 0 above, which gave 1.0): the limits where they follow from the
    # asymptotic forms without sign questions -- a = 0: 1; a, b > 0: Gamma(b)/Gamma(a) e^x x^(a-b)
    # -> inf and Gamma(b)/Gamma(b-a) |x|^-a -> 0 -- NaN elsewhere (and for the derivatives)
    at_inf = jnp.isinf(x) & ~bad
    inf_val = _where(a_ == 0, 1.0, _where((a_ > 0) & (b_ > 0), _where(x > 0, np.inf, 0.0), np.nan))
    if not derivs:
        return _where(bad, np.nan, _where(at_inf, inf_val, _hyp1f1_value(a_, b_, x_, aa, aa_lo, ls)))
    s, sa, sb, ratio = _hyp1f1_series(aa, b_, jnp.abs(x_), derivs=True, log_scale=ls, a_lo=aa_lo)
    # after the transformation the first parameter is b - a: d/da = -d/d(first), d/db adds it
    da = _where(neg, -sa, sa)
    db = _where(neg, sa + sb, sb)
    # where the value's series cancels by 2^26 or more its derivative series do too (the value
    # comes from the integration of Kummer's equation there, these do not): NaN, not wrong numbers
    lost = ratio > _CANCEL_NAN
    da = _where(lost | at_inf, np.nan, da)
    db = _where(lost | at_inf, np.nan, db)
    s = _where(at_inf, inf_val, s)
    return tuple(_where(bad, np.nan, v) for v in (s, da, db))


@custom_jvp
def _hyp1f1_cj(a, b, x):
    return _hyp1f1_64(a, b, x)


def _hyp1f1_jvp(primals, tangents):
    """d/dx M(a, b, x) = a / b M(a + 1, b + 1, x); the parameter derivatives are series of their
    own, built only where a or b is differentiated (symbolic zeros): they are NaN where their
    series cancel, and a zero tangent times NaN made a jvp in x alone NaN there."""
    a, b, x = primals
    ta, tb, tx = tangents
    terms = []
    if not isinstance(tx, SymbolicZero):
        terms.append(tx * (a / b) * _hyp1f1_cj(a + 1.0, b + 1.0, x))
    if not (isinstance(ta, SymbolicZero) and isinstance(tb, SymbolicZero)):
        _, da, db = _hyp1f1_64(a, b, x, derivs=True)
        terms += [t * d for t, d in ((ta, da), (tb, db)) if not isinstance(t, SymbolicZero)]
    out = _hyp1f1_cj(a, b, x)
    return out, tangent_sum(terms, out)


_hyp1f1_cj.defjvp(_hyp1f1_jvp, symbolic_zeros=True)


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

    At ``x = +-inf``: ``inf`` and 0 for ``a, b > 0``, 1 for ``a = 0``, NaN otherwise.

    Examples
    --------
    >>> from tracejit.scipy.special import hyp1f1
    >>> round(float(hyp1f1(1.0, 1.0, 2.0)), 12)  # exp(2)
    7.389056098931
    """
    dt, (a, b, x) = promote_args_inexact(a, b, x)
    a, b, x = jnp.broadcast_arrays(a, b, x)
    return finish(_hyp1f1_cj(a, b, x), dt)
