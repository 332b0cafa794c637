"""Image resampling (``jax.image``): :func:`resize`, :func:`scale_and_translate`, :class:`ResizeMethod`.

The algorithms are JAX's, so results agree with ``jax.image`` to rounding: every resampled
dimension is one matrix of weights (input pixels x output pixels) built from a sampling kernel
(triangle, Keys cubic, OpenCV/PyTorch cubic, Lanczos 3/5, or the box overlap of ``'area'``),
normalized to sum 1 per output pixel, and the image is contracted with each matrix in one
``einsum``. Output pixels whose sample position falls outside the input get 0. When downsampling with
``antialias=True`` the kernel is stretched by ``1 / scale`` (a low-pass filter). ``'nearest'`` picks
``floor((i + 0.5) * in / out)`` computed in float32, as JAX does.

Everything is written with ``tracejit.numpy``, so it works eagerly, under ``jit``, and
differentiates with respect to the image (and to ``scale``/``translation`` in
:func:`scale_and_translate`).
"""
from tracejit.image.scale import ResizeMethod, resize, scale_and_translate

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]
