"""N-d convolution as a composition of primitives (``jax.lax.conv_general_dilated``).

``conv_general_dilated`` gathers the input window of every kernel tap with a strided static
slice, stacks the taps next to the input features (an im2col built from ``slice``,
``reshape`` and ``concatenate``, channels last) and contracts features and taps with the kernel
in one ``dot_general``. Feature groups and batch groups become a batch dimension of that
contraction. Because it is made of primitives that already have derivative, batching
and compile rules, convolutions differentiate (both operands, any order), ``vmap`` and
``jit`` like any other program. It lives with the primitives (not in ``tracejit.lax``) because
``tracejit.scipy.signal`` builds on it too; a native convolution kernel is a separate concern of
the CPU backend.
"""
from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np

from tracejit.core import dtypes
from tracejit.core.values import get_aval as aval
from tracejit.ops.binders import (add, binary, broadcast_in_dim, broadcast_to, c, concatenate, mul, pad,
                                   reduce_sum, reshape, select, slice, transpose, un)
from tracejit.ops.control_flow_functions import cond
from tracejit.ops.dot import dot_general_p
from tracejit.ops.operands import concrete_operand, convert


def dot_general(lhs, rhs, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    return dot_general_p.bind(lhs, rhs, dimension_numbers=((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb))))


def convert_element_type(x, dtype):
    return convert(x, dtypes.canonical(dtype))


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
            # (No outputs along an axis: an empty slice, kept inside the axis.)
            starts[ax] = k * d if n else 0
            limits[ax] = k * d + (n - 1) * s + 1 if n else 0
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
    """The convolution of ``tracejit.lax.conv_general_dilated`` (same arguments and results) as
    primitives, for layers below ``tracejit.lax`` (``jnp.convolve``, ``scipy.signal``): no
    convolution primitive, so derivatives transpose the im2col itself.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.arange(5.0).reshape(1, 1, 5)
    >>> k = np.array([1.0, 0.0, -1.0]).reshape(1, 1, 3)
    >>> np.asarray(conv_general_dilated(x, k, (1,), "VALID"))
    array([[[-2., -2., -2.]]])
    """
    lhs, rhs = concrete_operand(lhs), concrete_operand(rhs)
    params = conv_params(aval(lhs), aval(rhs), window_strides, padding, lhs_dilation, rhs_dilation,
                         dimension_numbers, feature_group_count, batch_group_count)
    y = conv_with_params(lhs, rhs, **params)
    return convert_element_type(y, preferred_element_type) if preferred_element_type else y


def conv_params(la, ra, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                feature_group_count, batch_group_count) -> dict:
    """The checked, normalized parameters of a convolution of avals ``la`` and ``ra``: tuples of
    ints, explicit pads and :class:`ConvDimensionNumbers` (hashable: a primitive's params)."""
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
    n, c = la.shape[dn.lhs_spec[0]], la.shape[dn.lhs_spec[1]]
    o, i = ra.shape[dn.rhs_spec[0]], ra.shape[dn.rhs_spec[1]]
    if c != i * groups:
        raise TypeError(f"conv_general_dilated: lhs feature dimension {c} must equal rhs input feature dimension "
                        f"{i} times feature_group_count {groups}")
    if o % groups or o % bgroups:
        raise TypeError(f"conv_general_dilated: rhs output feature dimension {o} must be a multiple of "
                        f"feature_group_count {groups} and batch_group_count {bgroups}")
    if n % bgroups:
        raise TypeError(f"conv_general_dilated: lhs batch dimension {n} must be a multiple of batch_group_count "
                        f"{bgroups}")
    in_sizes = [la.shape[a] for a in dn.lhs_spec[2:]]
    window = [ra.shape[a] for a in dn.rhs_spec[2:]]
    effective_window = [_dilated(k, d) for k, d in zip(window, rhs_dil)]
    if isinstance(padding, str) and any(d > 1 for d in lhs_dil):
        # (as JAX: what "SAME" would mean over a dilated input is ambiguous; conv_transpose says it)
        raise ValueError("String padding is not implemented for transposed convolution using this op "
                         "(lhs_dilation > 1). Please either exactly specify the required padding or use "
                         "conv_transpose.")
    pads = padtype_to_pads(in_sizes, effective_window, strides, padding) if isinstance(padding, str) \
        else [tuple(int(v) for v in p) for p in padding]
    if len(pads) != nsp or any(len(p) != 2 for p in pads):
        raise ValueError(f"padding needs one (low, high) pair per spatial dim ({nsp}), got {padding!r}")
    return dict(window_strides=strides, padding=tuple(tuple(int(v) for v in p) for p in pads),
                lhs_dilation=lhs_dil, rhs_dilation=rhs_dil, dimension_numbers=dn, feature_group_count=groups,
                batch_group_count=bgroups)


