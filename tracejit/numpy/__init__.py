"""``tracejit.numpy``: the NumPy API, traceable under ``jit`` and NumPy-fast eagerly.

Eager calls on concrete arrays run NumPy directly; calls on traced arrays
record primitives. Names and semantics follow NumPy 2 (and ``jax.numpy``).

Examples
--------
>>> import tracejit.numpy as jnp
>>> jnp.sum(jnp.arange(4))
np.int64(6)
"""
import numpy as _np

from tracejit.numpy.ufuncs import UFUNCS as _UFUNCS, Ufunc as ufunc
from tracejit.numpy.reductions import (
    all, amax, amin, any, argmax, argmin, cummax, cummin, cumprod, cumsum, cumulative_prod,
    cumulative_sum, max, mean, min, nanmax, nanmean, nanmin, nanprod, nansum, prod, std, sum, var)
from tracejit.numpy.shape import (
    atleast_1d, atleast_2d, atleast_3d, broadcast_arrays, broadcast_to, column_stack, concat,
    concatenate, dstack, expand_dims, flip, fliplr, flipud, hstack, moveaxis, ndim, permute_dims,
    ravel, reshape, row_stack, shape, size, squeeze, stack, swapaxes, transpose, vstack)
from tracejit.numpy.creation import (
    arange, array, asarray, empty, empty_like, eye, full, full_like, geomspace, identity, linspace,
    logspace, ones, ones_like, tri, zeros, zeros_like)
from tracejit.numpy.misc import (
    allclose, angle, around, array_equal, astype, clip, copy, fix, imag, isclose, nan_to_num, real,
    round, round_, select, where)
from tracejit.numpy.contractions import (
    dot, einsum, inner, kron, matmul, outer, tensordot, vdot)

globals().update(_UFUNCS)

# dtypes and constants, as in NumPy
bool_ = _np.bool_
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float16, float32, float64 = _np.float16, _np.float32, _np.float64
complex64, complex128 = _np.complex64, _np.complex128
float_, complex_, int_, uint = _np.float64, _np.complex128, _np.int64, _np.uint64
dtype, finfo, iinfo = _np.dtype, _np.finfo, _np.iinfo
result_type, promote_types, can_cast, issubdtype = _np.result_type, _np.promote_types, _np.can_cast, _np.issubdtype
number, inexact, floating, integer, signedinteger, unsignedinteger, complexfloating, generic = (
    _np.number, _np.inexact, _np.floating, _np.integer, _np.signedinteger, _np.unsignedinteger,
    _np.complexfloating, _np.generic)
pi, e, inf, nan, euler_gamma = _np.pi, _np.e, _np.inf, _np.nan, _np.euler_gamma
newaxis = None
ndarray = _np.ndarray

from tracejit.numpy.sorting import *  # noqa: E402,F401,F403
from tracejit.numpy.extra import *  # noqa: E402,F401,F403
from tracejit.numpy.indexing_api import *  # noqa: E402,F401,F403
from tracejit.numpy.convolve import convolve, correlate  # noqa: E402,F401
from tracejit.numpy import linalg, fft  # noqa: E402,F401
