"""Continuous samplers of ``tracejit.random`` built on uniform / normal / gamma draws.

Each follows the algorithm and key use of the ``jax.random`` function of the
same name (JAX 0.10), so for the same key the values equal JAX's up to
floating-point rounding of the final elementwise formulas. Public functions
validate and consume the key once; ``_name`` helpers never consume keys.
Output dtypes are always ``dtype`` (default float64): parameters are
converted to it first.
"""
from __future__ import annotations

import operator

import numpy as np

from tracejit.core import dtypes
from tracejit.core.tracer import Tracer
from tracejit.numpy._util import aval, broadcast_shapes, convert
from tracejit.random._operands import to_operand
from tracejit.random._keys import canonical_shape, check_key
from tracejit.random._samplers import (_c, _check_shape, _exponential, _float_dtype, _gamma, _normal,
                                       _shape_of, _split2, _uniform)

import tracejit.numpy as jnp


# ----------------------------------------------------------------------------- helpers

def _param_shape(name, shape, *params):
    """The output shape: ``shape`` checked against the parameters, or their broadcast shape."""
    shapes = [_shape_of(p) for p in params]
    if shape is None:
        return broadcast_shapes(*shapes) if shapes else ()
    shape = canonical_shape(shape)
    _check_shape(name, shape, *shapes)
    return shape


def _check_safe_cast(name, dtype, *params):
    """Reject parameters whose (non-weak) dtype does not cast safely to ``dtype``, as JAX does.

    Integers and booleans always convert; a float or complex parameter must
    promote to ``dtype`` itself (float64 data with ``dtype=float32`` raises)."""
    for p in params:
        if dtypes.is_python_scalar(p):
            continue
        a = aval(to_operand(p))
        if a.weak_type or dtypes.kind(a.dtype) in "biu":
            continue
        if np.promote_types(a.dtype, dtype) != dtype:
            raise ValueError(f"In arguments to {name}, cannot safely cast argument of type "
                             f"{a.dtype} to {np.dtype(dtype)}")


def _sampler_args(name, key, shape, dtype, *params):
    """The checked key, float dtype and output shape of a float sampler with parameters ``params``."""
    k = check_key(name, key)
    dtype = _float_dtype(name, dtype)
    shape = _param_shape(name, shape, *params)
    _check_safe_cast(name, dtype, *params)
    return k, dtype, shape


def _param(x, dtype, shape=None):
    """A parameter converted to ``dtype`` (and broadcast to ``shape`` if given)."""
    x = convert(to_operand(x), dtype)
    if shape is not None and _shape_of(x) != tuple(shape):
        x = jnp.broadcast_to(x, shape)
    return x


def _inexact_dtype(x):
    """JAX's ``promote_dtypes_inexact`` for one operand: floats keep their dtype, others float64."""
    dt = aval(to_operand(x)).dtype
    return dt if dtypes.is_float(dt) or dtypes.is_complex(dt) else dtypes.narrow(dtypes.float64)


def _static_int(x, fname, what):
    if isinstance(x, Tracer):
        raise TypeError(f"tracejit.random.{fname}: {what} must be a concrete integer (it fixes the output "
                        "shape); pass it as a static argument")
    return operator.index(x)


def _rademacher(key, shape, dtype):
    """+1 / -1 with equal probability, as ``2 * bernoulli(key, 0.5) - 1`` in ``dtype``."""
    from tracejit.random._samplers import _bernoulli
    b = _bernoulli(key, to_operand(0.5), shape, "low")
    work = dtypes.int8 if dtypes.is_bool(dtype) else dtype
    with np.errstate(over="ignore"):
        out = jnp.subtract(jnp.multiply(_c(2, work), convert(b, work)), _c(1, work))
    return convert(out, dtype)


# ----------------------------------------------------------------------------- location-scale families

