"""Meshes, partition specs and global arrays over processes (``jax.sharding``, ``jax.make_mesh``).

tracejit's devices are one CPU per process (``tracejit.devices()``, after
``tracejit.distributed.initialize()`` under ``mpiexec``). A :class:`Mesh` arranges them along named
axes (distinct processes in any order, row-major: every process, or only some of them); a
:class:`PartitionSpec` (``P``) says which array dimension is split over which mesh axis; a
:class:`NamedSharding` pairs them. A *global array* (:class:`GlobalArray`) is an array split over the
processes: each holds its block (``addressable_data(0)``, ``addressable_shards``), and, as in JAX,
``np.asarray`` of one that spans other processes raises. A process outside the sharding's mesh
holds a global array without a block (``addressable_shards == []``), as JAX's arrays with no
addressable devices: ``device_put`` gives it one, and resharding to a mesh it is in uses it.
Replicated values and one-process programs are plain ``tracejit.Array`` s.

Resharding (``device_put`` of a global array to another sharding, ``lax.with_sharding_constraint``)
moves blocks between the processes of both meshes (``ops/mpi_reshard.py``), eagerly or, inside
``jit``, as the primitive ``mpi_reshard`` (differentiable and batchable).

Examples
--------
>>> import numpy as np, tracejit
>>> from tracejit.sharding import Mesh, NamedSharding, P
>>> mesh = Mesh(np.array(tracejit.devices()), ("i",))
>>> mesh, P("i"), NamedSharding(mesh, P("i"))
(Mesh('i': 1), PartitionSpec('i',), NamedSharding(mesh=Mesh('i': 1), spec=PartitionSpec('i',)))
"""
from __future__ import annotations

import math

import numpy as np

from tracejit.array import as_array_result
from tracejit.core.pytree import register_pytree_node
from tracejit.core.trace import is_eager
from tracejit.core.tracer import Tracer
from tracejit.device_api import devices as _devices
from tracejit.device_types import _PROCESS, Device, Shard
from tracejit.ops.mpi_reshard import block_map, block_shape, exchange_blocks, mpi_reshard_p
from tracejit.ops.structural import broadcast_in_dim_p

__all__ = ["Mesh", "PartitionSpec", "P", "NamedSharding", "make_mesh", "GlobalArray",
           "make_array_from_process_local_data"]


class Mesh:
    """Devices arranged along named axes (``jax.sharding.Mesh``).

    Parameters
    ----------
    devices : array-like of Device
        An array of devices whose rank equals ``len(axis_names)``.
    axis_names : str or sequence of str

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> m = tracejit.sharding.Mesh(np.array(tracejit.devices()), "i")
    >>> m.shape, m.size, m.axis_names
    ({'i': 1}, 1, ('i',))
    """

    def __init__(self, devices, axis_names, *, axis_types=None):
        arr = np.empty(np.shape(devices), object)
        arr[...] = devices if isinstance(devices, np.ndarray) else np.array(devices, dtype=object)
        names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if arr.ndim != len(names):
            raise ValueError(f"Mesh requires the rank of devices ({arr.ndim}) to equal the number of axis "
                             f"names {names}")
        if len(set(names)) != len(names):
            raise ValueError(f"Mesh axis names must be unique, got {names}")
        if not all(isinstance(d, Device) for d in arr.flat):
            raise TypeError("Mesh devices must be tracejit devices (tracejit.devices())")
        self.devices = arr
        self.axis_names = names
        self.axis_types = axis_types

    shape = property(lambda self: dict(zip(self.axis_names, self.devices.shape)),
                     doc="The axis sizes by name.")
    size = property(lambda self: self.devices.size, doc="The number of devices.")
    device_ids = property(lambda self: np.vectorize(lambda d: d.id, otypes=[int])(self.devices),
                          doc="The devices' ids, in the mesh's shape.")
    local_devices = property(lambda self: [d for d in self.devices.flat if d.id == _PROCESS[0]],
                             doc="This process's devices in the mesh.")

    def __eq__(self, other):
        return (isinstance(other, Mesh) and self.axis_names == other.axis_names
                and np.array_equal(self.device_ids, other.device_ids))

    def __hash__(self):
        return hash((self.axis_names, tuple(self.device_ids.flat), self.devices.shape))

    def __repr__(self):
        return "Mesh(" + ", ".join(f"{n!r}: {s}" for n, s in self.shape.items()) + ")"


