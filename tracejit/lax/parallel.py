"""``lax``'s collectives over named axes (``jax.lax.psum`` and friends), for ``vmap(axis_name=...)``.

Under ``vmap(f, axis_name='i')`` each example of the batch plays one device of JAX's SPMD model:
``psum(x, 'i')`` is the sum over all examples (the same for each), ``axis_index('i')`` is the
example's position, and so on (``ops/collectives.py``, ``transforms/collective_rules.py``). Outside
a ``vmap`` binding the name they raise JAX's ``NameError: unbound axis name``. ``axis_index_groups``
is not supported.

Inside ``shard_map`` (``tracejit/shard_map.py``) the mesh axis is a *process* axis: when the innermost
frame binding the name is one, these functions bind the MPI primitives of
``ops/mpi_collectives.py`` instead (one MPI call each, eagerly or as a NumPy step of a jitted
program), whose derivative and batching rules are registered at the end of this file.
"""
from __future__ import annotations

import math

from tracejit.core.named_axes import axis_names, bound_axis_size, bound_frame
from tracejit.core.primitive import batching_rules
from tracejit.core.pytree import tree_map
from tracejit.core.trace import bind
from tracejit.ops import mpi_collectives as mpi
from tracejit.ops.collectives import (all_gather_p, all_to_all_p, axis_index_p, pmax_p, pmin_p, ppermute_p, psum_p,
                                      psum_scatter_p)
from tracejit.ops.operands import concrete_operand
from tracejit.ops.reductions import reduce_prims
from tracejit.transforms.collective_rules import carry_batch
from tracejit.transforms.ad import def_jvp, def_rules_by_function
from tracejit.transforms.ad_rules_structural import _def_linear

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "all_to_all", "ppermute", "pshuffle",
           "axis_index", "axis_size"]


def _no_groups(axis_index_groups, name):
    if axis_index_groups is not None:
        raise NotImplementedError(f"{name}: axis_index_groups is not supported")


def _name(axis_name):
    names = axis_names(axis_name)
    return names if len(names) > 1 else names[0]


def _process_axis(axis_name):
    """The number of processes a collective over ``axis_name`` spans when it names shard_map mesh
    axes (the product of their sizes), else None (a vmap's axis)."""
    names = axis_names(axis_name)
    frames = [bound_frame(n) for n in names]        # NameError for an unbound name, as JAX raises
    kinds = {f.kind for f in frames}
    if "process" not in kinds:
        return None
    if len(kinds) > 1:
        raise NotImplementedError(f"a collective over both vmap and shard_map axes {names} is not implemented")
    return math.prod(f.size for f in frames)


def _process_params(axis_name) -> dict:
    """``axis_name``, ``size`` and (over part of a multi-axis mesh) ``group`` of an MPI collective
    over shard_map axes ``axis_name``."""
    names = axis_names(axis_name)
    return mpi.process_params(bound_frame(names[0]).mesh, names)


def _mpi_bind(prim, v, axis_name, **params):
    return prim.bind(concrete_operand(v), **_process_params(axis_name), **params)


def psum(x, axis_name, *, axis_index_groups=None):
    """Sum of ``x`` (a pytree) over the named axis: every example gets the total.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit import lax
    >>> tracejit.vmap(lambda v: v / lax.psum(v, "i"), axis_name="i")(np.array([1.0, 3.0]))
    Array([0.25, 0.75])
    """
    _no_groups(axis_index_groups, "psum")
    size = _process_axis(axis_name)
    if size is not None:
        return tree_map(lambda v: _mpi_bind(mpi.mpi_psum_p, v, axis_name), x)
    return tree_map(lambda v: psum_p.bind(concrete_operand(v), axis_name=_name(axis_name)), x)


def pmean(x, axis_name, *, axis_index_groups=None):
    """Mean of ``x`` (a pytree) over the named axis (``psum / axis size``).

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit import lax
    >>> tracejit.vmap(lambda v: lax.pmean(v, "i"), axis_name="i")(np.array([1.0, 3.0]))
    Array([2., 2.])
    """
    _no_groups(axis_index_groups, "pmean")
    n = axis_size(axis_name)
    return tree_map(lambda v: v / n, psum(x, axis_name))


