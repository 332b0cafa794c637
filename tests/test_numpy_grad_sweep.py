"""Derivatives of ``tracejit.numpy`` / ``tracejit.nn`` / ``tracejit.lax`` at the special values where a
value-dependent fast path could cut them (the class tests/test_scipy_param_grads.py found in
scipy.special: ``x ** y`` done as ``x * x`` at ``y == 2``, ``comb`` at integers): exponents 0, 0.5, 1, 2,
-1, -0.5, 3; arguments 0, 1, -1, integers, ties, zeros in products, sample points of ``interp``,
matrices with repeated singular values.

Every case is checked

* eagerly and under ``jit(grad(f))``, and in forward mode (``jvp``, eager and jitted: the tangent must be
  ``grad . t``), since the concrete and traced paths and the two modes differ;
* against 5-point central differences of the float64 values (the eager functions compute NumPy's
  values) at the points where the function is smooth (``points``);
* against JAX's derivative (``jax_enable_x64``) at every point, kinks and ties included (``kinks``:
  there the convention is JAX's), except at the points listed in ``jax_differs`` where JAX's own
  derivative is wrong (see ``JAX_DIFFERS``) and only finite differences decide.

The ``*_regression`` tests were silently wrong derivatives when this file was written (since fixed).
"""
from __future__ import annotations

import types

import numpy as np
import pytest

import tracejit
import tracejit.lax as tlax
import tracejit.nn as tnn
import tracejit.numpy as tnp
import tracejit.scipy.special as tsp

try:
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.lax as jlax
    import jax.nn as jnn
    import jax.numpy as jnp
    import jax.scipy.special as jsp
except ImportError:          # the finite-difference checks still run
    jax = None

needs_jax = pytest.mark.skipif(jax is None, reason="jax is not installed")

TJ = types.SimpleNamespace(np=tnp, lax=tlax, nn=tnn, sp=tsp)
JX = types.SimpleNamespace(np=jnp, lax=jlax, nn=jnn, sp=jsp) if jax is not None else None


# ----------------------------------------------------------------------------- helpers

def _f64(args):
    return tuple(np.asarray(a, np.float64) for a in args)


def _scalar_out(M, fn):
    """``sum(real(fn(*a)))``: every case is reduced to a scalar (weights inside the cases make
    vector outputs' derivatives distinct)."""
    return lambda *a: M.np.sum(M.np.real(fn(*a)))


def _tj_grads(fn, args, jit=False):
    g = tracejit.grad(_scalar_out(TJ, fn), argnums=tuple(range(len(args))))
    if jit:
        g = tracejit.jit(g)
    return [np.asarray(v, np.float64) for v in g(*args)]


def _tj_jvp(fn, args, tangents, jit=False):
    def tangent(*a):
        return tracejit.jvp(_scalar_out(TJ, fn), tuple(a), tuple(tangents))[1]
    return float(np.asarray((tracejit.jit(tangent) if jit else tangent)(*args)))


def _jax_grad_fn(fn, nargs):
    """JAX's gradient of the case, jitted (one compilation per case and shape; op by op it is slow)."""
    return jax.jit(jax.grad(_scalar_out(JX, fn), argnums=tuple(range(nargs))))


def _jax_grads(grad_fn, args):
    return [np.asarray(v, np.float64) for v in grad_fn(*[jnp.asarray(a) for a in args])]


def _value(fn, args):
    return float(np.sum(np.real(np.asarray(fn(*args)))))


@np.errstate(all="ignore")
def _fd(fn, args, i, rel=1e-3):
    """5-point central difference of ``sum(fn(*args))`` in each element of ``args[i]``."""
    out = np.zeros_like(args[i])
    for idx in np.ndindex(args[i].shape):
        h = rel * max(1.0, abs(float(args[i][idx])))

        def at(k):
            a = [x.copy() for x in args]
            a[i][idx] += k * h
            return _value(fn, a)
        out[idx] = (-at(2) + 8 * at(1) - 8 * at(-1) + at(-2)) / (12 * h)
    return out


def _tangents(args):
    rng = np.random.default_rng(7)
    return [rng.uniform(0.5, 1.5, a.shape) * rng.choice([-1.0, 1.0], a.shape) for a in args]


def _close(got, want, rtol, atol, what):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


# ----------------------------------------------------------------------------- the cases

class Case:
    """``build(M)`` -> the function (``M.np`` is tracejit.numpy or jax.numpy, ``M.lax``, ``M.nn``,
    ``M.sp`` likewise); ``points``: smooth points (finite differences, and JAX where ``jax``);
    ``kinks``: points where JAX's convention decides; ``jax_differs``: smooth points where JAX's
    derivative is wrong (finite differences only). ``jax`` defaults to cases with kinks: at smooth
    points the finite differences decide and each JAX comparison costs a JAX compilation (the
    exploratory sweep behind this file compared every case with JAX). ``jit_jvp``: the jitted
    forward mode too (every case runs jit(grad) and the eager jvp)."""

    def __init__(self, build, points, kinks=(), jax_differs=(), rtol=1e-6, atol=1e-8, jax=None, jit_jvp=False):
        self.build, self.points, self.kinks, self.jax_differs = build, list(points), list(kinks), list(jax_differs)
        self.rtol, self.atol = rtol, atol
        self.jax = bool(kinks) if jax is None else jax
        self.jit_jvp = jit_jvp


