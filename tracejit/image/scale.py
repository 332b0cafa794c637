"""Weight matrices and contractions of ``jax.image.resize`` / ``scale_and_translate``."""
from __future__ import annotations

import enum
import math
import operator

import numpy as np

import tracejit.numpy as jnp
from tracejit.core.tracer import Tracer

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
    """Image resize method (``jax.image.ResizeMethod``).

    ``NEAREST`` (nearest neighbour), ``LINEAR`` (triangle kernel), ``LANCZOS3`` / ``LANCZOS5``
    (Lanczos kernels of radius 3 / 5), ``CUBIC`` (Keys cubic, a = -0.5), ``CUBIC_PYTORCH`` (the
    a = -0.75 cubic with repeated edges, as PyTorch's bicubic; ``CUBIC`` when antialiasing) and
    ``AREA`` (the average of the input pixels under each output pixel).

    Examples
    --------
    >>> from tracejit.image import ResizeMethod
    >>> ResizeMethod.from_string("bilinear")
    <ResizeMethod.LINEAR: 1>
    """

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str) -> "ResizeMethod":
        """The method a string names (``'nearest'``, ``'linear'``/``'bilinear'``/``'trilinear'``/
        ``'triangle'``, ``'cubic'``/``'bicubic'``/``'tricubic'``, ``'cubic-pytorch'``/
        ``'bicubic-pytorch'``, ``'lanczos3'``, ``'lanczos5'``, ``'area'``)."""
        for names, method in _NAMES:
            if s in names:
                return method
        raise ValueError(f'Unknown resize method "{s}"')


_NAMES = [
    (("nearest",), ResizeMethod.NEAREST),
    (("linear", "bilinear", "trilinear", "triangle"), ResizeMethod.LINEAR),
    (("lanczos3",), ResizeMethod.LANCZOS3),
    (("lanczos5",), ResizeMethod.LANCZOS5),
    (("cubic", "bicubic", "tricubic"), ResizeMethod.CUBIC),
    (("cubic-pytorch", "bicubic-pytorch"), ResizeMethod.CUBIC_PYTORCH),
    (("area",), ResizeMethod.AREA),
]


def _method(method) -> ResizeMethod:
    if isinstance(method, str):
        return ResizeMethod.from_string(method)
    if not isinstance(method, ResizeMethod):
        raise TypeError(f"method must be a string or an image.ResizeMethod, got {method!r}")
    return method


# --- sampling kernels of |distance| x >= 0 ---------------------------------------------------
def _triangle(x):
    return jnp.maximum(0, 1 - jnp.abs(x))


def _cubic(a):
    # Piecewise cubic convolution kernel with parameter a (Keys: a = -0.5; OpenCV/PyTorch: -0.75).
    def kernel(x):
        near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
        far = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
        return jnp.where(x >= 2.0, 0.0, jnp.where(x >= 1.0, far, near))
    return kernel


def _keys_cubic(x):
    # a = -0.5, with the polynomial written in JAX's grouping (same rounding).
    near = ((1.5 * x - 2.5) * x) * x + 1.0
    far = ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0
    return jnp.where(x >= 2.0, 0.0, jnp.where(x >= 1.0, far, near))


def _lanczos(radius):
    def kernel(x):
        num = radius * jnp.sin(np.pi * x) * jnp.sin(np.pi * x / radius)
        val = jnp.where(x > 1e-3, num / jnp.where(x != 0, np.pi ** 2 * x ** 2, 1), 1)
        return jnp.where(x > radius, 0.0, val)
    return kernel


_AREA = "area"
_KERNELS = {
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, _lanczos(3.0)),
    ResizeMethod.LANCZOS5: (5, _lanczos(5.0)),
    ResizeMethod.CUBIC: (2, _keys_cubic),
    ResizeMethod.CUBIC_PYTORCH: (2, _cubic(-0.75)),
    ResizeMethod.AREA: (1, _AREA),
}

_TINY = 1000.0 * float(np.finfo(np.float32).eps)  # weight sums below this give all-zero weights


def _normalized(w):
    total = jnp.sum(w, axis=0, keepdims=True)
    return jnp.where(jnp.abs(total) > _TINY, w / jnp.where(total != 0, total, 1), 0)


