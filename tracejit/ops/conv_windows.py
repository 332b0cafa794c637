"""``conv_windows``: a convolution's product with the input's windows read in place (implicit GEMM).

The compiler's form of ``conv_general_dilated`` (its decomposition rule, ``convolution_for_compiler``)
where the im2col would be large: the channels-last input, padded and dilated already, and the
kernel as ``(*window, C, O)`` go to one ``conv_windows`` equation, which the CPU backend compiles to
generated code reading each tap's window of the input where it lies (``backends/cpu/conv_gemm.py``)
instead of storing ``taps * C`` values per output position and calling BLAS. It appears only after
differentiation and batching (the compiler inlines it), so it carries no derivative or batching
rules; its NumPy implementation serves the reference backend and any backend without the kernel.
"""
from __future__ import annotations

import math

import numpy as np

from tracejit.core import dtypes
from tracejit.core.avals import ShapedArray
from tracejit.core.primitive import Primitive, def_rules
from tracejit.core.values import get_aval as aval
from tracejit.ops.binders import transpose
from tracejit.ops.convolution import (_out_sizes, _spatial_prepare, channels_last, conv_output_shape, conv_product,
                                      conv_with_params, exact_zero_padded_product, inverse_permutation)

# Input features from which the windows are read in place. The generated product reads a whole
# window line (its taps along the last axis and their features) as one run of the contraction, so
# even one feature is a run of the window's width: on the Zen 3 EPYC, float32, 2 threads, LeNet's
# 5x5 convolutions ran at 0.50 ms (C=1, SAME) and 0.33 ms (C=6) against 1.46 and 1.32 ms as im2col,
# their gradients 2.6 and 1.7 ms against 5.3 and 3.1; 3x3 ones with C=1..4 1.1-2.7x faster. Tests
# raise it to reach the im2col form.
MIN_FEATURES = 1
# A window of one tap needs this many more: its im2col is the input itself (strided at most), and
# with 4 features a 1x1 convolution's gradient took 0.16 ms as windows against 0.08 as one product.
MIN_FEATURES_ONE_TAP = 8
_DTYPES = (dtypes.float32, dtypes.float64)


def _out_shape(x_shape, w_shape, strides, dilation):
    n, *in_sizes, _ = x_shape
    *window, _, o = w_shape
    return (n, *_out_sizes(in_sizes, window, strides, dilation), o)


def _abstract_eval(x, w, *, strides, dilation):
    return [ShapedArray(_out_shape(x.shape, w.shape, strides, dilation), x.dtype)]


def _tap_index(tap, dilation, strides, out_sizes) -> tuple:
    """The index of a tap's window of a channels-last input: every batch row, and along each spatial
    axis the positions ``o * stride + tap * dilation`` of the ``out_sizes`` outputs."""
    return (slice(None),) + tuple(slice(k * d, k * d + (n - 1) * s + 1, s)
                                  for k, d, s, n in zip(tap, dilation, strides, out_sizes))


def _impl(x, w, *, strides, dilation):
    x, w = np.asarray(x), np.asarray(w)
    out_shape = _out_shape(x.shape, w.shape, strides, dilation)
    out = np.zeros(out_shape, x.dtype)
    *window, _, _ = w.shape
    for tap in np.ndindex(*window):
        out += x[_tap_index(tap, dilation, strides, out_shape[1:-1])] @ w[tap]
    return [out]


def _cost(ins, outs, **_):
    x, w = ins
    return {"flops": 2 * outs[0].size * math.prod(w.shape[:-1]), "transcendentals": 0}


conv_windows_p = def_rules(Primitive("conv_windows"), abstract_eval=_abstract_eval, impl=_impl, cost=_cost)


def conv_windows(x, w, strides, dilation):
    """``out[n, o..., f] = sum over taps t and features c of x[n, o * strides + t * dilation..., c]
    * w[t..., c, f]`` for a channels-last ``x`` (padded already) and a kernel ``w`` of shape
    ``(*window, C, O)``.

    Examples
    --------
    >>> x = np.arange(6.0).reshape(1, 6, 1)
    >>> w = np.array([1.0, -1.0]).reshape(2, 1, 1)
    >>> np.asarray(conv_windows(x, w, (1,), (1,))).ravel().tolist()
    [-1.0, -1.0, -1.0, -1.0, -1.0]
    """
    return conv_windows_p.bind(x, w, strides=tuple(int(s) for s in strides),
                               dilation=tuple(int(d) for d in dilation))