def pmax(x, axis_name, *, axis_index_groups=None):
    """Maximum of ``x`` (a pytree) over the named axis."""
    _no_groups(axis_index_groups, "pmax")
    size = _process_axis(axis_name)
    if size is not None:
        return tree_map(lambda v: _mpi_bind(mpi.mpi_pmax_p, v, axis_name), x)
    return tree_map(lambda v: pmax_p.bind(concrete_operand(v), axis_name=_name(axis_name)), x)


def pmin(x, axis_name, *, axis_index_groups=None):
    """Minimum of ``x`` (a pytree) over the named axis."""
    _no_groups(axis_index_groups, "pmin")
    size = _process_axis(axis_name)
    if size is not None:
        return tree_map(lambda v: _mpi_bind(mpi.mpi_pmin_p, v, axis_name), x)
    return tree_map(lambda v: pmin_p.bind(concrete_operand(v), axis_name=_name(axis_name)), x)


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):
    """Every example's ``x`` stacked along a new ``axis`` (concatenated along ``axis`` if ``tiled``).

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit import lax
    >>> tracejit.vmap(lambda v: lax.all_gather(v, "i"), axis_name="i")(np.array([1.0, 2.0]))
    Array([[1., 2.],
           [1., 2.]])
    """
    _no_groups(axis_index_groups, "all_gather")
    size = _process_axis(axis_name)

    def one(v):
        v = concrete_operand(v)
        ndim = getattr(v, "ndim", 0)
        if size is not None:
            return _mpi_bind(mpi.mpi_allgather_p, v, axis_name,
                             axis=int(axis) % (ndim + (0 if tiled else 1)), tiled=bool(tiled))
        return all_gather_p.bind(v, axis_name=_name(axis_name), axis=int(axis) % (ndim + (0 if tiled else 1)),
                                 tiled=bool(tiled))
    return tree_map(one, x)


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    """The sum over the named axis, scattered: example ``i`` gets block ``i`` along ``scatter_dimension``."""
    _no_groups(axis_index_groups, "psum_scatter")
    size = _process_axis(axis_name)
    if size is not None:
        return tree_map(lambda v: _mpi_bind(mpi.mpi_reduce_scatter_p, v, axis_name,
                                            scatter_dimension=int(scatter_dimension), tiled=bool(tiled)), x)
    return tree_map(lambda v: psum_scatter_p.bind(concrete_operand(v), axis_name=_name(axis_name),
                                                  scatter_dimension=int(scatter_dimension), tiled=bool(tiled)), x)


def ppermute(x, axis_name, perm):
    """Send example ``src``'s ``x`` to example ``dst`` for each ``(src, dst)`` in ``perm``; examples
    nobody sends to get zeros.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit import lax
    >>> shift = lambda v: lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 0)])
    >>> tracejit.vmap(shift, axis_name="i")(np.array([1.0, 2.0, 3.0]))
    Array([3., 1., 2.])
    """
    perm = tuple((int(s), int(d)) for s, d in perm)
    srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"ppermute sources and destinations must be unique, got perm={perm}")
    size = _process_axis(axis_name)
    if size is not None:
        if any(not (0 <= i < size) for i in srcs + dsts):
            raise ValueError(f"ppermute: perm={perm} names a position outside the axis of size {size}")
        return tree_map(lambda v: _mpi_bind(mpi.mpi_ppermute_p, v, axis_name, perm=perm), x)
    return tree_map(lambda v: ppermute_p.bind(concrete_operand(v), axis_name=_name(axis_name), perm=perm), x)


def pshuffle(x, axis_name, perm):
    """``out[i] = x[perm[i]]`` over the named axis (a ``ppermute``)."""
    return ppermute(x, axis_name, [(int(p), i) for i, p in enumerate(perm)])


def axis_index(axis_name):
    """This example's position along the named axis (int32).

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit import lax
    >>> tracejit.vmap(lambda v: v * lax.axis_index("i"), axis_name="i")(np.ones(3))
    Array([0., 1., 2.])
    """
    size = _process_axis(axis_name)
    if size is not None:
        return mpi.mpi_axis_index_p.bind(**_process_params(axis_name))
    return axis_index_p.bind(axis_name=_name(axis_name))