def _weights(in_size, out_size, scale, translation, kernel, antialias, edge_padding, radius, dtype):
    """The (in_size, out_size) resampling matrix of one dimension."""
    inv = 1.0 / scale
    stretch = jnp.maximum(inv, 1.0) if antialias else 1.0
    # Output pixel i samples the input at (i + 0.5) / scale - translation / scale - 0.5 (pixel centres).
    centres = (jnp.arange(out_size, dtype=dtype) + 0.5) * inv - translation * inv - 0.5
    pad = radius if edge_padding else 0
    src = jnp.arange(-pad, in_size + pad, dtype=dtype)
    if kernel is _AREA:
        lo = jnp.arange(out_size, dtype=dtype) * inv - translation * inv
        hi = lo + inv
        src_lo = jnp.arange(in_size, dtype=dtype)
        w = jnp.maximum(0.0, jnp.minimum(hi[None, :], src_lo[:, None] + 1.0)
                        - jnp.maximum(lo[None, :], src_lo[:, None]))
    else:
        w = kernel(jnp.abs(centres[None, :] - src[:, None]) / stretch)
    if edge_padding:
        # Taps beyond the edges read the edge pixel: fold their weights onto it.
        rows = jnp.clip(src.astype(jnp.int32), 0, in_size - 1)
        cols = jnp.broadcast_to(jnp.arange(out_size)[None, :], (src.shape[0], out_size))
        w = jnp.zeros((in_size, out_size), dtype).at[rows[:, None], cols].add(w)
        return _normalized(w)
    w = _normalized(w)
    inside = (centres >= -0.5) & (centres <= in_size - 0.5)
    return jnp.where(inside[None, :], w, 0)


def _inexact(image):
    image = jnp.asarray(image)
    if not jnp.issubdtype(image.dtype, jnp.inexact):
        image = image.astype(jnp.result_type(float))
    return image


def _contract(image, out_shape, dims, mats):
    letters = "abcdefghijklmnopqrstuvwxyz"
    if image.ndim + len(dims) > 52:
        raise ValueError("image: too many dimensions")
    letters += letters.upper()
    ins = letters[:image.ndim]
    out = list(ins)
    operands, subs = [image], [ins]
    for i, (d, m) in enumerate(zip(dims, mats)):
        new = letters[image.ndim + i]
        operands.append(m)
        subs.append(ins[d] + new)
        out[d] = new
    return jnp.einsum(",".join(subs) + "->" + "".join(out), *operands)


def _scale_translate(image, shape, dims, scales, translations, method, antialias):
    if method is ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[method]
    edge_padding = method is ResizeMethod.CUBIC_PYTORCH and not antialias
    if not dims:
        return image
    mats = []
    for d, s, t in zip(dims, scales, translations):
        dtype = jnp.result_type(s, t)
        if not jnp.issubdtype(dtype, jnp.inexact):
            dtype = jnp.result_type(float)
        w = _weights(image.shape[d], shape[d], s, t, kernel, antialias, edge_padding, radius, dtype)
        mats.append(w.astype(image.dtype))
    return _contract(image, shape, dims, mats)


def _shape(image, shape):
    try:
        shape = tuple(operator.index(n) for n in shape)
    except TypeError:
        raise TypeError(f"shape must be a sequence of integers, got {shape!r}") from None
    if len(shape) != jnp.ndim(image):
        raise ValueError("shape must have length equal to the number of dimensions of x; "
                         f" {shape} vs {jnp.shape(image)}")
    if any(n < 0 for n in shape):
        raise ValueError(f"shape must be non-negative, got {shape}")
    return shape


def _resize_nearest(image, shape):
    for d, (m, n) in enumerate(zip(image.shape, shape)):
        if m == n:
            continue
        if m == 0:
            raise ValueError(f"resize: cannot resize an empty dimension {d} (size 0) to size {n}")
        # float32 arithmetic, as JAX computes the source pixel of each output pixel.
        pos = (np.arange(n, dtype=np.float32) + np.float32(0.5)) * np.float32(m) / np.float32(n)
        idx = np.floor(pos).astype(np.int32)
        image = jnp.take(image, idx, axis=d)
    return image


