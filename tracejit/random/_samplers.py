"""Samplers of ``tracejit.random``: the algorithms of ``jax.random``.

Each public sampler validates and consumes its key once, then calls a
private ``_name`` implementation that never consumes keys (samplers build
on each other). Dtype defaults follow NumPy 2: float64 and int64.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from tracejit.core import dtypes
from tracejit.core.tracer import Tracer
from tracejit.numpy._util import aval, broadcast_shapes, canonicalize_axis, convert
from tracejit.random._operands import to_operand
from tracejit.ops.elementwise import unary_prims
from tracejit.ops.random_bits import erf_inv_p, random_gamma_p, random_poisson_p, sort_key_val_p
from tracejit.random._keys import canonical_shape, check_key, random_bits, split_key
from tracejit.lax.special import random_gamma_grad
from tracejit.transforms.ad_custom import custom_jvp

import tracejit.numpy as jnp

_SQRT2 = math.sqrt(2.0)


# ----------------------------------------------------------------------------- helpers

def _float_dtype(name, dtype, kinds="f"):
    dt = dtypes.narrow(dtypes.float64 if dtype is None else dtypes.canonical(dtype))
    if dtypes.kind(dt) not in kinds:
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dt}")
    return dt


def _shape_of(x) -> tuple:
    return tuple(aval(to_operand(x)).shape)


def _check_shape(name, shape, *param_shapes):
    if param_shapes:
        out = broadcast_shapes(shape, *param_shapes)
        if out != tuple(shape):
            raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape argument, "
                             f"and the result of broadcasting the shapes must equal the shape argument, "
                             f"but got result {out} for shape argument {tuple(shape)}.")


def _c(value, dtype):
    return np.dtype(dtype).type(value)


def _split2(key):
    ks = split_key(key, (2,))
    return ks[0], ks[1]


def erf_inv(x):
    """Inverse error function, elementwise (``jax.lax.erf_inv``).

    Examples
    --------
    >>> float(erf_inv(np.float64(0.5)))  # doctest: +ELLIPSIS
    0.4769362762044...
    """
    x = to_operand(x)
    if not dtypes.is_float(aval(x).dtype):
        x = convert(x, dtypes.float64)
    return erf_inv_p.bind(x)


def _sort_key_val(keys, values, axis):
    """Stable sort of ``values`` by ``keys`` along ``axis``."""
    from tracejit import lax
    fn = getattr(lax, "sort_key_val", None)
    if fn is not None:
        return fn(keys, values, dimension=axis, is_stable=True)
    return sort_key_val_p.bind(to_operand(keys), to_operand(values), dimension=axis)


def _take(arr, ind, axis, fname):
    if not isinstance(arr, Tracer) and not isinstance(ind, Tracer):
        return np.take(np.asarray(arr), np.asarray(ind), axis=axis)
    take = getattr(jnp, "take", None)
    if take is None:
        raise NotImplementedError(f"tracejit.random.{fname} from an array under tracing needs "
                                  "tracejit.numpy.take (gather), which is not available yet; draw "
                                  "indices (pass an int) and index outside the traced function")
    return take(arr, ind, axis=axis)


def _top_k_indices(x, k):
    """Indices of the k largest entries along the last axis (ties: lower index first)."""
    n = x.shape[-1]
    idx = jnp.broadcast_to(jnp.arange(n), x.shape)
    _, order = _sort_key_val(jnp.negative(x), idx, x.ndim - 1)
    return order[..., :k]


# ----------------------------------------------------------------------------- uniform family

def _uniform(key, shape, dtype, minval=0.0, maxval=1.0):
    dtype = np.dtype(dtype)
    minval = convert(to_operand(minval), dtype)
    maxval = convert(to_operand(maxval), dtype)
    _check_shape("uniform", shape, _shape_of(minval), _shape_of(maxval))
    finfo = np.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    # JAX draws 8 random bits for a mantissa of fewer than 8 (bfloat16's 7), nbits otherwise.
    rng_bits = 8 if nmant < 8 else nbits
    uint = np.dtype(f"uint{nbits}")
    bits = convert(random_bits(key, rng_bits, shape), uint)
    # JAX sets the exponent of 1.0 under nmant random mantissa bits and subtracts 1;
    # that value is exactly mantissa * 2**-nmant, computed here without a bitcast.
    mant = jnp.right_shift(bits, _c(rng_bits - nmant, uint))
    floats = jnp.multiply(convert(mant, dtype), _c(2.0 ** -nmant, dtype))
    if _is_const(minval, 0.0) and _is_const(maxval, 1.0):
        return floats  # the affine map is the identity, and max(0, floats) == floats
    return jnp.maximum(minval, _fma(floats, jnp.subtract(maxval, minval), minval, dtype))


def _is_const(x, value) -> bool:
    return not isinstance(x, Tracer) and np.shape(x) == () and bool(x == value) and not np.signbit(x)


def _fma(a, b, c, dtype):
    """a * b + c with one rounding, as XLA's CPU backend computes uniform's affine map
    (it contracts the multiply-add into an FMA, and jax.random's streams depend on it).

    float16/float32: the product is exact in float64, so the float64 sum rounds
    once more than an FMA only on an exact float32 tie (probability ~2**-29).
    float64: Dekker's error-free product and Knuth's two-sum (elementwise ops only)."""
    if dtype != np.float64:
        wide = jnp.add(jnp.multiply(convert(a, dtypes.float64), convert(b, dtypes.float64)),
                       convert(c, dtypes.float64))
        return convert(wide, dtype)
    p = jnp.multiply(a, b)
    a_hi, a_lo = _veltkamp(a)
    b_hi, b_lo = _veltkamp(b)
    mul, add, sub = jnp.multiply, jnp.add, jnp.subtract
    p_err = add(add(add(sub(mul(a_hi, b_hi), p), mul(a_hi, b_lo)), mul(a_lo, b_hi)), mul(a_lo, b_lo))
    s = add(p, c)
    bb = sub(s, p)
    s_err = add(sub(p, sub(s, bb)), sub(c, bb))
    out = add(s, add(p_err, s_err))
    # Huge spans overflow the splitting; fall back to the plain expression there.
    return jnp.where(jnp.isfinite(out), out, add(p, c))


def _veltkamp(x):
    t = jnp.multiply(x, _c(134217729.0, dtypes.float64))  # 2**27 + 1
    hi = jnp.subtract(t, jnp.subtract(t, x))
    return hi, jnp.subtract(x, hi)


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform random values in ``[minval, maxval)`` (default dtype float64).

    Bit-for-bit the stream of ``jax.random.uniform`` for the same key.

    Examples
    --------
    >>> from tracejit import random
    >>> random.uniform(random.PRNGKey(0), (2,)).dtype
    dtype('float64')
    """
    k = check_key("uniform", key)
    return _uniform(k, canonical_shape(shape), _float_dtype("uniform", dtype), minval, maxval)


def _normal_real(key, shape, dtype):
    lo = np.nextafter(_c(-1.0, dtype), _c(0.0, dtype))
    u = _uniform(key, shape, dtype, lo, 1.0)
    return jnp.multiply(_c(_SQRT2, dtype), erf_inv_p.bind(to_operand(u)))


def _normal(key, shape, dtype):
    if dtypes.is_complex(dtype):
        real = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
        k_re, k_im = _split2(key)
        re = _normal_real(k_re, shape, real)
        im = _normal_real(k_im, shape, real)
        z = jnp.add(convert(re, dtype), jnp.multiply(convert(im, dtype), _c(1j, dtype)))
        return jnp.divide(z, _c(_SQRT2, dtype))
    return _normal_real(key, shape, dtype)


def normal(key, shape=(), dtype=None):
    """Standard normal values: ``sqrt(2) * erf_inv(uniform(-1, 1))``, as jax.random.

    Examples
    --------
    >>> from tracejit import random
    >>> random.normal(random.PRNGKey(0), (3,), np.float32).shape
    (3,)
    """
    k = check_key("normal", key)
    return _normal(k, canonical_shape(shape), _float_dtype("normal", dtype, "fc"))


def _bernoulli(key, p, shape, mode):
    dtype = aval(p).dtype
    if mode == "high":
        u = _uniform(key, (2, *shape), dtype)
        u2 = jnp.multiply(u[1], _c(2.0 ** -np.finfo(dtype).nmant, dtype))
        return jnp.less(u2, jnp.subtract(p, u[0]))
    return jnp.less(_uniform(key, shape, dtype), p)


def bernoulli(key, p=0.5, shape=None, mode="low"):
    """Booleans that are True with probability ``p`` (``uniform < p``).

    Examples
    --------
    >>> from tracejit import random
    >>> random.bernoulli(random.PRNGKey(0), 0.8, (4,)).dtype
    dtype('bool')
    """
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    k = check_key("bernoulli", key)
    p = to_operand(p)
    dt = aval(p).dtype
    if not dtypes.is_float(dt):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dt}.")
    p = convert(p, dt)
    if shape is None:
        shape = _shape_of(p)
    else:
        shape = canonical_shape(shape)
        _check_shape("bernoulli", shape, _shape_of(p))
    return _bernoulli(k, p, shape, mode)


