"""Activations and other neural-network functions of ``tracejit.nn`` (as ``jax.nn``).

Every function is written on ``tracejit.numpy``/``tracejit.lax``, so it runs eagerly (NumPy), under
``jit``, ``grad`` and ``vmap``.  The formulas are JAX's: e.g. ``relu``/``relu6`` have JAX's custom
JVPs (derivative 0 at the kinks), ``gelu`` is the tanh approximation unless ``approximate=False``,
``softmax``/``log_softmax`` shift by a ``stop_gradient``-ed maximum.
"""
from __future__ import annotations

import operator

import numpy as np
from tracejit.core import dtypes

import tracejit.numpy as jnp
from tracejit import lax
from tracejit.core.tracer import jax_value
from tracejit.transforms.api_ad import custom_jvp, stop_gradient

__all__ = [
    "celu", "dot_product_attention", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
    "identity", "leaky_relu", "log1mexp", "log_sigmoid", "log_softmax", "logmeanexp", "logsumexp", "mish",
    "one_hot", "relu", "relu6", "selu", "sigmoid", "silu", "soft_sign", "softmax", "softplus", "sparse_plus",
    "sparse_sigmoid", "squareplus", "standardize", "swish", "tanh",
]


def _inexact(x):
    """``x`` as an array of an inexact dtype (integers and bools become float64, NumPy's default)."""
    x = jnp.asarray(x)
    if not dtypes.is_inexact(np.dtype(x.dtype)):
        x = x.astype(jnp.float_)
    return x


def _const(value, like):
    """``value`` as a 0-d array of ``like``'s dtype."""
    return np.asarray(value, dtype=like.dtype)


# ------------------------------------------------------------------------------------------- activations
def _relu(x):
    return jnp.maximum(x, 0)


relu = custom_jvp(_relu)
relu.defjvps(lambda g, ans, x: jnp.where(x > 0, g, jnp.zeros_like(g)))
relu.__doc__ = """Rectified linear unit: ``max(x, 0)``, with derivative 0 at ``x == 0`` (as JAX).

Parameters
----------
x : array_like

Returns
-------
Array

Examples
--------
>>> import numpy as np, tracejit
>>> relu(np.array([-2., 0., 1.5]))
Array([0. , 0. , 1.5])
>>> float(tracejit.grad(relu)(0.0))
0.0
"""


def _relu6(x):
    return jnp.minimum(jnp.maximum(x, 0), 6.0)


relu6 = custom_jvp(_relu6)
relu6.defjvps(lambda g, ans, x: jnp.where((x > 0) & (x < 6), g, jnp.zeros_like(g)))
relu6.__doc__ = """Rectified linear unit 6: ``min(max(x, 0), 6)``, derivative 0 at 0 and 6 (as JAX).

Parameters
----------
x : array_like

Returns
-------
Array

Examples
--------
>>> import numpy as np
>>> relu6(np.array([-1., 3., 7.]))
Array([0., 3., 6.])
"""


def sigmoid(x):
    """Logistic sigmoid ``1 / (1 + exp(-x))``.

    Parameters
    ----------
    x : array_like

    Returns
    -------
    Array

    Examples
    --------
    >>> import numpy as np
    >>> sigmoid(np.array([0.0]))
    Array([0.5])
    """
    return lax.logistic(_inexact(x))


def softplus(x):
    """``log(1 + exp(x))``, computed as ``logaddexp(x, 0)``.

    Examples
    --------
    >>> import numpy as np
    >>> np.round(softplus(np.array([0.0, 50.0])), 6)
    array([ 0.693147, 50.      ])
    """
    return jnp.logaddexp(_inexact(x), 0)