def _v(*xs):
    return np.array(xs, np.float64)


def _grid(*cols):
    """All combinations of the given coordinates, as one point of flat arrays (elementwise cases)."""
    mesh = np.meshgrid(*[np.asarray(c, np.float64) for c in cols], indexing="ij")
    return tuple(m.ravel() for m in mesh)


EXPONENTS = [0.0, 0.5, 1.0, 2.0, -1.0, -0.5, 3.0, 2.5, -2.0]
SCALAR_POWER_POINTS = [(x, y) for x in (0.3, 2.0) for y in EXPONENTS] + [(-2.0, y) for y in (2.0, 3.0, -1.0)]
W3 = _v(1.0, 2.0, -3.0)
W4 = _v(1.0, 2.0, -3.0, 0.5)
W33 = np.arange(9.0).reshape(3, 3) / 4 - 1
A3 = np.array([[2.0, 1.0, 0.5], [0.3, 3.0, -1.0], [1.0, 0.2, 4.0]])
S3 = A3 + A3.T
RANK1 = np.outer(_v(1.0, 2.0, 3.0), _v(1.0, -1.0, 2.0))
ZEROS3 = np.zeros(3)
ZEROS33 = np.zeros((3, 3))
ROT = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


def _sum_powers(x, op):
    """Sum of ``op(x, c) * w`` over the special exponents ``c`` (concrete: the fast paths)."""
    return sum(op(x, c) * (k + 1) for k, c in enumerate(EXPONENTS))


