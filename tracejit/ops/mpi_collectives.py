"""Collectives over a *process* axis: the primitives ``lax.psum`` & co. bind inside ``shard_map``.

Under ``shard_map(f, mesh, ...)`` (``tracejit/shard_map.py``) the mesh axis names processes, not
the examples of a ``vmap``: ``lax.psum(x, 'i')`` there binds :data:`mpi_psum_p`, whose impl is one
MPI call through mpi4py's buffer interface (``Allreduce`` in place, ``Allgather``,
``Reduce_scatter_block``, ``Alltoall``, ``Isend``/``Irecv`` for ``ppermute``) on contiguous NumPy
buffers: no pickling, and no copy beyond the one the operation needs (its result buffer, or a
transposed send buffer). Under ``jit`` the compiler runs these primitives as NumPy steps calling
the impl, so compiled programs make the same calls.

Every primitive carries the axis ``size`` (the number of processes) as a static parameter, so the
abstract values need no MPI. With ``size == 1`` (a shard_map over a one-device mesh, no
``mpiexec``) the impls compute locally and never import mpi4py. mpi4py is imported lazily, in the
impls only, so ``import tracejit`` never initialises MPI.

Before each collective the ranks exchange a small header (operation, dtype, shape) with one
``Allgather``; when they disagree every rank raises the same ValueError naming each rank's operand
instead of letting MPI hang or corrupt memory. ``CHECK_HEADERS = False`` skips it
(``tracejit.distributed.initialize(check_collectives=False)``).

Derivative and batching rules live above the transforms layer, in ``tracejit/lax/parallel.py``.

Examples
--------
>>> import numpy as np
>>> from tracejit.core.primitive import impl_rules
>>> impl_rules[mpi_psum_p](np.ones(2), axis_name="i", size=1)      # one process: the operand
[array([1., 1.])]
"""
from __future__ import annotations

import math
import sys
import zlib

import numpy as np

from tracejit.core import dtypes
from tracejit.core.avals import ShapedArray
from tracejit.core.primitive import NATIVE_CALL, Primitive, def_rules
from tracejit.ops.collectives import all_gather_aval, all_to_all_aval, psum_scatter_aval

__all__ = ["mpi_psum_p", "mpi_pmax_p", "mpi_pmin_p", "mpi_allgather_p", "mpi_reduce_scatter_p",
           "mpi_alltoall_p", "mpi_ppermute_p", "mpi_axis_index_p", "CHECK_HEADERS", "set_checks"]

# Exchange (operation, dtype, shape) headers before each collective (see the module docstring).
# Change it with set_checks(), which also tells compiled collectives (backends/cpu/native_calls.py).
CHECK_HEADERS = True
CHECK_HOOKS: list = []


def set_checks(on: bool) -> None:
    """Check before each collective that every rank makes the same one (default on), in NumPy steps
    and in compiled code alike (``tracejit.distributed.initialize(check_collectives=...)``)."""
    global CHECK_HEADERS
    CHECK_HEADERS = bool(on)
    for hook in CHECK_HOOKS:
        hook(CHECK_HEADERS)
_MAX_DIMS = 12


_GROUP_COMMS: dict = {}


def group_of(mesh_names: tuple, shape: tuple, names: tuple, ids: tuple | None = None):
    """The ``group`` parameter of a collective over mesh axes ``names`` of a mesh ``(mesh_names,
    shape)`` whose devices are the processes ``ids`` in mesh (row-major) order, None for every
    process in rank order: None when the collective spans every axis of more than one process of
    such a mesh (COMM_WORLD, world ranks are positions), else ``(mesh_names, shape, names)``, with
    ``ids`` appended for a mesh of some of the processes or not in rank order.

    Examples
    --------
    >>> group_of(("a", "b"), (2, 3), ("a", "b")), group_of(("a", "b"), (2, 1), ("a",))
    (None, None)
    >>> group_of(("a", "b"), (2, 3), ("b",))
    (('a', 'b'), (2, 3), ('b',))
    >>> group_of(("a",), (2,), ("a",), (1, 0))
    (('a',), (2,), ('a',), (1, 0))
    """
    live = tuple(n for n, k in zip(mesh_names, shape) if k > 1)
    if ids is None and tuple(n for n in names if shape[mesh_names.index(n)] > 1) == live:
        return None
    group = (tuple(mesh_names), tuple(shape), tuple(names))
    return group if ids is None else group + (tuple(int(i) for i in ids),)