def sparse_plus(x):
    """``0`` for ``x <= -1``, ``(x + 1)**2 / 4`` on ``(-1, 1)``, ``x`` for ``x >= 1``.

    Examples
    --------
    >>> import numpy as np
    >>> sparse_plus(np.array([-2., 0., 2.]))
    Array([0.  , 0.25, 2.  ])
    """
    x = _inexact(x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def sparse_sigmoid(x):
    """``0.5 * clip(x + 1, 0, 2)``: the derivative of :func:`sparse_plus`.

    Examples
    --------
    >>> import numpy as np
    >>> sparse_sigmoid(np.array([-2., 0., 0.5, 3.]))
    Array([0.  , 0.5 , 0.75, 1.  ])
    """
    return 0.5 * jnp.clip(_inexact(x) + 1.0, 0.0, 2.0)


def soft_sign(x):
    """``x / (|x| + 1)``.

    Examples
    --------
    >>> import numpy as np
    >>> soft_sign(np.array([-1., 3.]))
    Array([-0.5 ,  0.75])
    """
    x = _inexact(x)
    return x / (jnp.abs(x) + 1)


def silu(x):
    """SiLU / swish: ``x * sigmoid(x)``.

    Examples
    --------
    >>> import numpy as np
    >>> silu(np.array([0.0]))
    Array([0.])
    """
    x = _inexact(x)
    return x * sigmoid(x)


swish = silu


def mish(x):
    """``x * tanh(softplus(x))``.

    Examples
    --------
    >>> import numpy as np
    >>> np.round(mish(np.array([1.0])), 6)
    array([0.865098])
    """
    x = _inexact(x)
    return x * jnp.tanh(softplus(x))


def log_sigmoid(x):
    """``log(sigmoid(x)) = -softplus(-x)``.

    Examples
    --------
    >>> import numpy as np
    >>> np.round(log_sigmoid(np.array([0.0, -100.0])), 6)
    array([  -0.693147, -100.      ])
    """
    return -softplus(-_inexact(x))


def elu(x, alpha=1.0):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise (the exponential only sees ``x <= 0``).

    Examples
    --------
    >>> import numpy as np
    >>> np.round(elu(np.array([-1.0, 2.0])), 6)
    array([-0.632121,  2.      ])
    """
    x = _inexact(x)
    return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0.0, x)))


def leaky_relu(x, negative_slope=1e-2):
    """``x`` for ``x >= 0``, ``negative_slope * x`` otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> leaky_relu(np.array([-10., 1.]))
    Array([-0.1,  1. ])
    """
    x = _inexact(x)
    return jnp.where(x >= 0, x, negative_slope * x)


def hard_tanh(x):
    """``-1`` below ``-1``, ``1`` above ``1``, ``x`` between.

    Examples
    --------
    >>> import numpy as np
    >>> hard_tanh(np.array([-3., 0.5, 2.]))
    Array([-1. ,  0.5,  1. ])
    """
    x = _inexact(x)
    return jnp.where(x > 1, 1.0, jnp.where(x < -1, -1.0, x))


def celu(x, alpha=1.0):
    """``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``.

    Examples
    --------
    >>> import numpy as np
    >>> np.round(celu(np.array([-2.0, 1.0]), alpha=2.0), 6)
    array([-1.264241,  1.      ])
    """
    x = _inexact(x)
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x):
    """``scale * elu(x, alpha)`` with ``alpha = 1.67326...``, ``scale = 1.05070...``.

    Examples
    --------
    >>> import numpy as np
    >>> np.round(selu(np.array([-1.0, 1.0])), 6)
    array([-1.111331,  1.050701])
    """
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


def gelu(x, approximate: bool = True):
    """Gaussian error linear unit.

    ``approximate=True`` (the default, as JAX): ``x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x**3)))``;
    ``approximate=False``: ``x/2 * erfc(-x / sqrt(2))`` (accurate for large negative ``x`` too).

    Examples
    --------
    >>> import numpy as np
    >>> np.round(gelu(np.array([1.0])), 6), np.round(gelu(np.array([1.0]), approximate=False), 6)
    (array([0.841192]), array([0.841345]))
    """
    x = _inexact(x)
    if approximate:
        c = _const(np.sqrt(2 / np.pi), x)
        cdf = 0.5 * (1.0 + jnp.tanh(c * (x + 0.044715 * (x ** 3))))
        return x * cdf
    from tracejit.scipy.special import erfc
    sqrt_half = _const(np.sqrt(0.5), x)
    return 0.5 * x * erfc(-x * sqrt_half)


def glu(x, axis: int = -1):
    """Gated linear unit: split ``x`` in two halves ``a, b`` along ``axis``; ``a * sigmoid(b)``.

    Examples
    --------
    >>> import numpy as np
    >>> glu(np.array([2.0, 0.0]))
    Array([1.])
    """
    x = _inexact(x)
    if x.shape[axis] % 2:
        raise ValueError(f"glu: the size of axis {axis} must be divisible by 2, got {x.shape[axis]}")
    a, b = jnp.split(x, 2, axis)
    return a * sigmoid(b)


def squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2``.

    Examples
    --------
    >>> import numpy as np
    >>> squareplus(np.array([0.0, 1.5]))
    Array([1., 2.])
    """
    x = _inexact(x)
    return (x + jnp.sqrt(jnp.square(x) + b)) / 2


