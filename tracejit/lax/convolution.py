"""Convolutions and windowed reductions of ``jax.lax``.

``conv_general_dilated`` is a primitive here, with JAX's derivative rules, whose decomposition is
the composition of primitives in ``tracejit/ops/convolution.py`` (im2col from strided slices and
one ``dot_general``); here are also ``jax.lax``'s other convolution
entry points on top of it, and ``reduce_window``, which folds the window taps with the reducing
function the same way (``max``/``min``/``add``/``mul`` and any other binary function of arrays).
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes

import math

from tracejit.core.avals import ShapedArray
from tracejit.core.primitive import Primitive, batching_rules, decomposition_rules, def_rules
from tracejit.lax.ops import broadcast_in_dim, rev
from tracejit.lax.ops import max as lax_max, min as lax_min
from tracejit.numpy._util import aval, to_operand
from tracejit.ops.binders import add, binary, reshape, select, transpose, un
from tracejit.ops.convolution import (ConvDimensionNumbers, _dilated, _out_sizes, _positive_ints, _spatial_prepare,
                                      _window_taps, conv_dimension_numbers, conv_output_shape, conv_params,
                                      conv_product, conv_with_params, padtype_to_pads)
from tracejit.ops.conv_windows import (conv_windows_wgrad_p, convolution_for_compiler, reads_windows_in_place,
                                      windows_kernel_cotangent)
from tracejit.ops.operands import concrete_operand, convert, widen_to_preferred
from tracejit.transforms.ad import def_jvp, def_simple_vjp
from tracejit.transforms.ad_custom import custom_jvp
from tracejit.transforms.api_ad import vjp
from tracejit.transforms.api_vmap import vmap

__all__ = ["ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_dilated", "conv",
           "conv_with_general_padding", "conv_transpose", "padtype_to_pads", "reduce_window"]


# --------------------------------------------------------------------------- the primitive
#
# conv_general_dilated is one primitive whose decomposition (ops/convolution.py: im2col and one
# product) is what the compiler inlines, so it can carry JAX's transpose rule: the input's
# cotangent is itself a convolution (of the output cotangent with the flipped kernel), which
# costs what the forward convolution costs, where transposing the im2col would scatter every
# tap back into a padded copy of the input and sum them.

def _conv_abstract_eval(lhs, rhs, **params):
    return [ShapedArray(conv_output_shape(lhs.shape, rhs.shape, **params), lhs.dtype)]


def _conv_impl(lhs, rhs, **params):
    return [np.asarray(conv_with_params(lhs, rhs, **params))]


def _conv_cost(ins, outs, *, dimension_numbers, feature_group_count, **_):
    rhs = ins[1]
    per_output = math.prod(rhs.shape) // max(rhs.shape[dimension_numbers.rhs_spec[0]], 1)   # taps * I
    return {"flops": 2 * outs[0].size * per_output, "transcendentals": 0}


conv_general_dilated_p = def_rules(Primitive("conv_general_dilated"), abstract_eval=_conv_abstract_eval,
                                   impl=_conv_impl, cost=_conv_cost)
# (the compiler's form reads the input's windows in place where it can: ops/conv_windows.py)
decomposition_rules[conv_general_dilated_p] = lambda lhs, rhs, **params: [convolution_for_compiler(lhs, rhs, **params)]


def _bilinear_jvp(prim):
    """The JVP rule of a primitive bilinear in its two operands: ``p(tx, y) + p(x, ty)``."""
    def jvp(primals, tangents, **params):
        (x, y), (tx, ty) = primals, tangents
        out = prim.bind(x, y, **params)
        terms = [prim.bind(tx, y, **params)] if tx is not None else []
        if ty is not None:
            terms.append(prim.bind(x, ty, **params))
        return [out], [None if not terms else terms[0] if len(terms) == 1 else add(*terms)]
    return jvp


def _split_axis(x, axis, size):
    """Axis ``axis`` of ``x`` split into (size, rest)."""
    shape = list(aval(x).shape)
    shape[axis:axis + 1] = [size, shape[axis] // size]
    return reshape(x, tuple(shape))


def _merge_axis(x, src, dst):
    """Axis ``src`` of ``x`` merged into axis ``dst`` (numbered without ``src``), as its major part."""
    shape = aval(x).shape
    perm = [a for a in range(len(shape)) if a != src]
    perm.insert(dst, src)
    merged = [shape[a] for a in range(len(shape)) if a != src]
    merged[dst] *= shape[src]
    return reshape(transpose(x, tuple(perm)), tuple(merged))


def _lhs_cotangent_padding(in_sizes, window, strides, out_sizes, padding, lhs_dilation, rhs_dilation):
    pads = []
    for n, k, s, m, (lo, _), ld, rd in zip(in_sizes, window, strides, out_sizes, padding, lhs_dilation,
                                           rhs_dilation):
        before = _dilated(k, rd) - lo - 1
        pads.append((before, _dilated(n, ld) + _dilated(k, rd) - 1 - _dilated(m, s) - before))
    return tuple(pads)


def _conv_lhs_cotangent(g, lhs_aval, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count):
    """JAX's rule: the input's cotangent is the convolution of ``g`` with the spatially flipped
    kernel, input and output features swapped (groups moved from the output to the input
    features), strides becoming input dilation."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    groups = feature_group_count
    if feature_group_count > 1 or batch_group_count > 1:
        groups = max(feature_group_count, batch_group_count)
        rhs = _merge_axis(_split_axis(rhs, rhs_spec[0], groups), rhs_spec[0], rhs_spec[1])
    t_rhs_spec = (rhs_spec[1], rhs_spec[0]) + tuple(rhs_spec[2:])
    rshape, gshape = aval(rhs).shape, aval(g).shape
    pads = _lhs_cotangent_padding([lhs_aval.shape[a] for a in lhs_spec[2:]], [rshape[a] for a in rhs_spec[2:]],
                                  window_strides, [gshape[a] for a in out_spec[2:]], padding, lhs_dilation,
                                  rhs_dilation)
    out = conv_general_dilated_p.bind(
        g, rev(rhs, tuple(rhs_spec[2:])), window_strides=tuple(lhs_dilation), padding=pads,
        lhs_dilation=tuple(window_strides), rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=ConvDimensionNumbers(tuple(out_spec), t_rhs_spec, tuple(lhs_spec)),
        feature_group_count=groups, batch_group_count=1)
    if batch_group_count > 1:
        out = _merge_axis(_split_axis(out, lhs_spec[1], batch_group_count), lhs_spec[1], lhs_spec[0])
    return out