CASES = {
    # ---- powers: traced scalar exponent (shape ()), concrete exponents, operators
    "power": Case(lambda M: M.np.power, SCALAR_POWER_POINTS, jax=True, jit_jvp=True),
    "float_power": Case(lambda M: M.np.float_power, SCALAR_POWER_POINTS, jax=True),
    "pow_operator": Case(lambda M: lambda x, y: x ** y, SCALAR_POWER_POINTS, jax=True),
    "lax.pow": Case(lambda M: M.lax.pow, SCALAR_POWER_POINTS, jax=True, jit_jvp=True),
    "power_concrete_exponents": Case(lambda M: lambda x: _sum_powers(x, M.np.power), [(0.3,), (2.0,)], jax=True),
    "pow_operator_concrete": Case(lambda M: lambda x: _sum_powers(x, lambda a, c: a ** c)
                                  + x ** 2 + x ** -1 + x ** 3, [(_v(0.3, 2.0),)]),
    "power_array_exponent": Case(lambda M: M.np.power, [(_v(0.3, 2.0, 0.3, 2.0), _v(0.5, 2.0, -1.0, 1.0))]),
    "power_concrete_base": Case(lambda M: lambda y: M.np.power(2.0, y) + M.np.power(np.e, y) + M.np.power(1.0, y),
                                [(0.0,), (1.0,), (2.0,), (0.5,)]),
    "integer_pow": Case(lambda M: lambda x: sum(M.lax.integer_pow(x, n) * (n + 5) for n in (0, 1, 2, 3, -1, -2, 5)),
                        [(_v(0.3, -2.0, 1.0),)], jax=True),
    # ---- elementwise
    "sqrt_cbrt_square_reciprocal": Case(lambda M: lambda x: M.np.sqrt(M.np.abs(x)) + M.np.cbrt(x) + M.np.square(x)
                                        - M.np.reciprocal(x), [(_v(0.3, 1.0, 4.0, 8.0, -8.0, -1.0),)]),
    "exp_log_family": Case(lambda M: lambda x: M.np.exp2(x) + M.np.expm1(x) + M.np.log1p(M.np.abs(x))
                           + M.np.log2(2 + x) + M.np.log10(2 + x) + M.np.sinh(x) + M.np.cosh(x) + M.np.tanh(x)
                           + M.np.arctan(x) + M.np.arcsinh(x) + M.np.deg2rad(x) + M.np.rad2deg(x),
                           [(_v(0.5, 1.0, -1.0, 2.0),)], kinks=[(_v(0.0, 1e-10),)]),
    "inverse_trig": Case(lambda M: lambda x: M.np.arcsin(x) + M.np.arccos(x) + M.np.arctanh(x) + M.np.arccosh(2 + x),
                         [(_v(0.0, 0.5, -0.5),)]),
    "sinc": Case(lambda M: M.np.sinc, [(_v(0.0, 0.5, 1.0, -2.0, 1e-9, 2.5),)], jax=True),
    "i0": Case(lambda M: M.np.i0, [(_v(0.0, 1.0, -2.0),)]),
    "abs_at_zero": Case(lambda M: lambda x: M.np.abs(x) + 2 * M.np.fabs(x) + 3 * M.lax.abs(x),
                        [(_v(-1.0, 2.0),)], kinks=[(_v(0.0),)]),
    "sign_round": Case(lambda M: lambda x: (M.np.sign(x) + M.np.round(x) + M.np.round(x, 2) + M.np.around(x)
                                            + M.np.rint(x) + M.np.floor(x) + M.np.ceil(x) + M.np.trunc(x)
                                            + M.lax.round(x)) * x,
                       [(_v(1.3, -1.3, 0.2),)], kinks=[(_v(0.0, 2.5, 2.0),)]),
    "hypot": Case(lambda M: M.np.hypot, [_grid([3.0, -2.0], [4.0, 1.0])], kinks=[_grid([0.0, 2.0], [0.0])]),
    "arctan2": Case(lambda M: lambda y, x: M.np.arctan2(y, x) + M.lax.atan2(y, x),
                    [(_v(0.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0), _v(1.0, 1.0, 1.0, -1.0, -1.0, 0.0, 0.0))],
                    kinks=[(_v(0.0, 0.0), _v(-1.0, 0.0))]),         # the branch cut, the origin
    "logaddexp": Case(lambda M: lambda x, y: M.np.logaddexp(x, y) + 2 * M.np.logaddexp2(x, y),
                      [_grid([1.0, 0.0, -3.0], [1.0, 0.0, 5.0])], jax=True),
    "logaddexp_inf": Case(lambda M: lambda x: M.np.logaddexp(x, -np.inf) + 2 * M.np.logaddexp2(-np.inf, x),
                          [(_v(1.0, -2.0),)]),
    "copysign": Case(lambda M: M.np.copysign, [(_v(1.0, -1.0, 2.0, -2.0), _v(-2.0, 1.0, 3.0, -1.0))],
                     kinks=[(_v(0.0, 0.0), _v(1.0, -1.0))]),
    "fmod_remainder_divmod": Case(lambda M: lambda x, y: M.np.fmod(x, y) + 2 * M.np.remainder(x, y)
                                  + 3 * M.np.divmod(x, y)[1] + 5 * (x % y) + M.lax.rem(x, y),
                                  [(_v(5.5, -5.5, 5.5, 0.5), _v(2.0, 2.0, -2.0, 3.0))], kinks=[(_v(6.0, 0.0), _v(2.0, 2.0))]),
    "maximum_minimum": Case(lambda M: lambda x, y: M.np.maximum(x, y) + 2 * M.np.minimum(x, y) + 3 * M.np.fmax(x, y)
                            + 5 * M.np.fmin(x, y) + 7 * M.lax.max(x, y) - M.lax.min(x, y),
                            [(_v(1.0, 3.0), _v(2.0, 1.0))], kinks=[(_v(1.0, 0.0), _v(1.0, 0.0))]),
    "clip": Case(lambda M: lambda x, lo, hi: M.np.clip(x, lo, hi) + 2 * M.lax.clamp(lo, x, hi),
                 [(_v(0.5, -1.0, 2.0), _v(0.0, 0.0, 0.0), _v(1.0, 1.0, 1.0))],
                 kinks=[(_v(0.0, 1.0), _v(0.0, 0.0), _v(1.0, 1.0))]),
    "clip_concrete_bounds": Case(lambda M: lambda x: M.np.clip(x, 0.0, 1.0) + 2 * M.np.clip(x, min=0.0)
                                 + 3 * M.np.maximum(x, 0.0), [(_v(0.5, -1.0, 2.0),)], kinks=[(_v(0.0, 1.0),)]),
    "heaviside": Case(lambda M: lambda x, h: M.np.heaviside(x, h) * (1 + x), [(_v(-1.0, 1.0), _v(0.5, 0.5))],
                      kinks=[(_v(0.0), _v(0.5))]),
    "ldexp": Case(lambda M: lambda x: M.np.ldexp(x, 3),
                  [(_v(1.5, -0.7, 3.0),)], jax_differs=[(_v(0.0, -0.0),)]),
    "frexp_modf": Case(lambda M: lambda x: M.np.frexp(x)[0] + 2 * M.np.modf(x)[0] + 3 * M.np.modf(x)[1],
                       [(_v(1.5, 2.7, -0.7),)]),
    "true_divide": Case(lambda M: M.np.true_divide, [(_v(1.0, 0.0, 3.0), _v(1.0, 2.0, -1.0))]),
    # ---- tracejit.nn
    "nn_activations": Case(lambda M: lambda x: (M.nn.softplus(x) + 2 * M.nn.gelu(x) + 3 * M.nn.gelu(x, approximate=False)
                                                + 4 * M.nn.silu(x) + 5 * M.nn.elu(x) + 6 * M.nn.celu(x, 0.5)
                                                + 7 * M.nn.selu(x) + 8 * M.nn.log_sigmoid(x) + 9 * M.nn.mish(x)
                                                + 10 * M.nn.squareplus(x) + 11 * M.nn.sigmoid(x) + 12 * M.nn.tanh(x)),
                           [(_v(1.0, -1.0, 0.3, -2.5, 6.0, 30.0, -30.0),)], kinks=[(_v(0.0),)]),
    "nn_piecewise": Case(lambda M: lambda x: (M.nn.relu(x) + 2 * M.nn.relu6(x) + 3 * M.nn.leaky_relu(x, 0.2)
                                              + 4 * M.nn.hard_tanh(x) + 5 * M.nn.hard_sigmoid(x) + 6 * M.nn.hard_silu(x)
                                              + 7 * M.nn.sparse_plus(x) + 8 * M.nn.soft_sign(x) + 9 * M.nn.sparse_sigmoid(x)),
                         [(_v(0.5, -0.5, 2.0, -2.0, 7.0, -4.0),)], kinks=[(_v(0.0, 1.0, -1.0, 6.0, 3.0, -3.0),)]),
    "nn_log1mexp": Case(lambda M: M.nn.log1mexp, [(_v(0.3, 1.0, np.log(2.0), 30.0),)]),
    "nn_softmax_where": Case(lambda M: lambda x: (M.nn.softmax(x) * W3 + M.nn.log_softmax(x) * W3
                                                  + M.nn.softmax(x, where=np.array([True, False, True])) * W3
                                                  + M.np.where(np.array([True, False, True]),
                                                               M.nn.log_softmax(x, where=np.array([True, False, True])), 0.0)),
                             [(_v(2.0, -1.0, 3.0),), (_v(1.0, 1.0, 1.0),)]),
    "nn_logsumexp_b": Case(lambda M: lambda x, b: M.nn.logsumexp(x, b=b) + M.sp.logsumexp(x, b=b)
                           + M.nn.logsumexp(x, where=np.array([True, False, True])),
                           [(_v(2.0, -1.0, 3.0), _v(1.0, 2.0, 0.5)), (_v(1.0, 1.0, 1.0), _v(1.0, 1.0, 1.0))],
                           jax_differs=[(_v(2.0, -1.0, 3.0), _v(1.0, 0.0, 0.5))], jax=True),
    "nn_standardize": Case(lambda M: lambda x: M.nn.standardize(x) * W3, [(_v(2.0, -1.0, 3.0),), (_v(1.0, 1.0, 2.0),)]),
    "nn_one_hot_glu": Case(lambda M: lambda x: M.np.sum(M.nn.one_hot(np.array([0, 2]), 3) * x[0]) + M.nn.glu(x) * x[:1],
                           [(_v(1.0, 2.0, 0.0, -1.0),)]),
    # ---- tracejit.lax special functions
    "lax_special": Case(lambda M: lambda x: (M.lax.rsqrt(x) + 2 * M.lax.logistic(x) + 3 * M.lax.expm1(x)
                                             + 4 * M.lax.log1p(x) + 5 * M.lax.cbrt(x) + 6 * M.lax.erf(x) + 7 * M.lax.erfc(x)
                                             + 8 * M.lax.lgamma(x) + 9 * M.lax.digamma(x) + 10 * M.lax.tan(x)),
                        [(_v(1.0, 2.0, 0.5, 3.0, 0.1, 10.0),)]),
    "lax_lgamma_digamma_negative": Case(lambda M: lambda x: M.lax.lgamma(x) + 2 * M.lax.digamma(x), [(_v(-0.5, -2.5),)]),
    "lax_erf_inv": Case(lambda M: M.lax.erf_inv, [(_v(0.0, 0.5, -0.9, 0.95),)]),
    "lax_logistic_tails": Case(lambda M: M.lax.logistic, [(_v(0.0, 30.0, -30.0, -800.0, 40.0),)]),
    # ---- reductions and array functions (zeros in products, ties)
    "prod_cumprod_zeros": Case(lambda M: lambda x: (M.np.prod(x) + 2 * M.np.nanprod(x) + M.np.sum(M.np.cumprod(x) * W4)
                                                    + M.lax.reduce_prod(x, (0,)) + M.np.sum(M.lax.cumprod(x) * W4)),
                               [(_v(2.0, -1.0, 3.0, 0.5),), (_v(2.0, 0.0, 3.0, 0.5),), (_v(0.0, 0.0, 3.0, 0.5),),
                                (_v(2.0, 3.0, 0.5, 0.0),), (_v(0.0, 0.0, 0.0, 0.0),)], jax=True),
    "cumsum_diff": Case(lambda M: lambda x: (M.np.cumsum(x) * W4 + M.np.concatenate([M.np.diff(x) * W3, M.np.diff(x, n=2)])
                                             .sum() + M.np.gradient(x) * W4 + M.np.sum(M.np.ediff1d(x) * W3)),
                        [(_v(1.0, 3.0, 3.0, 2.0),)]),
    "var_std": Case(lambda M: lambda x: M.np.var(x) + 2 * M.np.std(x) + 3 * M.np.std(x, ddof=1) + 4 * M.np.mean(x),
                    [(_v(2.0, -1.0, 3.0, 0.5),)], kinks=[(_v(1.0, 1.0, 1.0, 1.0),)]),
    "median_quantile": Case(lambda M: lambda x: (M.np.median(x) + 2 * M.np.percentile(x, 30.0) + 3 * M.np.quantile(x, 0.5)
                                                 + 4 * M.np.nanmedian(x) + 5 * M.np.nanpercentile(x, 70.0)),
                            [(_v(2.0, -1.0, 3.0, 0.5),), (_v(3.0, 1.0, 2.0, 5.0, 4.0),)],
                            kinks=[(_v(1.0, 3.0, 3.0, 2.0),), (_v(1.0, 1.0, 1.0),), (_v(2.0, 2.0, 2.0, 2.0),)]),
    "quantile_q": Case(lambda M: lambda x, q: sum(M.np.quantile(x, q, method=m) for m in ("linear", "lower", "higher",
                                                                                           "midpoint")),
                       [(_v(1.0, 3.0, 4.0, 2.0), 0.3), (_v(2.0, -1.0, 3.0), 0.2), (_v(2.0, -1.0, 3.0, 7.0), 0.6)]),
    "max_min_ties": Case(lambda M: lambda x: (M.np.max(x) + 2 * M.np.min(x) + 3 * M.np.nanmax(x) + 4 * M.np.ptp(x)
                                              + 5 * M.np.max(x, initial=0.0) + 6 * M.lax.reduce_max(x, (0,))
                                              + M.np.sum(M.lax.cummax(x) * W3)),
                         [(_v(2.0, -1.0, 3.0),)], kinks=[(_v(3.0, 1.0, 3.0),), (_v(0.0, -1.0, -1.0),)]),
    "sort": Case(lambda M: lambda x: M.np.sort(x) * W4 + M.lax.sort(x) * W4 * 2, [(_v(4.0, 1.0, 2.0, 3.0),)],
                 kinks=[(_v(1.0, 3.0, 3.0, 2.0),)]),
    "interp": Case(lambda M: lambda x, xp, fp: M.np.interp(x, xp, fp) * _v(1.0, 2.0, 3.0, 4.0),
                   [(_v(0.5, 2.0, -1.0, 4.0), _v(0.0, 1.0, 3.0), _v(1.0, 2.0, -1.0))],
                   kinks=[(_v(0.0, 1.0, 3.0, 2.0), _v(0.0, 1.0, 3.0), _v(1.0, 2.0, -1.0))]),
    "interp_period": Case(lambda M: lambda x: M.np.interp(x, _v(0.0, 1.0, 3.0), _v(1.0, 2.0, -1.0), period=4.0) * W3,
                          [(_v(0.5, 6.0, -1.5),)], kinks=[(_v(0.0, 5.0, -1.0),)]),
    "polyval_polynomials": Case(lambda M: lambda p, x: (M.np.polyval(p, x) + M.np.sum(M.np.polyder(p) * W3[:2])
                                                        + M.np.sum(M.np.polyint(p) * W4) + M.np.sum(M.np.polymul(p, p))),
                                [(_v(2.0, -1.0, 3.0), 0.5), (_v(2.0, -1.0, 3.0), 0.0), (_v(0.0, 0.0, 2.0), 1.0)]),
    "trapezoid": Case(lambda M: lambda y, x: M.np.trapezoid(y, x) + M.np.trapezoid(y, dx=0.5), [(_v(2.0, -1.0, 3.0), _v(0.0, 1.0, 3.0))]),
    "cross_kron_outer": Case(lambda M: lambda a, b: (M.np.sum(M.np.cross(a, b) * W3) + M.np.sum(M.np.kron(a, b) * W33.ravel())
                                                     + M.np.sum(M.np.outer(a, b) * W33) + M.np.vdot(a, b)),
                             [(_v(2.0, -1.0, 3.0), _v(0.5, 2.0, -1.0)), (_v(2.0, 0.0, 3.0), ZEROS3)]),
    "einsum_matmul": Case(lambda M: lambda a, b: (M.np.sum(M.np.einsum("ij,jk->ik", a, b) * W33) + M.np.sum((a @ b) * W33)
                                                  + M.np.einsum("ij,ij->", a, b) + M.np.sum(M.np.tensordot(a, b, 1) * W33)),
                          [(A3, S3), (ZEROS33, A3)]),
    "where_select_piecewise": Case(lambda M: lambda x: (M.np.where(x > 0, x * x, -x) * W3
                                                        + M.np.select([x > 1, x < 0], [x * x, 3 * x], x)
                                                        + M.np.piecewise(x, [x < 0, x >= 0], [lambda t: -2 * t, lambda t: t * t])),
                                   [(_v(2.0, -1.0, 0.5),)], kinks=[(_v(0.0, 1.0, -1e-300),)]),
    "nan_reductions": Case(lambda M: lambda x: (M.np.nansum(x) + 2 * M.np.nanmean(x) + 3 * M.np.nanvar(x) + 4 * M.np.nanstd(x)
                                                + 5 * M.np.nanmax(x) + 6 * M.np.nanmin(x) + 7 * M.np.nanprod(x)
                                                + M.np.sum(M.np.nancumsum(x) * W4) + M.np.nanmedian(x)),
                           [(_v(1.0, np.nan, 2.0, 5.0),), (_v(1.5, -2.0, 2.0, 5.0),)]),
    "average_weights": Case(lambda M: lambda x, w: M.np.average(x, weights=w) + M.np.average(x, weights=w, returned=True)[1],
                            [(_v(2.0, -1.0, 3.0), _v(1.0, 2.0, 0.5)), (_v(2.0, -1.0, 3.0), _v(1.0, 0.0, 0.0))]),
    "cov_corrcoef": Case(lambda M: lambda x: (M.np.sum(M.np.cov(x) * W33[:2, :2]) + M.np.sum(M.np.corrcoef(x) * W33[1:, 1:])
                                              + M.np.sum(M.np.cov(x, ddof=0) * W33[:2, :2])),
                         [(np.array([[1.0, 2.0, 0.5, 3.0], [0.3, -1.0, 2.0, 1.0]]),)]),
    "convolve_correlate": Case(lambda M: lambda a, b: (M.np.sum(M.np.convolve(a, b) * np.arange(6.0))
                                                       + M.np.sum(M.np.convolve(a, b, mode="same") * W4)
                                                       + M.np.sum(M.np.correlate(a, b, mode="full") * np.arange(6.0))
                                                       + M.np.sum(M.np.correlate(a, b) * W3[:2])),
                               [(_v(1.0, 3.0, 3.0, 2.0), _v(1.0, 0.5, -2.0))]),
    "fft": Case(lambda M: lambda x: (M.np.sum(M.np.fft.fft(x) * _v(1.0, 2.0, 3.0, 0.5) * (1 - 2j))
                                     + M.np.sum(M.np.fft.rfft(x) * _v(1.0, 2.0, 3.0) * 1j)
                                     + M.np.sum(M.np.fft.ifft(x, norm="ortho") * W4)
                                     + M.np.sum(M.np.fft.irfft(x[:3]) * W4) + M.np.sum(M.np.fft.fft(x, n=6) * np.arange(6.0))),
                [(_v(1.0, 3.0, 3.0, 2.0),)]),
    "linspace": Case(lambda M: lambda a, b: M.np.sum(M.np.linspace(a, b, 5) * np.arange(5.0))
                     + M.np.sum(M.np.geomspace(1.0 + a * a, 8.0 + b * b, 4) * W4), [(0.0, 1.0), (1.0, 1.0)]),
    # ---- linear algebra
    "vector_norms": Case(lambda M: lambda x: sum(M.np.linalg.norm(x, ord=o) * (k + 1)
                                                 for k, o in enumerate([None, 1, 2, np.inf, -np.inf, 3, 0.5, -1])),
                         [(_v(2.0, -1.0, 3.0),)],
                         kinks=[(_v(3.0, -3.0, 1.0),), (_v(0.0, 1.0, -2.0),)]),
    "vector_norms_at_zero": Case(lambda M: lambda x: M.np.linalg.norm(x, ord=-np.inf) + M.np.linalg.norm(x, ord=1), [],
                                 kinks=[(ZEROS3,)]),
    "matrix_norms": Case(lambda M: lambda a: sum(M.np.linalg.norm(a, ord=o) * (k + 1)
                                                 for k, o in enumerate([None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])),
                         [(A3,)], kinks=[(np.eye(3),), (RANK1,)], rtol=1e-5),
    "det_slogdet_inv": Case(lambda M: lambda a: (M.np.linalg.det(a) + 2 * M.np.linalg.slogdet(a)[1]
                                                 + M.np.sum(M.np.linalg.inv(a) * W33)
                                                 + M.np.sum(M.np.linalg.solve(a, W3) * W3)
                                                 + M.np.sum(M.np.linalg.pinv(a) * W33)),
                            [(A3,), (np.eye(3),), (ROT,)], rtol=1e-5),
    "det_singular": Case(lambda M: M.np.linalg.det, [(RANK1,), (ZEROS33,), (np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0],
                                                                                       [1.0, 0.0, 1.0]]),)], jax=True),
    "matrix_power": Case(lambda M: lambda a: sum(M.np.sum(M.np.linalg.matrix_power(a, n) * W33) / (abs(n) + 1)
                                                 for n in (0, 1, 2, 3, -1, -2)), [(A3 / 2,), (np.eye(3),)], rtol=1e-5),
    # eigh/eigvalsh differentiate along the symmetric part (JAX's convention; NumPy reads one triangle)
    "eigh_svd": Case(lambda M: lambda a: (M.np.sum(M.np.linalg.eigh(a)[0] * W3) + M.np.sum(M.np.linalg.eigvalsh(a) * W3)
                                          + M.np.sum(M.np.linalg.svd(a, compute_uv=False) * W3)
                                          + M.np.sum(M.np.abs(M.np.linalg.svd(a)[0]) * W33)),
                     [], kinks=[(S3,)], rtol=1e-5),
}

