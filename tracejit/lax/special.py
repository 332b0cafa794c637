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


def _wrap(name, scipy_name, doc, example):
    def fn(*args):
        dt, ops = _float_operands(name, *args)
        out = getattr(tracejit.scipy.special, scipy_name)(*ops)
        return out if aval(out).dtype == dt else tracejit.lax.convert_element_type(out, dt)
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
                ">>> round(float(lax.digamma(np.float64(1.0))), 12)  # -euler_gamma\n-0.577215664902")
igamma = _wrap("igamma", "gammainc", "Regularized lower incomplete gamma function ``P(a, x)``",
               ">>> round(float(lax.igamma(np.float64(1.0), np.float64(2.0))), 12)  # 1 - exp(-2)\n0.864664716763")
igammac = _wrap("igammac", "gammaincc", "Regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``",
                ">>> round(float(lax.igammac(np.float64(1.0), np.float64(2.0))), 12)  # exp(-2)\n0.135335283237")
polygamma = _wrap("polygamma", "polygamma", "``m``-th derivative of the digamma function (``m`` integral-valued)",
                  ">>> round(float(lax.polygamma(np.float64(1.0), np.float64(1.0))), 12)  # pi**2/6\n"
                  "1.644934066848")
zeta = _wrap("zeta", "zeta", "Hurwitz zeta function ``sum_k (q + k) ** -x``",
             ">>> round(float(lax.zeta(np.float64(2.0), np.float64(1.0))), 12)  # pi**2/6\n1.644934066848")
bessel_i0e = _wrap("bessel_i0e", "i0e", "Exponentially scaled modified Bessel function of order 0, "
                   "``exp(-|x|) I0(x)``", ">>> float(lax.bessel_i0e(np.float64(0.0)))\n1.0")
bessel_i1e = _wrap("bessel_i1e", "i1e", "Exponentially scaled modified Bessel function of order 1, "
                   "``exp(-|x|) I1(x)``", ">>> float(lax.bessel_i1e(np.float64(0.0)))\n0.0")
betainc = _wrap("betainc", "betainc", "Regularized incomplete beta function ``I_x(a, b)``",
                ">>> float(lax.betainc(np.float64(1.0), np.float64(1.0), np.float64(0.25)))\n0.25")
