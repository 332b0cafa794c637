"""Collectives over named axes: ``psum``, ``pmax``, ``pmin``, ``all_gather``, ``psum_scatter``,
``all_to_all``, ``ppermute``, ``axis_index`` (JAX's ``lax`` parallel operators).

Each names one or more axes (``axis_name``); a ``vmap(..., axis_name=...)`` in scope binds the name
(``core/named_axes.py``) and its batching interpreter computes the collective over the batch
(``transforms/collective_rules.py``): ``psum(x, 'i')`` under ``vmap`` over ``i`` is every example's
sum over the batch. Outside such a ``vmap`` a name is unbound and binding raises JAX's
``NameError``. The abstract values are those of one example (per-"device" shapes, as in JAX).
"""
from __future__ import annotations

from tracejit.core import dtypes
from tracejit.core.avals import ShapedArray
from tracejit.core.named_axes import axis_names, bound_axis_size
from tracejit.core.primitive import NAMED_AXIS, Primitive, def_rules


def _check_bound(axis_name) -> int:
    """The product of the named axes' sizes (NameError for an unbound name)."""
    size = 1
    for name in axis_names(axis_name):
        size *= bound_axis_size(name)
    return size


def _unbound_impl(*args, axis_name, **params):
    for name in axis_names(axis_name):
        bound_axis_size(name)           # raises: nothing binds a name outside vmap's interpreter
    raise NameError(f"unbound axis name: {axis_name}")


def _same_aval(x, *, axis_name, **params):
    _check_bound(axis_name)
    return [x.strip_weak()]


def _collective(name, abstract_eval=_same_aval):
    return def_rules(Primitive(name), abstract_eval=abstract_eval, impl=_unbound_impl)


psum_p = _collective("psum")
pmax_p = _collective("pmax")
pmin_p = _collective("pmin")
ppermute_p = _collective("ppermute")


def all_gather_aval(x, n: int, axis: int, tiled: bool) -> ShapedArray:
    """The result of gathering ``x`` from ``n`` members along ``axis`` (a new axis unless ``tiled``);
    shared with the process-axis collective (``ops/mpi_collectives.py``)."""
    if not 0 <= axis <= x.ndim - (1 if tiled else 0):
        raise ValueError(f"all_gather: axis {axis} is out of bounds for an operand of rank {x.ndim}")
    if tiled:
        shape = x.shape[:axis] + (x.shape[axis] * n,) + x.shape[axis + 1:]
    else:
        shape = x.shape[:axis] + (n,) + x.shape[axis:]
    return ShapedArray(shape, x.dtype)


def _all_gather_abstract(x, *, axis_name, axis, tiled):
    return [all_gather_aval(x, _check_bound(axis_name), axis, tiled)]


all_gather_p = _collective("all_gather", _all_gather_abstract)


def psum_scatter_aval(x, n: int, d: int, tiled: bool) -> ShapedArray:
    """The block of ``x`` each of ``n`` members keeps when its ``d`` axis is scattered (dropped
    unless ``tiled``); shared with the process-axis collective (``ops/mpi_collectives.py``)."""
    if not 0 <= d < x.ndim:
        raise ValueError(f"psum_scatter: scatter_dimension {d} is out of bounds for rank {x.ndim}")
    if tiled:
        if x.shape[d] % n:
            raise ValueError(f"psum_scatter: the scattered dimension ({x.shape[d]}) must be a multiple of "
                             f"the axis size ({n})")
        shape = x.shape[:d] + (x.shape[d] // n,) + x.shape[d + 1:]
    else:
        if x.shape[d] != n:
            raise ValueError(f"psum_scatter: the scattered dimension ({x.shape[d]}) must equal the axis "
                             f"size ({n}) unless tiled=True")
        shape = x.shape[:d] + x.shape[d + 1:]
    return ShapedArray(shape, x.dtype)


def _psum_scatter_abstract(x, *, axis_name, scatter_dimension, tiled):
    return [psum_scatter_aval(x, _check_bound(axis_name), scatter_dimension, tiled)]


psum_scatter_p = _collective("psum_scatter", _psum_scatter_abstract)


def all_to_all_aval(x, n: int, split_axis: int, concat_axis: int, tiled: bool) -> ShapedArray:
    """The result of splitting ``x`` along ``split_axis`` into ``n`` chunks sent one to each member
    and concatenating the received ones along ``concat_axis`` (untiled: the split dimension, of size
    ``n``, is dropped and a new one inserted at ``concat_axis``); shared with the process-axis
    collective (``ops/mpi_collectives.py``)."""
    if not (0 <= split_axis < x.ndim and 0 <= concat_axis < x.ndim):
        raise ValueError(f"all_to_all: split_axis {split_axis} / concat_axis {concat_axis} out of bounds "
                         f"for rank {x.ndim}")
    shape = list(x.shape)
    if tiled:
        if shape[split_axis] % n:
            raise ValueError(f"all_to_all: the split dimension ({shape[split_axis]}) must be a multiple "
                             f"of the axis size ({n})")
        shape[split_axis] //= n
        shape[concat_axis] *= n
    else:
        if shape[split_axis] != n:
            raise ValueError(f"all_to_all: the split dimension ({shape[split_axis]}) must equal the axis "
                             f"size ({n}) unless tiled=True")
        del shape[split_axis]
        shape.insert(concat_axis, n)
    return ShapedArray(tuple(shape), x.dtype)


def _all_to_all_abstract(x, *, axis_name, split_axis, concat_axis, tiled):
    return [all_to_all_aval(x, _check_bound(axis_name), split_axis, concat_axis, tiled)]


all_to_all_p = _collective("all_to_all", _all_to_all_abstract)


def _axis_index_abstract(*, axis_name):
    _check_bound(axis_name)
    return [ShapedArray((), dtypes.int32)]


axis_index_p = _collective("axis_index", _axis_index_abstract)

COLLECTIVES = frozenset({psum_p, pmax_p, pmin_p, ppermute_p, all_gather_p, psum_scatter_p, all_to_all_p,
                         axis_index_p})
NAMED_AXIS.update(COLLECTIVES)