# Where JAX's derivative is not the derivative (finite differences, and the function, say otherwise),
# tracejit keeps the correct one: the ``jax_differs`` points above.
JAX_DIFFERS = {
    "ldexp": "jnp.ldexp returns x1 where x1 == 0 (derivative 1 instead of 2**x2)",
    "nn_logsumexp_b": "jax.nn.logsumexp / jax.scipy.special.logsumexp give d/db 0 where b == 0",
}


def _runs(points_attr):
    return [pytest.param(n, i, id=f"{n}-{i}") for n, c in CASES.items() for i in range(len(getattr(c, points_attr)))]


def _check_tracejit(case, point, smooth):
    fn = case.build(TJ)
    args = _f64(point)
    eager = _tj_grads(fn, args)
    for i, g in enumerate(_tj_grads(fn, args, jit=True)):
        _close(g, eager[i], 1e-9, 1e-12, f"jit(grad) d/d(arg {i})")
    ts = _tangents(args)
    want = sum(float(np.sum(g * t)) for g, t in zip(eager, ts))
    for jit in ((False, True) if case.jit_jvp else (False,)):
        _close(_tj_jvp(fn, args, ts, jit), want, 1e-9, 1e-12, f"jvp (jit={jit}) != grad . t")
    if smooth:
        for i, g in enumerate(eager):
            _close(g, _fd(fn, [a.copy() for a in args], i), case.rtol, case.atol, f"grad vs finite differences, arg {i}")
    return eager


