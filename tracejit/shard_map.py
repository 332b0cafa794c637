"""``shard_map``: run a function on each process's block of its inputs (``jax.shard_map``).

``shard_map(f, mesh=mesh, in_specs=P('i'), out_specs=P())`` over a mesh of the MPI processes
(``tracejit.make_mesh((tracejit.process_count(),), ('i',))``) calls ``f`` once per process on that
process's block: ``P('i')`` splits dimension 0 of an input over the processes, ``P()`` hands every
process the whole value. Inputs are either global values (the same array on every process, as JAX
treats a host NumPy array) or global arrays from ``make_array_from_process_local_data`` /
``device_put(x, NamedSharding(...))`` whose sharding matches the in_spec. Inside ``f`` the mesh
axis is a *process* axis: ``lax.psum(x, 'i')`` & co. are MPI collectives
(``ops/mpi_collectives.py``), eagerly or inside ``jit`` (either ``shard_map(jit(f))`` or
``jit(shard_map(f))``).

Outputs: ``P()`` returns ``f``'s value, which must be the same on every process of the mesh (as JAX assumes;
it is not checked); a split spec returns a :class:`tracejit.sharding.GlobalArray` whose local block
is this process's output. With one process (no mpiexec) and a one-device mesh, ``f`` runs on the
whole arrays.

Semantics to know: inside ``f`` (``shard_map(grad(f))``) ``psum``'s transpose is ``psum`` of the
cotangent (JAX's ``check_rep=False`` semantics, the same as under ``vmap(axis_name=...)``). Taken
outside (``grad(shard_map(f))``), derivatives are those of the global function, as JAX's: the
cotangent of an output replicated over some mesh axes (not named in its spec) is divided by the
number of processes along them, and that of an input replicated over some axes summed over them.
``check_rep``/``check_vma`` are accepted but replication is not verified. Meshes may have several
axes (``make_mesh((2, 2), ('data', 'model'))``); a collective over some of them runs on the MPI
sub-communicator of the processes that share the other coordinates. A dimension
may be split over several axes (``P(('data', 'model'))``: blocks row-major over them). A mesh
may hold the processes in any order (``Mesh(np.array(devices())[::-1], ('i',))``): a process's
position in it is its axis index, and its collectives run on a sub-communicator ranked by
position. A mesh may hold only some of the processes (``Mesh(np.array(devices())[[0, 2]],
('i',))``): only they call a ``shard_map`` over it (another process gets a ValueError naming its
rank and the mesh's processes), and its collectives run on the communicator of just those
processes (``MPI_Comm_create_group``). A global array passed with another sharding is resharded
first; that needs only the mesh's processes, so the array's own mesh must lie within this one
(else ValueError: ``device_put`` it on the processes of both meshes first). Not implemented
(NotImplementedError): ``auto``.

Examples
--------
>>> import numpy as np, tracejit
>>> from tracejit import lax
>>> from tracejit.sharding import P
>>> mesh = tracejit.make_mesh((tracejit.process_count(),), ("i",))
>>> total = tracejit.shard_map(lambda x: lax.psum(x.sum(), "i"), mesh=mesh, in_specs=P("i"), out_specs=P())
>>> total(np.arange(6.0))
Array(15.)
"""
from __future__ import annotations

import contextlib
import functools
import math

import numpy as np

from tracejit.array import as_array_result
from tracejit.core import dtypes
from tracejit.ops import mpi_collectives as mpi
from tracejit.transforms.linear_call import linear_call
from tracejit.core.named_axes import axis_frame
from tracejit.core.pytree import broadcast_prefix, tree_flatten, tree_unflatten
from tracejit.device_types import _PROCESS
from tracejit.sharding import GlobalArray, Mesh, NamedSharding, PartitionSpec, _block_position, _blocks, _split_dims

__all__ = ["shard_map"]


def _is_spec_leaf(x):
    return x is None or isinstance(x, PartitionSpec)


def _check_mesh(mesh) -> None:
    """TypeError / ValueError unless ``mesh`` is a Mesh of distinct processes (all of them or
    some, in any order)."""
    if not isinstance(mesh, Mesh):
        raise TypeError(f"shard_map: mesh must be a tracejit.sharding.Mesh, got {type(mesh).__name__}")
    ids = [d.id for d in mesh.devices.flat]
    count = _PROCESS[1]
    if len(set(ids)) != len(ids) or not all(0 <= i < count for i in ids):
        raise ValueError(f"shard_map: the mesh devices {ids} must be distinct processes of the {count}")


