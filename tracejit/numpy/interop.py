"""Arrays from and to bytes, strings, files and other libraries, and ufuncs from Python
functions: ``frombuffer``, ``fromstring``, ``fromfile``, ``fromiter``, ``from_dlpack``, ``load``,
``save``, ``savez``, ``frompyfunc``.

tracejit's concrete arrays are NumPy arrays, so the conversions are NumPy's (a copy,
where NumPy would return a read-only view of the caller's buffer, as ``jax.numpy``
copies to the device). They need concrete data and do not trace. ``fromiter`` is
deliberately unimplemented, as in JAX: consuming an iterator is a side effect.
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.numpy._util import aval, canonicalize_axes, convert, is_tracer, to_operand
from tracejit.numpy.ufuncs import Ufunc
from tracejit.ops.control_flow_functions import scan

__all__ = ["frombuffer", "fromstring", "fromfile", "fromiter", "from_dlpack", "load", "save", "savez", "frompyfunc"]

save = np.save
savez = np.savez


def _owned(arr):
    arr = np.array(arr, copy=True)
    if arr.dtype not in dtypes.SUPPORTED:
        arr = arr.astype(dtypes.canonical(arr.dtype))
    return arr


def frombuffer(buffer, dtype=float, count=-1, offset=0):
    """A 1-D array of the values in a bytes-like ``buffer`` (a copy).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.frombuffer(b"\\x01\\x02\\x03", dtype=jnp.uint8)
    Array([1, 2, 3], dtype=uint8)
    """
    return _owned(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
    """A 1-D array parsed from text ``string`` whose values are separated by ``sep``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.fromstring("1 2 3", dtype=int, sep=" ")
    Array([1, 2, 3])
    """
    return _owned(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromfile(file, dtype=float, count=-1, sep="", offset=0, *, like=None):
    """A 1-D array of the data in a file, binary or text with separator ``sep`` (``numpy.fromfile``).

    Read eagerly with NumPy, as :func:`load`: under ``jit`` the data becomes a constant of the
    program, read once when it is traced. (``jax.numpy.fromfile`` raises NotImplementedError
    because reading a file is a side effect; ``jnp.asarray(np.fromfile(...))`` is its advice.)

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> import tracejit.numpy as jnp
    >>> path = os.path.join(tempfile.mkdtemp(), "data.bin")
    >>> np.arange(3, dtype=np.int32).tofile(path)
    >>> jnp.fromfile(path, dtype=jnp.int32)
    Array([0, 1, 2], dtype=int32)
    """
    if like is not None:
        raise NotImplementedError("fromfile: the like= argument is not supported")
    return _owned(np.fromfile(file, dtype=dtype, count=count, sep=sep, offset=offset))


def fromiter(*args, **kwargs):
    """Unimplemented, as in ``jax.numpy``: use ``jnp.asarray(np.fromiter(...))``.

    Consuming an iterator is a side effect, unsafe under ``jit`` and other transformations.

    Examples
    --------
    >>> import numpy as np
    >>> import tracejit.numpy as jnp
    >>> jnp.asarray(np.fromiter(range(3), int))
    Array([0, 1, 2])
    """
    raise NotImplementedError(
        "jnp.fromiter() is not implemented because it may be non-pure and thus unsafe for use with JIT and "
        "other transformations. Consider using jnp.asarray(np.fromiter(...)) instead.")


def from_dlpack(x, /, *, device=None, copy=None):
    """An array from an object that supports the DLPack protocol (``__dlpack__``), on the CPU.

    Examples
    --------
    >>> import numpy as np
    >>> import tracejit.numpy as jnp
    >>> jnp.from_dlpack(np.arange(3))
    Array([0, 1, 2])
    """
    if is_tracer(x):
        raise TypeError("from_dlpack: a traced array has no DLPack buffer; use it directly")
    kw = {} if device is None else {"device": device}
    return np.from_dlpack(x, copy=copy, **kw)


def load(file, *args, **kwargs):
    """Load arrays saved by ``save``/``savez`` (``numpy.load``); a single array comes back as one.

    Examples
    --------
    >>> import io
    >>> import tracejit.numpy as jnp
    >>> f = io.BytesIO(); jnp.save(f, jnp.arange(3)); _ = f.seek(0)
    >>> jnp.load(f)
    Array([0, 1, 2])
    """
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray) and out.dtype in dtypes.SUPPORTED:
        out = np.asarray(out)
    return out


class PyUfunc(Ufunc):
    """A ufunc made from a Python function of scalars (``frompyfunc``): calls broadcast and
    map ``func`` over elements (``vmap`` under tracing); ``reduce``/``accumulate`` scan along
    an axis; ``outer`` applies it to all pairs."""

    def __init__(self, func, nin, nout, identity=None, name=None):
        self._func = func
        self.nin, self.nout, self.identity = int(nin), int(nout), identity
        self.__name__ = name or getattr(func, "__name__", "pyufunc")
        self.__doc__ = getattr(func, "__doc__", None)

    def __repr__(self):
        return f"<tracejit.numpy.ufunc '{self.__name__}'>"

    def __call__(self, *args, out=None, where=None):
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes {self.nin} positional arguments, got {len(args)}")
        if out is not None or where is not None:
            raise NotImplementedError(f"{self.__name__}: out= and where= are not supported")
        from tracejit.numpy.functional import vectorize
        return vectorize(self._func)(*args)

    def _operator(self, *args):
        return self(*args)

    def _binary_single(self, method):
        if self.nin != 2 or self.nout != 1:
            raise ValueError(f"{method} only supported for binary ufuncs with a single output")

    def _scan_axis(self, a, axis, dtype):
        x = to_operand(a)
        x = np.asarray(x) if not is_tracer(x) else x
        if dtype is not None:
            x = convert(x, dtypes.canonical(dtype))
        from tracejit.numpy.shape import moveaxis, ravel, reshape
        if axis is None:
            return ravel(x), tuple(range(aval(x).ndim)), aval(x).shape
        axes = canonicalize_axes(axis, aval(x).ndim)
        shape = aval(x).shape
        x = moveaxis(x, axes, tuple(range(len(axes))))
        rest = aval(x).shape[len(axes):]
        return reshape(x, (-1,) + rest), axes, shape

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=None):
        """Reduce ``a`` along ``axis`` by applying the ufunc left to right.

        Examples
        --------
        >>> import tracejit.numpy as jnp
        >>> add = jnp.frompyfunc(lambda x, y: x + y, 2, 1, identity=0)
        >>> add.reduce(jnp.arange(5))
        np.int64(10)
        """
        self._binary_single("reduce")
        if out is not None or where is not None:
            raise NotImplementedError(f"{self.__name__}.reduce: out= and where= are not supported")
        from tracejit.numpy.creation import full
        from tracejit.numpy.shape import reshape
        x, axes, shape = self._scan_axis(a, axis, dtype)
        start = initial if initial is not None else self.identity
        if aval(x).shape[0] == 0:
            if start is None:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} which has no identity")
            res = full(aval(x).shape[1:], start, dtype=aval(x).dtype)
        else:
            if initial is not None:
                carry, xs = convert(full(aval(x).shape[1:], initial, dtype=aval(x).dtype), aval(x).dtype), x
            else:
                carry, xs = x[0], x[1:]
            res, _ = scan(lambda c, e: (convert(to_operand(self(c, e)), aval(c).dtype), None), carry, xs)
        if keepdims:
            res = reshape(res, tuple(1 if i in axes else s for i, s in enumerate(shape)))
        return res[()] if isinstance(res, np.ndarray) and res.ndim == 0 else res

    def accumulate(self, a, axis=0, dtype=None, out=None):
        """Running application of the ufunc along ``axis``.

        Examples
        --------
        >>> import tracejit.numpy as jnp
        >>> mul = jnp.frompyfunc(lambda x, y: x * y, 2, 1)
        >>> mul.accumulate(jnp.array([1, 2, 3, 4]))
        array([ 1,  2,  6, 24])
        """
        self._binary_single("accumulate")
        if out is not None:
            raise NotImplementedError(f"{self.__name__}.accumulate: out= is not supported")
        if axis is None:
            raise ValueError("accumulate does not allow multiple axes")
        from tracejit.numpy.shape import concatenate, moveaxis, reshape
        x, (ax,), shape = self._scan_axis(a, axis, dtype)
        if aval(x).shape[0] == 0:
            return moveaxis(x, 0, ax)

        def step(c, e):
            n = convert(to_operand(self(c, e)), aval(c).dtype)
            return n, n
        _, ys = scan(step, x[0], x[1:])
        out = concatenate([reshape(x[0], (1,) + aval(x).shape[1:]), ys])
        return moveaxis(out, 0, ax)

    def outer(self, A, B, /):
        """The ufunc applied to all pairs: ``out[i..., j...] = f(A[i...], B[j...])``.

        Examples
        --------
        >>> import tracejit.numpy as jnp
        >>> add = jnp.frompyfunc(lambda x, y: x + y, 2, 1)
        >>> add.outer(jnp.array([0, 10]), jnp.array([1, 2, 3])).tolist()
        [[1, 2, 3], [11, 12, 13]]
        """
        self._binary_single("outer")
        from tracejit.numpy.shape import reshape
        a, b = to_operand(A), to_operand(B)
        a = np.asarray(a) if not is_tracer(a) else a
        b = np.asarray(b) if not is_tracer(b) else b
        return self(reshape(a, aval(a).shape + (1,) * aval(b).ndim), b)

    def at(self, a, indices, b=None, /, *, inplace=True):
        """Not supported: use ``x.at[indices].apply``/``.set`` with the function."""
        raise NotImplementedError(f"{self.__name__}.at is not supported; use x.at[indices].set(f(x[indices], b))")

    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        """Not supported: reduce each slice with ``reduce`` instead."""
        raise NotImplementedError(f"{self.__name__}.reduceat is not supported; reduce each slice with .reduce")


def frompyfunc(func, /, nin, nout, *, identity=None):
    """A ufunc (with ``reduce``, ``accumulate``, ``outer``) from a Python function of scalars.

    ``func`` must be traceable (written with ``tracejit.numpy``/``lax`` operations); calls map it
    over the broadcast elements with ``vmap``, so it also works under ``jit``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> hypot = jnp.frompyfunc(lambda x, y: jnp.sqrt(x * x + y * y), 2, 1)
    >>> hypot(jnp.array([3.0, 5.0]), 4.0)
    array([5.        , 6.40312424])
    """
    return PyUfunc(func, nin, nout, identity=identity)