@pytest.mark.parametrize("name,i", _runs("points"))
def test_grad_vs_finite_differences(name, i):
    _check_tracejit(CASES[name], CASES[name].points[i], smooth=True)


@pytest.mark.parametrize("name,i", _runs("jax_differs"))
def test_grad_vs_finite_differences_where_jax_differs(name, i):
    _check_tracejit(CASES[name], CASES[name].jax_differs[i], smooth=True)


@pytest.mark.parametrize("name,i", _runs("kinks"))
def test_grad_at_kinks_eager_jit_jvp(name, i):
    _check_tracejit(CASES[name], CASES[name].kinks[i], smooth=False)


@needs_jax
@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.jax])
def test_grad_vs_jax(name):
    case = CASES[name]
    points = case.points + case.kinks
    ftj, gjx = case.build(TJ), _jax_grad_fn(case.build(JX), len(points[0]))
    for point in points:
        args = _f64(point)
        for i, (g, want) in enumerate(zip(_tj_grads(ftj, args), _jax_grads(gjx, args))):
            _close(g, want, 1e-7, 1e-9, f"{name} at {point}: d/d(arg {i}) vs JAX")


@needs_jax
@pytest.mark.parametrize("name", list(JAX_DIFFERS))
def test_jax_differs_only_where_listed(name):
    """The listed JAX differences are real: JAX's derivative there is not the finite difference."""
    case = CASES[name]
    for point in case.jax_differs:
        args = _f64(point)
        got = _tj_grads(case.build(TJ), args)
        theirs = _jax_grads(_jax_grad_fn(case.build(JX), len(args)), args)
        assert any(not np.allclose(g, t, rtol=1e-7, atol=1e-9) for g, t in zip(got, theirs)), (name, point)