def _col2im_smaller(x, w, g, params) -> bool:
    """Whether the col2im input gradient moves less memory than JAX's rule (a convolution of
    ``g`` whose im2col has a row of ``taps * out_features`` per input position): it stores
    ``taps * in_features`` per output position instead."""
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    x_shape, w_shape, g_shape = aval(x).shape, aval(w).shape, aval(g).shape
    in_positions = math.prod(x_shape[a] for a in lhs_spec[2:])
    out_positions = math.prod(g_shape[a] for a in out_spec[2:])
    in_features = w_shape[rhs_spec[1]] * params["feature_group_count"]
    return params["batch_group_count"] == 1 and out_positions * in_features < in_positions * w_shape[rhs_spec[0]]


def _conv_bwd(g, needed, ins, outs, **params):
    x, w = ins
    dx = dw = None
    if needed[0]:
        if all(s == 1 for s in params["window_strides"]) and not _col2im_smaller(x, w, g, params):
            dx = _conv_lhs_cotangent(g, aval(x), w, **params)
        else:
            # The decomposition's own transpose (col2im): g times the kernel's transpose gives
            # each output position's contribution to every tap, and each tap's padded slice of
            # it sums into dx. A strided convolution's rule would dilate g by the strides (a
            # convolution over mostly zeros), and where the input has fewer features than the
            # output the rule's im2col is the larger array.
            dx = vjp(lambda a: conv_with_params(a, w, **params), x)[1](g)[0]
    if needed[1]:
        # The kernel's cotangent by JAX's rule is a convolution whose window is the whole output;
        # the fast forms are a product of the input's windows with g: read in place (an implicit
        # GEMM, ops/conv_windows.py) where the compiler's form of the convolution does so, else the
        # decomposition's transpose (one product of the im2col with g).
        if reads_windows_in_place(x, w, **params):
            dw = windows_kernel_cotangent(x, g, aval(w).shape, **params)
        else:
            dw = vjp(lambda b: conv_with_params(x, b, **params), w)[1](g)[0]
    return [dx, dw]