class PartitionSpec(tuple):
    """Which mesh axis splits each array dimension (``jax.sharding.PartitionSpec``, alias ``P``).

    Entry ``k`` is a mesh axis name (dimension ``k`` is split over that axis), None (not split), or a
    tuple of names; missing trailing entries are None.

    Examples
    --------
    >>> from tracejit.sharding import P
    >>> P("i"), P(None, "i"), P()
    (PartitionSpec('i',), PartitionSpec(None, 'i'), PartitionSpec())
    """

    def __new__(cls, *partitions):
        return tuple.__new__(cls, partitions)

    def __repr__(self):
        return f"PartitionSpec{tuple.__repr__(self)}"

    def __reduce__(self):
        return (PartitionSpec, tuple(self))


P = PartitionSpec


def _split_dims(spec, mesh: Mesh, ndim: int | None = None) -> dict:
    """{array dimension: the mesh axis names splitting it} of ``spec`` (several names split a
    dimension into blocks ordered row-major over those axes, as JAX's ``P(('a', 'b'))``); ValueError
    for names outside the mesh or used twice."""
    if not isinstance(spec, PartitionSpec):
        raise TypeError(f"expected a PartitionSpec, got {type(spec).__name__}: {spec!r}")
    if ndim is not None and len(spec) > ndim:
        raise ValueError(f"{spec} has {len(spec)} entries but the array has rank {ndim}")
    out, used = {}, set()
    for dim, entry in enumerate(spec):
        names = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
        for name in names:
            if name not in mesh.axis_names:
                raise ValueError(f"{spec} names axis {name!r}, which is not in the mesh's {mesh.axis_names}")
            if name in used:
                raise ValueError(f"{spec} uses mesh axis {name!r} for more than one dimension")
            used.add(name)
        if names:
            out[dim] = names
    return out


def _blocks(mesh: Mesh, names) -> int:
    """The number of blocks a dimension split over mesh axes ``names`` has."""
    return math.prod(mesh.shape[n] for n in names)


def _block_position(mesh: Mesh, names, coords: dict) -> int:
    """Which block (row-major over ``names``) the device at mesh ``coords`` holds."""
    return int(np.ravel_multi_index([coords[n] for n in names], [mesh.shape[n] for n in names]))


