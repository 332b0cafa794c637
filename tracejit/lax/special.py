"""Special functions of ``jax.lax``: erfc, erf_inv, lgamma, digamma, igamma, igammac,
polygamma, zeta, bessel_i0e, bessel_i1e, betainc, igamma_grad_a, random_gamma_grad.

Each is ``tracejit.scipy.special``'s function (so the same numerics, the same
``custom_jvp`` derivatives, and it runs eagerly, under ``jit`` and ``vmap``) behind
``jax.lax``'s stricter signature: operands must already have one floating dtype
(Python scalars are weak and take it), and the result keeps that dtype.

``tracejit.scipy`` sits below ``tracejit.lax`` in the layering (it is built on
``tracejit.numpy`` and the primitives), so this module imports it directly.
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.lax import ops as lax_ops
from tracejit.numpy._util import aval, to_operand
from tracejit.scipy import _incomplete as scipy_incomplete
from tracejit.scipy import special as scipy_special

__all__ = ["erfc", "erf_inv", "lgamma", "digamma", "igamma", "igammac", "polygamma", "zeta", "bessel_i0e",
           "bessel_i1e", "betainc", "igamma_grad_a", "random_gamma_grad"]


def _float_operands(name, *args):
    """Operands as arrays of one floating dtype, as ``jax.lax`` requires (Python scalars are weak)."""
    strong = [to_operand(a) for a in args if not dtypes.is_python_scalar(a)]
    dts = {aval(a).dtype for a in strong}
    if len(dts) > 1:
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got "
                        f"{', '.join(sorted(d.name for d in dts))}")
    dt = dts.pop() if dts else np.dtype(np.float64)
    if dtypes.kind(dt) != "f":
        raise TypeError(f"lax.{name} does not accept dtype {dt.name}: it needs a floating-point dtype")
    ops = [np.asarray(a, dt)[()] if dtypes.is_python_scalar(a) else to_operand(a) for a in args]
    return dt, ops


def _nonpositive_integer(x):
    return lax_ops.bitwise_and(lax_ops.le(x, _zero(x)), lax_ops.eq(x, lax_ops.floor(x)))


def _zero(x):
    return np.zeros((), aval(x).dtype)[()]


def _full(x, value):
    return np.full((), value, aval(x).dtype)[()]


def _digamma_poles(out, x):
    """JAX's digamma is NaN at its poles (0, -0.0 and the negative integers), not +-inf."""
    return lax_ops.select(_nonpositive_integer(x), _full(out, np.nan), out)


def _polygamma_poles(out, m, x):
    """JAX: at the poles of polygamma(m, .), NaN for even m (digamma's convention), +inf for odd m."""
    even = lax_ops.eq(lax_ops.rem(m, _full(m, 2.0)), _zero(m))
    return lax_ops.select(lax_ops.bitwise_and(_nonpositive_integer(x), even), _full(out, np.nan), out)


def _zeta_conventions(out, x, q):
    """XLA's zeta: NaN for x < 1 and for q <= 0 with non-integer x; at the poles (integer q <= 0)
    +inf for even integer x, NaN otherwise; +inf at x == 1 (even for NaN q)."""
    nan, inf = _full(out, np.nan), _full(out, np.inf)
    x_int = lax_ops.eq(x, lax_ops.floor(x))
    q_le0 = lax_ops.le(q, _zero(q))
    out = lax_ops.select(lax_ops.bitwise_and(q_le0, lax_ops.bitwise_not(x_int)), nan, out)
    even = lax_ops.bitwise_and(x_int, lax_ops.eq(lax_ops.rem(x, _full(x, 2.0)), _zero(x)))
    out = lax_ops.select(_nonpositive_integer(q), lax_ops.select(even, inf, nan), out)
    out = lax_ops.select(lax_ops.eq(x, _full(x, 1.0)), inf, out)
    return lax_ops.select(lax_ops.lt(x, _full(x, 1.0)), nan, out)