def _simple(name, fn, doc):
    def sampler(key, shape=(), dtype=None):
        k = check_key(name, key)
        return fn(k, canonical_shape(shape), _float_dtype(name, dtype))
    sampler.__name__ = sampler.__qualname__ = name
    sampler.__doc__ = (f"{doc}\n\nDefault dtype float64; same algorithm as ``jax.random.{name}``.\n\n"
                       f"Examples\n--------\n>>> from tracejit import random\n"
                       f">>> random.{name}(random.PRNGKey(0), (3,)).shape\n(3,)\n")
    return sampler


def _exponential(key, shape, dtype):
    return jnp.negative(jnp.log1p(jnp.negative(_uniform(key, shape, dtype))))


def _laplace(key, shape, dtype):
    u = _uniform(key, shape, dtype, -1.0 + np.finfo(dtype).epsneg, 1.0)
    return jnp.multiply(jnp.sign(u), jnp.log1p(jnp.negative(jnp.abs(u))))


def _logistic(key, shape, dtype):
    x = _uniform(key, shape, dtype, np.finfo(dtype).tiny, 1.0)
    return jnp.subtract(jnp.log(x), jnp.log1p(jnp.negative(x)))


exponential = _simple("exponential", _exponential, "Exponential(1) values: ``-log1p(-uniform)``.")
laplace = _simple("laplace", _laplace, "Laplace(0, 1) values.")
logistic = _simple("logistic", _logistic, "Standard logistic values: ``log(u) - log1p(-u)``.")


