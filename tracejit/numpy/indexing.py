"""``x[idx]`` on traced arrays: basic indexing (ints, slices, None, Ellipsis)
becomes static ``slice``/``rev``/``reshape`` equations."""
from __future__ import annotations

import operator

import numpy as np

from tracejit.ops.structural import rev_p, slice_p
from tracejit.numpy._util import aval, to_operand
from tracejit.numpy.shape import reshape


def _is_basic(entry) -> bool:
    if entry is None or entry is Ellipsis or isinstance(entry, slice):
        return True
    if isinstance(entry, (bool, np.bool_)):
        return False
    return isinstance(entry, (int, np.integer))


def _expand_index(idx, ndim):
    if not isinstance(idx, tuple):
        idx = (idx,)
    n_ell = sum(1 for e in idx if e is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for e in idx if e is not None and e is not Ellipsis)
    if used > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {used} were indexed")
    if n_ell:
        pos = idx.index(Ellipsis)
        idx = idx[:pos] + (slice(None),) * (ndim - used) + idx[pos + 1:]
    else:
        idx = idx + (slice(None),) * (ndim - used)
    return idx


def _basic_getitem(x, idx):
    shape = aval(x).shape
    starts, limits, strides, reversed_dims = [], [], [], []
    out_shape = []
    axis = 0
    for entry in idx:
        if entry is None:
            out_shape.append(1)
            continue
        n = shape[axis]
        if isinstance(entry, slice):
            start, stop, step = entry.indices(n)
            if step > 0:
                lo, hi, st = start, max(stop, start), step
            else:
                reversed_dims.append(axis)
                lo, hi, st = n - 1 - start, n - 1 - stop, -step
                hi = max(hi, lo)
            lo, hi = min(lo, n), min(hi, n)
            starts.append(lo)
            limits.append(hi)
            strides.append(st)
            out_shape.append(len(range(lo, hi, st)))
        else:
            i = operator.index(entry)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            i %= n
            starts.append(i)
            limits.append(i + 1)
            strides.append(1)
        axis += 1
    if reversed_dims:
        x = rev_p.bind(x, dimensions=tuple(reversed_dims))
    if (tuple(starts), tuple(limits), tuple(strides)) != ((0,) * len(shape), shape, (1,) * len(shape)):
        x = slice_p.bind(x, start_indices=tuple(starts), limit_indices=tuple(limits), strides=tuple(strides))
    return reshape(x, tuple(out_shape)) if tuple(out_shape) != aval(x).shape else x


def getitem(x, idx):
    """``x[idx]`` for a traced ``x`` (or a concrete ``x`` with traced indices)."""
    x = to_operand(x)
    entries = idx if isinstance(idx, tuple) else (idx,)
    if all(_is_basic(e) for e in entries):
        return _basic_getitem(x, _expand_index(idx, aval(x).ndim))
    from tracejit.numpy import advanced_indexing
    return advanced_indexing.getitem(x, idx)


class IndexUpdateHelper:
    """``x.at[idx]``: functional updates (``set``, ``add``, ``multiply``, ``min``, ``max``, ``get``)."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, idx):
        from tracejit.numpy.advanced_indexing import IndexUpdateRef
        return IndexUpdateRef(self.array, idx)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.array!r})"

