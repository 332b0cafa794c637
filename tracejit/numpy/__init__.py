"""``tracejit.numpy``: the NumPy API, traceable under ``jit`` and NumPy-fast eagerly.

Eager calls on concrete arrays run NumPy directly; calls on traced arrays
record primitives. Names and semantics follow NumPy 2 (and ``jax.numpy``).

Examples
--------
>>> import tracejit.numpy as jnp
>>> jnp.sum(jnp.arange(4))
Array(6)
"""
import numpy as _np
from tracejit.core import dtypes as _dtypes

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
bfloat16 = _dtypes.bfloat16.type  # ml_dtypes' scalar type: stored in 16 bits, computed in float32
complex64, complex128 = _np.complex64, _np.complex128
float_, complex_, int_, uint = _np.float64, _np.complex128, _np.int64, _np.uint64
dtype, finfo, iinfo = _np.dtype, _np.finfo, _np.iinfo
promote_types, can_cast = _np.promote_types, _np.can_cast
issubdtype = _dtypes.issubdtype  # bfloat16 is floating, as in JAX
number, inexact, floating, integer, signedinteger, unsignedinteger, complexfloating, generic = (
    _np.number, _np.inexact, _np.floating, _np.integer, _np.signedinteger, _np.unsignedinteger,
    _np.complexfloating, _np.generic)
pi, e, inf, nan, euler_gamma = _np.pi, _np.e, _np.inf, _np.nan, _np.euler_gamma
newaxis = None
ndarray = _np.ndarray  # tracejit.Array, set at the end of this file

from tracejit.numpy.sorting import *  # noqa: E402,F401,F403
from tracejit.numpy.extra import *  # noqa: E402,F401,F403
from tracejit.numpy.indexing_api import *  # noqa: E402,F401,F403
from tracejit.numpy.convolve import convolve, correlate  # noqa: E402,F401
from tracejit.numpy import linalg, fft  # noqa: E402,F401
from tracejit.numpy.statistics import *  # noqa: E402,F401,F403
from tracejit.numpy.setops import *  # noqa: E402,F401,F403
from tracejit.numpy.index_tricks import *  # noqa: E402,F401,F403
from tracejit.numpy.polynomial import *  # noqa: E402,F401,F403
from tracejit.numpy.functional import *  # noqa: E402,F401,F403
from tracejit.numpy.type_predicates import *  # noqa: E402,F401,F403
from tracejit.numpy.windows import *  # noqa: E402,F401,F403
from tracejit.numpy.float_math import *  # noqa: E402,F401,F403
from tracejit.numpy.integer_bits import *  # noqa: E402,F401,F403
from tracejit.numpy.nan_functions import *  # noqa: E402,F401,F403
from tracejit.numpy.array_ops import *  # noqa: E402,F401,F403
from tracejit.numpy.products import *  # noqa: E402,F401,F403
from tracejit.numpy.interop import *  # noqa: E402,F401,F403
from tracejit.numpy import ad_rules as _ad_rules  # noqa: E402,F401  (registers sorting and linalg derivative rules)


def _strong_results(fn):
    """NumPy functions return arrays and NumPy scalars, never Python scalars: a traced Python
    scalar that passes through one (``jnp.where(c, s, 0.5)``, ``jnp.clip(s, 0, 1)``) comes out
    strongly typed, so ``complex64_array + jnp.real(s)`` is complex128 as in NumPy. (Ufuncs do
    the same themselves; Python operators keep Python scalars weak.)"""
    # Called outside any trace, results are tracejit.Arrays (JAX's array type).
    return _eager_results(fn, post=_strip_weak)


def _strip_weak(out):
    if isinstance(out, _Tracer):
        # A jnp result is a JAX array, even where the function hands back its argument, a NumPy
        # array under jit (``y = jnp.asarray(x); y += 1`` must not write into x).
        out = _jax_value(out)
        return out if not out.aval.weak_type else _convert(out, out.aval.dtype)
    if type(out) in (_builtins.bool, int, float, complex):   # the builtin: jnp.bool is np.bool_
        return _np.asarray(out)[()]
    if type(out) in (tuple, list):
        return type(out)(_strip_weak(o) for o in out)
    return out


def _wrap_public_functions(namespace):
    for _name in ("ndim", "size", "shape"):  # Python ints, as in NumPy
        namespace[_name]._keeps_python_scalars = True
    for _name, _fn in list(namespace.items()):
        if (not _name.startswith("_") and _inspect.isfunction(_fn)
                and (_fn.__module__ or "").startswith("tracejit.numpy")
                and not getattr(_fn, "_keeps_python_scalars", False)):
            namespace[_name] = _strong_results(_fn)


import builtins as _builtins  # noqa: E402
import inspect as _inspect  # noqa: E402

from tracejit.array import Array as _Array, eager_results as _eager_results  # noqa: E402
from tracejit.core.tracer import Tracer as _Tracer, jax_value as _jax_value  # noqa: E402
from tracejit.numpy._util import convert as _convert  # noqa: E402

_wrap_public_functions(globals())
ndarray = _Array
from tracejit.numpy import array_methods as _array_methods  # noqa: E402,F401  (operators and methods of tracers and Arrays; last: they call the public functions above)