def _gumbel(key, shape, dtype, mode):
    info = np.finfo(dtype)
    if mode == "high":
        u = _uniform(key, (2, *shape), dtype)
        high, low = u[0], u[1]
        x = jnp.where(jnp.greater_equal(high, _c(0.5, dtype)), high,
                      jnp.add(jnp.add(high, jnp.multiply(_c(2.0 ** -info.nmant, dtype), low)),
                              _c(info.tiny, dtype)))
        return jnp.negative(jnp.log(jnp.negative(jnp.log1p(jnp.negative(x)))))
    u = _uniform(key, shape, dtype, info.tiny, 1.0)
    return jnp.negative(jnp.log(jnp.negative(jnp.log(u))))


def _gumbel_mode(mode):
    mode = "low" if mode is None else mode
    if mode not in ("low", "high"):
        raise NotImplementedError(f"gumbel mode {mode!r} is not implemented; use 'low' or 'high'")
    return mode


def gumbel(key, shape=(), dtype=None, mode=None):
    """Standard Gumbel values: ``-log(-log(uniform(tiny, 1)))``.

    Examples
    --------
    >>> from tracejit import random
    >>> random.gumbel(random.PRNGKey(0), (2,)).shape
    (2,)
    """
    k = check_key("gumbel", key)
    return _gumbel(k, canonical_shape(shape), _float_dtype("gumbel", dtype), _gumbel_mode(mode))


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Standard normal values truncated to the open interval ``(lower, upper)``.

    Examples
    --------
    >>> from tracejit import random
    >>> x = random.truncated_normal(random.PRNGKey(0), -1.0, 1.0, (5,))
    >>> bool(((x > -1) & (x < 1)).all())
    True
    """
    k = check_key("truncated_normal", key)
    dtype = _float_dtype("truncated_normal", dtype)
    lower = convert(to_operand(lower), dtype)
    upper = convert(to_operand(upper), dtype)
    if shape is None:
        shape = broadcast_shapes(_shape_of(lower), _shape_of(upper))
    else:
        shape = canonical_shape(shape)
        _check_shape("truncated_normal", shape, _shape_of(lower), _shape_of(upper))
    erf = unary_prims["erf"].bind
    sqrt2 = _c(_SQRT2, dtype)
    a = erf(to_operand(jnp.divide(lower, sqrt2)))
    b = erf(to_operand(jnp.divide(upper, sqrt2)))
    u = _uniform(k, shape, dtype, a, b)
    out = jnp.multiply(sqrt2, erf_inv_p.bind(to_operand(u)))
    return jnp.clip(out, jnp.nextafter(lower, _c(np.inf, dtype)), jnp.nextafter(upper, _c(-np.inf, dtype)))


# ----------------------------------------------------------------------------- integers

def _convert_and_clip_integer(val, dtype):
    """Convert integer ``val`` to ``dtype``, clipping to its range instead of wrapping."""
    vdt = aval(val).dtype
    lo = max(np.iinfo(dtype).min, np.iinfo(vdt).min)
    hi = min(np.iinfo(dtype).max, np.iinfo(vdt).max)
    return convert(jnp.clip(val, _c(lo, vdt), _c(hi, vdt)), dtype)


def _urem(x, span):
    """x % span for unsigned ints, with x % 0 == x (XLA's rule, which randint relies on)."""
    zero = jnp.equal(span, _c(0, aval(span).dtype))
    safe = jnp.where(zero, _c(1, aval(span).dtype), span)
    return jnp.where(zero, x, jnp.remainder(x, safe))


def _randint(key, shape, minval, maxval, dtype):
    minval = to_operand(minval)
    maxval = to_operand(maxval)
    _check_shape("randint", shape, _shape_of(minval), _shape_of(maxval))
    if not dtypes.is_integer(aval(minval).dtype):
        minval = convert(minval, dtypes.int64)
    if not dtypes.is_integer(aval(maxval).dtype):
        maxval = convert(maxval, dtypes.int64)
    mdt = aval(maxval).dtype
    max_in_maxval_dtype = _c(min(np.iinfo(dtype).max, np.iinfo(mdt).max), mdt)
    maxval_out_of_range = jnp.greater(maxval, max_in_maxval_dtype)
    minval = _convert_and_clip_integer(minval, dtype)
    maxval = _convert_and_clip_integer(maxval, dtype)
    nbits = np.iinfo(dtype).bits
    k1, k2 = _split2(key)
    higher = random_bits(k1, nbits, shape)
    lower = random_bits(k2, nbits, shape)
    udt = np.dtype(f"uint{nbits}")
    span = convert(jnp.subtract(maxval, minval), udt)
    # maxval <= minval returns minval; https://github.com/jax-ml/jax/issues/222
    span = jnp.where(jnp.less_equal(maxval, minval), _c(1, udt), span)
    span = jnp.where(jnp.logical_and(maxval_out_of_range, jnp.greater(maxval, minval)),
                     jnp.add(span, _c(1, udt)), span)
    # (hi * 2**nbits + lo) % span, using (a * b) % n == ((a % n) * (b % n)) % n.
    multiplier = _urem(jnp.broadcast_to(_c(2 ** (nbits // 2), udt), _shape_of(span)), span)
    multiplier = _urem(jnp.multiply(multiplier, multiplier), span)
    offset = jnp.add(jnp.multiply(_urem(higher, span), multiplier), _urem(lower, span))
    offset = _urem(offset, span)
    return jnp.add(minval, convert(offset, dtype))


def randint(key, shape, minval, maxval, dtype=None):
    """Random integers in ``[minval, maxval)`` (default dtype int64), as jax.random.randint.

    Examples
    --------
    >>> from tracejit import random
    >>> x = random.randint(random.PRNGKey(0), (5,), 0, 10)
    >>> x.dtype, bool(((x >= 0) & (x < 10)).all())
    (dtype('int64'), True)
    """
    k = check_key("randint", key)
    dtype = dtypes.narrow(dtypes.int64 if dtype is None else dtypes.canonical(dtype))
    if not dtypes.is_integer(dtype):
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    shape = canonical_shape(shape)
    with np.errstate(over="ignore"):
        info = np.iinfo(dtype)
        sample_dtype = dtype
        if info.bits < 32:
            # Sample in 32 bits to avoid biased results, as JAX.
            sample_dtype = dtypes.int32
            minval = jnp.clip(convert(to_operand(minval), dtypes.int32), int(info.min), int(info.max))
            maxval = jnp.clip(convert(to_operand(maxval), dtypes.int32), int(info.min), int(info.max) + 1)
        out = _randint(k, shape, minval, maxval, sample_dtype)
        return convert(out, dtype)


# ----------------------------------------------------------------------------- permutations

def _shuffle(key, x, axis, rounds_size, sort_shape):
    """JAX's sort-based shuffle: rounds of stable sorts by fresh 32-bit keys.

    ``sort_shape`` is x.shape (independent lanes) or ``(x.shape[axis],)``:
    then one key vector is broadcast over the other axes, so every lane is
    permuted the same way (``take(x, permutation(n), axis)`` without a gather)."""
    exponent = 3  # tjablin@'s heuristic, as JAX
    num_rounds = int(np.ceil(exponent * np.log(max(1, rounds_size)) / np.log(np.iinfo(np.uint32).max)))
    x = to_operand(x)
    for _ in range(num_rounds):
        key, subkey = _split2(key)
        sort_keys = random_bits(subkey, 32, sort_shape)
        if tuple(sort_shape) != tuple(x.shape):
            view = [1] * x.ndim
            view[axis] = x.shape[axis]
            sort_keys = jnp.broadcast_to(jnp.reshape(sort_keys, tuple(view)), x.shape)
        _, x = _sort_key_val(sort_keys, x, axis)
    return x


def _permutation(key, x, axis=0, independent=False):
    if (x.ndim if isinstance(x, Tracer) else np.ndim(x)) == 0:
        if isinstance(x, Tracer):
            raise TypeError("permutation of a traced integer n: n must be concrete (pass it as a "
                            "static argument); it fixes the output shape")
        a = np.asarray(x)
        if not np.issubdtype(a.dtype, np.integer):
            raise TypeError("x must be an integer or at least 1-dimensional")
        n = operator.index(a[()])
        return _shuffle(key, np.arange(n), 0, n, (n,))
    x = to_operand(x)
    axis = canonicalize_axis(axis, x.ndim)
    if independent or x.ndim == 1:
        return _shuffle(key, x, axis, math.prod(x.shape), x.shape)
    return _shuffle(key, x, axis, x.shape[axis], (x.shape[axis],))


def permutation(key, x, axis=0, independent=False):
    """A random permutation of ``arange(x)`` (int ``x``) or of array ``x`` along ``axis``.

    Bit-for-bit the result of ``jax.random.permutation``. With
    ``independent=True`` each lane along ``axis`` is shuffled separately.

    Examples
    --------
    >>> from tracejit import random
    >>> sorted(random.permutation(random.PRNGKey(0), 5).tolist())
    [0, 1, 2, 3, 4]
    """
    k = check_key("permutation", key)
    return _permutation(k, x, axis, independent)


def shuffle(key, x, axis=0):
    """Shuffle each lane of ``x`` along ``axis`` independently (JAX's deprecated ``shuffle``).

    Equal to ``permutation(key, x, axis, independent=True)``; for NumPy's
    row shuffle use ``permutation(key, x, axis)``.

    Examples
    --------
    >>> from tracejit import random
    >>> random.shuffle(random.PRNGKey(0), np.arange(4)).shape
    (4,)
    """
    k = check_key("shuffle", key)
    return _permutation(k, x, axis, independent=True)


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """A random sample from ``arange(a)`` (int ``a``) or from array ``a`` along ``axis``.

    Examples
    --------
    >>> from tracejit import random
    >>> random.choice(random.PRNGKey(0), 5, (3,), replace=False).shape
    (3,)
    """
    k = check_key("choice", key)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"shape argument of tracejit.random.choice must be a sequence, got {shape}")
    shape = canonical_shape(shape)
    arr = a if isinstance(a, Tracer) else np.asarray(a)
    if arr.ndim == 0:
        if isinstance(arr, Tracer):
            raise TypeError("choice from a traced integer: it must be concrete (a static argument)")
        n_inputs = operator.index(arr[()])
    else:
        axis = canonicalize_axis(axis, arr.ndim)
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=aval(to_operand(arr)).dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size {n_inputs}) "
                         "when 'replace=False'")
    if p is None:
        if replace:
            ind = _randint(k, shape, 0, n_inputs, dtypes.narrow(dtypes.int64))
            result = ind if arr.ndim == 0 else _take(arr, ind, axis, "choice")
        else:
            perm = _permutation(k, n_inputs if arr.ndim == 0 else arr, axis)
            result = perm[(slice(None),) * axis + (slice(n_draws),)]
    else:
        p_arr = to_operand(p)
        if not dtypes.is_float(aval(p_arr).dtype):
            p_arr = convert(p_arr, dtypes.narrow(dtypes.float64))
        if _shape_of(p_arr) != (n_inputs,):
            raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                             f"p has shape {_shape_of(p_arr)} and a.shape[axis] is {n_inputs}.")
        pdt = aval(p_arr).dtype
        if replace:
            p_cuml = jnp.cumsum(p_arr)
            r = jnp.multiply(p_cuml[-1], jnp.subtract(_c(1, pdt), _uniform(k, shape, pdt)))
            # searchsorted(p_cuml, r, 'left') == count of p_cuml < r (p_cuml is sorted).
            ind = jnp.sum(jnp.less(p_cuml, jnp.expand_dims(r, -1)), axis=-1, dtype=dtypes.narrow(dtypes.int64))
        else:
            g = jnp.add(_gumbel(k, (n_inputs,), pdt, _gumbel_mode(mode)), jnp.log(p_arr))
            ind = convert(_top_k_indices(g, n_draws), dtypes.narrow(dtypes.int64))
        result = ind if arr.ndim == 0 else _take(arr, ind, axis, "choice")
    out_shape = shape if arr.ndim == 0 else arr.shape[:axis] + shape + arr.shape[axis + 1:]
    return jnp.reshape(result, out_shape)


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """Samples from a categorical distribution with unnormalized log-probabilities ``logits``.

    Examples
    --------
    >>> from tracejit import random
    >>> random.categorical(random.PRNGKey(0), np.log([0.2, 0.8]), shape=(4,)).shape
    (4,)
    """
    k = check_key("categorical", key)
    logits = to_operand(logits)
    if not dtypes.is_float(aval(logits).dtype):
        logits = convert(logits, dtypes.float64)
    lshape = _shape_of(logits)
    axis = canonicalize_axis(axis, len(lshape))
    batch_shape = tuple(np.delete(np.array(lshape, dtype=np.int64), axis).tolist())
    shape = batch_shape if shape is None else canonical_shape(shape)
    _check_shape("categorical", shape, batch_shape)
    mode = _gumbel_mode(mode)
    dt = aval(logits).dtype
    prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        g_shape = list(shape[len(prefix):])
        g_shape.insert(axis, lshape[axis])
        g = _gumbel(k, (*prefix, *g_shape), dt, mode)
        full = jnp.add(g, jnp.reshape(logits, (1,) * len(prefix) + lshape))
        return jnp.argmax(full, axis=len(prefix) + axis)
    n = math.prod(prefix)
    if n > lshape[axis]:
        raise ValueError(f"Number of samples without replacement ({n}) cannot exceed number of "
                         f"categories ({lshape[axis]}).")
    noisy = jnp.add(logits, _gumbel(k, lshape, dt, mode))
    ind = _top_k_indices(jnp.moveaxis(noisy, axis, -1), n)  # batch_shape + (n,)
    ind = jnp.moveaxis(ind, -1, 0)
    return jnp.reshape(convert(ind, dtypes.int64), shape)


# ----------------------------------------------------------------------------- gamma family

def _gamma(key, a, shape, dtype, log_space=False):
    a = convert(to_operand(a), dtype)
    if shape is None:
        shape = _shape_of(a)
    else:
        _check_shape("gamma", shape, _shape_of(a))
    if _shape_of(a) != tuple(shape):
        a = jnp.broadcast_to(a, shape)
    return _gamma_sample(to_operand(key), to_operand(a), log_space)


def _gamma_sample_impl(key, a, log_space):
    return random_gamma_p.bind(key, a, log_space=log_space)


# Differentiable in ``a`` by implicit reparameterization, as JAX's: with the uniform draw held
# fixed, d sample / d a = -(dP/da) / (dP/dx) at the sample (lax.random_gamma_grad).
_gamma_sample = custom_jvp(_gamma_sample_impl, nondiff_argnums=(2,))


@_gamma_sample.defjvp
def _gamma_sample_jvp(log_space, primals, tangents):
    key, a = primals
    _, a_dot = tangents
    out = _gamma_sample(key, a, log_space)
    if not log_space:
        return out, a_dot * random_gamma_grad(a, out)
    # d log x = dx / x; exp(log x) may round to 0: use the smallest normal number there
    x = jnp.exp(out)
    x = jnp.where(x == 0, jnp.finfo(x.dtype).tiny, x)
    return out, a_dot * (random_gamma_grad(a, x) / x)


def _shape_or_none(shape):
    return None if shape is None else canonical_shape(shape)


def gamma(key, a, shape=None, dtype=None):
    """Gamma(a, 1) values (Marsaglia-Tsang, JAX's algorithm and key use).

    Examples
    --------
    >>> from tracejit import random
    >>> random.gamma(random.PRNGKey(0), 2.0, (3,)).shape
    (3,)
    """
    k = check_key("gamma", key)
    return _gamma(k, a, _shape_or_none(shape), _float_dtype("gamma", dtype))


def loggamma(key, a, shape=None, dtype=None):
    """log of Gamma(a, 1) values, accurate for small ``a``.

    Examples
    --------
    >>> from tracejit import random
    >>> random.loggamma(random.PRNGKey(0), 0.1, (2,)).shape
    (2,)
    """
    k = check_key("loggamma", key)
    return _gamma(k, a, _shape_or_none(shape), _float_dtype("loggamma", dtype), log_space=True)


def beta(key, a, b, shape=None, dtype=None):
    """Beta(a, b) values, from two log-gamma draws.

    Examples
    --------
    >>> from tracejit import random
    >>> random.beta(random.PRNGKey(0), 2.0, 3.0, (3,)).shape
    (3,)
    """
    k = check_key("beta", key)
    dtype = _float_dtype("beta", dtype)
    if shape is None:
        shape = broadcast_shapes(_shape_of(a), _shape_of(b))
    else:
        shape = canonical_shape(shape)
        _check_shape("beta", shape, _shape_of(a), _shape_of(b))
    key_a, key_b = _split2(k)
    log_a = _gamma(key_a, jnp.broadcast_to(convert(to_operand(a), dtype), shape), shape, dtype, True)
    log_b = _gamma(key_b, jnp.broadcast_to(convert(to_operand(b), dtype), shape), shape, dtype, True)
    log_max = jnp.maximum(log_a, log_b)
    ga = jnp.exp(jnp.subtract(log_a, log_max))
    gb = jnp.exp(jnp.subtract(log_b, log_max))
    return jnp.divide(ga, jnp.add(ga, gb))


def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet(alpha) values (normalized log-gamma draws) of shape ``shape + alpha.shape[-1:]``.

    Examples
    --------
    >>> from tracejit import random
    >>> random.dirichlet(random.PRNGKey(0), np.ones(3), (2,)).shape
    (2, 3)
    """
    k = check_key("dirichlet", key)
    dtype = _float_dtype("dirichlet", dtype)
    ashape = _shape_of(alpha)
    if len(ashape) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {len(ashape)}")
    if shape is None:
        shape = ashape[:-1]
    else:
        shape = canonical_shape(shape)
        _check_shape("dirichlet", shape, ashape[:-1])
    lg = _gamma(k, alpha, tuple(shape) + ashape[-1:], dtype, log_space=True)
    e = jnp.exp(jnp.subtract(lg, jnp.max(lg, axis=-1, keepdims=True)))
    return jnp.divide(e, jnp.sum(e, axis=-1, keepdims=True))


def poisson(key, lam, shape=None, dtype=None):
    """Poisson(lam) counts (default dtype int64); JAX's Knuth / transformed-rejection algorithm.

    Examples
    --------
    >>> from tracejit import random
    >>> random.poisson(random.PRNGKey(0), 3.0, (4,)).dtype
    dtype('int64')
    """
    k = check_key("poisson", key)
    dtype = dtypes.narrow(dtypes.int64 if dtype is None else dtypes.canonical(dtype))
    if not dtypes.is_integer(dtype):
        raise TypeError(f"poisson dtype must be an integer dtype, got {dtype}")
    lam = to_operand(lam)
    if shape is None:
        shape = _shape_of(lam)
    else:
        shape = canonical_shape(shape)
        _check_shape("poisson", shape, _shape_of(lam))
    lam = convert(jnp.broadcast_to(lam, shape), dtypes.float32)
    return random_poisson_p.bind(k, to_operand(lam), dtype=dtype)


def _cov_factor(cov, method):
    if isinstance(cov, Tracer):
        linalg = getattr(jnp, "linalg", None)
        fn = getattr(linalg, {"cholesky": "cholesky", "svd": "svd", "eigh": "eigh"}[method], None)
        if fn is None:
            raise NotImplementedError(f"multivariate_normal with a traced covariance needs "
                                      f"tracejit.numpy.linalg.{method}, which is not available yet; "
                                      "pass a concrete covariance")
        lib = linalg
    else:
        lib = np.linalg
        cov = np.asarray(cov)
    if method == "cholesky":
        return lib.cholesky(cov)
    if method == "svd":
        u, s, _ = lib.svd(cov)
        return jnp.multiply(u, jnp.sqrt(s[..., None, :]))
    w, v = lib.eigh(cov)
    return jnp.multiply(v, jnp.sqrt(w[..., None, :]))


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Multivariate normal values ``mean + factor(cov) @ normal`` of shape ``shape + mean.shape[-1:]``.

    Examples
    --------
    >>> from tracejit import random
    >>> random.multivariate_normal(random.PRNGKey(0), np.zeros(2), np.eye(2), (5,)).shape
    (5, 2)
    """
    k = check_key("multivariate_normal", key)
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    mean, cov = to_operand(mean), to_operand(cov)
    if dtype is None:
        dtype = np.result_type(aval(mean).dtype, aval(cov).dtype)
        dtype = dtype if dtypes.is_float(dtype) else dtypes.float64
    else:
        dtype = _float_dtype("multivariate_normal", dtype)
    mean, cov = convert(mean, dtype), convert(cov, dtype)
    mshape, cshape = _shape_of(mean), _shape_of(cov)
    if len(mshape) < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {len(mshape)}")
    if len(cshape) < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {len(cshape)}")
    n = mshape[-1]
    if cshape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
                         f"but got cov.shape == {cshape}.")
    if shape is None:
        shape = broadcast_shapes(mshape[:-1], cshape[:-2])
    else:
        shape = canonical_shape(shape)
        _check_shape("normal", shape, mshape[:-1], cshape[:-2])
    factor = _cov_factor(cov, method)
    z = _normal(k, tuple(shape) + (n,), dtype)
    # factor @ z over the last axis, written with broadcasting (no batched matmul needed).
    return jnp.add(mean, jnp.sum(jnp.multiply(factor, jnp.expand_dims(z, -2)), axis=-1))
