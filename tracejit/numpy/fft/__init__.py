"""``tracejit.numpy.fft``: discrete Fourier transforms, traceable.

Every transform is one ``fft`` library step (NumPy's pocketfft), with the
lengths and axes resolved statically exactly as ``numpy.fft`` resolves them.
Output dtypes are NumPy 2's: float32 / complex64 inputs give complex64
(``irfft``: float32), everything else complex128 (``irfft``: float64).
"""
from __future__ import annotations

import operator

import numpy as np

from tracejit.ops.linalg import fft_p
from tracejit.numpy._util import aval, canonicalize_axis, eager, is_tracer, to_operand
from tracejit.numpy import ufuncs as U

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
           "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = (None, "backward", "ortho", "forward")


def _array(x):
    x = to_operand(x)
    return x if is_tracer(x) or isinstance(x, np.ndarray) else np.asarray(x)


def _check_norm(norm):
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    return norm


def _swap_direction(norm):
    return {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}[_check_norm(norm)]


def _static_length(n, fn):
    if is_tracer(n):
        raise TypeError(f"fft.{fn}: lengths must be static Python ints under jit")
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"Invalid number of data points ({n}) specified")
    return n


def _transform(kind, fn, x, s, axes, norm):
    """Resolve ``s``/``axes`` as numpy.fft does and bind one ``fft`` step."""
    _check_norm(norm)
    x = _array(x)
    shape = aval(x).shape
    nd = len(shape)
    if nd == 0:
        raise ValueError(f"fft.{fn}: input must be at least 1-D, got a scalar")
    if axes is None:
        axes = tuple(range(nd)) if s is None else tuple(range(-len(s), 0))
    axes = tuple(canonicalize_axis(a, nd) for a in (axes if isinstance(axes, (tuple, list)) else (axes,)))
    if len(set(axes)) != len(axes):
        raise NotImplementedError(f"fft.{fn}: repeated axes {axes} are not supported on traced arrays")
    if s is None:
        lengths = [shape[a] for a in axes]
        if kind == "irfft" and axes:
            lengths[-1] = 2 * (shape[axes[-1]] - 1)
    else:
        if len(s) != len(axes):
            raise ValueError("Shape and axes have different lengths.")
        lengths = [shape[a] if n is None else n for a, n in zip(axes, s)]
        if kind == "irfft" and s[-1] is None:
            lengths[-1] = 2 * (shape[axes[-1]] - 1)
    if not axes:
        return x
    lengths = tuple(_static_length(n, fn) for n in lengths)
    if kind == "rfft" and aval(x).dtype.kind == "c":
        raise TypeError(f"fft.{fn}: input must be real, got {aval(x).dtype.name}")
    return fft_p.bind(x, kind=kind, lengths=lengths, axes=axes, norm=norm)


def _one_dim(kind, name):
    np_fn = getattr(np.fft, name)

    def fn(a, n=None, axis=-1, norm=None, out=None):
        if eager(a):
            return np_fn(a, n, axis, norm)
        if out is not None:
            raise TypeError(f"fft.{name}(..., out=...) is not supported on traced arrays")
        return _transform(kind, name, a, None if n is None else (n,), (axis,), norm)
    fn.__name__ = name
    fn.__doc__ = (f"``numpy.fft.{name}``: 1-D transform along ``axis`` (length ``n``).\n\n"
                  f"Examples\n--------\n>>> import tracejit.numpy as jnp\n"
                  f">>> jnp.fft.{name}(jnp.ones(4)).shape  # doctest: +SKIP\n")
    return fn


def _n_dim(kind, name, default_axes):
    np_fn = getattr(np.fft, name)

    def fn(a, s=None, axes=default_axes, norm=None, out=None):
        if eager(a):
            return np_fn(a, s, axes, norm)
        if out is not None:
            raise TypeError(f"fft.{name}(..., out=...) is not supported on traced arrays")
        return _transform(kind, name, a, s, axes, norm)
    fn.__name__ = name
    fn.__doc__ = (f"``numpy.fft.{name}``: transform over ``axes`` with lengths ``s``.\n\n"
                  f"Examples\n--------\n>>> import tracejit.numpy as jnp\n"
                  f">>> jnp.fft.{name}(jnp.ones((2, 4))).shape  # doctest: +SKIP\n")
    return fn


fft = _one_dim("fft", "fft")
ifft = _one_dim("ifft", "ifft")
rfft = _one_dim("rfft", "rfft")
irfft = _one_dim("irfft", "irfft")
fft2 = _n_dim("fft", "fft2", (-2, -1))
ifft2 = _n_dim("ifft", "ifft2", (-2, -1))
rfft2 = _n_dim("rfft", "rfft2", (-2, -1))
irfft2 = _n_dim("irfft", "irfft2", (-2, -1))
fftn = _n_dim("fft", "fftn", None)
ifftn = _n_dim("ifft", "ifftn", None)
rfftn = _n_dim("rfft", "rfftn", None)
irfftn = _n_dim("irfft", "irfftn", None)


def hfft(a, n=None, axis=-1, norm=None, out=None):
    """FFT of a Hermitian-symmetric signal (real spectrum), ``numpy.fft.hfft``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.fft.hfft(jnp.array([1.0, 0.0])).shape
    (2,)
    """
    if eager(a):
        return np.fft.hfft(a, n, axis, norm)
    return irfft(U.conjugate(_array(a)), n, axis, _swap_direction(norm))


def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """Inverse of :func:`hfft`, ``numpy.fft.ihfft``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.fft.ihfft(jnp.ones(4)).shape
    (3,)
    """
    if eager(a):
        return np.fft.ihfft(a, n, axis, norm)
    return U.conjugate(rfft(a, n, axis, _swap_direction(norm)))


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """Sample frequencies of :func:`fft` (``n`` static; ``d`` may be traced).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.fft.fftfreq(4)
    Array([ 0.  ,  0.25, -0.5 , -0.25])
    """
    if is_tracer(d):
        return U.true_divide(np.fft.fftfreq(n, 1.0), d)
    out = np.fft.fftfreq(n, d)
    return out.astype(dtype) if dtype is not None else out


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """Sample frequencies of :func:`rfft`.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.fft.rfftfreq(4)
    Array([0.  , 0.25, 0.5 ])
    """
    if is_tracer(d):
        return U.true_divide(np.fft.rfftfreq(n, 1.0), d)
    out = np.fft.rfftfreq(n, d)
    return out.astype(dtype) if dtype is not None else out


def _shift(name, x, axes, sign):
    if eager(x):
        return getattr(np.fft, name)(x, axes)
    from tracejit.numpy.extra import roll
    v = _array(x)
    shape = aval(v).shape
    if axes is None:
        axes = tuple(range(len(shape)))
    elif isinstance(axes, (int, np.integer)):
        axes = (axes,)
    if not axes:
        return v
    shifts = tuple(sign * (shape[canonicalize_axis(a, len(shape))] // 2) for a in axes)
    return roll(v, shifts, tuple(axes))


def fftshift(x, axes=None):
    """Shift the zero-frequency term to the center.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.fft.fftshift(jnp.arange(4))
    Array([2, 3, 0, 1])
    """
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
    """Inverse of :func:`fftshift`.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.fft.ifftshift(jnp.arange(4))
    Array([2, 3, 0, 1])
    """
    return _shift("ifftshift", x, axes, -1)


def __dir__():
    # The public names only (tab completion), as JAX's API modules list them; helpers stay importable.
    return sorted(__all__)