def _position(mesh) -> dict:
    """{axis name: this process's position along it} (row-major over the mesh's shape);
    ValueError on a process the mesh does not hold."""
    ids = [d.id for d in mesh.devices.flat]
    rank = _PROCESS[0]
    if rank not in ids:
        raise ValueError(f"shard_map: process {rank} called a shard_map over a mesh of processes {ids}, which it is "
                         "not in: only the mesh's processes call it")
    return dict(zip(mesh.axis_names, (int(i) for i in np.unravel_index(ids.index(rank), mesh.devices.shape))))


def _local_block(x, spec, mesh, coords):
    """This process's block of the input leaf ``x`` under ``spec``."""
    if spec is None:
        raise ValueError("shard_map: in_specs entries must be PartitionSpecs (P() to replicate)")
    if isinstance(x, GlobalArray):
        # Another sharding is resharded first (blocks move between processes, as device_put does):
        # only this mesh's processes take part, so x's must be among them.
        outside = {d.id for d in x.sharding.mesh.devices.flat} - {d.id for d in mesh.devices.flat}
        if outside and x.sharding != NamedSharding(mesh, spec):
            raise ValueError(f"shard_map: a global array on a mesh of processes {sorted(outside)} outside the "
                             f"shard_map's mesh ({[d.id for d in mesh.devices.flat]}) would need them to reshard "
                             "it: device_put it to the in_spec's sharding on the processes of both meshes first")
        moved = NamedSharding(mesh, spec)._put_leaf(x)
        return moved.addressable_data(0) if isinstance(moved, GlobalArray) else moved
    shape = np.shape(x)
    index = [slice(None)] * len(shape)
    for dim, names in _split_dims(spec, mesh, len(shape)).items():
        size = _blocks(mesh, names)
        if shape[dim] % size:
            raise ValueError(f"shard_map: dimension {dim} of an input of shape {tuple(shape)} is not divisible "
                             f"by the {size} processes of mesh axes {names} ({spec})")
        block, at = shape[dim] // size, _block_position(mesh, names, coords)
        index[dim] = slice(at * block, (at + 1) * block)
    return x[tuple(index)] if any(i != slice(None) for i in index) else x


def _output(value, spec, mesh, sizes):
    """The global result of this process's output leaf ``value`` under ``spec`` (``sizes``: the mesh
    axes' numbers of processes, all 1 for a mesh of this process alone)."""
    if spec is None:
        raise ValueError("shard_map: out_specs entries must be PartitionSpecs (P() for a replicated value)")
    if isinstance(value, (np.ndarray, np.generic)):
        value = as_array_result(np.asarray(value))
    shape = tuple(np.shape(value))
    dims = {d: math.prod(sizes[n] for n in names) for d, names in _split_dims(spec, mesh, len(shape)).items()}
    if all(k == 1 for k in dims.values()):
        return value
    global_shape = tuple(s * dims.get(d, 1) for d, s in enumerate(shape))
    return GlobalArray(value, global_shape, NamedSharding(mesh, spec))