class NamedSharding:
    """A mesh and a partition spec (``jax.sharding.NamedSharding``): how a global array is split.

    ``tracejit.device_put(x, NamedSharding(mesh, spec))`` keeps this process's block of the global
    value ``x`` (every process passes the same ``x``; a process outside the mesh gets a
    :class:`GlobalArray` without a block); of a :class:`GlobalArray` with another sharding, it moves
    the blocks between the processes of both meshes (resharding, ``ops/mpi_reshard.py``), which
    every one of them calls; inside ``jit`` too. A fully replicated sharding gives plain Arrays when
    its mesh holds every process, global arrays (block-less outside the mesh) when it holds some.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit.sharding import NamedSharding, P, make_mesh
    >>> s = NamedSharding(make_mesh((1,), ("i",)), P("i"))
    >>> s.shard_shape((4, 2)), s.is_fully_replicated
    ((4, 2), True)
    """

    def __init__(self, mesh: Mesh, spec: PartitionSpec, *, memory_kind=None):
        if not isinstance(mesh, Mesh):
            raise TypeError(f"NamedSharding needs a Mesh, got {type(mesh).__name__}")
        _split_dims(spec, mesh)
        self.mesh, self.spec, self.memory_kind = mesh, spec, memory_kind

    device_set = property(lambda self: set(self.mesh.devices.flat), doc="The mesh's devices.")
    addressable_devices = property(lambda self: set(self.mesh.local_devices), doc="This process's devices.")
    num_devices = property(lambda self: self.mesh.size, doc="The number of devices.")
    is_fully_addressable = property(lambda self: all(d.id == _PROCESS[0] for d in self.mesh.devices.flat),
                                    doc="Whether every device belongs to this process.")

    @property
    def is_fully_replicated(self) -> bool:
        """Whether every device holds the whole array (no dimension is split over an axis of size > 1)."""
        return all(_blocks(self.mesh, names) == 1 for names in _split_dims(self.spec, self.mesh).values())

    @property
    def _global_value(self) -> bool:
        """Whether arrays of this sharding are plain values: the whole array on every process
        (fully replicated over a mesh of every process). Replicated over some of the processes,
        they stay global arrays, so the others know the value is not theirs."""
        return self.is_fully_replicated and {d.id for d in self.mesh.devices.flat} == set(range(_PROCESS[1]))

    def shard_shape(self, global_shape) -> tuple:
        """The shape of each device's block of an array of ``global_shape``."""
        shape = list(global_shape)
        for dim, names in _split_dims(self.spec, self.mesh, len(shape)).items():
            n = _blocks(self.mesh, names)
            if shape[dim] % n:
                raise ValueError(f"dimension {dim} of shape {tuple(global_shape)} is not divisible by the "
                                 f"{n} blocks of mesh axes {names} ({self.spec})")
            shape[dim] //= n
        return tuple(shape)

    def devices_indices_map(self, global_shape) -> dict:
        """{device: the index (a tuple of slices) of the block it holds}."""
        block = self.shard_shape(global_shape)
        dims = _split_dims(self.spec, self.mesh, len(global_shape))
        out = {}
        for pos, dev in np.ndenumerate(self.mesh.devices):
            coords = dict(zip(self.mesh.axis_names, pos))
            at = {d: _block_position(self.mesh, names, coords) for d, names in dims.items()}
            out[dev] = tuple(slice(at[d] * block[d], (at[d] + 1) * block[d]) if d in dims
                             else slice(None) for d in range(len(global_shape)))
        return out

    def _local_index(self, global_shape):
        """The index of this process's block, None when the mesh does not hold this process."""
        here = [d for d in self.mesh.devices.flat if d.id == _PROCESS[0]]
        return self.devices_indices_map(global_shape)[here[0]] if here else None

    def _put_leaf(self, x):
        # device_put(x, sharding): every process passes the same global x and keeps its block; a
        # traced x (inside jit, lax.with_sharding_constraint) is sliced the same way.
        if isinstance(x, GlobalArray):
            return x if x.sharding == self else self._reshard(x)
        if not isinstance(x, Tracer):
            x = np.asarray(x)
        index = self._local_index(x.shape)
        if index is None:
            return GlobalArray.without_block(x.shape, x.dtype, self)
        if self._global_value:
            return x if isinstance(x, Tracer) else as_array_result(np.array(x))
        local = x[index] if isinstance(x, Tracer) else as_array_result(np.array(x[index]))
        return GlobalArray(local, x.shape, self)

    @staticmethod
    def _is_leaf(x) -> bool:
        return isinstance(x, GlobalArray)      # device_put places a global array whole

    def _block_map(self, shape) -> tuple:
        """``((rank, block bounds), ...)`` of this sharding (``ops/mpi_reshard.block_map``)."""
        blocks = {d.id: index for d, index in self.devices_indices_map(shape).items()}
        if len(blocks) != self.mesh.size:
            raise NotImplementedError(f"resharding: a mesh holding a process twice ({self.mesh})")
        return block_map(blocks, shape)

    def _reshard(self, x: "GlobalArray"):
        # Every process of either mesh calls this with its block of the same global array (SPMD),
        # a process outside x's mesh with its block-less x: blocks move between them
        # (ops/mpi_reshard.py), none is assembled whole unless replicated here. Inside jit (or a
        # traced transformation) the exchange is the primitive mpi_reshard.
        sources, targets = x.sharding._block_map(x.shape), self._block_map(x.shape)
        rank = _PROCESS[0]
        holds_old, holds_new = rank in dict(sources), rank in dict(targets)
        if not holds_old and not holds_new:
            return GlobalArray.without_block(x.shape, x.dtype, self)      # takes no part
        block = x._local
        if is_eager() and not isinstance(block, Tracer):
            local = exchange_blocks(np.asarray(block) if holds_old else None, sources, targets, x.shape, dtype=x.dtype)
        else:
            if not holds_old:       # the operand of a process without a block is not read: a broadcast zero
                block = broadcast_in_dim_p.bind(np.zeros((), x.dtype)[()], shape=block_shape(sources),
                                                broadcast_dimensions=())
            local = mpi_reshard_p.bind(block, sources=sources, targets=targets, shape=x.shape)
        if not holds_new:
            # Its part was sending. Under jit the result stays a (zero-size) slice of the exchange's,
            # so the exchange is not dropped as dead code while the result is used or returned.
            placeholder = local[(slice(0, 0),) * x.ndim] if local is not None else None
            return GlobalArray.without_block(x.shape, x.dtype, self, placeholder)
        if self._global_value:
            return local if isinstance(local, Tracer) else as_array_result(local)
        return GlobalArray(local if isinstance(local, Tracer) else as_array_result(local), x.shape, self)

    def __eq__(self, other):
        return isinstance(other, NamedSharding) and self.mesh == other.mesh and \
            _canonical(self.spec) == _canonical(other.spec)

    def __hash__(self):
        return hash((self.mesh, _canonical(self.spec)))

    def __repr__(self):
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"