def cauchy(key, shape=(), dtype=None):
    """Standard Cauchy values: ``tan(pi * (u - 1/2))`` with ``u ~ uniform(eps, 1)``.

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    shape : tuple of int, optional
        Result shape. Default ``()``.
    dtype : float dtype, optional
        Default float64.

    Returns
    -------
    array of ``shape`` and ``dtype``; JAX's values for the same key.

    Examples
    --------
    >>> from tracejit import random
    >>> random.cauchy(random.PRNGKey(0), (3,)).shape
    (3,)
    """
    k = check_key("cauchy", key)
    dtype = _float_dtype("cauchy", dtype)
    u = _uniform(k, canonical_shape(shape), dtype, np.finfo(dtype).eps, 1.0)
    return jnp.tan(jnp.multiply(_c(np.pi, dtype), jnp.subtract(u, _c(0.5, dtype))))


def lognormal(key, sigma=np.float32(1), shape=None, dtype=None):
    """Log-normal values ``exp(sigma * normal)``.

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    sigma : float or array, optional
        Standard deviation of the underlying normal; broadcast against ``shape``. Default 1.
    shape : tuple of int, optional
        Result shape; default ``sigma``'s shape.
    dtype : float or complex dtype, optional
        Default float64.

    Returns
    -------
    array of ``shape`` and ``dtype``.

    Examples
    --------
    >>> from tracejit import random
    >>> x = random.lognormal(random.PRNGKey(0), 0.5, (4,))
    >>> bool((x > 0).all())
    True
    """
    k = check_key("lognormal", key)
    dtype = _float_dtype("lognormal", dtype, "fc")
    shape = _param_shape("lognormal", shape, sigma)
    _check_safe_cast("lognormal", dtype, sigma)
    return jnp.exp(jnp.multiply(_normal(k, shape, dtype), _param(sigma, dtype)))


def rayleigh(key, scale, shape=None, dtype=None):
    """Rayleigh values ``scale * sqrt(-2 log u)``.

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    scale : float or array
        Scale (> 0), broadcast against ``shape``.
    shape : tuple of int, optional
        Result shape; default ``scale``'s shape.
    dtype : float dtype, optional
        Default float64.

    Returns
    -------
    array of ``shape`` and ``dtype``.

    Examples
    --------
    >>> from tracejit import random
    >>> random.rayleigh(random.PRNGKey(0), 2.0, (3,)).shape
    (3,)
    """
    k, dtype, shape = _sampler_args("rayleigh", key, shape, dtype, scale)
    u = _uniform(k, shape, dtype)
    root = jnp.sqrt(jnp.multiply(jnp.log(u), _c(-2, dtype)))
    return jnp.multiply(_param(scale, dtype, shape), root)


def pareto(key, b, shape=None, dtype=None):
    """Pareto values on ``[1, inf)`` with shape parameter ``b``: ``exp(exponential / b)``.

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    b : float or array
        Shape parameter (> 0), broadcast against ``shape``.
    shape : tuple of int, optional
        Result shape; default ``b``'s shape.
    dtype : float dtype, optional
        Default float64.

    Returns
    -------
    array of ``shape`` and ``dtype``.

    Examples
    --------
    >>> from tracejit import random
    >>> x = random.pareto(random.PRNGKey(0), 3.0, (4,))
    >>> bool((x >= 1).all())
    True
    """
    k, dtype, shape = _sampler_args("pareto", key, shape, dtype, b)
    return jnp.exp(jnp.divide(_exponential(k, shape, dtype), _param(b, dtype)))


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull values ``scale * (-log1p(-u)) ** (1 / concentration)``.

    As in JAX, ``shape`` defaults to ``()`` and is not checked against the
    parameters: the result has the broadcast shape of ``shape``, ``scale``
    and ``concentration``. Unlike JAX, the result dtype is always ``dtype``.

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    scale, concentration : float or array
        Scale and shape (> 0) parameters.
    shape : tuple of int, optional
        Shape of the uniform draws. Default ``()``.
    dtype : float dtype, optional
        Default float64.

    Returns
    -------
    array of ``dtype``.

    Examples
    --------
    >>> from tracejit import random
    >>> random.weibull_min(random.PRNGKey(0), 1.0, 2.0, (3,)).shape
    (3,)
    """
    k = check_key("weibull_min", key)
    dtype = _float_dtype("weibull_min", dtype)
    u = _uniform(k, canonical_shape(shape), dtype)
    inv_c = jnp.divide(_c(1.0, dtype), _param(concentration, dtype))
    return jnp.multiply(jnp.power(jnp.negative(jnp.log1p(jnp.negative(u))), inv_c), _param(scale, dtype))


def triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular values on ``[left, right]`` with peak at ``mode`` (inverse-CDF method).

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    left, mode, right : float or array
        ``left <= mode <= right``; broadcast against ``shape``.
    shape : tuple of int, optional
        Result shape; default the parameters' broadcast shape.
    dtype : float dtype, optional
        Default float64.

    Returns
    -------
    array of ``shape`` and ``dtype``.

    Examples
    --------
    >>> from tracejit import random
    >>> x = random.triangular(random.PRNGKey(0), 0.0, 1.0, 3.0, (5,))
    >>> bool(((x >= 0) & (x <= 3)).all())
    True
    """
    k, dtype, shape = _sampler_args("triangular", key, shape, dtype, left, mode, right)
    lo, md, hi = (_param(x, dtype, shape) for x in (left, mode, right))
    span, below, above = jnp.subtract(hi, lo), jnp.subtract(md, lo), jnp.subtract(hi, md)
    fc = jnp.divide(below, span)
    u = _uniform(k, shape, dtype)
    mul, sqrt = jnp.multiply, jnp.sqrt
    out1 = jnp.add(lo, sqrt(mul(mul(u, span), below)))
    out2 = jnp.subtract(hi, sqrt(mul(mul(jnp.subtract(_c(1, dtype), u), span), above)))
    return jnp.where(jnp.less(u, fc), out1, out2)


