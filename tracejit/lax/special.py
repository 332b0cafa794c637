"""Special functions of ``jax.lax``: erfc, erf_inv, lgamma, digamma, igamma, igammac,
polygamma, zeta, bessel_i0e, bessel_i1e, betainc.

Each is ``tracejit.scipy.special``'s function (so the same numerics, the same
``custom_jvp`` derivatives, and it runs eagerly, under ``jit`` and ``vmap``) behind
``jax.lax``'s stricter signature: operands must already have one floating dtype
(Python scalars are weak and take it), and the result keeps that dtype.

``tracejit.lax`` is imported while ``tracejit`` itself is still initializing (the
autodiff layer needs ``tracejit.numpy``, which needs ``tracejit.lax``), before
``tracejit.scipy`` can be imported. So this module refers to the SciPy layer
through the ``tracejit`` package attribute, resolved when a function is called.
"""
from __future__ import annotations

import numpy as np

import tracejit
from tracejit.core import dtypes
from tracejit.numpy._util import aval, to_operand

__all__ = ["erfc", "erf_inv", "lgamma", "digamma", "igamma", "igammac", "polygamma", "zeta", "bessel_i0e",
           "bessel_i1e", "betainc"]


def _float_operands(name, *args):
    """Operands as arrays of one floating dtype, as ``jax.lax`` requires (Python scalars are weak)."""
    strong = [to_operand(a) for a in args if not dtypes.is_python_scalar(a)]
    dts = {aval(a).dtype for a in strong}
    if len(dts) > 1:
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got "
                        f"{', '.join(sorted(d.name for d in dts))}")
    dt = dts.pop() if dts else np.dtype(np.float64)
    if dt.kind != "f":
        raise TypeError(f"lax.{name} does not accept dtype {dt.name}: it needs a floating-point dtype")
    ops = [np.asarray(a, dt)[()] if dtypes.is_python_scalar(a) else to_operand(a) for a in args]
    return dt, ops


def _nonpositive_integer(x):
    lax = tracejit.lax
    return lax.bitwise_and(lax.le(x, _zero(x)), lax.eq(x, lax.floor(x)))


def _zero(x):
    return np.zeros((), aval(x).dtype)[()]


def _full(x, value):
    return np.full((), value, aval(x).dtype)[()]


def _digamma_poles(out, x):
    """JAX's digamma is NaN at its poles (0, -0.0 and the negative integers), not +-inf."""
    return tracejit.lax.select(_nonpositive_integer(x), _full(out, np.nan), out)


def _polygamma_poles(out, m, x):
    """JAX: at the poles of polygamma(m, .), NaN for even m (digamma's convention), +inf for odd m."""
    lax = tracejit.lax
    even = lax.eq(lax.rem(m, _full(m, 2.0)), _zero(m))
    return lax.select(lax.bitwise_and(_nonpositive_integer(x), even), _full(out, np.nan), out)


def _zeta_conventions(out, x, q):
    """XLA's zeta: NaN for x < 1 and for q <= 0 with non-integer x; at the poles (integer q <= 0)
    +inf for even integer x, NaN otherwise; +inf at x == 1 (even for NaN q)."""
    lax = tracejit.lax
    nan, inf = _full(out, np.nan), _full(out, np.inf)
    x_int = lax.eq(x, lax.floor(x))
    q_le0 = lax.le(q, _zero(q))
    out = lax.select(lax.bitwise_and(q_le0, lax.bitwise_not(x_int)), nan, out)
    even = lax.bitwise_and(x_int, lax.eq(lax.rem(x, _full(x, 2.0)), _zero(x)))
    out = lax.select(_nonpositive_integer(q), lax.select(even, inf, nan), out)
    out = lax.select(lax.eq(x, _full(x, 1.0)), inf, out)
    return lax.select(lax.lt(x, _full(x, 1.0)), nan, out)


def _igamma_domain(a, x):
    lax = tracejit.lax
    zero = _zero(a)
    bad = lax.bitwise_or(lax.lt(x, zero), lax.lt(a, zero))
    bad = lax.bitwise_or(bad, lax.bitwise_and(lax.eq(a, zero), lax.eq(x, zero)))
    return lax.bitwise_or(bad, lax.bitwise_or(lax.ne(a, a), lax.ne(x, x)))


def _igamma_conventions(out, a, x):
    """JAX's igamma: 0 at x == 0 and (a == inf, x < 1), 1 at x == inf and (a == 0, x >= 1); NaN for
    x < 0, a < 0, a == x == 0 and NaN operands (and, as tracejit.scipy gives, where JAX's own
    iterations give NaN: a == 0 with 0 < x < 1, a == inf with x >= 1)."""
    lax = tracejit.lax
    one = _full(out, 1.0)
    out = lax.select(lax.bitwise_and(lax.eq(a, _zero(a)), lax.ge(x, _full(x, 1.0))), one, out)
    out = lax.select(lax.bitwise_and(lax.eq(a, _full(a, np.inf)), lax.lt(x, _full(x, 1.0))), _zero(out), out)
    out = lax.select(lax.eq(x, _zero(x)), _zero(out), out)
    out = lax.select(lax.eq(x, _full(x, np.inf)), one, out)
    return lax.select(_igamma_domain(a, x), _full(out, np.nan), out)