def _canonical(spec) -> tuple:
    entries = [None if e is None else (e,) if isinstance(e, str) else tuple(e) for e in spec]
    while entries and entries[-1] is None:
        entries.pop()
    return tuple(entries)


def make_mesh(axis_shapes, axis_names, *, devices=None, axis_types=None) -> Mesh:
    """A mesh of all devices (one per process) in the given shape (``jax.make_mesh``).

    Examples
    --------
    >>> import tracejit
    >>> tracejit.make_mesh((tracejit.process_count(),), ("data",))
    Mesh('data': 1)
    """
    devs = list(_devices() if devices is None else devices)
    shape = tuple(int(s) for s in axis_shapes)
    if math.prod(shape) != len(devs):
        raise ValueError(f"make_mesh: the mesh shape {shape} needs {math.prod(shape)} devices, but there "
                         f"are {len(devs)}")
    arr = np.empty(len(devs), object)
    arr[:] = devs
    return Mesh(arr.reshape(shape), axis_names, axis_types=axis_types)


class GlobalArray:
    """An array split over processes (JAX's multi-process ``jax.Array``): this process holds one block.

    ``shape``/``dtype`` are the global array's; ``addressable_data(0)`` is this process's block (a
    ``tracejit.Array``), ``addressable_shards`` its one :class:`~tracejit.device_types.Shard`.
    ``np.asarray`` raises RuntimeError, as JAX does for an array spanning non-addressable devices,
    unless this process's block is the whole array (replicated over some of the processes).
    It is a pytree whose one leaf is the local block, so it passes through ``jit``.

    On a process outside the sharding's mesh a global array has no block
    (:meth:`without_block`, what ``device_put`` gives there): ``addressable_shards`` is ``[]`` and
    ``addressable_data(0)`` raises ValueError. Its leaf is then a zero-size placeholder of the
    dtype, so it passes through ``jit`` as well; resharding to a mesh holding this process uses it.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit.sharding import GlobalArray, NamedSharding, P, make_mesh
    >>> s = NamedSharding(make_mesh((1,), ("i",)), P("i"))
    >>> g = GlobalArray(np.ones(2), (2,), s)
    >>> g.shape, g.addressable_data(0)
    ((2,), Array([1., 1.]))
    """

    def __init__(self, local, global_shape, sharding: NamedSharding):
        self._local = local if not isinstance(local, np.ndarray) else as_array_result(local)
        self.shape = tuple(int(s) for s in global_shape)
        self.sharding = sharding

    @classmethod
    def without_block(cls, global_shape, dtype, sharding: NamedSharding, placeholder=None) -> "GlobalArray":
        """The global array on a process outside ``sharding``'s mesh: no block, a zero-size
        ``placeholder`` leaf (default: zeros of ``dtype``) standing in for it.

        Examples
        --------
        >>> import numpy as np, tracejit
        >>> from tracejit.sharding import GlobalArray, NamedSharding, P, make_mesh
        >>> g = GlobalArray.without_block((4,), np.float32, NamedSharding(make_mesh((1,), ("i",)), P("i")))
        >>> g.shape, g.dtype, g._has_block
        ((4,), dtype('float32'), False)
        """
        shape = tuple(int(s) for s in global_shape)
        if placeholder is None:
            placeholder = np.zeros((0,) * len(shape), dtype)
        out = cls(placeholder, shape, sharding)
        out._has_block = False
        return out

    _has_block = True

    dtype = property(lambda self: self._local.dtype, doc="The element type.")
    ndim = property(lambda self: len(self.shape), doc="The number of dimensions.")
    size = property(lambda self: math.prod(self.shape), doc="The number of elements.")
    is_fully_addressable = property(lambda self: self.sharding.is_fully_addressable,
                                    doc="Whether this process holds every block.")
    is_fully_replicated = property(lambda self: self.sharding.is_fully_replicated,
                                   doc="Whether every block is the whole array.")

    def addressable_data(self, index: int):
        """This process's block (``index`` 0: one device per process); ValueError on a process
        outside the sharding's mesh, which holds none."""
        if not self._has_block:
            raise ValueError(f"addressable_data({index}): process {_PROCESS[0]} holds no block of this global array "
                             f"(its mesh holds processes {sorted(d.id for d in self.sharding.mesh.devices.flat)})")
        if index != 0:
            raise IndexError(f"addressable_data({index}): a process holds one block (index 0)")
        return self._local

    @property
    def addressable_shards(self) -> list:
        """This process's shards: its one block (device, index in the global array, data), or
        none on a process outside the sharding's mesh."""
        if not self._has_block:
            return []
        return [Shard(Device(), self.sharding._local_index(self.shape), self._local)]

    def __array__(self, dtype=None, copy=None):
        if self.is_fully_addressable or self.is_fully_replicated and self._has_block:
            return np.asarray(self._local, dtype)
        raise RuntimeError("Fetching value for `jax.Array` that spans non-addressable (non process local) "
                           "devices is not possible. Use `.addressable_shards` or `.addressable_data(0)` to "
                           "inspect this process's block, or gather it inside shard_map (lax.all_gather).")

    def __repr__(self):
        missing = "" if self._has_block else ", no block here"
        return f"GlobalArray(shape={self.shape}, dtype={self.dtype}, sharding={self.sharding!r}{missing})"


