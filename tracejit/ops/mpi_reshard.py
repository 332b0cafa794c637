"""Resharding a global array over MPI processes: moving blocks from one split to another.

A global array's blocks are given by *block maps* ``{process rank: index}`` (an index is a tuple of
slices, or of ``(start, stop)`` bounds), before and after. The two maps may name different
processes (meshes of some of the processes): the processes of either map take part, a process
only in the source map only sends, one only in the target map only receives. Every piece of a new
block (its intersection with an old block) is sent by one process that holds that old block: the
new block's own process when it holds it (no message), else one of the old block's replicas chosen
by the receiver's rank (replicas share the sending). Every process derives the same plan from the
two maps, so one ``MPI_Alltoallv`` of bytes, on the communicator of the processes taking part,
moves everything: no process ever holds more than its old and new blocks.

:data:`mpi_reshard_p` is the same exchange as a primitive, for resharding inside ``jit``: its
operand is this process's old block, its result the new one (blocks are uniform, so both shapes
are the same on every process). A process outside the old map passes any array of the old block's
shape (it is not read); one outside the new map gets zeros of the new block's shape. Its
derivative and batching rules live above the transforms layer, in
``tracejit/lax/sharding_constraint.py``; compiled programs run it as a NumPy step calling
:func:`exchange_blocks`.

Examples
--------
>>> import numpy as np
>>> from tracejit.core.primitive import impl_rules
>>> rows = lambda a, b: ((a, b), (0, 3))
>>> before, after = block_map({0: rows(0, 2)}, (2, 3)), block_map({0: rows(0, 2)}, (2, 3))
>>> impl_rules[mpi_reshard_p](np.ones((2, 3)), sources=before, targets=after, shape=(2, 3))[0].shape
(2, 3)
"""
from __future__ import annotations

import math

import numpy as np

from tracejit.core.avals import ShapedArray
from tracejit.core.primitive import Primitive, def_rules

__all__ = ["block_map", "block_shape", "transfer_plan", "exchange_blocks", "mpi_reshard_p"]


def _bounds(index: tuple, shape: tuple) -> tuple:
    """``((start, stop), ...)`` of a block's index (slices of step 1, ``slice(None)``, or bounds)."""
    return tuple(s.indices(n)[:2] if isinstance(s, slice) else (int(s[0]), int(s[1])) for s, n in zip(index, shape))


def _intersection(a: tuple, b: tuple):
    out = tuple((max(a0, b0), min(a1, b1)) for (a0, a1), (b0, b1) in zip(a, b))
    return out if all(lo < hi for lo, hi in out) else None


def _relative(region: tuple, block: tuple) -> tuple:
    """The slices of ``region`` within ``block`` (both as bounds)."""
    return tuple(slice(lo - b0, hi - b0) for (lo, hi), (b0, _) in zip(region, block))


def _extents(bounds: tuple) -> tuple:
    return tuple(hi - lo for lo, hi in bounds)


def block_map(blocks, shape: tuple) -> tuple:
    """The hashable form of a block map (``{rank: index}`` or its items): ``((rank, bounds), ...)``
    sorted by rank, the form :data:`mpi_reshard_p`'s parameters take.

    Examples
    --------
    >>> block_map({1: (slice(2, 4), slice(None)), 0: (slice(0, 2), slice(None))}, (4, 3))
    ((0, ((0, 2), (0, 3))), (1, ((2, 4), (0, 3))))
    """
    return tuple(sorted((int(rank), _bounds(index, shape)) for rank, index in dict(blocks).items()))


def block_shape(blocks: tuple) -> tuple:
    """The shape of the blocks of a block map (from :func:`block_map`; they are all alike).

    Examples
    --------
    >>> block_shape(((0, ((0, 2), (0, 3))), (1, ((2, 4), (0, 3)))))
    (2, 3)
    """
    shapes = {_extents(bounds) for _, bounds in blocks}
    if len(shapes) != 1:
        raise ValueError(f"resharding: the blocks must all have one shape, got {sorted(shapes)}")
    return shapes.pop()


def transfer_plan(sources, targets, shape: tuple) -> list:
    """``[(sender, receiver, region)]`` in a fixed order: who sends which region of the global
    array (bounds) to whom so that every receiver gets its whole new block exactly once.
    ``sources``/``targets``: block maps (``{rank: index}``, or :func:`block_map`'s tuples); they may
    name different processes.

    Examples
    --------
    >>> rows = lambda a, b: (slice(a, b), slice(None))
    >>> transfer_plan({0: rows(0, 2), 1: rows(2, 4)}, {0: rows(0, 4), 1: rows(0, 4)}, (4, 3))
    [(0, 0, ((0, 2), (0, 3))), (1, 0, ((2, 4), (0, 3))), (0, 1, ((0, 2), (0, 3))), (1, 1, ((2, 4), (0, 3)))]
    >>> transfer_plan({0: rows(0, 4)}, {1: rows(0, 2), 2: rows(2, 4)}, (4, 3))      # disjoint processes
    [(0, 1, ((0, 2), (0, 3))), (0, 2, ((2, 4), (0, 3)))]
    """
    holders: dict = {}
    for rank, bounds in block_map(sources, shape):
        holders.setdefault(bounds, []).append(rank)
    plan = []
    for receiver, want in block_map(targets, shape):
        for block, ranks in holders.items():
            region = _intersection(block, want)
            if region is None:
                continue
            sender = receiver if receiver in ranks else ranks[receiver % len(ranks)]
            plan.append((sender, receiver, region))
    return plan