def _igammac_conventions(out, a, x):
    """JAX's igammac: 0 at x == inf and at a == 0, 1 at (a == inf, x < 1); NaN on igamma's domain
    errors."""
    lax = tracejit.lax
    out = lax.select(lax.bitwise_and(lax.eq(a, _full(a, np.inf)), lax.lt(x, _full(x, 1.0))), _full(out, 1.0), out)
    out = lax.select(lax.bitwise_or(lax.eq(x, _full(x, np.inf)), lax.eq(a, _zero(a))), _zero(out), out)
    return lax.select(_igamma_domain(a, x), _full(out, np.nan), out)


def _huge_bessel(out, x, odd):
    """For |x| > 1e300 (float64) i0e(x) and |i1e(x)| equal 1 / sqrt(2 pi |x|) to double precision
    (XLA's value); tracejit.scipy's series gives 0 at the largest doubles."""
    lax = tracejit.lax
    ax = lax.abs(x)
    with np.errstate(over="ignore"):
        big = lax.gt(ax, _full(x, 1e300))           # never true below float64: 1e300 rounds to inf
    safe = lax.select(big, ax, _full(x, 1.0))                   # no inf * 0 in derivatives elsewhere
    asym = lax.mul(lax.rsqrt(safe), _full(x, 1 / np.sqrt(2 * np.pi)))   # no overflow of 2 pi |x|
    if odd:
        asym = lax.mul(asym, lax.sign(x))
    return lax.select(big, asym, out)


def _i0e_conventions(out, x):
    return _huge_bessel(out, x, odd=False)


def _i1e_conventions(out, x):
    return _huge_bessel(_odd_at_zero(out, x), x, odd=True)


def _odd_at_zero(out, x):
    """An odd function keeps the sign of a zero operand (i1e(-0.0) is -0.0); x / 2 there has the
    function's value and slope."""
    lax = tracejit.lax
    return lax.select(lax.eq(x, _zero(x)), lax.mul(x, _full(x, 0.5)), out)


def _wrap(name, scipy_name, doc, example, conventions=None):
    def fn(*args):
        dt, ops = _float_operands(name, *args)
        out = getattr(tracejit.scipy.special, scipy_name)(*ops)
        out = out if aval(out).dtype == dt else tracejit.lax.convert_element_type(out, dt)
        return out if conventions is None else conventions(out, *ops)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{doc} (``jax.lax.{name}``).\n\n"
                  f"Computed by ``tracejit.scipy.special.{scipy_name}``; the operands must share one floating "
                  "dtype, which the result keeps.\n\n"
                  f"Examples\n--------\n>>> import numpy as np\n>>> from tracejit import lax\n{example}\n")
    return fn


erfc = _wrap("erfc", "erfc", "Complementary error function ``1 - erf(x)``",
             ">>> float(lax.erfc(np.float64(0.0)))\n1.0")
erf_inv = _wrap("erf_inv", "erfinv", "Inverse error function",
                ">>> float(lax.erf_inv(np.float64(0.0)))\n0.0")
lgamma = _wrap("lgamma", "gammaln", "``log|Gamma(x)|``",
               ">>> round(float(lax.lgamma(np.float64(5.0))), 12)  # log(24)\n3.178053830348")
digamma = _wrap("digamma", "digamma", "Digamma function ``d/dx log Gamma(x)``",
                ">>> round(float(lax.digamma(np.float64(1.0))), 12)  # -euler_gamma\n-0.577215664902",
                conventions=_digamma_poles)
igamma = _wrap("igamma", "gammainc", "Regularized lower incomplete gamma function ``P(a, x)``",
               ">>> round(float(lax.igamma(np.float64(1.0), np.float64(2.0))), 12)  # 1 - exp(-2)\n0.864664716763",
               conventions=_igamma_conventions)
igammac = _wrap("igammac", "gammaincc", "Regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``",
                ">>> round(float(lax.igammac(np.float64(1.0), np.float64(2.0))), 12)  # exp(-2)\n0.135335283237",
                conventions=_igammac_conventions)
polygamma = _wrap("polygamma", "polygamma", "``m``-th derivative of the digamma function (``m`` integral-valued)",
                  ">>> round(float(lax.polygamma(np.float64(1.0), np.float64(1.0))), 12)  # pi**2/6\n"
                  "1.644934066848", conventions=_polygamma_poles)
zeta = _wrap("zeta", "zeta", "Hurwitz zeta function ``sum_k (q + k) ** -x``",
             ">>> round(float(lax.zeta(np.float64(2.0), np.float64(1.0))), 12)  # pi**2/6\n1.644934066848",
             conventions=_zeta_conventions)
bessel_i0e = _wrap("bessel_i0e", "i0e", "Exponentially scaled modified Bessel function of order 0, "
                   "``exp(-|x|) I0(x)``", ">>> float(lax.bessel_i0e(np.float64(0.0)))\n1.0",
                   conventions=_i0e_conventions)
bessel_i1e = _wrap("bessel_i1e", "i1e", "Exponentially scaled modified Bessel function of order 1, "
                   "``exp(-|x|) I1(x)``", ">>> float(lax.bessel_i1e(np.float64(0.0)))\n0.0",
                   conventions=_i1e_conventions)
betainc = _wrap("betainc", "betainc", "Regularized incomplete beta function ``I_x(a, b)``",
                ">>> float(lax.betainc(np.float64(1.0), np.float64(1.0), np.float64(0.25)))\n0.25")