def wald(key, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian) values with the given ``mean`` and unit shape parameter.

    Michael, Schucany and Haas's transformation of a squared normal, with a
    uniform choosing between the two roots (JAX's algorithm).

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    mean : float or array
        Mean (> 0), broadcast against ``shape``.
    shape : tuple of int, optional
        Result shape; default ``mean``'s shape.
    dtype : float dtype, optional
        Default float64.

    Returns
    -------
    array of ``shape`` and ``dtype``.

    Examples
    --------
    >>> from tracejit import random
    >>> x = random.wald(random.PRNGKey(0), 2.0, (4,))
    >>> bool((x > 0).all())
    True
    """
    k, dtype, shape = _sampler_args("wald", key, shape, dtype, mean)
    k1, k2 = _split2(k)
    mu = _param(mean, dtype, shape)
    v = _normal(k1, shape, dtype)
    z = _uniform(k2, shape, dtype)
    mul, add, div = jnp.multiply, jnp.add, jnp.divide
    y = mul(v, v)
    mu_sq = mul(mu, mu)
    root = jnp.sqrt(add(mul(mul(_c(4, dtype), mu), y), mul(mu_sq, mul(y, y))))
    x = jnp.subtract(add(mu, div(mul(mu_sq, y), _c(2, dtype))), mul(div(mu, _c(2, dtype)), root))
    return jnp.where(jnp.less_equal(z, div(mu, add(mu, x))), x, div(mu_sq, x))


# ----------------------------------------------------------------------------- gamma-based

def chisquare(key, df, shape=None, dtype=None):
    """Chi-square values with ``df`` degrees of freedom: ``2 * exp(loggamma(df / 2))``.

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    df : float or array
        Degrees of freedom (> 0), broadcast against ``shape``.
    shape : tuple of int, optional
        Result shape; default ``df``'s shape.
    dtype : float dtype, optional
        Default float64.

    Returns
    -------
    array of ``shape`` and ``dtype``.

    Examples
    --------
    >>> from tracejit import random
    >>> random.chisquare(random.PRNGKey(0), 3.0, (2,)).shape
    (2,)
    """
    k, dtype, shape = _sampler_args("chisquare", key, shape, dtype, df)
    return _chisquare(k, _param(df, dtype), shape, dtype)


def _chisquare(key, df, shape, dtype):
    two = _c(2, dtype)
    log_g = _gamma(key, jnp.divide(df, two), shape, dtype, log_space=True)
    return jnp.multiply(jnp.exp(log_g), two)


def f(key, dfnum, dfden, shape=None, dtype=None):
    """F-distribution values: the ratio of two scaled chi-square draws.

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    dfnum, dfden : float or array
        Numerator and denominator degrees of freedom (> 0), broadcast against ``shape``.
    shape : tuple of int, optional
        Result shape; default the parameters' broadcast shape.
    dtype : float dtype, optional
        Default float64.

    Returns
    -------
    array of ``shape`` and ``dtype``.

    Examples
    --------
    >>> from tracejit import random
    >>> random.f(random.PRNGKey(0), 3.0, 5.0, (2,)).shape
    (2,)
    """
    k, dtype, shape = _sampler_args("f", key, shape, dtype, dfnum, dfden)
    dfnum, dfden = _param(dfnum, dtype), _param(dfden, dtype)
    key_den, key_num = _split2(k)
    num = jnp.divide(_chisquare(key_num, dfnum, shape, dtype), dfnum)
    den = jnp.divide(_chisquare(key_den, dfden, shape, dtype), dfden)
    return jnp.divide(num, den)


def t(key, df, shape=None, dtype=None):
    """Student's t values: ``normal * sqrt((df / 2) / gamma(df / 2))``.

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    df : float or array
        Degrees of freedom (> 0), broadcast against ``shape``.
    shape : tuple of int, optional
        Result shape; default ``df``'s shape.
    dtype : float dtype, optional
        Default float64.

    Returns
    -------
    array of ``shape`` and ``dtype``.

    Examples
    --------
    >>> from tracejit import random
    >>> random.t(random.PRNGKey(0), 4.0, (3,)).shape
    (3,)
    """
    k, dtype, shape = _sampler_args("t", key, shape, dtype, df)
    key_n, key_g = _split2(k)
    n = _normal(key_n, shape, dtype)
    half_df = jnp.divide(_param(df, dtype), _c(2, dtype))
    g = _gamma(key_g, half_df, shape, dtype)
    return jnp.multiply(n, jnp.sqrt(jnp.divide(half_df, g)))


def _generalized_normal(key, p, shape, dtype):
    p = to_operand(p)
    inv_p = jnp.divide(_c(1, _inexact_dtype(p)), convert(p, _inexact_dtype(p)))
    inv_p = convert(inv_p, dtype)
    k_gamma, k_sign = _split2(key)
    g = _gamma(k_gamma, inv_p, shape, dtype)
    return jnp.multiply(_rademacher(k_sign, shape, dtype), jnp.power(g, inv_p))


def generalized_normal(key, p, shape=(), dtype=None):
    """Generalized normal values, density proportional to ``exp(-|x| ** p)``.

    ``sign * gamma(1 / p) ** (1 / p)``; ``p = 2`` is ``normal / sqrt(2)``, ``p = 1`` Laplace.

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    p : float
        Shape parameter (> 0); a scalar.
    shape : tuple of int, optional
        Result shape. Default ``()``.
    dtype : float dtype, optional
        Default float64.

    Returns
    -------
    array of ``shape`` and ``dtype``.

    Examples
    --------
    >>> from tracejit import random
    >>> random.generalized_normal(random.PRNGKey(0), 1.5, (3,)).shape
    (3,)
    """
    k = check_key("generalized_normal", key)
    dtype = _float_dtype("generalized_normal", dtype)
    return _generalized_normal(k, p, canonical_shape(shape), dtype)


def ball(key, d, p=2, shape=(), dtype=None):
    """Points uniform in the ``d``-dimensional unit ``p``-norm ball (shape ``shape + (d,)``).

    Barthe, Guedon, Mendelson and Naor's construction: a generalized normal
    vector divided by ``(sum |g|**p + exponential) ** (1 / p)``.

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    d : int
        Dimension of the ball (concrete).
    p : float, optional
        The norm's exponent (> 0). Default 2.
    shape : tuple of int, optional
        Batch shape. Default ``()``.
    dtype : float dtype, optional
        Default float64.

    Returns
    -------
    array of shape ``shape + (d,)`` and ``dtype``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import random
    >>> x = random.ball(random.PRNGKey(0), 3, shape=(4,))
    >>> x.shape, bool((np.linalg.norm(x, axis=-1) <= 1).all())
    ((4, 3), True)
    """
    k = check_key("ball", key)
    dtype = _float_dtype("ball", dtype)
    shape = canonical_shape(shape)
    d = _static_int(d, "ball", "d")
    k1, k2 = _split2(k)
    g = _generalized_normal(k1, p, (*shape, d), dtype)
    e = _exponential(k2, shape, dtype)
    p_op = to_operand(p)
    pd = convert(p_op, dtype)
    inv_p = convert(jnp.divide(_c(1, _inexact_dtype(p_op)), convert(p_op, _inexact_dtype(p_op))), dtype)
    radius = jnp.power(jnp.add(jnp.sum(jnp.power(jnp.abs(g), pd), axis=-1), e), inv_p)
    return jnp.divide(g, jnp.expand_dims(radius, -1))


# ----------------------------------------------------------------------------- normal-based

def _maxwell(key, shape, dtype):
    z = _normal(key, (*shape, 3), dtype)
    return jnp.sqrt(jnp.sum(jnp.multiply(z, z), axis=-1))


def maxwell(key, shape=(), dtype=None):
    """Maxwell values: the norm of a 3-vector of standard normals.

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    shape : tuple of int, optional
        Result shape. Default ``()``.
    dtype : float dtype, optional
        Default float64.

    Returns
    -------
    array of ``shape`` and ``dtype``.

    Examples
    --------
    >>> from tracejit import random
    >>> x = random.maxwell(random.PRNGKey(0), (3,))
    >>> x.shape, bool((x >= 0).all())
    ((3,), True)
    """
    k = check_key("maxwell", key)
    return _maxwell(k, canonical_shape(shape), _float_dtype("maxwell", dtype))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Double-sided Maxwell values ``sign * maxwell * scale + loc``.

    The shape rule is JAX's: the result has shape ``shape + S`` where ``S``
    is the broadcast shape of ``loc`` and ``scale``, and an empty ``shape``
    counts as ``S`` (so array parameters of shape ``(3,)`` and the default
    ``shape=()`` give a ``(3, 3)`` result).

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    loc, scale : float or array
        Location and scale parameters.
    shape : tuple of int, optional
        Batch shape. Default ``()``.
    dtype : float dtype, optional
        Default float64.

    Returns
    -------
    array of ``dtype``.

    Examples
    --------
    >>> from tracejit import random
    >>> random.double_sided_maxwell(random.PRNGKey(0), 0.0, 1.0, (3,)).shape
    (3,)
    """
    k = check_key("double_sided_maxwell", key)
    dtype = _float_dtype("double_sided_maxwell", dtype)
    shape = canonical_shape(shape)
    params_shape = broadcast_shapes(_shape_of(loc), _shape_of(scale))
    if not shape:
        shape = params_shape
    shape = shape + params_shape
    key_maxwell, key_sign = _split2(k)
    m = _maxwell(key_maxwell, shape, dtype)
    sign = _rademacher(key_sign, shape, dtype)
    return jnp.add(jnp.multiply(jnp.multiply(sign, m), _param(scale, dtype)), _param(loc, dtype))


def orthogonal(key, n, shape=(), dtype=None, m=None):
    """Haar-random matrices with orthonormal columns (or rows): shape ``shape + (n, m)``.

    The Q factor of a QR decomposition of a normal matrix, with the columns'
    signs fixed by the signs of R's diagonal (Mezzadri's method, as JAX).

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    n : int
        Number of rows (concrete).
    shape : tuple of int, optional
        Batch shape. Default ``()``.
    dtype : float or complex dtype, optional
        Default float64.
    m : int, optional
        Number of columns (concrete); default ``n`` (square orthogonal / unitary matrices).

    Returns
    -------
    array of shape ``shape + (n, m)``: orthonormal columns if ``n >= m``, rows otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import random
    >>> q = random.orthogonal(random.PRNGKey(0), 3)
    >>> bool(np.allclose(q.T @ q, np.eye(3)))
    True
    """
    k = check_key("orthogonal", key)
    dtype = _float_dtype("orthogonal", dtype, "fc")
    shape = canonical_shape(shape)
    n = _static_int(n, "orthogonal", "n")
    m = n if m is None else _static_int(m, "orthogonal", "m")
    z = _normal(k, (*shape, max(n, m), min(n, m)), dtype)
    q, r = jnp.linalg.qr(z)
    d = jnp.diagonal(r, axis1=-2, axis2=-1)
    x = jnp.multiply(q, jnp.expand_dims(jnp.sign(d), -2))
    return jnp.swapaxes(x, -1, -2) if n < m else x