def hard_sigmoid(x):
    """``relu6(x + 3) / 6``.

    Examples
    --------
    >>> import numpy as np
    >>> hard_sigmoid(np.array([-4., 0., 4.]))
    Array([0. , 0.5, 1. ])
    """
    return relu6(_inexact(x) + 3.0) / 6.0


def hard_silu(x):
    """Hard SiLU / hard swish: ``x * hard_sigmoid(x)``.

    Examples
    --------
    >>> import numpy as np
    >>> hard_silu(np.array([-4., 0., 4.]))
    Array([-0.,  0.,  4.])
    """
    x = _inexact(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def identity(x):
    """Identity activation: returns ``x``.

    Examples
    --------
    >>> identity(3.0)
    3.0
    """
    return jax_value(x)


def tanh(x):
    """Hyperbolic tangent (``jnp.tanh``).

    Examples
    --------
    >>> import numpy as np
    >>> tanh(np.array([0.0]))
    Array([0.])
    """
    return jnp.tanh(x)


# ------------------------------------------------------------------------------------ reductions over axes
def _norm_axis(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(operator.index(a) % ndim if ndim else 0 for a in axis)
    return (operator.index(axis) % ndim if ndim else 0,)


def _masked_max(x, axis, where):
    neg_inf = _const(-np.inf, x)
    xm = x if where is None else jnp.where(where, x, neg_inf)
    return jnp.max(xm, axis=axis, keepdims=True, initial=-np.inf)


def _masked_sum(x, axis, where, keepdims=True):
    xm = x if where is None else jnp.where(where, x, jnp.zeros_like(x))
    return jnp.sum(xm, axis=axis, keepdims=keepdims)


def log_softmax(x, axis=-1, where=None):
    """``x - logsumexp(x, axis)``, shifted by the (``stop_gradient``-ed) maximum.

    Parameters
    ----------
    x : array_like
    axis : int or tuple of int or None
    where : array_like of bool, optional
        Elements taking part; the others give ``-inf``.

    Examples
    --------
    >>> import numpy as np
    >>> np.round(log_softmax(np.array([0.0, 0.0])), 6)
    array([-0.693147, -0.693147])
    """
    x = _inexact(x)
    axis = _norm_axis(axis, x.ndim)
    x_max = _masked_max(x, axis, where)
    x_safe = x if where is None else jnp.where(where, x, _const(-np.inf, x))
    shifted = x_safe - stop_gradient(x_max)
    shifted_lse = jnp.log(_masked_sum(jnp.exp(shifted), axis, where))
    result = shifted - shifted_lse
    if where is not None:
        return jnp.where(where, result, _const(-np.inf, x))
    return result


def softmax(x, axis=-1, where=None):
    """``exp(x) / sum(exp(x), axis)``, shifted by the (``stop_gradient``-ed) maximum.

    Parameters
    ----------
    x : array_like
    axis : int or tuple of int or None
    where : array_like of bool, optional
        Elements taking part; the others give ``0``.

    Examples
    --------
    >>> import numpy as np
    >>> softmax(np.array([1.0, 1.0, 1.0, 1.0]))
    Array([0.25, 0.25, 0.25, 0.25])
    """
    x = _inexact(x)
    axis = _norm_axis(axis, x.ndim)
    x_max = _masked_max(x, axis, where)
    x_safe = x if where is None else jnp.where(where, x, _const(-np.inf, x))
    unnormalized = jnp.exp(x_safe - stop_gradient(x_max))
    result = unnormalized / _masked_sum(unnormalized, axis, where)
    if where is not None:
        result = jnp.where(where, result, jnp.zeros_like(result))
    return result


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """``log(sum(b * exp(a), axis))`` computed stably (``jax.nn.logsumexp``).

    Parameters
    ----------
    a : array_like
    axis : int or tuple of int or None
    b : array_like, optional
        Weights.
    keepdims : bool
    return_sign : bool
        Also return the sign of the sum (then the result is ``log|sum|``).
    where : array_like of bool, optional
        Elements taking part.

    Examples
    --------
    >>> import numpy as np
    >>> float(np.round(logsumexp(np.array([0.0, 0.0])), 6))
    0.693147
    """
    if where is not None:
        a = _inexact(a)
        a = jnp.where(where, a, _const(-np.inf, a))
        if b is not None:
            b = jnp.where(where, b, 0)
    return jnp.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)


def logmeanexp(x, axis=None, where=None, keepdims=False):
    """``log(mean(exp(x), axis))``: :func:`logsumexp` minus the log of the number of elements.

    Examples
    --------
    >>> import numpy as np
    >>> float(logmeanexp(np.array([2.0, 2.0])))
    2.0
    """
    x = _inexact(x)
    lse = logsumexp(x, axis=axis, keepdims=keepdims, where=where)
    if where is None:
        axes = _norm_axis(axis, x.ndim)
        count = float(np.prod([x.shape[a] for a in axes])) if axes else 1.0
        return lse - _const(np.log(count), lse)
    count = _masked_sum(jnp.ones_like(x), _norm_axis(axis, x.ndim), where, keepdims=keepdims)
    return lse - jnp.log(count)


def log1mexp(x):
    """``log(1 - exp(-x))`` for ``x >= 0``, accurate for small and large ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> np.round(log1mexp(np.array([1e-10, 50.0])), 4)
    array([-23.0259,  -0.    ])
    """
    x = _inexact(x)
    small = x < _const(np.log(2.0), x)
    return jnp.where(small, jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None):
    """``(x - mean) / sqrt(variance + epsilon)``; ``variance = mean(x**2) - mean(x)**2`` when not given (as JAX).

    Examples
    --------
    >>> import numpy as np
    >>> np.round(standardize(np.array([1.0, 3.0]), epsilon=0.0), 6)
    array([-1.,  1.])
    """
    x = _inexact(x)
    axes = _norm_axis(axis, x.ndim)
    if where is None:
        def _mean(v):
            return jnp.mean(v, axis=axes, keepdims=True)
    else:
        count = _masked_sum(jnp.ones_like(x), axes, where)

        def _mean(v):
            return _masked_sum(v, axes, where) / count
    if mean is None:
        mean = _mean(x)
    if variance is None:
        variance = _mean(jnp.square(x)) - jnp.square(mean)
    return (x - mean) * lax.rsqrt(jnp.asarray(variance) + epsilon)


def one_hot(x, num_classes: int, *, dtype=None, axis: int = -1):
    """One-hot encode integer indices along a new axis ``axis`` (out-of-range indices give all zeros).

    Parameters
    ----------
    x : array_like of int
    num_classes : int
    dtype : dtype, optional
        Default ``jnp.float_`` (float64, tracejit's default float).
    axis : int
        Position of the new axis in the result.

    Examples
    --------
    >>> import numpy as np
    >>> one_hot(np.array([0, 2, -1]), 3)
    Array([[1., 0., 0.],
           [0., 0., 1.],
           [0., 0., 0.]])
    """
    num_classes = operator.index(num_classes)
    dtype = jnp.float_ if dtype is None else dtype
    x = jnp.asarray(x)
    out_axis = operator.index(axis)
    if not -(x.ndim + 1) <= out_axis <= x.ndim:
        raise ValueError(f"one_hot: axis {axis} is out of bounds for a result of rank {x.ndim + 1}")
    out_axis %= x.ndim + 1
    lhs = jnp.expand_dims(x, out_axis)
    rhs_shape = [1] * x.ndim
    rhs_shape.insert(out_axis, num_classes)
    rhs = lax.broadcasted_iota(x.dtype, tuple(rhs_shape), out_axis)
    return (lhs == rhs).astype(dtype)


# ------------------------------------------------------------------------------------------------ attention
def _ensure_4d(t):
    t = jnp.asarray(t)
    return jnp.reshape(t, (1,) * (4 - t.ndim) + tuple(t.shape)) if t.ndim < 4 else t


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None, is_causal=False,
                          query_seq_lengths=None, key_value_seq_lengths=None, local_window_size=None,
                          implementation=None):
    """Scaled dot-product attention ``softmax(q k^T * scale + bias, masked) v`` (``jax.nn.dot_product_attention``).

    Shapes: ``query`` ``(B, T, N, H)`` or ``(T, N, H)``, ``key``/``value`` ``(B, S, K, H)`` or ``(S, K, H)``,
    with ``N`` a multiple of ``K`` (grouped-query attention: query head ``n`` uses key/value head
    ``n // (N // K)``).

    Parameters
    ----------
    query, key, value : array_like
    bias : array_like, optional
        Added to the logits; 4-D (or fewer dims, padded in front), broadcastable to ``(B, N, T, S)``.
    mask : array_like of bool, optional
        ``True`` where attention is allowed; broadcastable to ``(B, N, T, S)``.
    scale : float, optional
        Logit scale, default ``1 / sqrt(H)``.
    is_causal : bool
        Query ``t`` attends to keys ``s <= t``.
    query_seq_lengths, key_value_seq_lengths : array_like of int, shape ``(B,)``, optional
        Valid lengths; padded positions are masked (and, when both are given, padded query rows give 0).
    local_window_size : int or (int, int), optional
        ``(left, right)``: query ``t`` attends to keys in ``[t - left, t + right]``.
    implementation : None or "xla"
        Accepted for compatibility; there is one implementation.

    Returns
    -------
    Array of ``query``'s shape.

    Notes
    -----
    Masked logits are set to ``-0.7 * finfo(dtype).max`` as in JAX. Logits and softmax are computed in
    ``promote_types(dtype, float32)`` (JAX rounds the softmax to float32 even for float64 inputs).

    Examples
    --------
    >>> import numpy as np
    >>> q = k = v = np.eye(2).reshape(2, 1, 2)          # T=S=2, one head, H=2
    >>> np.round(dot_product_attention(q, k, v, scale=100.0)[:, 0], 6)
    array([[1., 0.],
           [0., 1.]])
    """
    if implementation not in (None, "xla"):
        raise ValueError(f"Unsupported implementation option: {implementation}")
    out_shape = jnp.asarray(query).shape
    q, k, v = _ensure_4d(query), _ensure_4d(key), _ensure_4d(value)
    bias = _ensure_4d(bias) if bias is not None else None
    mask = _ensure_4d(mask) if mask is not None else None
    B, S, K, H = k.shape
    if tuple(v.shape) != (B, S, K, H) or v.dtype != k.dtype:
        raise ValueError(f"value shape/dtype should be {(B, S, K, H)}/{k.dtype}, got {v.shape}/{v.dtype}")
    if q.ndim != 4 or q.shape[0] != B or q.shape[3] != H or q.dtype != k.dtype:
        raise ValueError(f"query shape should be ({B}, T, N, {H}) with dtype {k.dtype}, got {q.shape}/{q.dtype}")
    if mask is not None and mask.dtype != np.bool_:
        raise ValueError(f"mask dtype should be bool, got {mask.dtype}")
    for name, t in (("bias", bias), ("mask", mask)):
        if t is not None and t.ndim != 4:
            raise ValueError(f"{name} ndim should be 4, but got {t.ndim}")
    T, N = q.shape[1], q.shape[2]
    if N % K:
        raise ValueError(f"The number of query heads must be a multiple of key/value heads, but got {N} vs {K}")
    G = N // K
    seqlens = []
    for name, t in (("query_seq_lengths", query_seq_lengths), ("key_value_seq_lengths", key_value_seq_lengths)):
        if t is not None:
            t = jnp.asarray(t)
            if t.shape != (B,) or not np.issubdtype(t.dtype, np.integer):
                raise ValueError(f"{name} should be an integer array of shape ({B},), got {t.shape}/{t.dtype}")
        seqlens.append(t)
    q_len, kv_len = seqlens
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    scale = (1.0 / np.sqrt(H)) if scale is None else scale

    logits_dtype = np.promote_types(q.dtype, np.float32)
    qg = jnp.reshape(q.astype(logits_dtype), (B, T, K, G, H))
    logits = jnp.einsum("btkgh,bskh->bkgts", qg, k.astype(logits_dtype))
    logits = jnp.reshape(logits, (B, N, T, S))
    logits = logits * np.asarray(scale, dtype=logits_dtype)
    if bias is not None:
        logits = (logits + bias).astype(logits_dtype)

    combined = None

    def _and(m, new):
        return new if m is None else jnp.logical_and(m, new)

    if mask is not None:
        combined = _and(combined, mask)
    t_pos = np.arange(T)[:, None]
    s_pos = np.arange(S)[None, :]
    if is_causal:
        combined = _and(combined, jnp.asarray(np.tril(np.ones((T, S), bool)))[None, None])
    if local_window_size is not None:
        left, right = local_window_size
        window = (t_pos <= s_pos + left) & (t_pos >= s_pos - right)
        combined = _and(combined, jnp.asarray(window)[None, None])
    if q_len is not None or kv_len is not None:
        pad = None
        if q_len is not None:
            pad = jnp.arange(T)[None, :, None] < q_len[:, None, None]
        if kv_len is not None:
            kv_ok = jnp.arange(S)[None, None, :] < kv_len[:, None, None]
            pad = kv_ok if pad is None else jnp.logical_and(pad, kv_ok)
        combined = _and(combined, pad[:, None, :, :])
    if combined is not None:
        large_negative = np.asarray(-0.7 * np.finfo(logits_dtype).max, dtype=logits_dtype)
        logits = jnp.where(combined, logits, large_negative)

    probs = softmax(logits, axis=-1).astype(k.dtype)
    probs = jnp.reshape(probs, (B, K, G, T, S))
    encoded = jnp.einsum("bkgts,bskh->btkgh", probs, v)
    encoded = jnp.reshape(encoded, (B, T, N, H))
    if q_len is not None and kv_len is not None:
        valid = (jnp.arange(T)[None, :] < q_len[:, None])[:, :, None, None]
        encoded = encoded * valid.astype(encoded.dtype)
    return jnp.reshape(encoded, out_shape)
