"""Window functions (``bartlett``, ``blackman``, ``hamming``, ``hanning``, ``kaiser``) and
the modified Bessel function ``i0`` that the Kaiser window is made of.

A window's length ``M`` is a shape, so it is static under ``jit`` (a Python int);
with a concrete ``beta`` the window is a NumPy constant, computed by NumPy. A traced
``kaiser`` ``beta`` and every traced ``i0`` go through NumPy's own Chebyshev expansion
(Cephes) written with traceable ufuncs, so they differentiate and batch.
"""
from __future__ import annotations

import operator

import numpy as np

from tracejit.core import dtypes
from tracejit.numpy._util import aval, convert, eager, is_tracer, to_operand
from tracejit.numpy import ufuncs as U

__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser", "i0"]

# Chebyshev coefficients of exp(-x) I0(x) on [0, 8] and of exp(-x) sqrt(x) I0(x) on (8, inf),
# as in numpy.lib._function_base_impl (from Cephes).
_I0_A = (
    -4.4153416464793395e-18, 3.3307945188222384e-17, -2.431279846547955e-16, 1.715391285555133e-15,
    -1.1685332877993451e-14, 7.676185498604936e-14, -4.856446783111929e-13, 2.95505266312964e-12,
    -1.726826291441556e-11, 9.675809035373237e-11, -5.189795601635263e-10, 2.6598237246823866e-09,
    -1.300025009986248e-08, 6.046995022541919e-08, -2.670793853940612e-07, 1.1173875391201037e-06,
    -4.4167383584587505e-06, 1.6448448070728896e-05, -5.754195010082104e-05, 0.00018850288509584165,
    -0.0005763755745385824, 0.0016394756169413357, -0.004324309995050576, 0.010546460394594998,
    -0.02373741480589947, 0.04930528423967071, -0.09490109704804764, 0.17162090152220877, -0.3046826723431984,
    0.6767952744094761,)
_I0_B = (
    -7.233180487874754e-18, -4.830504485944182e-18, 4.46562142029676e-17, 3.461222867697461e-17,
    -2.8276239805165836e-16, -3.425485619677219e-16, 1.7725601330565263e-15, 3.8116806693526224e-15,
    -9.554846698828307e-15, -4.150569347287222e-14, 1.54008621752141e-14, 3.8527783827421426e-13,
    7.180124451383666e-13, -1.7941785315068062e-12, -1.3215811840447713e-11, -3.1499165279632416e-11,
    1.1889147107846439e-11, 4.94060238822497e-10, 3.3962320257083865e-09, 2.266668990498178e-08,
    2.0489185894690638e-07, 2.8913705208347567e-06, 6.889758346916825e-05, 0.0033691164782556943,
    0.8044904110141088,)


def _window_length(M, fn):
    if is_tracer(M):
        raise TypeError(f"jnp.{fn}: the window length M is a shape and must be static under jit (a Python "
                        f"int), got a traced value; mark it static with jit(..., static_argnums=...)")
    try:
        return operator.index(M)
    except TypeError:
        raise TypeError(f"jnp.{fn}: M must be an integer, got {M!r}") from None


def bartlett(M):
    """The Bartlett (triangular) window of ``M`` points, float64.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.bartlett(5)
    Array([0. , 0.5, 1. , 0.5, 0. ])
    """
    return np.bartlett(_window_length(M, "bartlett"))


def blackman(M):
    """The Blackman window of ``M`` points, float64.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.blackman(3).round(6)
    Array([-0.,  1., -0.])
    """
    return np.blackman(_window_length(M, "blackman"))


def hamming(M):
    """The Hamming window of ``M`` points, float64.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.hamming(3)
    Array([0.08, 1.  , 0.08])
    """
    return np.hamming(_window_length(M, "hamming"))


def hanning(M):
    """The Hann window of ``M`` points, float64.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.hanning(3)
    Array([0., 1., 0.])
    """
    return np.hanning(_window_length(M, "hanning"))


def kaiser(M, beta):
    """The Kaiser window of ``M`` points with shape parameter ``beta``.

    ``M`` is static; ``beta`` may be traced (the window then differentiates in ``beta``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.kaiser(3, 0.0)
    Array([1., 1., 1.])
    """
    M = _window_length(M, "kaiser")
    if not is_tracer(beta):
        return np.kaiser(M, beta)
    if M == 1:
        return np.ones(1, np.float64)
    n = np.arange(0, M)
    alpha = (M - 1) / 2.0
    r = np.sqrt(1 - ((n - alpha) / alpha) ** 2.0) if M > 0 else np.zeros(0)
    return U.true_divide(i0(U.multiply(beta, r)), i0(beta))


def _chbevl(x, coefficients):
    b0, b1, b2 = coefficients[0], 0.0, 0.0
    for c in coefficients[1:]:
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


def i0(x):
    """The modified Bessel function of the first kind, order 0, elementwise.

    Integer and bool inputs compute in float64; complex inputs raise ``TypeError`` (as NumPy).
    The traced version evaluates NumPy's own Chebyshev expansions, so values agree with NumPy to
    rounding; each branch sees only in-range inputs, so gradients stay finite.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> float(jnp.i0(0.0))
    1.0
    >>> jnp.i0(jnp.array([1.0, 10.0])).round(4).tolist()
    [1.2661, 2815.7166]
    """
    if eager(x):
        return np.i0(x)
    from tracejit.numpy.misc import where
    x = to_operand(x)
    d = aval(x).dtype
    if dtypes.is_complex(d):
        raise TypeError("i0 not supported for complex values")
    if not dtypes.is_float(d):
        x = convert(x, dtypes.float64)
    if d in dtypes.HALF_FLOATS:   # the series rounds once, at the end (JAX's upcast)
        return convert(i0(convert(x, dtypes.float32)), d)
    x = U.absolute(x)
    small = U.less_equal(x, 8.0)
    x1 = where(small, x, 0.0)     # each branch evaluated only where it is valid (no inf/NaN gradients)
    x2 = where(small, 16.0, x)
    near = U.exp(x1) * _chbevl(x1 / 2.0 - 2, _I0_A)
    far = U.exp(x2) * _chbevl(32.0 / x2 - 2.0, _I0_B) / U.sqrt(x2)
    return where(small, near, far)