@pytest.mark.parametrize("q", [0.0, 0.5, 0.25])
def test_quantile_derivative_in_q_at_integer_index(q):
    """Where ``q * (n - 1)`` is an integer (a kink in q) the derivative is the right-hand one (the
    line to the next order statistic), not 0 as JAX's (its floor and ceil indices coincide there)."""
    x = _v(2.0, -1.0, 3.0, 7.0, 0.5)
    got = float(tracejit.grad(tnp.quantile, argnums=1)(x, np.float64(q)))
    h = 1e-7
    assert got == pytest.approx((np.quantile(x, q + h) - np.quantile(x, q)) / h, rel=1e-6)
    if jax is not None:
        assert float(jax.grad(jnp.quantile, argnums=1)(x, q)) == 0.0


# ----------------------------------------------------------------------------- second derivatives

def _second(fn, x0, jit):
    g = tracejit.grad(tracejit.grad(fn))
    return float((tracejit.jit(g) if jit else g)(np.float64(x0)))


def _fd_second(fn, x0, h=1e-3):
    """5-point second difference of the values."""
    f = [float(fn(np.float64(x0 + k * h))) for k in (-2, -1, 0, 1, 2)]
    return (-f[0] + 16 * f[1] - 30 * f[2] + 16 * f[3] - f[4]) / (12 * h * h)