def exchange_blocks(local, sources, targets, shape: tuple, dtype=None):
    """This process's new block of the global array of ``shape`` whose current block is ``local``,
    or None when this process is not in ``targets``.

    Parameters
    ----------
    local : array or None
        This process's current block; not read (may be None) when this process is not in ``sources``.
    sources, targets : block maps
        Every process's block index before and after (``{world rank: index}`` or :func:`block_map`'s
        tuples). The processes of either take part (the call is collective over them, on their own
        communicator when they are not every process); others must not call it.
    dtype : dtype, optional
        The element type, needed when ``local`` is None.

    Examples
    --------
    >>> import numpy as np
    >>> whole, halves = {0: (slice(None),)}, {0: (slice(2, 4),)}
    >>> exchange_blocks(np.arange(4.0), whole, halves, (4,))       # one process: no MPI
    array([2., 3.])
    """
    sources, targets = dict(block_map(sources, shape)), dict(block_map(targets, shape))
    members = tuple(sorted(set(sources) | set(targets)))
    if len(members) == 1:
        rank = members[0]
    else:
        from mpi4py import MPI      # lazily: importing tracejit must not initialise MPI
        rank = MPI.COMM_WORLD.Get_rank()
    if rank not in members:
        raise ValueError(f"resharding: process {rank} holds a block of neither sharding (processes {list(members)}) "
                         "and takes no part")
    if rank in sources:
        local = np.ascontiguousarray(local)
        if local.shape != _extents(sources[rank]):
            raise ValueError(f"resharding: this process's block {local.shape} is not its block of {shape} "
                             f"({sources[rank]})")
        dtype = local.dtype
    elif dtype is None:
        if local is None:
            raise ValueError("resharding: a process without a current block must give the dtype")
        dtype = np.asarray(local).dtype
    dtype = np.dtype(dtype)
    new_block = targets.get(rank)
    out = np.empty(_extents(new_block), dtype) if new_block is not None else None
    plan = transfer_plan(sources, targets, shape)
    if len(members) == 1:
        for _, _, region in plan:
            out[_relative(region, new_block)] = local[_relative(region, sources[rank])]
        return out
    _alltoallv(plan, local, sources.get(rank), out, new_block, rank, members, dtype)
    return out


def _alltoallv(plan, local, mine, out, new_block, rank, members, dtype) -> None:
    """Carry out ``plan`` on the communicator of ``members`` (ranked in sorted order): copy this
    process's own pieces, send the others and write the received ones into ``out``."""
    from mpi4py import MPI
    from tracejit.ops.mpi_collectives import members_comm
    comm = members_comm(members)
    position = {r: k for k, r in enumerate(members)}
    item = dtype.itemsize
    sends = [[] for _ in members]
    recv_counts = np.zeros(len(members), np.int64)
    for sender, receiver, region in plan:
        if sender == rank and receiver == rank:
            out[_relative(region, new_block)] = local[_relative(region, mine)]
        elif sender == rank:
            piece = np.ascontiguousarray(local[_relative(region, mine)]).reshape(-1).view(np.uint8)
            sends[position[receiver]].append(piece)
        elif receiver == rank:
            recv_counts[position[sender]] += math.prod(_extents(region)) * item
    send_counts = np.array([sum(p.size for p in parts) for parts in sends], np.int64)
    if max(send_counts.max(initial=0), recv_counts.max(initial=0)) >= 2 ** 31:
        raise NotImplementedError("resharding moves a piece of 2 GiB or more between two processes")
    sendbuf = np.concatenate([p for parts in sends for p in parts]) if send_counts.any() else np.zeros(1, np.uint8)
    recvbuf = np.empty(max(int(recv_counts.sum()), 1), np.uint8)
    displ = lambda counts: np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)   # noqa: E731
    comm.Alltoallv([sendbuf, (send_counts.astype(np.int32), displ(send_counts).astype(np.int32)), MPI.BYTE],
                   [recvbuf, (recv_counts.astype(np.int32), displ(recv_counts).astype(np.int32)), MPI.BYTE])
    offsets = displ(recv_counts)
    for sender, receiver, region in plan:       # pieces from a sender arrive in plan order
        if receiver != rank or sender == rank:
            continue
        dims = _extents(region)
        nbytes = math.prod(dims) * item
        at = position[sender]
        out[_relative(region, new_block)] = recvbuf[offsets[at]:offsets[at] + nbytes].view(dtype).reshape(dims)
        offsets[at] += nbytes


# --------------------------------------------------------------------------- the primitive

def _reshard_abstract(x, *, sources, targets, shape):
    if x.shape != block_shape(sources):
        raise ValueError(f"mpi_reshard: the operand {x.str_short()} is not a block {block_shape(sources)} of the "
                         f"global shape {shape}")
    return [ShapedArray(block_shape(targets), x.dtype)]


def _reshard_impl(x, *, sources, targets, shape):
    x = np.asarray(x)
    out = exchange_blocks(x, sources, targets, shape, dtype=x.dtype)
    # (a process outside the new sharding sent its pieces and has no block: zeros stand in)
    return [out if out is not None else np.zeros(block_shape(targets), x.dtype)]


mpi_reshard_p = def_rules(Primitive("mpi_reshard"), abstract_eval=_reshard_abstract, impl=_reshard_impl)