def reads_windows_in_place(lhs, rhs, **params) -> bool:
    """Whether :func:`convolution_for_compiler` makes ``conv_windows`` of this convolution: one
    group, float32/float64, at least ``MIN_FEATURES`` input features (and ``MIN_FEATURES_ONE_TAP``
    for a window of one tap) and a non-empty result."""
    dn = params["dimension_numbers"]
    la, ra = aval(lhs), aval(rhs)
    one_tap = math.prod(ra.shape[d] for d in dn.rhs_spec[2:]) == 1
    features = max(MIN_FEATURES, MIN_FEATURES_ONE_TAP if one_tap else 0)
    return (params["feature_group_count"] == 1 and params["batch_group_count"] == 1 and la.dtype in _DTYPES
            and la.shape[dn.lhs_spec[1]] >= features and la.size > 0 and ra.size > 0
            and math.prod(conv_output_shape(la.shape, ra.shape, **params)) > 0)


def _windows_product(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers, **_):
    """The convolution of finite kernels as ``conv_windows`` (padding and holes are zeros of the
    padded input), in the layout ``dimension_numbers`` asks for."""
    to_x, to_w, to_y = channels_last(dimension_numbers)
    x = _padded(transpose(lhs, to_x), padding, lhs_dilation)
    return transpose(conv_windows(x, transpose(rhs, to_w), window_strides, rhs_dilation), inverse_permutation(to_y))


def _padded(x, padding, lhs_dilation):
    """A channels-last input dilated and padded with zeros: what ``conv_windows`` reads."""
    return _spatial_prepare(x, list(range(1, aval(x).ndim - 1)), padding, lhs_dilation, 0)


def convolution_for_compiler(lhs, rhs, **params):
    """``conv_general_dilated``'s decomposition: ``conv_windows`` where :func:`reads_windows_in_place`
    allows (inside the same exact handling of non-finite kernels as the im2col form), else the
    im2col form (``conv_with_params``)."""
    if not reads_windows_in_place(lhs, rhs, **params):
        return conv_with_params(lhs, rhs, **params)
    padded = any(p != (0, 0) for p in params["padding"]) or any(d > 1 for d in params["lhs_dilation"])
    # (the exact path for non-finite kernels, rare, keeps the im2col form: one generated product
    # per indicator count would multiply the code to compile, not the speed of the common case)
    return exact_zero_padded_product(lambda x, w: _windows_product(x, w, **params), lhs, rhs, padded,
                                     rare_product=lambda x, w: conv_product(x, w, **params))


# --------------------------------------------------------------------------- the kernel's cotangent

def _wgrad_abstract_eval(x, g, *, window, strides, dilation):
    return [ShapedArray((*window, x.shape[-1], g.shape[-1]), x.dtype)]


def _wgrad_impl(x, g, *, window, strides, dilation):
    x, g = np.asarray(x), np.asarray(g)
    c, o, out_sizes = x.shape[-1], g.shape[-1], g.shape[1:-1]
    out = np.zeros((*window, c, o), x.dtype)
    rows = g.reshape(-1, o)
    for tap in np.ndindex(*window):
        out[tap] = x[_tap_index(tap, dilation, strides, out_sizes)].reshape(-1, c).T @ rows
    return [out]


def _wgrad_cost(ins, outs, **_):
    return {"flops": 2 * ins[1].size * math.prod(outs[0].shape[:-1]), "transcendentals": 0}


conv_windows_wgrad_p = def_rules(Primitive("conv_windows_wgrad"), abstract_eval=_wgrad_abstract_eval,
                                 impl=_wgrad_impl, cost=_wgrad_cost)


def conv_windows_wgrad(x, g, window, strides, dilation):
    """The cotangent of :func:`conv_windows`' kernel: ``dw[t..., c, f] = sum over n and output
    positions o of x[n, o * strides + t * dilation..., c] * g[n, o..., f]`` for a channels-last
    ``x`` (padded already) and ``g`` of the convolution's output shape.

    Examples
    --------
    >>> x = np.arange(6.0).reshape(1, 6, 1)
    >>> g = np.ones((1, 5, 1))
    >>> np.asarray(conv_windows_wgrad(x, g, (2,), (1,), (1,))).ravel().tolist()
    [10.0, 15.0]
    """
    return conv_windows_wgrad_p.bind(x, g, window=tuple(int(k) for k in window),
                                     strides=tuple(int(s) for s in strides),
                                     dilation=tuple(int(d) for d in dilation))


def windows_kernel_cotangent(x, g, rhs_shape, **params):
    """The kernel's cotangent of ``conv_general_dilated(x, w, **params)`` (``w`` of ``rhs_shape``)
    for the output cotangent ``g``, as ``conv_windows_wgrad`` of the padded channels-last input (no
    im2col), in the kernel's layout; for convolutions :func:`reads_windows_in_place` allows."""
    dn = params["dimension_numbers"]
    to_x, to_w, to_y = channels_last(dn)
    window = [rhs_shape[a] for a in dn.rhs_spec[2:]]
    xc = _padded(transpose(x, to_x), params["padding"], params["lhs_dilation"])
    dw = conv_windows_wgrad(xc, transpose(g, to_y), window, params["window_strides"], params["rhs_dilation"])
    return transpose(dw, inverse_permutation(to_w))        # (*window, I, O) -> the kernel's layout
