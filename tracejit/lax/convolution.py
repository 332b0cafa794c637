"""Convolutions and windowed reductions of ``jax.lax``, written with slices and one contraction.

``conv_general_dilated`` gathers the input window of every kernel tap with a strided static
slice, stacks the taps next to the input features (an im2col built from ``slice``,
``reshape`` and ``concatenate``) and contracts features and taps with the kernel in one
``dot_general``. Feature groups and batch groups become a batch dimension of that
contraction. Because it is made of primitives that already have derivative, batching
and compile rules, convolutions differentiate (both operands, any order), ``vmap`` and
``jit`` like any other program; a native convolution kernel is a separate concern of
the CPU backend.

``reduce_window`` folds the window taps with the reducing function the same way
(``max``/``min``/``add``/``mul`` and any other binary function of arrays).
"""
from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np

from tracejit.lax.ops import (broadcast_in_dim, concatenate, convert_element_type, dot_general, pad, reshape, rev, slice,
                              transpose)
from tracejit.numpy._util import aval, to_operand

__all__ = ["ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_dilated", "conv",
           "conv_with_general_padding", "conv_transpose", "padtype_to_pads", "reduce_window"]


class ConvDimensionNumbers(NamedTuple):
    """Where batch/feature/spatial dims are in each operand, as in ``jax.lax``.

    ``lhs_spec = (batch, feature, spatial...)``, ``rhs_spec = (out feature, in feature, spatial...)``,
    ``out_spec = (batch, feature, spatial...)``: each a tuple of axis numbers.
    """

    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """Normalize ``dimension_numbers`` (None, strings like ``('NHWC', 'HWIO', 'NHWC')`` or
    :class:`ConvDimensionNumbers`) to axis numbers.

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
    ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"convolution requires lhs and rhs of one rank, got {len(lhs_shape)} and {len(rhs_shape)}")
    if dimension_numbers is None:
        spec = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(spec, spec, spec)
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if len(dimension_numbers) != 3:
        raise TypeError(f"dimension_numbers must have three entries, got {dimension_numbers!r}")
    lhs, rhs, out = dimension_numbers
    if all(isinstance(s, str) for s in dimension_numbers):
        for s, pair in ((lhs, "NC"), (rhs, "OI"), (out, "NC")):
            if len(s) != len(lhs_shape) or any(s.count(ch) != 1 for ch in pair) or len(set(s)) != len(s):
                raise TypeError(f"convolution dimension spec {s!r} does not fit rank {len(lhs_shape)}")
        rhs_spatial = [ch for ch in rhs if ch not in "OI"]
        if sorted(rhs_spatial) != sorted(ch for ch in lhs if ch not in "NC") \
                or sorted(rhs_spatial) != sorted(ch for ch in out if ch not in "NC"):
            raise TypeError(f"convolution specs {dimension_numbers!r} name different spatial dims")

        def spec(s, a, b):
            # Spatial dims in the kernel spec's order, matched by letter.
            return (s.index(a), s.index(b)) + tuple(s.index(ch) for ch in rhs_spatial)
        return ConvDimensionNumbers(spec(lhs, "N", "C"), spec(rhs, "O", "I"), spec(out, "N", "C"))
    return ConvDimensionNumbers(*(tuple(int(d) for d in s) for s in dimension_numbers))


def padtype_to_pads(in_shape, window_shape, window_strides, padding) -> list:
    """Explicit ``(low, high)`` pads for ``'SAME'``, ``'SAME_LOWER'`` or ``'VALID'``.

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.padtype_to_pads((5, 5), (3, 3), (2, 2), "SAME")
    [(1, 1), (1, 1)]
    """
    if not isinstance(padding, str):
        return [tuple(p) for p in padding]
    kind = padding.upper()
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"unknown padding {padding!r}: expected 'SAME', 'SAME_LOWER', 'VALID' or (low, high) pairs")
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides):
        out = -(-n // s)
        total = max(0, (out - 1) * s + k - n)
        lo = total // 2 if kind == "SAME" else total - total // 2
        pads.append((lo, total - lo))
    return pads


def _dilated(size, dilation):
    return 0 if size == 0 else (size - 1) * dilation + 1


def _window_taps(x, spatial_axes, window, strides, dilation, out_sizes):
    """One strided slice of ``x`` per window tap (C order over the window): each has ``out_sizes``
    along ``spatial_axes``."""
    shape = aval(x).shape
    taps = []
    for offsets in itertools.product(*(range(k) for k in window)):
        starts, limits, steps = [0] * len(shape), list(shape), [1] * len(shape)
        for ax, k, s, d, n in zip(spatial_axes, offsets, strides, dilation, out_sizes):
            starts[ax] = k * d
            limits[ax] = k * d + (n - 1) * s + 1 if n else k * d
            steps[ax] = s
        taps.append(slice(x, starts, limits, steps))
    return taps


def _spatial_prepare(x, spatial_axes, pads, base_dilation, padding_value):
    """Dilate (interior padding) and pad the spatial axes of ``x``."""
    shape = aval(x).shape
    config = [(0, 0, 0)] * len(shape)
    for ax, (lo, hi), d in zip(spatial_axes, pads, base_dilation):
        config[ax] = (int(lo), int(hi), int(d) - 1)
    if all(c == (0, 0, 0) for c in config):
        return x
    if not hasattr(padding_value, "aval"):
        padding_value = np.asarray(padding_value, aval(x).dtype)[()]
    return pad(x, padding_value, config)


def _out_sizes(padded_sizes, window, strides, dilation):
    return [max(0, (n - _dilated(k, d)) // s + 1) if n >= _dilated(k, d) else 0
            for n, k, s, d in zip(padded_sizes, window, strides, dilation)]


def _positive_ints(name, values, n):
    values = (1,) * n if values is None else tuple(int(v) for v in values)
    if len(values) != n or any(v < 1 for v in values):
        raise ValueError(f"{name} must be {n} positive integers, got {values}")
    return values


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count=1, batch_group_count=1, precision=None,
                         preferred_element_type=None):
    """General N-d convolution (``jax.lax.conv_general_dilated``): a cross-correlation with strides,
    padding, input (``lhs_dilation``, transposed convolutions) and kernel dilation, and feature or
    batch groups.

    Parameters
    ----------
    lhs, rhs : array
        Input and kernel, of one dtype and rank.
    window_strides : sequence of int
        Step between windows per spatial dim.
    padding : str or sequence of (int, int)
        ``'SAME'``, ``'SAME_LOWER'``, ``'VALID'`` or explicit (low, high) pads (negative crops).
    lhs_dilation, rhs_dilation : sequence of int, optional
        Input and kernel dilation per spatial dim.
    dimension_numbers : None, tuple of str or ConvDimensionNumbers
        Layouts; None is ``('NC...', 'OI...', 'NC...')``.
    feature_group_count, batch_group_count : int
        Grouped (e.g. depthwise) convolutions; at most one of them above 1.
    precision : ignored
        Accepted for compatibility: CPU products run at the operands' precision.
    preferred_element_type : dtype, optional
        Result dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> x = np.arange(5.0).reshape(1, 1, 5)
    >>> k = np.array([1.0, 0.0, -1.0]).reshape(1, 1, 3)
    >>> lax.conv_general_dilated(x, k, (1,), "VALID")
    Array([[[-2., -2., -2.]]])
    """
    lhs, rhs = to_operand(lhs), to_operand(rhs)
    la, ra = aval(lhs), aval(rhs)
    if la.dtype != ra.dtype:
        raise TypeError(f"conv_general_dilated requires arguments of one dtype, got {la.dtype.name} and "
                        f"{ra.dtype.name}")
    if la.ndim < 2:
        raise TypeError(f"conv_general_dilated needs operands of rank >= 2, got {la.shape}")
    dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    nsp = la.ndim - 2
    strides = _positive_ints("window_strides", window_strides, nsp)
    lhs_dil = _positive_ints("lhs_dilation", lhs_dilation, nsp)
    rhs_dil = _positive_ints("rhs_dilation", rhs_dilation, nsp)
    groups, bgroups = int(feature_group_count), int(batch_group_count)
    if groups < 1 or bgroups < 1 or (groups > 1 and bgroups > 1):
        raise ValueError(f"feature_group_count={groups} and batch_group_count={bgroups}: each must be >= 1 and "
                         "at most one above 1")
    # Canonical layouts: x (N, C, spatial...), w (O, I, spatial...).
    x = transpose(lhs, dn.lhs_spec)
    w = transpose(rhs, dn.rhs_spec)
    n, c, *in_sizes = aval(x).shape
    o, i, *window = aval(w).shape
    if c != i * groups:
        raise TypeError(f"conv_general_dilated: lhs feature dimension {c} must equal rhs input feature dimension "
                        f"{i} times feature_group_count {groups}")
    if o % groups or o % bgroups:
        raise TypeError(f"conv_general_dilated: rhs output feature dimension {o} must be a multiple of "
                        f"feature_group_count {groups} and batch_group_count {bgroups}")
    if n % bgroups:
        raise TypeError(f"conv_general_dilated: lhs batch dimension {n} must be a multiple of batch_group_count "
                        f"{bgroups}")
    effective_window = [_dilated(k, d) for k, d in zip(window, rhs_dil)]
    pads = padtype_to_pads(in_sizes, effective_window, strides, padding) if isinstance(padding, str) \
        else [tuple(int(v) for v in p) for p in padding]
    if len(pads) != nsp:
        raise ValueError(f"padding needs one (low, high) pair per spatial dim ({nsp}), got {padding!r}")
    spatial = list(range(2, 2 + nsp))
    x = _spatial_prepare(x, spatial, pads, lhs_dil, 0)
    out_sizes = _out_sizes(aval(x).shape[2:], window, strides, rhs_dil)
    nb = n // bgroups
    out_dtype = la.dtype
    taps = math.prod(window)
    if 0 in (nb, o, *out_sizes) or taps == 0 or i == 0:
        shape = [nb, o] + out_sizes
        result = broadcast_in_dim(np.zeros((), out_dtype)[()], [shape[dn.out_spec.index(d)] for d in range(la.ndim)], ())
        return convert_element_type(result, preferred_element_type) if preferred_element_type else result
    # im2col: (N, C, taps, out...) from one strided slice per tap.
    cols = [reshape(t, (n, c, 1, *out_sizes)) for t in _window_taps(x, spatial, window, strides, rhs_dil, out_sizes)]
    patches = cols[0] if len(cols) == 1 else concatenate(cols, 2)
    g = groups if groups > 1 else bgroups
    og = o // g
    if groups > 1:
        # (N, G, I, taps, out...) x (G, O/G, I, taps): groups are a batch dim of the contraction.
        p = reshape(patches, (n, groups, i, taps, *out_sizes))
        k = reshape(w, (groups, og, i, taps))
        y = dot_general(p, k, (((2, 3), (2, 3)), ((1,), (0,))))          # (G, N, out..., O/G)
        y = transpose(y, (1, 0, 2 + nsp, *range(2, 2 + nsp)))            # (N, G, O/G, out...)
    else:
        # Batch groups (B=1 is the plain case): (B, N/B, C, taps, out...) x (B, O/B, C, taps).
        p = reshape(patches, (g, nb, c, taps, *out_sizes))
        k = reshape(w, (g, og, i, taps))
        y = dot_general(p, k, (((2, 3), (2, 3)), ((0,), (0,))))          # (B, N/B, out..., O/B)
        y = transpose(y, (1, 0, 2 + nsp, *range(2, 2 + nsp)))            # (N/B, B, O/B, out...)
    y = reshape(y, (nb, o, *out_sizes))
    y = transpose(y, tuple(np.argsort(dn.out_spec)))
    return convert_element_type(y, preferred_element_type) if preferred_element_type else y


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """Convolution in NCHW/OIHW layout without dilation (``jax.lax.conv``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.conv(np.ones((1, 1, 3, 3)), np.ones((1, 1, 2, 2)), (1, 1), "VALID")
    Array([[[[4., 4.],
             [4., 4.]]]])
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=None,
                              preferred_element_type=None):
    """NCHW/OIHW convolution with explicit padding and dilations (``jax.lax.conv_with_general_padding``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.conv_with_general_padding(np.ones((1, 1, 2)), np.ones((1, 1, 2)), (1,), [(1, 1)], None, None)
    Array([[[1., 2., 1.]]])
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                                precision=precision, preferred_element_type=preferred_element_type)


def _conv_transpose_padding(k, s, padding):
    """(low, high) pads of the dilated-input convolution that a transposed convolution is."""
    if padding == "SAME":
        pad_len = k + s - 2
        lo = k - 1 if s > k - 1 else -(-pad_len // 2)
    elif padding == "VALID":
        pad_len = k + s - 2 + max(k - s, 0)
        lo = k - 1
    else:
        raise ValueError(f"conv_transpose padding must be 'SAME', 'VALID' or explicit pairs, got {padding!r}")
    return lo, pad_len - lo


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None, transpose_kernel=False,
                   precision=None, preferred_element_type=None):
    """Transposed convolution ("deconvolution", ``jax.lax.conv_transpose``): the input dilated by
    ``strides`` and convolved with the kernel (flipped and with I/O swapped if ``transpose_kernel``,
    which makes it the gradient of ``conv_general_dilated``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.conv_transpose(np.ones((1, 2, 1)), np.ones((2, 1, 1)), (2,), "VALID", dimension_numbers=("NWC", "WIO", "NWC"))
    Array([[[1.],
            [1.],
            [1.],
            [1.]]])
    """
    lhs, rhs = to_operand(lhs), to_operand(rhs)
    la, ra = aval(lhs), aval(rhs)
    nsp = la.ndim - 2
    if dimension_numbers is None:
        dimension_numbers = {1: ("NHC", "HIO", "NHC"), 2: ("NHWC", "HWIO", "NHWC"),
                             3: ("NHWDC", "HWDIO", "NHWDC")}.get(nsp)
        if dimension_numbers is None:
            raise ValueError("conv_transpose needs dimension_numbers for more than 3 spatial dims")
    dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    k_sdims = [ra.shape[d] for d in dn.rhs_spec[2:]]
    rhs_dil = _positive_ints("rhs_dilation", rhs_dilation, nsp)
    strides = _positive_ints("strides", strides, nsp)
    effective = [_dilated(k, d) for k, d in zip(k_sdims, rhs_dil)]
    if isinstance(padding, str):
        pads = [_conv_transpose_padding(k, s, padding.upper()) for k, s in zip(effective, strides)]
    else:
        pads = [tuple(p) for p in padding]
    if transpose_kernel:
        rhs = rev(rhs, dn.rhs_spec[2:])
        spec = list(dn.rhs_spec)
        spec[0], spec[1] = spec[1], spec[0]
        dn = ConvDimensionNumbers(dn.lhs_spec, tuple(spec), dn.out_spec)
    return conv_general_dilated(lhs, rhs, (1,) * nsp, pads, strides, rhs_dil, dn, precision=precision,
                                preferred_element_type=preferred_element_type)


def reduce_window(operand, init_value, computation, window_dimensions, window_strides, padding,
                  base_dilation=None, window_dilation=None):
    """Reduce every window of ``operand`` with the binary ``computation`` (``jax.lax.reduce_window``).

    Padding takes ``init_value``; ``computation`` is applied to whole arrays of window taps (e.g.
    ``lax.max``, ``lax.add``), so any elementwise binary function works. Pytrees of operands are
    not supported.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.reduce_window(np.arange(6.0), -np.inf, lax.max, (2,), (2,), "VALID")
    Array([1., 3., 5.])
    """
    if isinstance(operand, (tuple, list)):
        raise NotImplementedError("reduce_window over a pytree of operands is not supported: reduce each "
                                  "operand separately")
    x = to_operand(operand)
    shape = aval(x).shape
    nd = len(shape)
    window = tuple(int(k) for k in window_dimensions)
    if len(window) != nd:
        raise TypeError(f"reduce_window: window_dimensions {window} must have one entry per axis of {shape}")
    strides = _positive_ints("window_strides", window_strides, nd)
    base = _positive_ints("base_dilation", base_dilation, nd)
    wdil = _positive_ints("window_dilation", window_dilation, nd)
    dilated_in = [_dilated(n, b) for n, b in zip(shape, base)]
    effective = [_dilated(k, d) for k, d in zip(window, wdil)]
    pads = padtype_to_pads(dilated_in, effective, strides, padding) if isinstance(padding, str) \
        else [tuple(int(v) for v in p) for p in padding]
    init = init_value if hasattr(init_value, "aval") else np.asarray(init_value, aval(x).dtype)[()]
    axes = list(range(nd))
    xp = _spatial_prepare(x, axes, pads, base, init)
    out_sizes = _out_sizes(aval(xp).shape, window, strides, wdil)
    taps = _window_taps(xp, axes, window, strides, wdil, out_sizes)
    acc = broadcast_in_dim(init, out_sizes, ())
    for t in taps:
        acc = computation(acc, t)
    return acc
