"""Discrete samplers of ``tracejit.random``: rademacher, geometric, binomial, multinomial.

They follow ``jax.random``'s algorithms and key use (JAX 0.10), so the same
key gives JAX's values. ``binomial`` and ``multinomial`` loop with
``lax.while_loop`` / ``lax.scan``, so they run eagerly, under ``jit`` and
under ``vmap`` alike.
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.numpy._util import aval, broadcast_shapes, convert
from tracejit.random._operands import to_operand
from tracejit.random._keys import canonical_shape, check_key, split_key
from tracejit.random._more_samplers import _inexact_dtype, _param_shape, _rademacher
from tracejit.random._samplers import _c, _check_shape, _shape_of, _uniform

import tracejit.numpy as jnp


def _int_dtype(name, dtype):
    dt = dtypes.narrow(dtypes.int64 if dtype is None else dtypes.canonical(dtype))
    if not dtypes.is_integer(dt):
        raise ValueError(f"dtype argument to `{name}` must be an int dtype, got {dt}")
    return dt


def rademacher(key, shape=(), dtype=None):
    """Random signs: +1 or -1 with equal probability (``2 * bernoulli(0.5) - 1``).

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    shape : tuple of int, optional
        Result shape. Default ``()``.
    dtype : dtype, optional
        Default int64; float dtypes give ``+-1.0``.

    Returns
    -------
    array of ``shape`` and ``dtype``; JAX's values for the same key.

    Examples
    --------
    >>> from tracejit import random
    >>> sorted(set(random.rademacher(random.PRNGKey(0), (20,)).tolist()))
    [-1, 1]
    """
    k = check_key("rademacher", key)
    dt = dtypes.narrow(dtypes.int64 if dtype is None else dtypes.canonical(dtype))
    return _rademacher(k, canonical_shape(shape), dt)


def geometric(key, p, shape=None, dtype=None):
    """Geometric counts on ``{1, 2, ...}``: the trial of the first success, ``floor(log u / log1p(-p)) + 1``.

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    p : float or array
        Success probability in ``(0, 1]``, broadcast against ``shape``; the
        uniform draw uses ``p``'s float dtype (float64 for Python numbers).
    shape : tuple of int, optional
        Result shape; default ``p``'s shape.
    dtype : int dtype, optional
        Default int64.

    Returns
    -------
    array of ``shape`` and ``dtype``.

    Examples
    --------
    >>> from tracejit import random
    >>> x = random.geometric(random.PRNGKey(0), 0.3, (5,))
    >>> x.dtype, bool((x >= 1).all())
    (dtype('int64'), True)
    """
    k = check_key("geometric", key)
    dtype = _int_dtype("geometric", dtype)
    shape = _param_shape("geometric", shape, p)
    fdt = _inexact_dtype(p)
    p = convert(to_operand(p), fdt)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _geometric(k, p, shape, fdt, dtype)


def _geometric(k, p, shape, fdt, dtype):
    u = _uniform(k, shape, fdt)
    u = jnp.where(jnp.equal(u, _c(0, fdt)), _c(1, fdt), u)
    log_q = jnp.broadcast_to(jnp.log1p(jnp.negative(p)), shape)
    g = jnp.add(jnp.floor(jnp.divide(jnp.log(u), log_q)), _c(1, fdt))
    return convert(g, dtype)


# ----------------------------------------------------------------------------- binomial

# log(k!) - Stirling's approximation of it, for k = 0..9 (JAX's table).
_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                  0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.010411265261972,
                  0.00925546218271273, 0.00833056343336287)


def _stirling_approx_tail(k, dtype):
    """The error of Stirling's approximation of ``log(k!)``: table for ``k <= 9``, series above.

    As JAX 0.10, the series is evaluated at ``clip(k, 0, 9)``; its value for
    ``k > 9`` is therefore the one at 9 (kept for JAX's streams)."""
    kc = jnp.clip(k, _c(0, dtype), _c(9, dtype))
    one = _c(1, dtype)
    kp1 = jnp.add(kc, one)
    kp1sq = jnp.multiply(kp1, kp1)
    inner = jnp.divide(jnp.subtract(_c(1.0 / 360, dtype), jnp.divide(_c(1.0 / 1260, dtype), kp1sq)), kp1sq)
    approx = jnp.divide(jnp.subtract(_c(1.0 / 12, dtype), inner), kp1)
    idx = jnp.floor(kc)
    table = _c(_STIRLING_TAIL[9], dtype)
    for i in range(8, -1, -1):  # the table lookup as selects (elementwise; no gather)
        table = jnp.where(jnp.equal(idx, _c(i, dtype)), _c(_STIRLING_TAIL[i], dtype), table)
    return jnp.where(jnp.less_equal(k, _c(9, dtype)), table, approx)


def _binomial_inversion(key, count, prob, shape, dtype):
    """Sum geometric waiting times until they pass ``count`` (for ``count * prob <= 10``)."""
    from tracejit import lax
    fdt = aval(prob).dtype
    log_q = jnp.log1p(jnp.negative(prob))

    def cond(carry):
        _, geom_sum, _ = carry
        return jnp.any(jnp.less_equal(geom_sum, count))

    def body(carry):
        num_geom, geom_sum, k = carry
        ks = split_key(k, (2,))
        sub, k = ks[0], ks[1]
        num_geom = jnp.where(jnp.less_equal(geom_sum, count), jnp.add(num_geom, _c(1, fdt)), num_geom)
        u = _uniform(sub, shape, fdt)
        geom = jnp.ceil(jnp.divide(jnp.log(u), log_q))
        return num_geom, jnp.add(geom_sum, geom), k

    zeros = jnp.zeros(shape, fdt)
    num_geom = lax.while_loop(cond, body, (zeros, zeros, key))[0]
    return convert(jnp.subtract(num_geom, _c(1, fdt)), dtype)


def _btrs(key, count, prob, shape, dtype):
    """Hormann's transformed rejection with squeeze (BTRS), for ``count * prob > 10``."""
    from tracejit import lax
    fdt = aval(prob).dtype
    c_ = lambda v: _c(v, fdt)  # noqa: E731
    add, sub, mul, div, log = jnp.add, jnp.subtract, jnp.multiply, jnp.divide, jnp.log
    q = sub(c_(1), prob)
    stddev = jnp.sqrt(mul(mul(count, prob), q))
    b = add(c_(1.15), mul(c_(2.53), stddev))
    a = add(add(c_(-0.0873), mul(c_(0.0248), b)), mul(c_(0.01), prob))
    c = add(mul(count, prob), c_(0.5))
    v_r = sub(c_(0.92), div(c_(4.2), b))
    r = div(prob, q)
    alpha = mul(add(c_(2.83), div(c_(5.1), b)), stddev)
    m = jnp.floor(mul(add(count, c_(1)), prob))
    # The parts of the log acceptance bound that do not depend on the draw
    # (the bound is summed in JAX's order below).
    n_m1 = add(sub(count, m), c_(1))
    ub_m = mul(add(m, c_(0.5)), log(div(add(m, c_(1)), mul(r, n_m1))))
    tail_m, tail_n_m = _stirling_approx_tail(m, fdt), _stirling_approx_tail(sub(count, m), fdt)

    def cond(carry):
        _, accepted, _ = carry
        return jnp.any(jnp.logical_not(accepted))

    def body(carry):
        k_out, accepted, k = carry
        ks = split_key(k, (3,))
        k, k0, k1 = ks[0], ks[1], ks[2]
        u = sub(_uniform(k0, shape, fdt), c_(0.5))
        v = _uniform(k1, shape, fdt)
        us = sub(c_(0.5), jnp.abs(u))
        accept1 = jnp.logical_and(jnp.greater_equal(us, c_(0.07)), jnp.less_equal(v, v_r))
        kk = jnp.floor(add(mul(add(div(mul(c_(2), a), us), b), u), c))
        reject = jnp.logical_or(jnp.less(kk, c_(0)), jnp.greater(kk, count))
        v = log(div(mul(v, alpha), add(div(a, mul(us, us)), b)))
        n_k1 = add(sub(count, kk), c_(1))
        ub = add(add(ub_m, mul(add(count, c_(1)), log(div(n_m1, n_k1)))),
                 mul(add(kk, c_(0.5)), log(div(mul(r, n_k1), add(kk, c_(1))))))
        ub = add(add(ub, tail_m), tail_n_m)
        ub = sub(sub(ub, _stirling_approx_tail(kk, fdt)), _stirling_approx_tail(sub(count, kk), fdt))
        accept = jnp.logical_or(accept1, jnp.logical_and(jnp.logical_not(reject), jnp.less_equal(v, ub)))
        return jnp.where(accept, kk, k_out), jnp.logical_or(accepted, accept), k

    # n = inf with p in {0, 1} makes every parameter NaN: no draw is ever accepted
    # (JAX loops forever there). Those elements are overwritten by the caller, so
    # they start accepted; elements JAX accepts see the same iterations as in JAX.
    init = (jnp.full(shape, -1, fdt), jnp.isnan(stddev), key)
    return convert(lax.while_loop(cond, body, init)[0], dtype)


def _binomial(key, count, prob, shape, dtype):
    with np.errstate(all="ignore"):  # NaN / inf parameters are handled, silently as in JAX
        return _binomial_impl(key, count, prob, shape, dtype)


def _binomial_impl(key, count, prob, shape, dtype):
    fdt = _inexact_dtype(prob)
    prob = jnp.broadcast_to(convert(to_operand(prob), fdt), shape)
    count = jnp.broadcast_to(convert(to_operand(count), fdt), shape)
    half, one = _c(0.5, fdt), _c(1, fdt)
    p_lt_half = jnp.less(prob, half)
    q = jnp.where(p_lt_half, prob, jnp.subtract(one, prob))
    count_nan_or_neg = jnp.logical_or(jnp.isnan(count), jnp.less(count, _c(0, fdt)))
    count_inf = jnp.isinf(count)
    q_is_nan = jnp.isnan(q)
    q_lt_0 = jnp.less(q, _c(0, fdt))
    q = jnp.where(jnp.logical_or(q_is_nan, q_lt_0), _c(0.01, fdt), q)
    use_inversion = jnp.logical_or(count_nan_or_neg, jnp.less_equal(jnp.multiply(count, q), _c(10, fdt)))
    count = jnp.floor(count)
    # Both algorithms run on every element (with the same key, as JAX); dummy
    # parameters keep the unused one cheap.
    count_inv = jnp.where(use_inversion, count, _c(0, fdt))
    count_btrs = jnp.where(use_inversion, _c(10000, fdt), count)
    q_btrs = jnp.where(use_inversion, half, q)
    samples = jnp.where(use_inversion, _binomial_inversion(key, count_inv, q, shape, dtype),
                        _btrs(key, count_btrs, q_btrs, shape, dtype))
    invalid = jnp.logical_or(jnp.logical_or(q_lt_0, q_is_nan), count_nan_or_neg)
    samples = jnp.where(invalid, _c(np.nan, dtype), samples)
    samples = jnp.where(jnp.logical_and(count_inf, jnp.logical_not(invalid)), _c(np.inf, dtype), samples)
    keep = jnp.logical_or(jnp.logical_or(p_lt_half, count_nan_or_neg), jnp.logical_or(q_is_nan, count_inf))
    return jnp.where(keep, samples, jnp.subtract(convert(count, dtype), samples))


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial counts: successes in ``n`` trials of probability ``p`` (as floats).

    JAX's algorithm: inversion (summing geometric waiting times) where
    ``n * min(p, 1 - p) <= 10``, BTRS rejection sampling elsewhere. The draws
    use ``p``'s float dtype (float64 for Python numbers). ``n`` is floored;
    ``p`` outside ``[0, 1]``, NaN or negative ``n`` give NaN, infinite ``n`` gives inf.

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    n : float or array
        Number of trials, broadcast against ``shape``.
    p : float or array
        Success probability, broadcast against ``shape``.
    shape : tuple of int, optional
        Result shape; default the broadcast shape of ``n`` and ``p``.
    dtype : float dtype, optional
        Default float64.

    Returns
    -------
    array of ``shape`` and ``dtype`` holding whole numbers.

    Examples
    --------
    >>> from tracejit import random
    >>> x = random.binomial(random.PRNGKey(0), 10, 0.3, (4,))
    >>> x.dtype, bool(((x >= 0) & (x <= 10)).all())
    (dtype('float64'), True)
    """
    k = check_key("binomial", key)
    dtype = dtypes.narrow(dtypes.float64 if dtype is None else dtypes.canonical(dtype))
    if not dtypes.is_float(dtype):
        raise ValueError(f"dtype argument to `binomial` must be a float dtype, got {dtype}")
    if shape is None:
        shape = broadcast_shapes(_shape_of(n), _shape_of(p))
    else:
        shape = canonical_shape(shape)
        _check_shape("binomial", shape, _shape_of(n), _shape_of(p))
    return _binomial(k, n, p, shape, dtype)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Multinomial counts: ``n`` draws over the categories of ``p`` (last axis).

    Category by category (a ``lax.scan``), ``binomial(remaining draws,
    p_i / remaining probability)``, as JAX; keys ``split(key, len(p))``.

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    n : float or array
        Number of draws; broadcast against ``shape[:-1]``.
    p : array
        Category probabilities along the last axis (summing to 1); broadcast against ``shape``.
    shape : tuple of int, optional
        Result shape including the category axis; default ``p``'s shape.
    dtype : float dtype, optional
        Default float64.
    unroll : int or bool, optional
        Passed to ``lax.scan``.

    Returns
    -------
    array of ``shape`` and ``dtype``; counts along the last axis sum to ``n``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import random
    >>> c = random.multinomial(random.PRNGKey(0), 10, np.array([0.2, 0.3, 0.5]))
    >>> c.shape, float(c.sum())
    ((3,), 10.0)
    """
    from tracejit import lax
    k = check_key("multinomial", key)
    dtype = dtypes.narrow(dtypes.float64 if dtype is None else dtypes.canonical(dtype))
    if not dtypes.is_float(dtype):
        raise ValueError(f"dtype argument to `multinomial` must be a float dtype, got {dtype}")
    n, p = to_operand(n), to_operand(p)
    fdt = np.promote_types(_inexact_dtype(n), _inexact_dtype(p))
    n, p = convert(n, fdt), convert(p, fdt)
    shape = _shape_of(p) if shape is None else canonical_shape(shape)
    if not shape:
        raise ValueError("multinomial needs p (or shape) with at least one axis: the categories")
    n = jnp.broadcast_to(n, shape[:-1])
    p = jnp.moveaxis(jnp.broadcast_to(p, shape), -1, 0)
    remaining = jnp.flip(jnp.cumsum(jnp.flip(p, 0), axis=0), 0)
    ratios = jnp.divide(p, jnp.where(jnp.equal(remaining, _c(0, fdt)), _c(1, fdt), remaining))
    keys = split_key(k, (shape[-1],))

    def step(remainder, ratio_key):
        ratio, sub = ratio_key
        count = _binomial(sub, remainder, jnp.clip(ratio, _c(0, fdt), _c(1, fdt)), shape[:-1], fdt)
        return jnp.subtract(remainder, count), count

    _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
    return convert(jnp.moveaxis(counts, 0, -1), dtype)