B3 = np.array([[0.3, -1.0, 0.5], [0.2, 0.1, 0.7], [-0.4, 0.6, 0.2]])
SECOND = {
    # name: (build(M) -> scalar function of a scalar, points)
    "power_in_y": (lambda M: lambda y: M.np.power(0.3, y) + M.np.power(2.0 + 0 * y, y), [0.0, 0.5, 1.0, 2.0, -1.0]),
    "power_in_x": (lambda M: lambda x: _sum_powers(x, M.np.power), [0.3, 2.0]),
    "integer_pow": (lambda M: lambda x: sum(M.lax.integer_pow(x, n) for n in (0, 1, 2, 3, -1, -2, 5)), [0.3, -2.0]),
    "sinc": (lambda M: M.np.sinc, [0.0, 0.5]),
    "logaddexp_tie": (lambda M: lambda x: M.np.logaddexp(x, 1.0) + M.nn.softplus(x), [1.0, 0.0]),
    "det_identity": (lambda M: lambda x: M.np.linalg.det(np.eye(3) + x * B3), [0.0]),
    "slogdet_inv_identity": (lambda M: lambda x: M.np.linalg.slogdet(np.eye(3) + x * B3)[1]
                             + M.np.sum(M.np.linalg.inv(np.eye(3) + x * B3) * W33), [0.0]),
}


@pytest.mark.parametrize("name", list(SECOND))
def test_second_derivatives(name):
    build, points = SECOND[name]
    fn = build(TJ)
    for x0 in points:
        got = _second(fn, x0, jit=False)
        assert got == pytest.approx(_second(fn, x0, jit=True), rel=1e-9, abs=1e-12)
        assert got == pytest.approx(_fd_second(fn, x0), rel=1e-5, abs=1e-6), (name, x0)
        if jax is not None:
            want = float(jax.jit(jax.grad(jax.grad(build(JX))))(x0))
            assert got == pytest.approx(want, rel=1e-7, abs=1e-9), (name, x0)


# ----------------------------------------------------------------------------- wrong derivatives found here, fixed

@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("y", [0.3, 0.5, 0.75, 2.0])
def test_power_zero_base_forward_mode_regression(y, jit):
    # power(base, y) with a traced scalar y is a custom_jvp (NumPy's exact values at y in {0.5, 1, 2, -1});
    # its rule got an instantiated zero tangent for the constant base, and 0 * d/dx (= y * 0 ** (y - 1)
    # = inf at 0 < y < 1) made the forward-mode d/dy NaN at base 0 (where it is 0).
    base = np.array([0.0, 1.0, 2.0, 0.5])

    def f(y):
        return tnp.power(base, y)

    jac = tracejit.jacfwd(f)
    got = np.asarray((tracejit.jit(jac) if jit else jac)(np.float64(y)))
    h = 1e-4
    want = (np.power(base, y + h) - np.power(base, y - h)) / (2 * h)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-12)
    tangent = tracejit.jvp(lambda y: tnp.sum(f(y)), (np.float64(y),), (np.float64(1.0),))[1]
    assert float(tangent) == pytest.approx(float(tracejit.grad(lambda y: tnp.sum(f(y)))(np.float64(y))))
    hess = tracejit.hessian(lambda y: tnp.sum(f(y)))(np.float64(y))
    assert float(hess) == pytest.approx(np.sum(np.log(base[1:]) ** 2 * base[1:] ** y), rel=1e-9)


