"""``tracejit.scipy.signal``: N-D ``convolve`` / ``correlate`` (and the 2-D forms) with
``jax.scipy.signal``'s API, as one ``lax.conv_general_dilated`` each (so they run eagerly,
under ``jit``, ``grad`` and ``vmap``).

Examples
--------
>>> import numpy as np
>>> from tracejit.scipy import signal
>>> signal.convolve(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]))
Array([0. , 1. , 2.5, 4. , 1.5])
"""
from __future__ import annotations

import numpy as np

import tracejit.numpy as jnp
from tracejit.ops.convolution import conv_general_dilated
from tracejit.numpy._util import promote, to_operand

__all__ = ["convolve", "correlate", "convolve2d", "correlate2d", "csd", "detrend", "fftconvolve", "istft", "stft",
           "welch"]


def _operands(in1, in2, name):
    in1, in2 = promote(to_operand(in1), to_operand(in2))
    in1, in2 = jnp.asarray(in1), jnp.asarray(in2)
    if jnp.ndim(in1) != jnp.ndim(in2):
        raise ValueError(f"{name}: in1 and in2 should have the same dimensionality, got {jnp.ndim(in1)} and "
                         f"{jnp.ndim(in2)}")
    if jnp.ndim(in1) == 0:
        raise ValueError(f"{name}: inputs must be at least 1-D")
    if 0 in jnp.shape(in1) or 0 in jnp.shape(in2):
        raise ValueError(f"{name}: inputs cannot be empty")
    if in1.dtype == np.bool_:
        in1, in2 = jnp.astype(in1, np.int64), jnp.astype(in2, np.int64)
    return in1, in2


def _swap_needed(mode, s1, s2):
    if mode != "valid":
        return False
    if all(a >= b for a, b in zip(s1, s2)):
        return False
    if all(b >= a for a, b in zip(s1, s2)):
        return True
    raise ValueError("For 'valid' mode, one must be at least as large as the other in every dimension")


def _convolve_nd(in1, in2, mode):
    """Convolution of same-rank arrays (in2 no larger than in1 in every dim for 'valid')."""
    s1, s2 = jnp.shape(in1), jnp.shape(in2)
    nd = len(s1)
    kernel = jnp.flip(in2, axis=tuple(range(nd)))
    if mode == "valid":
        pads = [(0, 0)] * nd
    else:
        pads = [(k - 1, k - 1) for k in s2]
    out = conv_general_dilated(in1[None, None], kernel[None, None], (1,) * nd, pads)[0, 0]
    if mode == "same":
        full = [a + b - 1 for a, b in zip(s1, s2)]
        starts = [(f - a) // 2 for f, a in zip(full, s1)]
        out = out[tuple(slice(st, st + a) for st, a in zip(starts, s1))]
    return out


def convolve(in1, in2, mode="full", method="auto", precision=None):
    """N-dimensional convolution of two arrays of one rank (``jax.scipy.signal.convolve``).

    Parameters
    ----------
    in1, in2 : array_like
    mode : {'full', 'same', 'valid'}
        Output size: ``n1 + n2 - 1``; ``n1`` (centered); ``|n1 - n2| + 1`` (one input must be at
        least as large as the other in every dimension).
    method : {'auto', 'direct', 'fft'}
        Accepted for compatibility; the result is always the direct sum.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.signal import convolve
    >>> convolve(np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0]), mode="valid")
    Array([3., 5.])
    """
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"acceptable mode flags are 'valid', 'same', or 'full', got {mode!r}")
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"acceptable method flags are 'auto', 'direct', or 'fft', got {method!r}")
    in1, in2 = _operands(in1, in2, "convolve")
    if _swap_needed(mode, jnp.shape(in1), jnp.shape(in2)):
        in1, in2 = in2, in1
    return _convolve_nd(in1, in2, mode)


def correlate(in1, in2, mode="full", method="auto", precision=None):
    """N-dimensional cross-correlation ``z[k] = sum_l in1[l] conj(in2[l - k + n2 - 1])``
    (``jax.scipy.signal.correlate``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.signal import correlate
    >>> correlate(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]))
    Array([0.5, 2. , 3.5, 3. , 0. ])
    """
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"acceptable mode flags are 'valid', 'same', or 'full', got {mode!r}")
    in1, in2 = _operands(in1, in2, "correlate")
    nd = jnp.ndim(in1)
    swapped = _swap_needed(mode, jnp.shape(in1), jnp.shape(in2))
    if swapped:
        in1, in2 = in2, in1
    out = _convolve_nd(in1, jnp.conj(jnp.flip(in2, axis=tuple(range(nd)))), mode)
    if swapped:
        out = jnp.conj(jnp.flip(out, axis=tuple(range(nd))))
    return out


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """2-D convolution (``jax.scipy.signal.convolve2d``; ``boundary='fill'`` with ``fillvalue=0`` only).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.signal import convolve2d
    >>> convolve2d(np.ones((2, 2)), np.ones((2, 2)))
    Array([[1., 2., 1.],
           [2., 4., 2.],
           [1., 2., 1.]])
    """
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError("convolve2d: only boundary='fill' with fillvalue=0 is supported (as JAX)")
    if jnp.ndim(in1) != 2 or jnp.ndim(in2) != 2:
        raise ValueError("convolve2d only supports 2-D inputs")
    return convolve(in1, in2, mode)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """2-D cross-correlation (``jax.scipy.signal.correlate2d``; ``boundary='fill'``, ``fillvalue=0``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.signal import correlate2d
    >>> correlate2d(np.eye(2), np.array([[1.0, 2.0], [3.0, 4.0]]), mode="valid")
    Array([[5.]])
    """
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError("correlate2d: only boundary='fill' with fillvalue=0 is supported (as JAX)")
    if jnp.ndim(in1) != 2 or jnp.ndim(in2) != 2:
        raise ValueError("correlate2d only supports 2-D inputs")
    return correlate(in1, in2, mode)


from tracejit.scipy.signal_spectral import csd, detrend, fftconvolve, istft, stft, welch  # noqa: E402,F401


def __dir__():
    # The public names only (tab completion), as JAX's API modules list them; helpers stay importable.
    return sorted(__all__)