def _unflatten_global(aux, leaves):
    shape, sharding, has_block = aux
    if has_block:
        return GlobalArray(leaves[0], shape, sharding)
    return GlobalArray.without_block(shape, leaves[0].dtype, sharding, leaves[0])


register_pytree_node(GlobalArray, lambda g: ([g._local], (g.shape, g.sharding, g._has_block)), _unflatten_global)


def make_array_from_process_local_data(sharding: NamedSharding, local_data, global_shape=None):
    """A global array from each process's block (``jax.make_array_from_process_local_data``).

    Parameters
    ----------
    sharding : NamedSharding
        How the global array is split; this process holds the block of its device.
    local_data : array-like
        This process's block. Only the processes of the sharding's mesh call it (ValueError
        elsewhere).
    global_shape : tuple, optional
        Default: the block's shape times the mesh axis size along each split dimension.

    Returns
    -------
    GlobalArray, or a ``tracejit.Array`` when the sharding is fully replicated over every process.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit.sharding import NamedSharding, P, make_mesh, make_array_from_process_local_data
    >>> s = NamedSharding(make_mesh((tracejit.process_count(),), ("i",)), P("i"))
    >>> make_array_from_process_local_data(s, np.arange(3.0))
    Array([0., 1., 2.])
    """
    local = np.asarray(local_data)
    if not sharding.mesh.local_devices:
        raise ValueError(f"make_array_from_process_local_data: process {_PROCESS[0]} is not in the mesh (processes "
                         f"{sorted(d.id for d in sharding.mesh.devices.flat)}) and has no block; "
                         "device_put(x, sharding) gives it a global array without one")
    dims = _split_dims(sharding.spec, sharding.mesh, local.ndim)
    inferred = tuple(s * (_blocks(sharding.mesh, dims[d]) if d in dims else 1) for d, s in enumerate(local.shape))
    shape = inferred if global_shape is None else tuple(global_shape)
    if sharding.shard_shape(shape) != local.shape:
        raise ValueError(f"make_array_from_process_local_data: the local block {local.shape} does not match "
                         f"the block {sharding.shard_shape(shape)} of global shape {shape} under {sharding.spec}")
    if sharding._global_value:
        return as_array_result(np.array(local))
    return GlobalArray(as_array_result(np.array(local)), shape, sharding)