def process_params(mesh: tuple, names: tuple) -> dict:
    """The parameters naming the processes of a collective over mesh axes ``names`` of ``mesh``
    (``(axis names, shape, device ids in mesh order or None for every process in rank order)``, as shard_map binds
    it): ``axis_name``, ``size`` (the product of their sizes) and, where not every process in rank
    order, ``group``.

    Examples
    --------
    >>> process_params((("a", "b"), (2, 3), None), ("b",))
    {'axis_name': 'b', 'size': 3, 'group': (('a', 'b'), (2, 3), ('b',))}
    """
    mesh_names, shape, ids = mesh
    params = dict(axis_name=names if len(names) > 1 else names[0],
                  size=math.prod(shape[mesh_names.index(n)] for n in names))
    group = group_of(mesh_names, shape, names, ids)
    if group is not None:
        params["group"] = group
    return params


def members_comm(ranks: tuple):
    """The communicator of the world ranks ``ranks``, ranked in that order (rank ``k`` is
    ``ranks[k]``): COMM_WORLD when they are every process in rank order, else
    ``MPI_Comm_create_group``, which only ``ranks`` call (``MPI_Comm_split`` would need every
    process), once per tuple. Only the processes in ``ranks`` may call it.

    Examples
    --------
    Under ``mpiexec -n 3``, process 2 is rank 0 of the communicator of processes (2, 0)
    (skipped here: it initialises MPI):

    >>> members_comm((2, 0)).Get_rank()          # doctest: +SKIP
    0
    """
    from mpi4py import MPI      # lazily: importing tracejit must not initialise MPI
    world = MPI.COMM_WORLD
    ranks = tuple(int(r) for r in ranks)
    if ranks == tuple(range(world.Get_size())):
        return world
    comm = _MEMBER_COMMS.get(ranks)
    if comm is None:
        if world.Get_rank() not in ranks:
            raise ValueError(f"process {world.Get_rank()} asked for the communicator of processes {list(ranks)}, "
                             "which it is not one of")
        # A tag per set of members keeps two creations that share a process apart (MPI's tag upper
        # bound is at least 32767).
        tag = zlib.crc32(repr(ranks).encode()) % 32768
        members = world.Get_group().Incl(list(ranks))
        comm = _MEMBER_COMMS[ranks] = world.Create_group(members, tag)
        members.Free()
    return comm


_MEMBER_COMMS: dict = {}


def _comm(size: int, group=None):
    """The communicator of a collective: MPI.COMM_WORLD (``group`` None: the mesh axes in mesh
    order of a mesh of every process in rank order, so world ranks are positions), checked to have
    ``size`` processes; or, for a ``group`` ``(mesh axis names, mesh shape, reduced names[, device
    ids in mesh order])``, the processes of the mesh that share this one's coordinates along the
    other axes, ranked by position along the reduced axes (row-major in the order named):
    ``MPI_Comm_split`` of COMM_WORLD (a mesh of every process) or of the mesh's own communicator
    (:func:`members_comm`, a mesh of some of them), once per group (the mesh's processes reach a
    group's first collective together, as SPMD programs do)."""
    from mpi4py import MPI      # lazily: importing tracejit must not initialise MPI
    world = MPI.COMM_WORLD
    if group is None:
        if world.Get_size() != size:
            raise RuntimeError(f"a collective over a process axis of size {size} ran in a program of "
                               f"{world.Get_size()} MPI processes without the mesh's device ids")
        return world
    comm = _GROUP_COMMS.get(group)
    if comm is None:
        names, shape, reduced = group[:3]
        ids = tuple(group[3]) if len(group) > 3 else tuple(range(math.prod(shape)))
        count, rank = world.Get_size(), world.Get_rank()
        if len(ids) != math.prod(shape) or len(set(ids)) != len(ids) or not all(0 <= i < count for i in ids):
            raise RuntimeError(f"a collective over mesh axes {reduced} of a mesh of shape {shape} holding processes "
                               f"{list(ids)}: a mesh must hold distinct processes of the {count}")
        if rank not in ids:
            raise ValueError(f"process {rank} made a collective over mesh axes {reduced} of a mesh of processes "
                             f"{list(ids)}, which it is not in")
        base = world if len(ids) == count else members_comm(ids)
        coords = dict(zip(names, np.unravel_index(ids.index(rank), shape)))
        others = [n for n in names if n not in reduced]
        color = int(np.ravel_multi_index([coords[n] for n in others], [shape[names.index(n)] for n in others])) \
            if others else 0
        key = int(np.ravel_multi_index([coords[n] for n in reduced], [shape[names.index(n)] for n in reduced]))
        comm = _GROUP_COMMS[group] = base.Split(color, key)
    if comm.Get_size() != size:
        raise RuntimeError(f"a collective over {size} processes ran on a group of {comm.Get_size()}")
    return comm


