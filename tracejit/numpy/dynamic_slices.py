"""Slices with a traced start (``jax.ds``): ``x[ds(i, 4)]`` under ``jit``, where ``x[i:i + 4]``
would need a static ``i``.

JAX's semantics, axis by axis (``n`` the axis length):

- reads (``x[...]``, ``x.at[...].get()``, ``ref[...]``): with stride 1 a ``dynamic_slice`` (a
  negative start wraps once, then the start is clamped so the window fits); with a larger stride
  the elements ``start + k * stride`` (no wrap), each index clamped into the axis;
- ``x.at[...]`` updates: nothing wraps; with stride 1 a window that does not fit is dropped
  whole (one as long as the axis always fits), with a larger stride each out-of-range element is
  dropped;
- Ref writes (``ref[...] = v``): with stride 1 the read's window (wrapped and clamped) is written
  back there; with a larger stride each index wraps once if negative and is dropped if still out
  of range.

The rest of the index then applies to the window, with ``:`` on the Slice's axis.
"""
from __future__ import annotations

import operator

import numpy as np

from tracejit import array as _array_module
from tracejit.ops.indexing import dynamic_slice_p, dynamic_update_slice_p
from tracejit.numpy._util import aval, convert, is_tracer, to_operand
from tracejit.numpy.misc import where


class Slice:
    """A slice of ``size`` elements from a (possibly traced) ``start``, every ``stride``-th kept
    (``jax.ds`` returns one when ``start`` is traced).

    Examples
    --------
    >>> Slice(2, 3).size
    3
    """

    __slots__ = ("start", "size", "stride")

    def __init__(self, start, size, stride=1):
        self.start, self.size, self.stride = start, operator.index(size), operator.index(stride)
        if self.size < 0 or self.stride < 1:
            raise ValueError(f"ds: size must be >= 0 and stride >= 1, got size {self.size}, stride {self.stride}")

    def __repr__(self):
        return f"Slice(start={self.start!r}, size={self.size}, stride={self.stride})"


def ds(start, size=None, stride=None):
    """A slice of ``size`` elements from ``start``, which may be traced (``jax.ds``).

    ``ds(None)`` is ``:``; ``ds(j)`` is ``Slice(0, j)`` (``:j``); ``ds(i, j, s)`` takes ``j``
    elements ``i, i + s, ...``. Indexing with it follows JAX (see the module docstring: reads
    clamp the window, ``.at`` updates drop what is out of range).

    Examples
    --------
    >>> import numpy as np, tracejit, tracejit.numpy as jnp
    >>> x = jnp.arange(10)
    >>> x[ds(4, 2)]
    Array([4, 5])
    >>> tracejit.jit(lambda x, i: x[ds(i, 3, 2)])(x, 1)
    Array([1, 3, 5])
    """
    if start is None and size is None:
        return slice(None)
    if size is None:
        start, size = 0, start
    return Slice(start, size, 1 if stride is None else stride)


def has_dynamic_slice(idx) -> bool:
    """Whether an index holds a :class:`Slice`."""
    return any(isinstance(e, Slice) for e in (idx if isinstance(idx, tuple) else (idx,)))


def _axes(ndim, entries):
    """The axis each entry indexes (entries that index no axis, None and Ellipsis, get the next),
    counted as NumPy indexing counts them (advanced_indexing's classification)."""
    from tracejit.numpy.advanced_indexing import _classify, _consumes
    counts = [1 if isinstance(e, Slice) else _consumes(*_classify(e)) for e in entries]
    used = sum(counts)
    axes, axis = [], 0
    for e, k in zip(entries, counts):
        axes.append(axis)
        axis += (ndim - used) if e is Ellipsis else k
    return axes


