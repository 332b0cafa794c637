"""Static shape arithmetic of ``jax.lax`` convolutions and windowed reductions:
conv_shape_tuple, conv_general_shape_tuple, conv_transpose_shape_tuple,
conv_general_permutations, reduce_window_shape_tuple.

Plain Python on integer tuples; the results are tuples of Python ints.
"""
from __future__ import annotations


from tracejit.lax.convolution import conv_dimension_numbers, padtype_to_pads

__all__ = ["conv_shape_tuple", "conv_general_shape_tuple", "conv_transpose_shape_tuple",
           "conv_general_permutations", "reduce_window_shape_tuple"]


def _stride_dim(d, window, stride):
    """Number of window positions: ``max(0, (d - window) // stride + 1)``."""
    return max((d - window) // stride + 1, 0)


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """Output shape of a convolution of canonical ``(N, C, spatial...)`` / ``(O, I, spatial...)``
    shapes (``jax.lax.conv_shape_tuple``).

    ``pads`` is a padding string (``'SAME'``, ``'SAME_LOWER'``, ``'VALID'``) or ``(low, high)``
    pairs.

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.conv_shape_tuple((1, 3, 10, 10), (8, 3, 3, 3), (2, 2), "SAME")
    (1, 8, 5, 5)
    """
    lhs_shape, rhs_shape = tuple(int(d) for d in lhs_shape), tuple(int(d) for d in rhs_shape)
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    pads = [tuple(p) for p in pads]
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected {len(lhs_shape) - 2}, "
                        f"got {len(pads)}.")
    padded = [d + lo + hi for d, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(p < 0 for p in padded):
        raise ValueError("Negative padding is larger than the size of the corresponding dimension: "
                         f"got padding={pads} for lhs_shape[2:]={lhs_shape[2:]}")
    space = tuple(_stride_dim(d, k, s) for d, k, s in zip(padded, rhs_shape[2:], strides))
    if lhs_shape[0] % batch_group_count:
        raise ValueError(f"batch size {lhs_shape[0]} is not a multiple of batch_group_count={batch_group_count}")
    return (lhs_shape[0] // batch_group_count, rhs_shape[0]) + space


def conv_general_permutations(dimension_numbers):
    """``(lhs_perm, rhs_perm, out_perm)``: the axis orders that bring string
    ``dimension_numbers`` such as ``('NHWC', 'HWIO', 'NHWC')`` into canonical order
    (``jax.lax.conv_general_permutations``); spatial axes follow the kernel spec.

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.conv_general_permutations(("NHWC", "HWIO", "NHWC"))
    ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    """
    lhs, rhs, out = dimension_numbers
    if not all(isinstance(s, str) for s in (lhs, rhs, out)):
        raise TypeError(f"conv_general_permutations needs string dimension numbers, got {dimension_numbers!r}")
    for s, pair in ((lhs, "NC"), (rhs, "OI"), (out, "NC")):
        if any(ch not in s for ch in pair):
            raise TypeError(f"convolution dimension_numbers[{(lhs, rhs, out).index(s)}] must contain the "
                            f"characters '{pair[0]}' and '{pair[1]}', got {s}.")
    if not len(lhs) == len(rhs) == len(out):
        raise TypeError(f"convolution dimension_numbers must have the same length, got {dimension_numbers!r}")
    zeros = (0,) * len(lhs)
    dn = conv_dimension_numbers(zeros, zeros, (lhs, rhs, out))
    return tuple(dn.lhs_spec), tuple(dn.rhs_spec), tuple(dn.out_spec)


def _permuted(shape, perm):
    return tuple(int(shape[i]) for i in perm)


def _unpermute(shape, perm):
    out = [0] * len(perm)
    for d, i in zip(shape, perm):
        out[i] = d
    return tuple(out)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """Output shape of ``conv_general_dilated`` without dilation, for string
    ``dimension_numbers`` (``jax.lax.conv_general_shape_tuple``).

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.conv_general_shape_tuple((1, 10, 10, 3), (3, 3, 3, 8), (1, 1), "VALID", ("NHWC", "HWIO", "NHWC"))
    (1, 8, 8, 8)
    """
    lp, rp, op = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple(_permuted(lhs_shape, lp), _permuted(rhs_shape, rp), window_strides, padding)
    return _unpermute(out, op)


def _transpose_padding(k, s, padding):
    """Total padding of one spatial axis of a transposed convolution (as JAX's conv_transpose)."""
    if padding == "SAME":
        return k + s - 2
    if padding == "VALID":
        return k + s - 2 + max(k - s, 0)
    if isinstance(padding, str):
        raise ValueError(f"Invalid padding mode: {padding}")
    return sum(k - p - 1 for p in padding)


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """Output shape of ``conv_transpose`` for string ``dimension_numbers``
    (``jax.lax.conv_transpose_shape_tuple``).

    ``padding`` is ``'SAME'``, ``'VALID'`` or explicit ``(low, high)`` pairs, each already the
    transposed convolution's padding.

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.conv_transpose_shape_tuple((1, 4, 4, 3), (3, 3, 3, 8), (2, 2), "SAME", ("NHWC", "HWIO", "NHWC"))
    (1, 8, 8, 8)
    """
    lp, rp, op = conv_general_permutations(dimension_numbers)
    lt, rt = _permuted(lhs_shape, lp), _permuted(rhs_shape, rp)
    if isinstance(padding, str):
        pads = [_transpose_padding(k, s, padding) for k, s in zip(rt[2:], window_strides)]
    else:
        pads = [sum(p) for p in padding]
    space = tuple((i - 1) * s - k + 2 + p for i, k, s, p in zip(lt[2:], rt[2:], window_strides, pads))
    return _unpermute((lt[0], rt[0]) + space, op)


def _dilate(shape, dilation):
    if any(d <= 0 for d in dilation):
        raise TypeError(f"All dilations must be positive, got {tuple(dilation)}.")
    dilation = (1,) * (len(shape) - len(dilation)) + tuple(dilation)
    return tuple(0 if n == 0 else 1 + d * (n - 1) for n, d in zip(shape, dilation))


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding, base_dilation=None,
                              window_dilation=None):
    """Output shape of ``reduce_window`` with explicit ``(low, high)`` padding
    (``jax.lax.reduce_window_shape_tuple``).

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.reduce_window_shape_tuple((10, 7), (3, 3), (2, 1), ((0, 0), (1, 1)))
    (4, 7)
    """
    shape = tuple(int(d) for d in operand_shape)
    window = tuple(int(d) for d in window_dimensions)
    if base_dilation is not None:
        shape = _dilate(shape, base_dilation)
    if window_dilation is not None:
        window = _dilate(window, window_dilation)
    padded = [d + lo + hi for d, (lo, hi) in zip(shape, padding)]
    return tuple(_stride_dim(d, k, s) for d, k, s in zip(padded, window, window_strides))