def _check_headers(comm, name: str, x: np.ndarray, params: dict) -> None:
    """Raise the same ValueError on every rank when the ranks' operands or operations differ."""
    if not CHECK_HEADERS:
        return
    header = np.zeros(3 + _MAX_DIMS, np.int64)
    header[0] = zlib.crc32(repr((name, sorted(params.items()))).encode())
    header[1] = zlib.crc32(x.dtype.str.encode())
    header[2] = x.ndim
    shape = x.shape if x.ndim <= _MAX_DIMS else (zlib.crc32(repr(x.shape).encode()),)
    header[3:3 + len(shape)] = shape
    table = np.empty((comm.Get_size(), header.size), np.int64)
    comm.Allgather(header, table)
    if (table == table[0]).all():
        return
    # Every rank holds the same table, so every rank raises the same error.
    rows = []
    for rank, row in enumerate(table):
        nd = int(row[2])
        shape = tuple(int(v) for v in row[3:3 + nd]) if nd <= _MAX_DIMS else "(rank > 12)"
        rows.append(f"rank {rank}: shape {shape}, dtype id {int(row[1]):#x}, operation id {int(row[0]):#x}")
    raise ValueError(f"{name}: the processes disagree on the operand or the operation (each rank must "
                     f"call the same collective on the same shape and dtype); this is rank "
                     f"{comm.Get_rank()}, operand {x.dtype}{list(x.shape)}:\n  " + "\n  ".join(rows))


def _start(name: str, x, size: int, params: dict, group=None):
    """The communicator (None for one process) and ``x`` as a C-contiguous NumPy array."""
    x = np.asarray(x, order="C")       # (np.ascontiguousarray would make a 0-d operand 1-d)
    if size == 1:
        return None, x
    comm = _comm(size, group)
    _check_headers(comm, name, x, params)
    return comm, x