def conv_output_shape(lhs_shape, rhs_shape, *, window_strides, padding, lhs_dilation, rhs_dilation,
                      dimension_numbers, feature_group_count, batch_group_count) -> tuple:
    """The result shape of a convolution with :func:`conv_params`' parameters."""
    dn = dimension_numbers
    padded = [_dilated(lhs_shape[a], d) + lo + hi
              for a, d, (lo, hi) in zip(dn.lhs_spec[2:], lhs_dilation, padding)]
    window = [rhs_shape[a] for a in dn.rhs_spec[2:]]
    canonical = [lhs_shape[dn.lhs_spec[0]] // batch_group_count, rhs_shape[dn.rhs_spec[0]],
                 *_out_sizes(padded, window, window_strides, rhs_dilation)]
    return tuple(canonical[q] for q in np.argsort(dn.out_spec))


def conv_with_params(lhs, rhs, **params):
    """The convolution as primitives, for :func:`conv_params`' parameters (checked already).

    Taps that fall on padding or on lhs-dilation holes add nothing, as in XLA and NumPy, even
    when the kernel holds inf or NaN (where the im2col's zeros would make ``inf * 0 = NaN``).
    """
    padded = any(p != (0, 0) for p in params["padding"]) or any(d > 1 for d in params["lhs_dilation"])
    return exact_zero_padded_product(lambda x, w: conv_product(x, w, **params), lhs, rhs, padded)


def channels_last(dn: ConvDimensionNumbers) -> tuple:
    """The permutations taking the input, the kernel and the output of a convolution with dimension
    numbers ``dn`` to channels-last layouts: ``(N, spatial..., C)``, ``(spatial..., I, O)`` and
    ``(N, spatial..., O)`` (the output's inverse, ``np.argsort``, takes it back)."""
    return ((dn.lhs_spec[0], *dn.lhs_spec[2:], dn.lhs_spec[1]), (*dn.rhs_spec[2:], dn.rhs_spec[1], dn.rhs_spec[0]),
            (dn.out_spec[0], *dn.out_spec[2:], dn.out_spec[1]))


def inverse_permutation(perm) -> tuple:
    """The permutation undoing ``perm``."""
    return tuple(int(a) for a in np.argsort(perm))


def conv_product(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                 feature_group_count, batch_group_count):
    """The convolution as im2col and one product: padding and holes are zeros the kernel multiplies
    (exact for finite kernels; derivative rules, which are linear in the kernel, use it directly)."""
    dn, strides, pads, lhs_dil, rhs_dil = dimension_numbers, window_strides, padding, lhs_dilation, rhs_dilation
    groups, bgroups = feature_group_count, batch_group_count
    nsp = aval(lhs).ndim - 2
    # Channels-last canonical layouts: x (N, spatial..., C), w (spatial..., I, O). The im2col rows
    # are then (taps, C) runs and the product a plain (N * out) x (taps * C) by (taps * C) x O GEMM
    # whose result is already (N, out..., O): NHWC programs transpose nothing.
    to_x, to_w, to_y = channels_last(dn)
    x, w = transpose(lhs, to_x), transpose(rhs, to_w)
    n, *in_sizes, c = aval(x).shape
    *window, i, o = aval(w).shape
    spatial = list(range(1, 1 + nsp))
    x = _spatial_prepare(x, spatial, pads, lhs_dil, 0)
    out_sizes = _out_sizes(aval(x).shape[1:1 + nsp], window, strides, rhs_dil)
    nb = n // bgroups
    out_dtype = aval(lhs).dtype
    taps = math.prod(window)
    # the output's axes in channels-last order (N, out..., O), as positions of the canonical (N, O, out...)
    from_canonical = inverse_permutation(to_y)
    if 0 in (nb, o, *out_sizes) or taps == 0 or i == 0:
        shape = [nb, *out_sizes, o]
        return broadcast_in_dim(np.zeros((), out_dtype)[()], [shape[a] for a in from_canonical], ())
    tap_slices = _window_taps(x, spatial, window, strides, rhs_dil, out_sizes)
    if groups > 1 and i == 1:
        # Depthwise (one input feature per group): per tap a broadcast multiply, summed over the
        # taps; no im2col, no product with a one-column matrix per group.
        og = o // groups
        k = reshape(w, (taps, groups, og))
        y = None
        for t, tap in enumerate(tap_slices):
            full = (n, *out_sizes, groups, og)
            term = mul(broadcast_in_dim(tap, full, tuple(range(nsp + 2))),
                       broadcast_in_dim(reshape(slice(k, (t, 0, 0), (t + 1, groups, og)), (groups, og)), full,
                                        (nsp + 1, nsp + 2)))
            y = term if y is None else add(y, term)
        return transpose(reshape(y, (n, *out_sizes, o)), from_canonical)
    # im2col: (N, out..., taps, C) from one strided slice per tap.
    cols = [reshape(t, (n, *out_sizes, 1, c)) for t in tap_slices]
    patches = cols[0] if len(cols) == 1 else concatenate(cols, 1 + nsp)
    tap_ax = 1 + nsp
    if groups == 1 and bgroups == 1:
        k = reshape(w, (taps, i, o))
        y = dot_general(patches, k, (((tap_ax, tap_ax + 1), (0, 1)), ((), ())))      # (N, out..., O)
    elif groups > 1:
        # (N, out..., taps, G, I) x (taps, I, G, O/G): groups are a batch dim of the contraction.
        og = o // groups
        p = reshape(patches, (n, *out_sizes, taps, groups, i))
        k = reshape(w, (taps, i, groups, og))
        y = dot_general(p, k, (((tap_ax, tap_ax + 2), (0, 1)), ((tap_ax + 1,), (2,))))   # (G, N, out..., O/G)
        y = reshape(transpose(y, (*range(1, 2 + nsp), 0, 2 + nsp)), (n, *out_sizes, o))
    else:
        # Batch groups: (B, N/B, out..., taps, C) x (taps, C, B, O/B).
        og = o // bgroups
        p = reshape(patches, (bgroups, nb, *out_sizes, taps, c))
        k = reshape(w, (taps, i, bgroups, og))
        y = dot_general(p, k, (((tap_ax + 1, tap_ax + 2), (0, 1)), ((0,), (2,))))   # (B, N/B, out..., O/B)
        y = reshape(transpose(y, (*range(1, 2 + nsp), 0, 2 + nsp)), (nb, *out_sizes, o))
    return transpose(y, from_canonical)