def _conv_batching(args, dims, size, **params):
    lhs, rhs = args
    batched = vmap(lambda a, b: conv_with_params(a, b, **params), in_axes=tuple(dims))(lhs, rhs)
    return [batched], [0]


def_jvp(conv_general_dilated_p, _bilinear_jvp(conv_general_dilated_p))
def_simple_vjp(conv_general_dilated_p, _conv_bwd)
batching_rules[conv_general_dilated_p] = _conv_batching


# --------------------------------------------------------------------------- conv_windows_wgrad's rules
#
# The kernel's cotangent read from the input's windows (ops/conv_windows.py) is bilinear in the
# input and the output cotangent; its own derivatives and batches go through the im2col form.

def _channels_last_conv(x, w, strides, dilation):
    """``conv_windows(x, w)`` as the im2col form (channels last, padded already)."""
    nsp = aval(x).ndim - 2
    sp = "HWDEFGJKLMPQRSTUVXYZ"[:nsp]       # (spatial letters: any but N, C, I, O)
    dn = conv_dimension_numbers(aval(x).shape, aval(w).shape, ("N" + sp + "C", sp + "IO", "N" + sp + "C"))
    return conv_product(x, w, window_strides=strides, padding=((0, 0),) * nsp, lhs_dilation=(1,) * nsp,
                        rhs_dilation=dilation, dimension_numbers=dn, feature_group_count=1, batch_group_count=1)


def _channels_last_wgrad(x, g, window, strides, dilation):
    w0 = np.zeros((*window, aval(x).shape[-1], aval(g).shape[-1]), aval(x).dtype)
    return vjp(lambda b: _channels_last_conv(x, b, strides, dilation), w0)[1](g)[0]


def _wgrad_bwd(ct, needed, ins, outs, *, window, strides, dilation):
    x, g = ins
    dx = vjp(lambda a: _channels_last_conv(a, ct, strides, dilation), x)[1](g)[0] if needed[0] else None
    dg = _channels_last_conv(x, ct, strides, dilation) if needed[1] else None
    return [dx, dg]


def _wgrad_batching(args, dims, size, *, window, strides, dilation):
    batched = vmap(lambda a, b: _channels_last_wgrad(a, b, window, strides, dilation), in_axes=tuple(dims))(*args)
    return [batched], [0]


def_jvp(conv_windows_wgrad_p, _bilinear_jvp(conv_windows_wgrad_p))
def_simple_vjp(conv_windows_wgrad_p, _wgrad_bwd)
batching_rules[conv_windows_wgrad_p] = _wgrad_batching


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
    lhs, rhs = widen_to_preferred(preferred_element_type, concrete_operand(lhs), concrete_operand(rhs))
    params = conv_params(aval(lhs), aval(rhs), window_strides, padding, lhs_dilation, rhs_dilation,
                         dimension_numbers, feature_group_count, batch_group_count)
    y = conv_general_dilated_p.bind(lhs, rhs, **params)
    return convert(y, preferred_element_type) if preferred_element_type else y


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
    geometry = (window, strides, pads, base, wdil)
    computation = getattr(computation, "__wrapped__", computation)    # lax.max as the package exports it
    if _is_identity(computation, init_value, aval(x).dtype):
        return _chooser_window(x, computation is lax_max, init, geometry)
    return _fold(*_taps(x, init, geometry), init, computation)