def _mpi_op(op: str):
    from mpi4py import MPI
    return {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[op]


# --------------------------------------------------------------------------- reductions

def _same_aval(x, **params):
    return [x.strip_weak()]


# Result buffers of the allreduces, one per (shape, dtype), reused once nothing else refers to them:
# MPI is several times slower on a buffer it has never seen (1 MiB: ~1 ms vs ~0.15 ms with MPICH,
# its pages get faulted and registered), and a training loop reduces same-shaped gradients each step.
_POOL: dict = {}
_POOL_KEYS = 32


def _result_buffer(x: np.ndarray) -> np.ndarray:
    """A fresh-or-recycled copy of ``x`` that the allreduce may overwrite."""
    key = (x.shape, x.dtype.str)
    buf = _POOL.get(key)
    # 3 references: the pool's, ``buf`` here, getrefcount's argument. Any array, view, memoryview or
    # tracejit.Array still using the buffer holds one more, so a live result is never overwritten.
    if buf is not None and sys.getrefcount(buf) == 3 and buf.base is None:
        buf.flags.writeable = True
        np.copyto(buf, x)
        return buf
    buf = np.array(x, copy=True)
    _POOL.pop(key, None)
    _POOL[key] = buf
    while len(_POOL) > _POOL_KEYS:
        del _POOL[next(iter(_POOL))]
    return buf


def _allreduce(op):
    def impl(x, *, axis_name, size, group=None):
        comm, x = _start(f"p{op}", x, size, {"axis_name": axis_name}, group)
        if comm is None:
            return [np.array(x, copy=True)]
        out = _result_buffer(x)             # the result buffer; the input stays untouched
        from mpi4py import MPI
        comm.Allreduce(MPI.IN_PLACE, out, op=_mpi_op(op))
        return [out]
    return impl


mpi_psum_p = def_rules(Primitive("mpi_psum"), abstract_eval=_same_aval, impl=_allreduce("sum"))
mpi_pmax_p = def_rules(Primitive("mpi_pmax"), abstract_eval=_same_aval, impl=_allreduce("max"))
mpi_pmin_p = def_rules(Primitive("mpi_pmin"), abstract_eval=_same_aval, impl=_allreduce("min"))


# --------------------------------------------------------------------------- all_gather

def _allgather_abstract(x, *, axis_name, size, axis, tiled, group=None):
    return [all_gather_aval(x, size, axis, tiled)]


def _allgather_impl(x, *, axis_name, size, axis, tiled, group=None):
    comm, x = _start("all_gather", x, size, {"axis_name": axis_name, "axis": axis, "tiled": tiled}, group)
    stacked = np.empty((size,) + x.shape, x.dtype)      # rank r's block at [r]
    if comm is None:
        stacked[0] = x
    else:
        comm.Allgather(x, stacked)
    out = np.moveaxis(stacked, 0, axis)
    if tiled:
        s = out.shape
        out = out.reshape(s[:axis] + (s[axis] * s[axis + 1],) + s[axis + 2:])
    return [np.ascontiguousarray(out)]


mpi_allgather_p = def_rules(Primitive("mpi_all_gather"), abstract_eval=_allgather_abstract,
                            impl=_allgather_impl)


# --------------------------------------------------------------------------- psum_scatter

def _reduce_scatter_abstract(x, *, axis_name, size, scatter_dimension, tiled, group=None):
    return [psum_scatter_aval(x, size, scatter_dimension, tiled)]


def _reduce_scatter_impl(x, *, axis_name, size, scatter_dimension, tiled, group=None):
    d = scatter_dimension
    comm, x = _start("psum_scatter", x, size, {"axis_name": axis_name, "d": d, "tiled": tiled}, group)
    block = x.shape[d] // size
    # Rank r's block becomes row r of a (size, ...) send buffer (a copy only when d > 0).
    parts = x.reshape(x.shape[:d] + (size, block) + x.shape[d + 1:])
    send = np.ascontiguousarray(np.moveaxis(parts, d, 0))
    recv = np.empty(send.shape[1:], x.dtype)
    if comm is None:
        recv[...] = send[0]
    else:
        comm.Reduce_scatter_block(send, recv, op=_mpi_op("sum"))
    return [recv if tiled else recv.reshape(recv.shape[:d] + recv.shape[d + 1:])]


mpi_reduce_scatter_p = def_rules(Primitive("mpi_psum_scatter"), abstract_eval=_reduce_scatter_abstract,
                                 impl=_reduce_scatter_impl)


# --------------------------------------------------------------------------- all_to_all

def _alltoall_abstract(x, *, axis_name, size, split_axis, concat_axis, tiled, group=None):
    return [all_to_all_aval(x, size, split_axis, concat_axis, tiled)]


def _alltoall_impl(x, *, axis_name, size, split_axis, concat_axis, tiled, group=None):
    comm, x = _start("all_to_all", x, size, {"axis_name": axis_name, "split": split_axis,
                                             "concat": concat_axis, "tiled": tiled}, group)
    s = split_axis
    parts = x.reshape(x.shape[:s] + (size, x.shape[s] // size) + x.shape[s + 1:])
    send = np.ascontiguousarray(np.moveaxis(parts, s, 0))      # chunk for rank r at [r]
    recv = np.empty_like(send)                                 # chunk from rank r at [r]
    if comm is None:
        recv[...] = send
    else:
        comm.Alltoall(send, recv)
    if not tiled:
        chunks = recv.reshape(recv.shape[:1 + s] + recv.shape[2 + s:])    # drop the split axis (size 1)
        return [np.ascontiguousarray(np.moveaxis(chunks, 0, concat_axis))]
    out = np.moveaxis(recv, 0, concat_axis)          # (..., size, chunk, ...): concatenated in rank order
    sh = out.shape
    return [np.ascontiguousarray(out.reshape(sh[:concat_axis] + (sh[concat_axis] * sh[concat_axis + 1],)
                                             + sh[concat_axis + 2:]))]


mpi_alltoall_p = def_rules(Primitive("mpi_all_to_all"), abstract_eval=_alltoall_abstract, impl=_alltoall_impl)


# --------------------------------------------------------------------------- ppermute

_PPERMUTE_TAG = 17


def _ppermute_impl(x, *, axis_name, size, perm, group=None):
    comm, x = _start("ppermute", x, size, {"axis_name": axis_name, "perm": perm}, group)
    out = np.zeros_like(x)          # ranks nobody sends to get zeros, as in JAX
    if comm is None:
        if (0, 0) in perm:
            out[...] = x
        return [out]
    rank = comm.Get_rank()
    requests = []
    for src, dst in perm:
        if dst == rank and src == rank:
            out[...] = x
        elif dst == rank:
            requests.append(comm.Irecv(out, source=src, tag=_PPERMUTE_TAG))
        elif src == rank:
            requests.append(comm.Isend(x, dest=dst, tag=_PPERMUTE_TAG))
    if requests:
        from mpi4py import MPI
        MPI.Request.Waitall(requests)
    return [out]


mpi_ppermute_p = def_rules(Primitive("mpi_ppermute"), abstract_eval=_same_aval, impl=_ppermute_impl)


# --------------------------------------------------------------------------- axis_index

def _axis_index_impl(*, axis_name, size, group=None):
    # Read at run time (not baked into the program as a constant), so one compiled program, even
    # one from the persistent cache another rank wrote, serves every rank.
    rank = 0 if size == 1 else _comm(size, group).Get_rank()
    return [np.asarray(rank, np.int32)]


mpi_axis_index_p = def_rules(Primitive("mpi_axis_index"),
                             abstract_eval=lambda *, axis_name, size, group=None: [ShapedArray((), dtypes.int32)],
                             impl=_axis_index_impl)

# --------------------------------------------------------------------------- native calls

# dtypes and element counts the compiled code passes to MPI itself (``int`` counts).
_NATIVE_DTYPES = {dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64}
_MAX_COUNT = 2 ** 31 - 1


def mpich_abi() -> bool:
    """Whether the MPI mpi4py runs on has MPICH's ABI (integer handles: MPICH, Intel MPI, MVAPICH),
    the one compiled code calls directly (``backends/cpu/native_calls.py``)."""
    from mpi4py import MPI
    return all(MPI._sizeof(t) == 4 for t in (MPI.Comm, MPI.Datatype, MPI.Op))


def native_operands_ok(eqn) -> bool:
    """Whether compiled code can make this collective's MPI call on its buffers: one process (a
    copy), or MPICH's ABI, with a native dtype and an ``int`` element count (on COMM_WORLD, or on a
    group's sub-communicator, which the code looks up through ``backends/cpu/native_calls.py``)."""
    avals = [a.aval for a in eqn.inputs] + [v.aval for v in eqn.outputs]
    if any(a.dtype not in _NATIVE_DTYPES or a.size > _MAX_COUNT for a in avals):
        return False
    return eqn.params["size"] == 1 or mpich_abi()


def along_other_axes(eqn) -> bool:
    """Whether a gather, scatter or all-to-all works along axes other than 0: its rank-major blocks
    are not contiguous (``compiler/passes/native_collective_axes.py`` moves the axis to the front)."""
    p = eqn.primitive
    return (p is mpi_allgather_p and eqn.params["axis"] != 0
            or p is mpi_reduce_scatter_p and eqn.params["scatter_dimension"] != 0
            or p is mpi_alltoall_p and (eqn.params["split_axis"], eqn.params["concat_axis"]) != (0, 0))


def _native_call_ok(eqn) -> bool:
    # Rank-major blocks along axis 0 are contiguous: MPI's buffers are the operand and the result.
    return not along_other_axes(eqn) and native_operands_ok(eqn)


for _p in (mpi_psum_p, mpi_pmax_p, mpi_pmin_p, mpi_allgather_p, mpi_reduce_scatter_p, mpi_alltoall_p,
           mpi_ppermute_p, mpi_axis_index_p):
    NATIVE_CALL[_p] = _native_call_ok

MPI_COLLECTIVES = frozenset({mpi_psum_p, mpi_pmax_p, mpi_pmin_p, mpi_allgather_p, mpi_reduce_scatter_p,
                             mpi_alltoall_p, mpi_ppermute_p, mpi_axis_index_p})