# --------------------------------------------------------------- kernels with inf or NaN taps

def exact_zero_padded_product(product, x, w, padded=True, rare_product=None):
    """``product(x, w)`` for a bilinear ``product`` that pads ``x`` with zeros (an im2col), with the
    IEEE result of summing only the terms on real elements of ``x`` when ``w`` is not finite
    (computed with ``rare_product``, the same product in another form, when given).

    ``product(x, w)`` itself is exact while ``w`` is finite (a finite tap on a zero adds ``+0``, which
    leaves any sum unchanged). Otherwise a staged ``cond`` takes the exact path: the finite parts
    of both operands through ``product``, plus counts (through ``product`` of 0/1 indicators, whose
    padding contributes nothing) of the non-finite terms by kind, which give each output's
    ``+inf``, ``-inf`` or NaN as a sum in any order would.
    """
    dtype = aval(w).dtype
    if not padded or not dtypes.is_float(dtype):
        return product(x, w)
    nonfinite_taps = reduce_sum(convert(un("not", un("is_finite", w)), dtype), range(aval(w).ndim))
    rare = rare_product or product
    return cond(binary("eq", nonfinite_taps, c(0, dtype)), product, lambda a, b: _nonfinite_terms(rare, a, b), x, w)


def _nonfinite_terms(product, x, w):
    dtype = aval(x).dtype

    def full(value, like):
        return broadcast_to(c(value, dtype), aval(like).shape)

    def cmp(name, a, value):
        return binary(name, a, full(value, a))

    def count(px, pw):          # how many (x, w) term pairs on real elements satisfy both predicates
        return product(convert(px, dtype), convert(pw, dtype))

    def either(*preds):
        out = preds[0]
        for p in preds[1:]:
            out = binary("or", out, p)
        return out

    def sum_of(*counts):
        out = counts[0]
        for k in counts[1:]:
            out = add(out, k)
        return cmp("gt", out, 0)

    fin_x, fin_w = un("is_finite", x), un("is_finite", w)
    finite_part = product(select(fin_x, x, full(0, x)), select(fin_w, w, full(0, w)))
    pos_x, neg_x, pos_w, neg_w = cmp("gt", x, 0), cmp("lt", x, 0), cmp("gt", w, 0), cmp("lt", w, 0)
    pinf_x, ninf_x = cmp("eq", x, np.inf), cmp("eq", x, -np.inf)
    pinf_w, ninf_w = cmp("eq", w, np.inf), cmp("eq", w, -np.inf)
    nan_x, nan_w = un("is_nan", x), un("is_nan", w)
    zero_or_nan_x, zero_or_nan_w = either(cmp("eq", x, 0), nan_x), either(cmp("eq", w, 0), nan_w)
    true_x, true_w = cmp("eq", full(0, x), 0), cmp("eq", full(0, w), 0)
    to_pinf = sum_of(count(pos_x, pinf_w), count(neg_x, ninf_w), count(pinf_x, pos_w), count(ninf_x, neg_w))
    to_ninf = sum_of(count(pos_x, ninf_w), count(neg_x, pinf_w), count(pinf_x, neg_w), count(ninf_x, pos_w))
    to_nan = sum_of(count(zero_or_nan_x, un("not", fin_w)), count(un("not", fin_x), zero_or_nan_w),
                    count(nan_x, true_w), count(true_x, nan_w))
    out = finite_part
    nan_out = either(to_nan, binary("and", to_pinf, to_ninf))
    nonfinite = select(nan_out, full(np.nan, out), select(to_pinf, full(np.inf, out), full(-np.inf, out)))
    return select(either(to_nan, to_pinf, to_ninf), add(out, nonfinite), out)