def _first(x, idx):
    """``(axis, Slice, idx with that Slice replaced by ':')`` for the first Slice of ``idx``."""
    entries = list(idx if isinstance(idx, tuple) else (idx,))
    k = next(i for i, e in enumerate(entries) if isinstance(e, Slice))
    s = entries[k]
    axis = _axes(len(aval(x).shape), entries)[k]
    entries[k] = slice(None)
    start = to_operand(s.start)
    if np.dtype(aval(start).dtype).kind not in "iu":
        raise TypeError(f"ds: the start must be an integer, got {aval(start).dtype}")
    if s.size > aval(x).shape[axis] and s.stride == 1:
        raise IndexError(f"ds: a window of {s.size} elements on an axis of size {aval(x).shape[axis]}")
    return axis, s, convert(start, np.int64), tuple(entries)


def _window_starts(x, axis, start):
    n = aval(x).shape[axis]
    wrapped = where(start < 0, start + np.int64(n), start)
    return [wrapped if a == axis else np.int64(0) for a in range(len(aval(x).shape))]


def _strided_indices(start, s, n, mode):
    """The indices ``start + k * stride``: clamped into the axis (``clip``), or with those out of
    range sent to ``n`` (dropped by the scatter), after wrapping negative ones once (``wrap_drop``)."""
    idx = start + np.arange(s.size, dtype=np.int64) * np.int64(s.stride)
    if mode == "clip":
        return where(idx < 0, np.int64(0), where(idx > np.int64(n - 1), np.int64(max(n - 1, 0)), idx))
    if mode == "wrap_drop":
        idx = where(idx < 0, idx + np.int64(n), idx)
    return where((idx < 0) | (idx >= np.int64(n)), np.int64(n), idx)


def _along(axis, index):
    return (slice(None),) * axis + (index,)


def _read(x, axis, s, start):
    """The elements of ``x`` the Slice reads, as an array with ``s.size`` on ``axis``."""
    from tracejit.numpy.advanced_indexing import getitem as plain_getitem
    shape = aval(x).shape
    if s.stride == 1:
        sizes = tuple(s.size if a == axis else n for a, n in enumerate(shape))
        return dynamic_slice_p.bind(x, *_window_starts(x, axis, start), slice_sizes=sizes)
    return plain_getitem(x, _along(axis, _strided_indices(start, s, shape[axis], "clip")))


def getitem(x, idx, rest_getitem):
    """``x[idx]`` for an index with Slices; ``rest_getitem(window, rest)`` indexes the window."""
    x = to_operand(x)
    axis, s, start, rest = _first(x, idx)
    return rest_getitem(_read(x, axis, s, start), rest)


def update(x, idx, rest_update, *, clamp=False):
    """``x`` with the elements ``idx`` selects replaced by ``rest_update(window, rest)`` computed
    on them: ``x.at[idx]`` semantics (out-of-range windows or elements dropped), or with
    ``clamp`` a Ref write's (the read's clamped window written back)."""
    from tracejit.numpy.advanced_indexing import scatter
    x = to_operand(x)
    axis, s, start, rest = _first(x, idx)
    n = aval(x).shape[axis]
    new = to_operand(rest_update(_read(x, axis, s, start), rest))
    if s.stride > 1:
        idx = _strided_indices(start, s, n, "wrap_drop" if clamp else "drop")
        return scatter(x, _along(axis, idx), new, "set", mode="drop")
    written = dynamic_update_slice_p.bind(x, convert(new, aval(x).dtype), *_window_starts(x, axis, start))
    if clamp or s.size == n:          # (a window as long as the axis is the whole axis, wherever it starts)
        return written
    fits = (start >= 0) & (start <= np.int64(n - s.size))
    return where(fits, written, x)


def _array_getitem(x, idx):
    from tracejit.numpy.advanced_indexing import getitem as jnp_getitem
    return jnp_getitem(x, idx)


_array_module.EXTRA_INDEXING.append((has_dynamic_slice, _array_getitem))   # Array[ds(...)] eagerly

__all__ = ["Slice", "ds", "getitem", "has_dynamic_slice", "update"]