def test_power_zero_base_forward_mode_vmap_regression():
    base = np.array([0.0, 2.0])
    ys = np.array([0.3, 0.5, 2.0])
    got = tracejit.vmap(lambda y: tracejit.jvp(lambda y: tnp.power(base, y), (y,), (1.0,))[1])(ys)
    np.testing.assert_allclose(np.asarray(got), np.stack([np.zeros(3), np.log(2.0) * 2.0 ** ys], axis=1), rtol=1e-12)


@pytest.mark.parametrize("n", [3, -2, -1030])
def test_ldexp_at_zero_regression(n):
    # ldexp returned x itself at x == 0 (NumPy's value), so d/dx was 1 there instead of 2**n.
    for jit in (False, True):
        g = tracejit.grad(lambda x: tnp.ldexp(x, n))
        g = tracejit.jit(g) if jit else g
        for x0 in (0.0, -0.0, 1.5):
            assert float(g(np.float64(x0))) == np.ldexp(1.0, n)
    f = tracejit.jit(lambda x: tnp.ldexp(x, n))
    for x0 in (0.0, -0.0, 1.5, np.inf, -np.inf, 5e-324):
        got, want = np.asarray(f(np.float64(x0))), np.ldexp(np.float64(x0), n)
        assert got == want and np.signbit(got) == np.signbit(want)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_interp_at_sample_points_regression(jit):
    # The exact-hit selects (NumPy returns fp[j] as it is at x == xp[j], and fp[-1] at xp[-1]) made
    # d/dx and d/dxp 0 at the sample points; the derivative is the right-hand segment's (the last
    # segment's at xp[-1]), as JAX's.
    xp, fp = _v(0.0, 1.0, 3.0), _v(-0.0, 2.0, -1.0)
    x = _v(0.0, 1.0, 3.0)
    g = tracejit.grad(lambda x, xp, fp: tnp.sum(tnp.interp(x, xp, fp) * _v(1.0, 2.0, 3.0)), argnums=(0, 1, 2))
    gx, gxp, gfp = ((tracejit.jit(g) if jit else g)(x, xp, fp))
    slopes = np.diff(fp) / np.diff(xp)                 # segments [0, 1], [1, 3]
    right = np.array([slopes[0], slopes[1], slopes[1]])
    np.testing.assert_allclose(np.asarray(gx), right * _v(1.0, 2.0, 3.0), rtol=1e-12)
    # one-sided differences (right of xp[0], xp[1]; left of xp[-1]) agree
    h = 1e-7
    one_sided = (np.interp(x + _v(h, h, -h), xp, fp) - np.interp(x, xp, fp)) / _v(h, h, -h)
    np.testing.assert_allclose(np.asarray(gx), one_sided * _v(1.0, 2.0, 3.0), rtol=1e-6)
    assert np.abs(np.asarray(gxp)).sum() > 0
    np.testing.assert_allclose(np.asarray(gfp), _v(1.0, 2.0, 3.0), rtol=1e-12)
    # the values stay NumPy's, bit for bit (-0.0 at the first sample point included)
    got = np.asarray(tracejit.jit(tnp.interp)(x, xp, fp))
    assert np.array_equal(got, np.interp(x, xp, fp)) and np.signbit(got[0])


@pytest.mark.parametrize("name", ["identity", "rotation", "2I", "diag", "rank2", "batched"])
def test_det_hessian_repeated_singular_values_regression(name):
    # det's JVP is tr(adj(a) da) with adj(a) from the SVD; differentiating that again went through the
    # singular vectors, whose derivative is 1 / (s_i**2 - s_j**2): the Hessian of det was NaN wherever
    # singular values repeat (the identity, rotations, c * I, ...).
    a = {"identity": np.eye(3), "rotation": ROT, "2I": 2 * np.eye(3), "diag": np.diag([1.0, -1.0, 2.0]),
         "rank2": np.outer([1.0, 2, 3], [1.0, -1, 2]) + np.outer([0.0, 1, 1], [2.0, 0, 1]),
         "batched": np.stack([np.eye(3), ROT])}[name]
    f = lambda x: tnp.sum(tnp.linalg.det(a + x * B3))             # noqa: E731
    for jit in (False, True):
        got = _second(f, 0.0, jit)
        assert got == pytest.approx(_fd_second(lambda x: np.sum(np.linalg.det(a + x * B3)), 0.0), rel=1e-6, abs=1e-9)
    hess = np.asarray(tracejit.hessian(lambda m: tnp.sum(tnp.linalg.det(m)))(a))
    assert np.isfinite(hess).all()
    # the full Hessian: d/dA_kl of the gradient adj(A)^T, by central differences of NumPy's det gradient
    if a.ndim == 2:
        def grad_det(m):
            return np.asarray(tracejit.grad(tnp.linalg.det)(m))
        h = 1e-5
        for k, l in [(0, 0), (0, 1), (2, 1)]:
            e = np.zeros((3, 3))
            e[k, l] = h
            np.testing.assert_allclose(hess[..., k, l], (grad_det(a + e) - grad_det(a - e)) / (2 * h), atol=1e-8)