def shard_map(f=None, mesh=None, in_specs=None, out_specs=None, check_rep=None, *, check_vma=None,
              axis_names=None, auto=None):
    """Map ``f`` over the processes of ``mesh``: each runs ``f`` on its block (``jax.shard_map``).

    Parameters
    ----------
    f : callable
        The per-process function; ``lax`` collectives over the mesh axis name are MPI collectives.
        Omitted, ``shard_map(mesh=..., ...)`` returns a decorator.
    mesh : Mesh
        A mesh of every process (``make_mesh((process_count(),), ('i',))``, or of more axes:
        ``make_mesh((2, process_count() // 2), ('data', 'model'))``, in any order), or of some of
        them (``Mesh(np.array(devices())[[0, 2]], ('i',))``; only they call the result: another
        process gets a ValueError). Collectives over some of its axes, or over a mesh not of
        every process in rank order, run on MPI sub-communicators, over all axes of a rank-order
        mesh of every process on COMM_WORLD (native calls under ``jit`` either way).
    in_specs, out_specs : PartitionSpec or pytree prefix of PartitionSpecs
        How each input is split (``P('i')``: dimension 0 over the processes; ``P()``: the whole value
        on each) and how each output is assembled (``P()``: the same value on every process).
    check_rep, check_vma : bool, optional
        Accepted for JAX compatibility; replication of ``P()`` outputs is not verified.
    axis_names, auto :
        Partial manual meshes; only the default (every mesh axis manual) is implemented.

    Returns
    -------
    callable
        ``f`` on global values; outputs per ``out_specs`` (Arrays, or GlobalArrays for split outputs
        over several processes).

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit import lax
    >>> from tracejit.sharding import P
    >>> mesh = tracejit.make_mesh((tracejit.process_count(),), ("i",))
    >>> f = tracejit.shard_map(lambda x: x * (lax.axis_index("i") + 1), mesh=mesh, in_specs=P("i"),
    ...                        out_specs=P("i"))
    >>> f(np.ones(2))
    Array([1., 1.])
    """
    if f is None:
        return lambda fun: shard_map(fun, mesh, in_specs, out_specs, check_rep, check_vma=check_vma,
                                     axis_names=axis_names, auto=auto)
    if mesh is None:
        raise NotImplementedError("shard_map without mesh= (a mesh from the context) is not implemented")
    if in_specs is None or out_specs is None:
        raise NotImplementedError("shard_map: in_specs and out_specs must be given (inferring them is not "
                                  "implemented)")
    if auto or (axis_names is not None and set(axis_names) != set(mesh.axis_names)):
        raise NotImplementedError("shard_map over part of the mesh axes (auto / axis_names) is not implemented")
    _check_mesh(mesh)
    alone = len(mesh.local_devices) == mesh.size        # this process's device alone: sizes 1
    sizes = {n: 1 if alone else k for n, k in mesh.shape.items()}
    ids = tuple(int(d.id) for d in mesh.devices.flat)
    # The collectives' group carries the device ids unless the mesh is every process in rank
    # order (COMM_WORLD): a mesh of processes (0, 1) out of 3 is not the world.
    frame_mesh = (tuple(mesh.axis_names), tuple(sizes[n] for n in mesh.axis_names),
                  None if alone or ids == tuple(range(_PROCESS[1])) else ids)

    @functools.wraps(f)
    def mapped(*args):
        coords = _position(mesh)       # (at the call: a process outside the mesh may define it)
        # in_specs is a pytree prefix of the argument tuple (one P stands for every argument).
        leaves, tree = tree_flatten(args, is_leaf=lambda x: isinstance(x, GlobalArray))
        leaf_specs = broadcast_prefix(in_specs, args, is_leaf=_is_spec_leaf)
        local = [_local_block(x, s, mesh, coords) for x, s in zip(leaves, leaf_specs)]
        local = [_replicated_input(x, _unmentioned(s, mesh, sizes), frame_mesh) for x, s in zip(local, leaf_specs)]
        with contextlib.ExitStack() as frames:
            for name in mesh.axis_names:
                frames.enter_context(axis_frame(name, sizes[name], kind="process", mesh=frame_mesh))
            out = f(*tree_unflatten(tree, local))
        out_leaves, out_tree = tree_flatten(out)
        out_leaf_specs = broadcast_prefix(out_specs, out, is_leaf=_is_spec_leaf)
        out_leaves = [_replicated_output(v, math.prod(sizes[n] for n in _unmentioned(s, mesh, sizes)))
                      for v, s in zip(out_leaves, out_leaf_specs)]
        return tree_unflatten(out_tree, [_output(v, s, mesh, sizes) for v, s in zip(out_leaves, out_leaf_specs)])
    return mapped


# Derivatives taken outside shard_map (grad(shard_map(f))), as JAX's shard_map transpose with
# check_rep=False: the cotangent of a replicated (P()) output is divided by the number of processes
# holding it (each process's backward pass starts from it, and psum's transpose sums them again),
# and the cotangent of a replicated input is summed over the processes (each used the same value).
# Forward values and tangents pass unchanged (linear_call: the identity, with that transpose).

def _unmentioned(spec, mesh, sizes) -> tuple:
    """The mesh axes (of more than one process) a value is replicated over: those ``spec`` does not name."""
    named = {n for names in _split_dims(spec, mesh).values() for n in names} if spec is not None else set()
    return tuple(n for n in mesh.axis_names if n not in named and sizes[n] > 1)


def _replicated_input(x, axes, frame_mesh):
    if not axes:
        return x
    params = mpi.process_params(frame_mesh, axes)

    def total(_, ct):
        return mpi.mpi_psum_p.bind(ct, **params)
    return linear_call(lambda _, v: v, total, (), x)


def _replicated_output(y, copies):
    if copies == 1 or not dtypes.is_inexact(np.dtype(getattr(y, "dtype", np.float64))):
        return y
    return linear_call(lambda _, v: v, lambda _, ct: ct / copies, (), y)
