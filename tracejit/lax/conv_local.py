"""``jax.lax.conv_general_dilated_local``: convolution with unshared weights (a locally connected layer).

Every output position has its own kernel. The input patches are
``conv_general_dilated_patches`` (the convolution's im2col, ``tracejit/lax/extras.py``: feature
``c`` major, then the filter positions in the kernel layout's spatial order), and each output
position contracts its patch with its own kernel slice in one ``einsum``. So it differentiates,
batches and compiles like any program of primitives.
"""
from __future__ import annotations

import numpy as np

import tracejit.numpy as jnp
from tracejit.lax.extras import conv_general_dilated_patches
from tracejit.ops.convolution import conv_dimension_numbers

__all__ = ["conv_general_dilated_local"]


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape, lhs_dilation=None,
                               rhs_dilation=None, dimension_numbers=None, precision=None):
    """General n-d convolution with an unshared (per output position) kernel
    (``jax.lax.conv_general_dilated_local``).

    Parameters
    ----------
    lhs : array_like
        Input, ``N, C, spatial...`` in the layout of ``dimension_numbers[0]``.
    rhs : array_like
        Kernels, ``O, I, output spatial...`` in the layout of ``dimension_numbers[1]``: its spatial
        dimensions are the *output* positions, and ``I = C * prod(filter_shape)`` holds the input
        feature (major) and the receptive-window positions, in the kernel layout's spatial order.
    window_strides, padding, lhs_dilation, rhs_dilation :
        As :func:`conv_general_dilated` (``padding``: ``'SAME'``, ``'VALID'`` or pairs).
    filter_shape : sequence of int
        The receptive window's spatial shape.
    dimension_numbers : optional
        ``(lhs_spec, rhs_spec, out_spec)`` strings or a ``ConvDimensionNumbers``; default NC..., OI..., NC....
    precision : optional
        Accepted for JAX compatibility.

    Returns
    -------
    Array
        The output, ``N, O, output spatial...`` in the layout of ``dimension_numbers[2]``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> x = np.arange(4.0).reshape(1, 1, 4)           # N C W
    >>> w = np.ones((1, 2, 3))                        # O, I = C * 2, output W = 3
    >>> lax.conv_general_dilated_local(x, w, (1,), "VALID", (2,))
    Array([[[1., 3., 5.]]])
    """
    lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
    if lhs.ndim != rhs.ndim:
        raise TypeError(f"conv_general_dilated_local: lhs and rhs must have one rank, got {lhs.ndim} and "
                        f"{rhs.ndim}")
    filter_shape = tuple(int(n) for n in filter_shape)
    if len(filter_shape) != lhs.ndim - 2:
        raise ValueError(f"conv_general_dilated_local: filter_shape {filter_shape} must have {lhs.ndim - 2} "
                         "entries (one per spatial dimension)")
    dn = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation,
                                           rhs_dilation, dimension_numbers=dn, precision=precision)
    p = jnp.transpose(patches, dn.out_spec)             # N, I, output spatial...
    k = jnp.transpose(rhs, dn.rhs_spec)                 # O, I, output spatial...
    if k.shape[1] != p.shape[1] or k.shape[2:] != p.shape[2:]:
        raise TypeError(f"conv_general_dilated_local: rhs has (I, output spatial) = {k.shape[1:]} in its "
                        f"layout, but the input gives {p.shape[1:]} (I = C * prod(filter_shape))")
    sp = "".join("abcdefghijklm"[i] for i in range(lhs.ndim - 2))
    out = jnp.einsum(f"ni{sp},oi{sp}->no{sp}", p, k)     # N, O, output spatial...
    return jnp.transpose(out, np.argsort(dn.out_spec))