def _igamma_domain(a, x):
    zero = _zero(a)
    bad = lax_ops.bitwise_or(lax_ops.lt(x, zero), lax_ops.lt(a, zero))
    bad = lax_ops.bitwise_or(bad, lax_ops.bitwise_and(lax_ops.eq(a, zero), lax_ops.eq(x, zero)))
    return lax_ops.bitwise_or(bad, lax_ops.bitwise_or(lax_ops.ne(a, a), lax_ops.ne(x, x)))


def _igamma_conventions(out, a, x):
    """JAX's igamma: 0 at x == 0 and (a == inf, x < 1), 1 at x == inf and (a == 0, x >= 1); NaN for
    x < 0, a < 0, a == x == 0 and NaN operands (and, as tracejit.scipy gives, where JAX's own
    iterations give NaN: a == 0 with 0 < x < 1, a == inf with x >= 1)."""
    one = _full(out, 1.0)
    out = lax_ops.select(lax_ops.bitwise_and(lax_ops.eq(a, _zero(a)), lax_ops.ge(x, _full(x, 1.0))), one, out)
    out = lax_ops.select(lax_ops.bitwise_and(lax_ops.eq(a, _full(a, np.inf)), lax_ops.lt(x, _full(x, 1.0))), _zero(out), out)
    out = lax_ops.select(lax_ops.eq(x, _zero(x)), _zero(out), out)
    out = lax_ops.select(lax_ops.eq(x, _full(x, np.inf)), one, out)
    return lax_ops.select(_igamma_domain(a, x), _full(out, np.nan), out)


def _igammac_conventions(out, a, x):
    """JAX's igammac: 0 at x == inf and at a == 0, 1 at (a == inf, x < 1); NaN on igamma's domain
    errors."""
    out = lax_ops.select(lax_ops.bitwise_and(lax_ops.eq(a, _full(a, np.inf)), lax_ops.lt(x, _full(x, 1.0))), _full(out, 1.0), out)
    out = lax_ops.select(lax_ops.bitwise_or(lax_ops.eq(x, _full(x, np.inf)), lax_ops.eq(a, _zero(a))), _zero(out), out)
    return lax_ops.select(_igamma_domain(a, x), _full(out, np.nan), out)


def _huge_bessel(out, x, odd):
    """For |x| > 1e300 (float64) i0e(x) and |i1e(x)| equal 1 / sqrt(2 pi |x|) to double precision
    (XLA's value); tracejit.scipy's series gives 0 at the largest doubles."""
    ax = lax_ops.abs(x)
    with np.errstate(over="ignore"):
        big = lax_ops.gt(ax, _full(x, 1e300))           # never true below float64: 1e300 rounds to inf
    safe = lax_ops.select(big, ax, _full(x, 1.0))                   # no inf * 0 in derivatives elsewhere
    asym = lax_ops.mul(lax_ops.rsqrt(safe), _full(x, 1 / np.sqrt(2 * np.pi)))   # no overflow of 2 pi |x|
    if odd:
        asym = lax_ops.mul(asym, lax_ops.sign(x))
    return lax_ops.select(big, asym, out)


def _i0e_conventions(out, x):
    return _huge_bessel(out, x, odd=False)


def _i1e_conventions(out, x):
    return _huge_bessel(_odd_at_zero(out, x), x, odd=True)


def _odd_at_zero(out, x):
    """An odd function keeps the sign of a zero operand (i1e(-0.0) is -0.0); x / 2 there has the
    function's value and slope."""
    return lax_ops.select(lax_ops.eq(x, _zero(x)), lax_ops.mul(x, _full(x, 0.5)), out)


def _wrap(name, scipy_name, doc, example, conventions=None, module=scipy_special):
    def fn(*args):
        dt, ops = _float_operands(name, *args)
        out = getattr(module, scipy_name)(*ops)
        out = out if aval(out).dtype == dt else lax_ops.convert_element_type(out, dt)
        return out if conventions is None else conventions(out, *ops)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{doc} (``jax.lax.{name}``).\n\n"
                  f"Computed by ``tracejit.scipy.special.{scipy_name}``; the operands must share one floating "
                  "dtype, which the result keeps.\n\n"
                  f"Examples\n--------\n>>> import numpy as np\n>>> from tracejit import lax\n{example}\n")
    return fn