def resize(image, shape, method, antialias: bool = True, precision=None):
    """Resize an image (``jax.image.resize``).

    Parameters
    ----------
    image : array_like
        The image; every dimension can be resized (keep a batch or channel dimension's size to
        leave it alone).
    shape : sequence of int
        The output shape, one entry per dimension of ``image``.
    method : str or ResizeMethod
        ``'nearest'``, ``'linear'`` (``'bilinear'``, ``'trilinear'``, ``'triangle'``), ``'cubic'``
        (``'bicubic'``, ``'tricubic'``), ``'cubic-pytorch'``, ``'lanczos3'``, ``'lanczos5'`` or
        ``'area'``.
    antialias : bool
        Stretch the kernel when downsampling (a low-pass filter). Default True. Ignored by
        ``'nearest'``; no effect when upsampling.
    precision : optional
        Accepted for JAX compatibility; CPU contractions are full precision.

    Returns
    -------
    Array
        The resized image: the input dtype for ``'nearest'``, else promoted to floating point.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import image
    >>> image.resize(np.array([0., 1., 2., 3.]), (2,), "linear", antialias=False)
    Array([0.5, 2.5])
    >>> image.resize(np.array([0., 1.]), (4,), "nearest")
    Array([0., 0., 1., 1.])
    """
    method = _method(method)
    shape = _shape(image, shape)
    if method is ResizeMethod.NEAREST:
        return _resize_nearest(jnp.asarray(image), shape)
    image = _inexact(image)
    dims = [d for d in range(image.ndim) if image.shape[d] != shape[d]]
    scales = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in dims]
    return _scale_translate(image, shape, dims, scales, [0.0] * len(dims), method, antialias)


def scale_and_translate(image, shape, spatial_dims, scale, translation, method, antialias: bool = True,
                        precision=None):
    """Resample an image under a scale and a translation (``jax.image.scale_and_translate``).

    Output pixel centre ``y`` (pixel ``i`` has centre ``i + 0.5``) samples the input at
    ``(y - translation) / scale`` along each of ``spatial_dims``; samples outside the input give 0.

    Parameters
    ----------
    image : array_like
        The image.
    shape : sequence of int
        The output shape (all dimensions of ``image``).
    spatial_dims : sequence of int
        The K dimensions that are resampled.
    scale, translation : array_like, shape (K,)
        The scale and translation of each dimension in ``spatial_dims`` (may be traced; the
        result differentiates with respect to them).
    method : str or ResizeMethod
        As :func:`resize`, except ``'nearest'``, which is not supported (as in JAX).
    antialias : bool
        Stretch the kernel when downsampling. Default True.
    precision : optional
        Accepted for JAX compatibility.

    Returns
    -------
    Array
        The resampled image, promoted to floating point.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import image
    >>> image.scale_and_translate(np.array([0., 1., 2., 3.]), (4,), (0,), np.array([1.]),
    ...                           np.array([1.]), "linear")
    Array([0., 0., 1., 2.])
    """
    method = _method(method)
    shape = _shape(image, shape)
    if method is ResizeMethod.NEAREST:
        raise ValueError("Nearest neighbor resampling is not currently supported for scale_and_translate.")
    image = _inexact(image)
    spatial_dims = [operator.index(d) for d in spatial_dims]
    for d in spatial_dims:
        if not -image.ndim <= d < image.ndim:
            raise ValueError(f"spatial dimension {d} out of range for an image of rank {image.ndim}")
    spatial_dims = [d % image.ndim for d in spatial_dims]
    scale, translation = jnp.asarray(scale), jnp.asarray(translation)
    if scale.shape != (len(spatial_dims),) or translation.shape != (len(spatial_dims),):
        raise ValueError(f"scale and translation must have shape ({len(spatial_dims)},) (one entry per "
                         f"spatial dim), got {scale.shape} and {translation.shape}")
    dtype = jnp.result_type(scale, translation)
    if not jnp.issubdtype(dtype, jnp.inexact):
        dtype = jnp.result_type(float)
    scale, translation = scale.astype(dtype), translation.astype(dtype)
    return _scale_translate(image, shape, spatial_dims, [scale[i] for i in range(len(spatial_dims))],
                            [translation[i] for i in range(len(spatial_dims))], method, antialias)