def _taps(x, fill, geometry):
    """The window taps of ``x`` dilated and padded with ``fill``, and the output's sizes."""
    window, strides, pads, base, wdil = geometry
    axes = list(range(aval(x).ndim))
    xp = _spatial_prepare(x, axes, pads, base, fill)
    out_sizes = _out_sizes(aval(xp).shape, window, strides, wdil)
    return _window_taps(xp, axes, window, strides, wdil, out_sizes), out_sizes


def _fold(taps, out_sizes, init, computation, from_first_tap=False):
    """``computation`` folded over the taps from ``init``; with ``from_first_tap`` (``init`` is its
    identity: max(-inf, t) is t, NaN and -0.0 included) from the first tap instead."""
    if taps and from_first_tap:
        acc, taps = taps[0], taps[1:]
    else:
        acc = broadcast_in_dim(init, out_sizes, ())
    for t in taps:
        acc = computation(acc, t)
    return acc


def _chooser_window(x, is_max, init, geometry):
    """Max (min) pooling with JAX's derivative: a window's tangent, and so its cotangent, is that of
    one chosen element, as XLA's select-and-scatter chooses it: scanning the window in C order,
    the first real element, replaced by each later one that the current choice is not ``>=``
    (``<=``) to. Ties therefore go wholly to the first maximal element, where the fold of pairwise
    ``max`` derivatives would share them; padding is never chosen, base-dilation holes may be (with
    a zero tangent, as JAX's transpose drops them)."""
    computation = lax_max if is_max else lax_min
    fold = custom_jvp(lambda v: _fold(*_taps(v, init, geometry), init, computation, from_first_tap=True))

    def jvp(primals, tangents):
        (v,), (dv,) = primals, tangents
        taps, out_sizes = _taps(v, init, geometry)
        out = _fold(taps, out_sizes, init, computation, from_first_tap=True)    # the primal, from these taps
        dtaps, _ = _taps(dv, np.zeros((), aval(dv).dtype)[()], geometry)
        if not taps:
            return out, broadcast_in_dim(np.zeros((), aval(dv).dtype)[()], out_sizes, ())
        real = _real_taps(aval(v).shape, geometry)
        keeps = "ge" if is_max else "le"
        acc, tan, chosen = taps[0], dtaps[0], real[0]      # chosen: None when certainly True
        for t, dt, r in zip(taps[1:], dtaps[1:], real[1:]):
            take = un("not", binary(keeps, acc, t))
            if chosen is not None:
                take = binary("or", un("not", chosen), take)
            if r is not None:
                take = binary("and", r, take)
            chosen = None if chosen is None or r is None else binary("or", chosen, r)
            acc, tan = select(take, t, acc), select(take, dt, tan)
        return out, tan

    fold.defjvp(jvp)
    return fold(x)


def _real_taps(shape, geometry):
    """Per tap, where it lies on an element of the (dilated) operand rather than on padding: a
    boolean array, or None where it always does."""
    window, strides, pads, base, wdil = geometry
    dilated = tuple(_dilated(n, b) for n, b in zip(shape, base))
    if all(lo <= 0 and hi <= 0 for lo, hi in pads):
        return [None] * math.prod(window)
    real = broadcast_in_dim(np.True_, dilated, ())
    taps, _ = _taps(real, np.False_, (window, strides, pads, (1,) * len(shape), wdil))
    return taps


def _is_identity(computation, init_value, dtype) -> bool:
    """``init_value`` is -inf for ``lax.max`` (+inf for ``lax.min``) on a float operand."""
    if hasattr(init_value, "aval") or dtypes.kind(np.dtype(dtype)) != "f" or np.ndim(init_value) != 0:
        return False
    v = float(np.asarray(init_value))
    return (computation is lax_max and v == -np.inf) or (computation is lax_min and v == np.inf)
