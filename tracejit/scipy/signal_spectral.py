"""Spectral analysis for ``tracejit.scipy.signal`` (re-exported there): ``detrend``, ``fftconvolve``,
``stft``, ``istft``, ``csd`` and ``welch`` with ``jax.scipy.signal``'s API and semantics.

The transforms are ``tracejit.numpy.fft`` calls wrapped with a ``custom_vjp`` (the FFT is linear: its
transpose is an FFT of the cotangent), so everything here is differentiable in reverse mode too,
besides running eagerly, under ``jit`` and ``vmap``.

Examples
--------
>>> import numpy as np
>>> from tracejit.scipy import signal
>>> signal.fftconvolve(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5])).round(12) + 0.0
Array([0. , 1. , 2.5, 4. , 1.5])
"""
from __future__ import annotations

import math
import operator
import warnings

import numpy as np

import tracejit.numpy as jnp
from tracejit.core import dtypes
from tracejit.numpy._util import canonicalize_axis, to_operand
from tracejit.transforms.api_ad import custom_vjp

__all__ = ["csd", "detrend", "fftconvolve", "istft", "stft", "welch"]


# ============================================================================ differentiable FFTs

@custom_vjp
def _fft_last(x):
    """Complex FFT along the last axis (length = x's)."""
    return jnp.fft.fft(x, axis=-1)


def _fft_last_fwd(x):
    return _fft_last(x), None


def _fft_last_bwd(_, g):
    return (_fft_last(g),)          # the DFT matrix is symmetric


_fft_last.defvjp(_fft_last_fwd, _fft_last_bwd)


@custom_vjp
def _ifft_last(x):
    """Complex inverse FFT along the last axis."""
    return jnp.fft.ifft(x, axis=-1)


def _ifft_last_fwd(x):
    return _ifft_last(x), None


def _ifft_last_bwd(_, g):
    return (_ifft_last(g),)


_ifft_last.defvjp(_ifft_last_fwd, _ifft_last_bwd)


def _complex_dtype(dt):
    return np.dtype(np.complex64) if np.dtype(dt) in (np.float32, np.complex64, *dtypes.HALF_FLOATS) \
        else np.dtype(np.complex128)


def _fit_last(x, n):
    """x zero-padded or truncated to length n along the last axis."""
    m = jnp.shape(x)[-1]
    if m == n:
        return x
    if m > n:
        return x[..., :n]
    return jnp.concatenate([x, jnp.zeros(jnp.shape(x)[:-1] + (n - m,), dtype=x.dtype)], axis=-1)


def _fft(x, n=None, axis=-1):
    x = jnp.moveaxis(x, axis, -1)
    n = jnp.shape(x)[-1] if n is None else n
    x = jnp.astype(_fit_last(x, n), _complex_dtype(x.dtype))
    return jnp.moveaxis(_fft_last(x), -1, axis)


def _ifft(x, n=None, axis=-1):
    x = jnp.moveaxis(x, axis, -1)
    n = jnp.shape(x)[-1] if n is None else n
    x = jnp.astype(_fit_last(x, n), _complex_dtype(x.dtype))
    return jnp.moveaxis(_ifft_last(x), -1, axis)


