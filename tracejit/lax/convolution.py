"""Convolutions and windowed reductions of ``jax.lax``.

``conv_general_dilated`` itself is a composition of primitives in ``tracejit/ops/convolution.py``
(im2col from strided slices and one ``dot_general``); here are ``jax.lax``'s other convolution
entry points on top of it, and ``reduce_window``, which folds the window taps with the reducing
function the same way (``max``/``min``/``add``/``mul`` and any other binary function of arrays).
"""
from __future__ import annotations

import numpy as np

from tracejit.lax.ops import broadcast_in_dim, rev
from tracejit.lax.ops import max as lax_max, min as lax_min
from tracejit.numpy._util import aval, to_operand
from tracejit.ops.convolution import (ConvDimensionNumbers, _dilated, _out_sizes, _positive_ints, _spatial_prepare,
                                      _window_taps, conv_dimension_numbers, conv_general_dilated, padtype_to_pads)

__all__ = ["ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_dilated", "conv",
           "conv_with_general_padding", "conv_transpose", "padtype_to_pads", "reduce_window"]


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
    if taps and _is_identity(computation, init_value, aval(x).dtype):
        # max(-inf, t) is t (NaN and -0.0 included): max pooling starts from its first tap.
        acc, taps = taps[0], taps[1:]
    else:
        acc = broadcast_in_dim(init, out_sizes, ())
    for t in taps:
        acc = computation(acc, t)
    return acc


def _is_identity(computation, init_value, dtype) -> bool:
    """``init_value`` is -inf for ``lax.max`` (+inf for ``lax.min``) on a float operand."""
    if hasattr(init_value, "aval") or np.dtype(dtype).kind != "f" or np.ndim(init_value) != 0:
        return False
    v = float(np.asarray(init_value))
    return (computation is lax_max and v == -np.inf) or (computation is lax_min and v == np.inf)