erfc = _wrap("erfc", "erfc", "Complementary error function ``1 - erf(x)``",
             ">>> float(erfc(np.float64(0.0)))\n1.0")
erf_inv = _wrap("erf_inv", "erfinv", "Inverse error function",
                ">>> float(erf_inv(np.float64(0.0)))\n0.0")
lgamma = _wrap("lgamma", "gammaln", "``log|Gamma(x)|``",
               ">>> round(float(lgamma(np.float64(5.0))), 12)  # log(24)\n3.178053830348")
digamma = _wrap("digamma", "digamma", "Digamma function ``d/dx log Gamma(x)``",
                ">>> round(float(digamma(np.float64(1.0))), 12)  # -euler_gamma\n-0.577215664902",
                conventions=_digamma_poles)
igamma = _wrap("igamma", "igamma", "Regularized lower incomplete gamma function ``P(a, x)``",
               ">>> round(float(igamma(np.float64(1.0), np.float64(2.0))), 12)  # 1 - exp(-2)\n0.864664716763",
               conventions=_igamma_conventions, module=scipy_incomplete)
igammac = _wrap("igammac", "igammac", "Regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``",
                ">>> round(float(igammac(np.float64(1.0), np.float64(2.0))), 12)  # exp(-2)\n0.135335283237",
                conventions=_igammac_conventions, module=scipy_incomplete)
polygamma = _wrap("polygamma", "polygamma", "``m``-th derivative of the digamma function (``m`` integral-valued)",
                  ">>> round(float(polygamma(np.float64(1.0), np.float64(1.0))), 12)  # pi**2/6\n"
                  "1.644934066848", conventions=_polygamma_poles)
zeta = _wrap("zeta", "zeta", "Hurwitz zeta function ``sum_k (q + k) ** -x``",
             ">>> round(float(zeta(np.float64(2.0), np.float64(1.0))), 12)  # pi**2/6\n1.644934066848",
             conventions=_zeta_conventions)
bessel_i0e = _wrap("bessel_i0e", "i0e", "Exponentially scaled modified Bessel function of order 0, "
                   "``exp(-|x|) I0(x)``", ">>> float(bessel_i0e(np.float64(0.0)))\n1.0",
                   conventions=_i0e_conventions)
bessel_i1e = _wrap("bessel_i1e", "i1e", "Exponentially scaled modified Bessel function of order 1, "
                   "``exp(-|x|) I1(x)``", ">>> float(bessel_i1e(np.float64(0.0)))\n0.0",
                   conventions=_i1e_conventions)
betainc = _wrap("betainc", "betainc", "Regularized incomplete beta function ``I_x(a, b)``",
                ">>> float(betainc(np.float64(1.0), np.float64(1.0), np.float64(0.25)))\n0.25")
igamma_grad_a = _wrap("igamma_grad_a", "igamma_grad_a", "Derivative ``dP(a, x)/da`` of the regularized lower "
                      "incomplete gamma function in ``a`` (0 at ``x = 0``, NaN at ``x = inf``)",
                      ">>> round(float(igamma_grad_a(np.float64(2.0), np.float64(3.0))), 12)\n-0.197425419579",
                      module=scipy_incomplete)
random_gamma_grad = _wrap("random_gamma_grad", "random_gamma_grad", "Derivative of a ``Gamma(a, 1)`` sample "
                          "``x`` in ``a`` at fixed uniform draw, ``-(dP/da) / (dP/dx)`` (0 at ``x = 0``)",
                          ">>> round(float(random_gamma_grad(np.float64(2.0), np.float64(3.0))), 12)\n"
                          "1.321798518178", module=scipy_incomplete)