def axis_size(axis_name):
    """The size of the named axis (a Python int; the product for several names)."""
    size = 1
    for name in axis_names(axis_name):
        size *= bound_axis_size(name)
    return size


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
    """Split ``x`` (a pytree) along ``split_axis`` into one chunk per position of the named axis, send
    chunk ``j`` to position ``j``, and concatenate the received chunks along ``concat_axis``.

    Without ``tiled`` the split dimension must equal the axis size; it is removed and a new axis of
    that size is inserted at ``concat_axis`` (JAX's shapes). Over a ``vmap(axis_name=...)`` axis the
    examples exchange chunks; over a ``shard_map`` process axis, the processes (MPI_Alltoall).

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit import lax
    >>> from tracejit.shard_map import shard_map
    >>> from tracejit.sharding import P, make_mesh
    >>> mesh = make_mesh((tracejit.process_count(),), ("i",))
    >>> f = shard_map(lambda v: lax.all_to_all(v, "i", 0, 0, tiled=True), mesh=mesh, in_specs=P(), out_specs=P())
    >>> f(np.arange(4.0))              # one process: the identity
    Array([0., 1., 2., 3.])
    """
    _no_groups(axis_index_groups, "all_to_all")
    size = _process_axis(axis_name)

    def one(v):
        v = concrete_operand(v)
        ndim = getattr(v, "ndim", 0)
        axes = dict(split_axis=int(split_axis) % ndim, concat_axis=int(concat_axis) % ndim, tiled=bool(tiled))
        if size is not None:
            return _mpi_bind(mpi.mpi_alltoall_p, v, axis_name, **axes)
        return all_to_all_p.bind(v, axis_name=_name(axis_name), **axes)
    return tree_map(one, x)


# --------------------------------------------------------------------------- rules of the MPI primitives
# Derivatives follow JAX's (and this file's vmap collectives'): psum transposes to psum of the
# cotangent, all_gather to psum_scatter and back, all_to_all to the swapped all_to_all, ppermute to
# the inverse permutation; pmax/pmin differentiate as the max/min of an all_gather (the selected rank).

# (``common``: axis_name, size and, over part of a multi-axis mesh, group.)
_def_linear(mpi.mpi_psum_p, lambda ct, x, **common: mpi.mpi_psum_p.bind(ct, **common))
_def_linear(mpi.mpi_allgather_p, lambda ct, x, *, axis, tiled, **common: mpi.mpi_reduce_scatter_p.bind(
    ct, scatter_dimension=axis, tiled=tiled, **common))
_def_linear(mpi.mpi_reduce_scatter_p, lambda ct, x, *, scatter_dimension, tiled, **common:
            mpi.mpi_allgather_p.bind(ct, axis=scatter_dimension, tiled=tiled, **common))
_def_linear(mpi.mpi_alltoall_p, lambda ct, x, *, split_axis, concat_axis, tiled, **common:
            mpi.mpi_alltoall_p.bind(ct, split_axis=concat_axis, concat_axis=split_axis, tiled=tiled, **common))
_def_linear(mpi.mpi_ppermute_p, lambda ct, x, *, perm, **common: mpi.mpi_ppermute_p.bind(
    ct, perm=tuple((dst, src) for src, dst in perm), **common))


def _extremum_via_gather(reduce_name):
    def fn(x, **common):
        gathered = mpi.mpi_allgather_p.bind(x, axis=0, tiled=False, **common)
        return [reduce_prims[reduce_name].bind(gathered, axes=(0,))]
    return fn


def_rules_by_function(mpi.mpi_pmax_p, _extremum_via_gather("reduce_max"))
def_rules_by_function(mpi.mpi_pmin_p, _extremum_via_gather("reduce_min"))
def_jvp(mpi.mpi_axis_index_p, lambda primals, tangents, **params: (
    bind(mpi.mpi_axis_index_p, [], params), [None]))


# A vmap inside a shard_map: the batch axis rides along in front of the per-process operand (the
# reductions and ppermute are elementwise across ranks; the others shift their axis parameters).
for _prim in (mpi.mpi_psum_p, mpi.mpi_pmax_p, mpi.mpi_pmin_p, mpi.mpi_ppermute_p):
    batching_rules[_prim] = carry_batch(_prim)
batching_rules[mpi.mpi_allgather_p] = carry_batch(mpi.mpi_allgather_p, "axis")
batching_rules[mpi.mpi_reduce_scatter_p] = carry_batch(mpi.mpi_reduce_scatter_p, "scatter_dimension")
batching_rules[mpi.mpi_alltoall_p] = carry_batch(mpi.mpi_alltoall_p, "split_axis", "concat_axis")