def _rfft(x, n=None):
    """Real FFT along the last axis: the first n//2 + 1 bins of the complex FFT."""
    n = jnp.shape(x)[-1] if n is None else n
    return _fft(x, n)[..., : n // 2 + 1]


def _irfft(X, n=None, axis=-1):
    """Inverse real FFT (numpy.fft.irfft): the Hermitian spectrum rebuilt, the real part kept."""
    X = jnp.moveaxis(X, axis, -1)
    m = jnp.shape(X)[-1]
    n = 2 * (m - 1) if n is None else n
    h = n // 2 + 1
    X = _fit_last(X, h)
    tail = jnp.conj(jnp.flip(X[..., 1: n - h + 1], axis=-1))
    full = jnp.concatenate([X, tail], axis=-1)
    return jnp.moveaxis(jnp.real(_ifft_last(full)), -1, axis)


def _inexact(*arrays):
    ops = [jnp.asarray(to_operand(a)) for a in arrays]
    dt = jnp.result_type(*ops)
    if dtypes.kind(np.dtype(dt)) not in "fc":
        dt = np.dtype(np.float64)
    return [jnp.astype(o, dt) for o in ops]


# ============================================================================ detrend

def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=None):
    """Remove a linear (or piecewise linear) or constant trend along an axis (``jax.scipy.signal.detrend``).

    Parameters
    ----------
    data : array_like
    axis : int
        Axis along which to detrend (default -1).
    type : {'linear', 'constant'}
        Subtract the least-squares line (per segment between breakpoints), or the mean.
    bp : int or sequence of int
        Static breakpoints for ``'linear'``.
    overwrite_data : None
        Not supported (as JAX).

    Notes
    -----
    Each segment's least-squares line is formed in closed (centered) form rather than by ``lstsq``;
    it is the same projection, differentiable and exact to rounding.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.signal import detrend
    >>> detrend(np.array([1.0, 4.0, 8.0, 8.0, 9.0])).round(12) + 0.0
    Array([-1.,  0.,  2.,  0., -1.])
    >>> detrend(np.array([1.0, 4.0, 8.0, 8.0, 9.0]), type="constant")
    Array([-5., -2.,  2.,  2.,  3.])
    """
    if overwrite_data is not None:
        raise NotImplementedError("overwrite_data argument not implemented.")
    if type not in ("constant", "linear"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    (x,) = _inexact(data)
    if type == "constant":
        return x - jnp.mean(x, axis=axis, keepdims=True)
    axis = canonicalize_axis(axis, jnp.ndim(x))
    N = jnp.shape(x)[axis]
    bps = np.sort(np.unique(np.r_[0, bp, N]))
    if bps[0] < 0 or bps[-1] > N:
        raise ValueError("Breakpoints must be non-negative and less than length of data along given axis.")
    x = jnp.moveaxis(x, axis, 0)
    pieces = []
    for lo, hi in zip(bps[:-1], bps[1:]):
        seg = x[int(lo):int(hi)]
        npts = int(hi - lo)
        if npts == 1:
            pieces.append(jnp.zeros_like(seg))
            continue
        t = np.arange(1, npts + 1, dtype=np.float64) / npts
        tc = t - t.mean()
        shape = (npts,) + (1,) * (jnp.ndim(seg) - 1)
        tc_b = jnp.astype(jnp.asarray(tc.reshape(shape)), seg.dtype)
        mean = jnp.mean(seg, axis=0, keepdims=True)
        slope = jnp.sum(tc_b * (seg - mean), axis=0, keepdims=True) / float(np.sum(tc * tc))
        pieces.append(seg - mean - slope * tc_b)
    out = jnp.concatenate(pieces, axis=0) if len(pieces) > 1 else pieces[0]
    return jnp.moveaxis(out, 0, axis)


# ============================================================================ fftconvolve

def fftconvolve(in1, in2, mode="full", axes=None):
    """N-dimensional convolution by FFT (``jax.scipy.signal.fftconvolve``).

    Parameters
    ----------
    in1, in2 : array_like
        Same number of dimensions.
    mode : {'full', 'same', 'valid'}
        Output size as :func:`convolve`.
    axes : sequence of int, optional
        Axes to convolve over (default all); on the other axes the shapes must match (as JAX) and
        the inputs are multiplied elementwise.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.signal import fftconvolve
    >>> fftconvolve(np.array([1, 2, 3, 2, 1]), np.array([1, 1, 1]), mode="same").round(12)
    Array([3., 6., 7., 6., 3.])
    """
    in1, in2 = _inexact(in1, in2)
    if jnp.ndim(in1) != jnp.ndim(in2):
        raise ValueError("in1 and in2 should have the same dimensionality")
    if mode not in ("same", "full", "valid"):
        raise ValueError("mode must be one of ['same', 'full', 'valid']")
    nd = jnp.ndim(in1)
    if axes is None:
        axes = tuple(range(nd))
    else:
        axes = (axes,) if isinstance(axes, int) else tuple(operator.index(a) for a in axes)
        axes = tuple(canonicalize_axis(a, nd) for a in axes)
    s1, s2 = jnp.shape(in1), jnp.shape(in2)
    mapped = [i for i in range(nd) if i not in axes]
    if any(s1[i] != s2[i] for i in mapped):
        raise ValueError(f"mapped axes must have same shape; got in1.shape={s1} in2.shape={s2} axes={axes}")
    if mode == "valid":
        no_swap = all(s1[i] >= s2[i] for i in axes)
        swap = all(s1[i] <= s2[i] for i in axes)
        if not (no_swap or swap):
            raise ValueError("For 'valid' mode, One input must be at least as large as the other in every "
                             "dimension.")
        if swap and not no_swap:
            in1, in2 = in2, in1
            s1, s2 = s2, s1
    full = {i: s1[i] + s2[i] - 1 for i in axes}
    if all(s1[i] == 1 or s2[i] == 1 for i in axes):
        conv = in1 * in2
    else:
        real = dtypes.kind(np.dtype(in1.dtype)) == "f" and dtypes.kind(np.dtype(in2.dtype)) == "f"
        a, b = in1, in2
        for i in axes:
            a = _fft(a, full[i], axis=i)
            b = _fft(b, full[i], axis=i)
        conv = a * b
        for i in axes:
            conv = _ifft(conv, full[i], axis=i)
        if real:
            conv = jnp.real(conv)
    if mode == "full":
        out = {i: full[i] for i in axes}
    elif mode == "same":
        out = {i: s1[i] for i in axes}
    else:
        out = {i: s1[i] - s2[i] + 1 for i in axes}
    idx = tuple(slice((full[i] - out[i]) // 2, (full[i] - out[i]) // 2 + out[i]) if i in axes else slice(None)
                for i in range(nd))
    return conv[idx]


# ============================================================================ spectral helpers

def _hann(n, dtype):
    if n == 1:
        return jnp.ones((1,), dtype=dtype)
    return jnp.astype(jnp.sin(jnp.linspace(0.0, math.pi, n, endpoint=False)) ** 2, dtype)


def _named_window(window, n, dtype):
    if isinstance(window, str) and window == "hann":
        return _hann(n, dtype)
    try:
        from scipy.signal import get_window
    except ImportError as err:
        raise ImportError(f"scipy must be available to use window={window!r}") from err
    return jnp.asarray(np.asarray(get_window(window, n), dtype=dtype))


def _triage_segments(window, nperseg, input_length, dtype):
    """(window array, nperseg) as JAX's helper: a named window gets nperseg (default: the input's
    length, clipped to it with a warning); an array window sets nperseg."""
    if isinstance(window, (str, tuple)):
        n = input_length if nperseg is None else int(nperseg)
        if n > input_length:
            warnings.warn(f"nperseg={n} is greater than input_length={input_length}, using nperseg={input_length}")
            n = input_length
        return _named_window(window, n, dtype), n
    win = jnp.astype(jnp.asarray(to_operand(window)), dtype)
    n = jnp.size(win) if nperseg is None else int(nperseg)
    if jnp.ndim(win) != 1:
        raise ValueError("window must be 1-D")
    if input_length < jnp.size(win):
        raise ValueError("window is longer than input signal")
    if n != jnp.size(win):
        raise ValueError("value specified for nperseg is different from length of window")
    return win, n


def _median_bias(n):
    ii = np.arange(2.0, n, 2)
    return 1.0 + float(np.sum(1.0 / (ii + 1) - 1.0 / ii))


def _odd_ext(x, n):
    if n < 1:
        return x
    if n > jnp.shape(x)[-1] - 1:
        raise ValueError(f"The extension length n ({n}) is too big. It must not exceed x.shape[axis]-1, which is "
                         f"{jnp.shape(x)[-1] - 1}.")
    left = 2 * x[..., :1] - jnp.flip(x[..., 1:n + 1], axis=-1)
    right = 2 * x[..., -1:] - jnp.flip(x[..., -(n + 1):-1], axis=-1)
    return jnp.concatenate([left, x, right], axis=-1)


def _pad_last(x, n, mode):
    pad = [(0, 0)] * (jnp.ndim(x) - 1) + [(n, n)]
    if mode == "constant":
        return jnp.pad(x, pad, mode="constant", constant_values=0)
    return jnp.pad(x, pad, mode=mode)


_BOUNDARY = {
    "even": lambda x, n: _pad_last(x, n, "reflect"),
    "odd": _odd_ext,
    "constant": lambda x, n: _pad_last(x, n, "edge"),
    "zeros": lambda x, n: _pad_last(x, n, "constant"),
    None: lambda x, n: x,
}


def _segments(x, win, detrend_func, nperseg, noverlap, nfft, sides):
    """Windowed FFTs of the overlapping segments of x (time on the last axis): (..., nseg, nfreq)."""
    if dtypes.kind(np.dtype(x.dtype)) in "iub":
        x = jnp.astype(x, win.dtype)
    length = jnp.shape(x)[-1]
    if nperseg == 1 and noverlap == 0:
        seg = x[..., None]
    else:
        step = nperseg - noverlap
        starts = np.arange(0, length - nperseg + 1, step)
        seg = x[..., starts[:, None] + np.arange(nperseg)[None, :]]
    seg = detrend_func(seg)
    if dtypes.kind(np.dtype(win.dtype)) == "c":
        seg = jnp.astype(seg, _complex_dtype(seg.dtype))
    seg = win * seg
    if sides == "twosided":
        return _fft(seg, nfft)
    return _rfft(jnp.real(seg), nfft)


def _spectral_helper(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
                     detrend_type="constant", return_onesided=True, scaling="density", axis=-1, mode="psd",
                     boundary=None, padded=False):
    """scipy.signal._spectral_helper as JAX's (``y=None`` for the auto-spectrum)."""
    if mode not in ("psd", "stft"):
        raise ValueError(f"Unknown value for mode {mode}, must be one of: ('psd', 'stft')")
    if boundary not in _BOUNDARY:
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: {list(_BOUNDARY)}")
    user_axis = operator.index(axis)
    if y is None:
        (x,) = _inexact(x)
        axis = canonicalize_axis(operator.index(axis), jnp.ndim(x))
        outershape = tuple(s for i, s in enumerate(jnp.shape(x)) if i != axis)
        y_arr = x
    else:
        if mode != "psd":
            raise ValueError("two-argument mode is available only when mode=='psd'")
        x, y_arr = _inexact(x, y)
        if jnp.ndim(x) != jnp.ndim(y_arr):
            raise ValueError(f"two-arguments must have the same rank ({jnp.ndim(x)} vs {jnp.ndim(y_arr)}).")
        axis = canonicalize_axis(operator.index(axis), jnp.ndim(x))
        try:
            outershape = tuple(np.broadcast_shapes(
                tuple(s for i, s in enumerate(jnp.shape(x)) if i != axis),
                tuple(s for i, s in enumerate(jnp.shape(y_arr)) if i != axis)))
        except ValueError as err:
            raise ValueError("x and y cannot be broadcast together.") from err
    result_dtype = _complex_dtype(x.dtype)
    freq_dtype = np.dtype(np.float32) if result_dtype == np.complex64 else np.dtype(np.float64)
    if nperseg is not None:
        nperseg = int(nperseg)
        if nperseg < 1:
            raise ValueError("nperseg must be a positive integer")
    win, nperseg = _triage_segments(window, nperseg, jnp.shape(x)[axis], x.dtype)
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    nfft = nperseg if nfft is None else int(nfft)
    if y is None:
        if jnp.size(x) == 0:
            return (jnp.zeros(jnp.shape(x), freq_dtype), jnp.zeros(jnp.shape(x), freq_dtype),
                    jnp.zeros(jnp.shape(x), result_dtype))
    elif jnp.size(x) == 0 or jnp.size(y_arr) == 0:
        shape = outershape[:axis] + (min(jnp.shape(x)[axis], jnp.shape(y_arr)[axis]),) + outershape[axis:]
        return jnp.zeros(shape, freq_dtype), jnp.zeros(shape, freq_dtype), jnp.zeros(shape, result_dtype)
    x = jnp.moveaxis(x, axis, -1)
    if y is not None and jnp.ndim(y_arr) > 1:
        y_arr = jnp.moveaxis(y_arr, axis, -1)
    if y is not None and jnp.shape(x)[-1] != jnp.shape(y_arr)[-1]:
        if jnp.shape(x)[-1] < jnp.shape(y_arr)[-1]:
            x = _fit_last(x, jnp.shape(y_arr)[-1])
        else:
            y_arr = _fit_last(y_arr, jnp.shape(x)[-1])
    if nfft < nperseg:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    nstep = nperseg - noverlap
    if boundary is not None:
        x = _BOUNDARY[boundary](x, nperseg // 2)
        if y is not None:
            y_arr = _BOUNDARY[boundary](y_arr, nperseg // 2)
    if padded:
        nadd = (-(jnp.shape(x)[-1] - nperseg) % nstep) % nperseg
        x = _fit_last(x, jnp.shape(x)[-1] + nadd)
        if y is not None:
            y_arr = _fit_last(y_arr, jnp.shape(y_arr)[-1] + nadd)
    if isinstance(detrend_type, str):
        def detrend_func(d):
            return detrend(d, type=detrend_type, axis=-1)
    elif callable(detrend_type):
        if user_axis != -1:
            # SciPy's wrapping: the callable sees the segments with time where the input had it
            # (JAX moves the axes the other way round, which breaks 1-D inputs)
            def detrend_func(d):
                d = jnp.moveaxis(d, -1, axis)
                return jnp.moveaxis(detrend_type(d), axis, -1)
        else:
            detrend_func = detrend_type
    elif not detrend_type:
        def detrend_func(d):
            return d
    else:
        raise ValueError(f"Unsupported detrend type: {detrend_type}")
    if scaling == "density":
        scale = 1.0 / (fs * jnp.sum(win * win))
    elif scaling == "spectrum":
        scale = 1.0 / jnp.sum(win) ** 2
    else:
        raise ValueError(f"Unknown scaling: {scaling}")
    if mode == "stft":
        scale = jnp.sqrt(scale)
    sides = "onesided" if return_onesided else "twosided"
    if return_onesided and (dtypes.kind(np.dtype(x.dtype)) == "c" or dtypes.kind(np.dtype(y_arr.dtype)) == "c"):
        sides = "twosided"
        warnings.warn("Input data is complex, switching to return_onesided=False")
    k = np.fft.fftfreq(nfft) * nfft if sides == "twosided" else np.arange(nfft // 2 + 1, dtype=np.float64)
    freqs = jnp.astype(jnp.asarray(k) / (nfft * (1.0 / jnp.asarray(fs))), freq_dtype)
    result = _segments(x, win, detrend_func, nperseg, noverlap, nfft, sides)
    if y is not None:
        result_y = _segments(y_arr, win, detrend_func, nperseg, noverlap, nfft, sides)
        result = jnp.conj(result) * result_y
    elif mode == "psd":
        result = jnp.conj(result) * result
    result = result * scale
    if sides == "onesided" and mode == "psd":
        end = jnp.shape(result)[-1] if nfft % 2 else jnp.shape(result)[-1] - 1
        twice = np.ones(jnp.shape(result)[-1])
        twice[1:end] = 2.0
        result = result * twice
    time = jnp.astype(jnp.asarray(np.arange(nperseg / 2, jnp.shape(x)[-1] - nperseg / 2 + 1, nperseg - noverlap)),
                      freq_dtype) / fs
    if boundary is not None:
        time = time - (nperseg / 2) / fs
    result = jnp.astype(result, result_dtype)
    if y is None and mode != "stft":
        result = jnp.real(result)
    result = jnp.moveaxis(result, -1, axis)
    return freqs, time, result


# ============================================================================ public

def stft(x, fs=1.0, window="hann", nperseg=256, noverlap=None, nfft=None, detrend=False, return_onesided=True,
         boundary="zeros", padded=True, axis=-1):
    """Short-time Fourier transform (``jax.scipy.signal.stft``).

    Parameters
    ----------
    x : array_like
        Time series (time along ``axis``).
    fs : float
        Sampling frequency.
    window : str, tuple or array_like
        ``'hann'`` (periodic, built here); other names and tuples come from
        ``scipy.signal.get_window`` (needs SciPy, as JAX); an array sets ``nperseg``.
    nperseg, noverlap, nfft : int
        Segment length (clipped to the input's length), overlap (default ``nperseg // 2``), FFT
        length (default ``nperseg``).
    detrend : bool, str or callable
        Per-segment detrending (default none).
    return_onesided : bool
        One-sided spectrum for real input.
    boundary : {'zeros', 'even', 'odd', 'constant', None}
        Extension of the signal at both ends by ``nperseg // 2``.
    padded : bool
        Zero-pad to a whole number of segments.
    axis : int

    Returns
    -------
    (f, t, Zxx)
        Frequencies, segment times and the STFT (frequencies on ``axis``, times last).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.signal import stft
    >>> f, t, Z = stft(np.array([1.0, 2.0, 3.0, 2.0, 1.0, 0.0, 1.0, 2.0]), nperseg=4)
    >>> Z.shape, f.tolist(), t.tolist()
    ((3, 5), [0.0, 0.25, 0.5], [0.0, 2.0, 4.0, 6.0, 8.0])
    """
    return _spectral_helper(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                            scaling="spectrum", axis=axis, mode="stft", boundary=boundary, padded=padded)


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None, detrend="constant",
        return_onesided=True, scaling="density", axis=-1, average="mean"):
    """Cross power spectral density by Welch's method (``jax.scipy.signal.csd``).

    ``y=None`` gives the power spectral density of ``x``. As in JAX, ``nperseg`` defaults to the
    input's length (SciPy's to 256).

    Parameters
    ----------
    x, y : array_like
        Time series (``y`` may be None).
    fs, window, nperseg, noverlap, nfft, detrend, return_onesided, axis
        As :func:`stft`; ``detrend`` defaults to ``'constant'``.
    scaling : {'density', 'spectrum'}
    average : {'mean', 'median'}
        Averaging of the segments' periodograms (the median with SciPy's bias correction).

    Returns
    -------
    (f, Pxy)

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.signal import csd
    >>> x = np.sin(np.arange(16.0))
    >>> f, p = csd(x, 2 * x, nperseg=8)
    >>> p.dtype, p.shape
    (dtype('complex128'), (5,))
    """
    freqs, _, pxy = _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling,
                                     axis, mode="psd")
    if y is not None:
        pxy = jnp.astype(pxy, _complex_dtype(pxy.dtype))
    if jnp.ndim(pxy) >= 2 and jnp.size(pxy) > 0:
        if jnp.shape(pxy)[-1] > 1:
            if average == "median":
                bias = _median_bias(jnp.shape(pxy)[-1])
                if dtypes.kind(np.dtype(pxy.dtype)) == "c":
                    pxy = jnp.median(jnp.real(pxy), axis=-1) + 1j * jnp.median(jnp.imag(pxy), axis=-1)
                else:
                    pxy = jnp.median(pxy, axis=-1)
                pxy = pxy / bias
            elif average == "mean":
                pxy = jnp.mean(pxy, axis=-1)
            else:
                raise ValueError(f'average must be "median" or "mean", got {average}')
        else:
            pxy = jnp.reshape(pxy, jnp.shape(pxy)[:-1])
    return freqs, pxy


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None, detrend="constant",
          return_onesided=True, scaling="density", axis=-1, average="mean"):
    """Power spectral density by Welch's method (``jax.scipy.signal.welch``): ``csd(x, None, ...)``, real.

    As in JAX, ``nperseg`` defaults to the input's length (SciPy's to 256).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.signal import welch
    >>> f, p = welch(np.cos(np.pi / 2 * np.arange(64.0)), nperseg=16)
    >>> float(f[int(np.argmax(p))])
    0.25
    """
    freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap, nfft=nfft, detrend=detrend,
                     return_onesided=return_onesided, scaling=scaling, axis=axis, average=average)
    return freqs, jnp.real(pxx)


def _overlap_and_add(x, step):
    """Sum frames (..., nframes, frame_len) placed ``step`` apart: (..., step * (nframes - 1) + frame_len)."""
    *batch, nframes, seglen = jnp.shape(x)
    out_len = step * (nframes - 1) + seglen
    idx = (np.arange(nframes)[:, None] * step + np.arange(seglen)[None, :]).ravel()
    flat = jnp.reshape(x, tuple(batch) + (nframes * seglen,))
    out = jnp.zeros(tuple(batch) + (out_len,), dtype=x.dtype)
    return out.at[..., idx].add(flat)


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None, input_onesided=True, boundary=True,
          time_axis=-1, freq_axis=-2):
    """Inverse short-time Fourier transform (``jax.scipy.signal.istft``), by weighted overlap-add.

    Parameters
    ----------
    Zxx : array_like
        STFT, at least 2-D.
    fs, window, nperseg, noverlap, nfft
        As used for :func:`stft` (``nperseg`` and ``nfft`` default from ``Zxx``'s frequency axis).
    input_onesided : bool
        ``Zxx`` holds the one-sided spectrum.
    boundary : bool
        The signal was extended at both ends by ``stft`` (those points are removed).
    time_axis, freq_axis : int

    Returns
    -------
    (t, x)

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.signal import stft, istft
    >>> x = np.array([1.0, 2.0, 3.0, 2.0, 1.0, 0.0, 1.0, 2.0])
    >>> t, xr = istft(stft(x, nperseg=4)[2])
    >>> xr.round(12) + 0.0
    Array([1., 2., 3., 2., 1., 0., 1., 2.])
    """
    Zxx = jnp.asarray(to_operand(Zxx))
    if jnp.ndim(Zxx) < 2:
        raise ValueError("Input stft must be at least 2d!")
    freq_axis = canonicalize_axis(freq_axis, jnp.ndim(Zxx))
    time_axis = canonicalize_axis(time_axis, jnp.ndim(Zxx))
    if freq_axis == time_axis:
        raise ValueError("Must specify differing time and frequency axes!")
    Zxx = jnp.astype(Zxx, _complex_dtype(Zxx.dtype))
    n_default = 2 * (jnp.shape(Zxx)[freq_axis] - 1) if input_onesided else jnp.shape(Zxx)[freq_axis]
    nperseg = int(nperseg or n_default)
    if nperseg < 1:
        raise ValueError("nperseg must be a positive integer")
    if nfft is None:
        nfft = n_default
        if input_onesided and nperseg == n_default + 1:
            nfft += 1
    else:
        nfft = int(nfft)
    if nfft < nperseg:
        raise ValueError(f"FFT length ({nfft}) must be longer than nperseg ({nperseg}).")
    noverlap = int(noverlap or nperseg // 2)
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    nstep = nperseg - noverlap
    nd = jnp.ndim(Zxx)
    if time_axis != nd - 1 or freq_axis != nd - 2:
        outer = tuple(i for i in range(nd) if i not in (time_axis, freq_axis))
        Zxx = jnp.transpose(Zxx, outer + (freq_axis, time_axis))
    if input_onesided:
        xsubs = _irfft(Zxx, nfft, axis=-2)
    else:
        xsubs = _ifft(Zxx, nfft, axis=-2)
    xsubs = xsubs[..., :nperseg, :]
    if isinstance(window, (str, tuple)):
        win = _named_window(window, nperseg, np.dtype(np.float64))
        win = jnp.astype(win, jnp.real(xsubs).dtype if dtypes.kind(np.dtype(xsubs.dtype)) == "c" else xsubs.dtype)
    else:
        win = jnp.asarray(to_operand(window))
        if jnp.ndim(win) != 1:
            raise ValueError("window must be 1-D")
        if jnp.shape(win)[0] != nperseg:
            raise ValueError(f"window must have length of {nperseg}")
    xsubs = xsubs * jnp.sum(win)
    win_col = jnp.reshape(win, (1,) * (jnp.ndim(xsubs) - 2) + (nperseg, 1))
    x = _overlap_and_add(jnp.swapaxes(xsubs * win_col, -2, -1), nstep)
    nframes = jnp.shape(xsubs)[-1]
    norm = _overlap_and_add(jnp.broadcast_to(jnp.reshape(win * win, (1, nperseg)), (nframes, nperseg)), nstep)
    if boundary:
        half = nperseg // 2
        x = x[..., half:jnp.shape(x)[-1] - half]
        norm = norm[..., half:jnp.shape(norm)[-1] - half]
    x = x / jnp.where(norm > 1e-10, norm, 1.0)
    if jnp.ndim(x) > 1 and time_axis != nd - 1:
        if freq_axis < time_axis:
            time_axis -= 1
        x = jnp.moveaxis(x, -1, time_axis)
    real_dt = np.dtype(np.float32) if np.dtype(x.dtype) in (np.float32, np.complex64) else np.dtype(np.float64)
    time = jnp.astype(jnp.arange(jnp.shape(x)[0]), real_dt) / fs
    return time, x
