"""Resharding a global array over MPI processes: moving blocks from one split to another.

A global array's blocks are given by index maps ``{process rank: tuple of slices}``, before and
after. Every piece of a new block (its intersection with an old block) is sent by one process that
holds that old block: the new block's own process when it holds it (no message), else one of the
old block's replicas chosen by the receiver's rank (replicas share the sending). Every rank derives
the same plan from the two maps, so one ``MPI_Alltoallv`` of bytes moves everything: no process
ever holds more than its old and new blocks.
"""
from __future__ import annotations

import math

import numpy as np


def _bounds(index: tuple, shape: tuple) -> tuple:
    """``((start, stop), ...)`` of a block's index (slices of step 1, or ``slice(None)``)."""
    return tuple(s.indices(n)[:2] for s, n in zip(index, shape))


def _intersection(a: tuple, b: tuple):
    out = tuple((max(a0, b0), min(a1, b1)) for (a0, a1), (b0, b1) in zip(a, b))
    return out if all(lo < hi for lo, hi in out) else None


def _relative(region: tuple, block: tuple) -> tuple:
    """The slices of ``region`` within ``block`` (both as bounds)."""
    return tuple(slice(lo - b0, hi - b0) for (lo, hi), (b0, _) in zip(region, block))


def transfer_plan(sources: dict, targets: dict, shape: tuple) -> list:
    """``[(sender, receiver, region)]`` in a fixed order: who sends which region of the global
    array (bounds) to whom so that every receiver gets its whole new block exactly once.

    Examples
    --------
    >>> rows = lambda a, b: (slice(a, b), slice(None))
    >>> transfer_plan({0: rows(0, 2), 1: rows(2, 4)}, {0: rows(0, 4), 1: rows(0, 4)}, (4, 3))
    [(0, 0, ((0, 2), (0, 3))), (1, 0, ((2, 4), (0, 3))), (0, 1, ((0, 2), (0, 3))), (1, 1, ((2, 4), (0, 3)))]
    """
    holders: dict = {}
    for rank in sorted(sources):
        holders.setdefault(_bounds(sources[rank], shape), []).append(rank)
    plan = []
    for receiver in sorted(targets):
        want = _bounds(targets[receiver], shape)
        for block, ranks in holders.items():
            region = _intersection(block, want)
            if region is None:
                continue
            sender = receiver if receiver in ranks else ranks[receiver % len(ranks)]
            plan.append((sender, receiver, region))
    return plan


def exchange_blocks(local: np.ndarray, sources: dict, targets: dict, shape: tuple, comm=None) -> np.ndarray:
    """This process's new block of the global array of ``shape`` whose current block is ``local``
    (``sources``/``targets``: every rank's block index before/after). Collective over ``comm``
    (default COMM_WORLD), whose ranks are the maps' keys."""
    from mpi4py import MPI      # lazily: importing tracejit must not initialise MPI
    comm = MPI.COMM_WORLD if comm is None else comm
    rank, size = comm.Get_rank(), comm.Get_size()
    if sorted(sources) != list(range(size)) or sorted(targets) != list(range(size)):
        raise NotImplementedError("resharding needs both shardings over every process once")
    local = np.ascontiguousarray(local)
    mine, new_block = _bounds(sources[rank], shape), _bounds(targets[rank], shape)
    if local.shape != tuple(hi - lo for lo, hi in mine):
        raise ValueError(f"resharding: this process's block {local.shape} is not its block of {shape} "
                         f"({sources[rank]})")
    out = np.empty(tuple(hi - lo for lo, hi in new_block), local.dtype)
    plan = transfer_plan(sources, targets, shape)
    item = local.dtype.itemsize
    sends = [[] for _ in range(size)]
    recv_counts = np.zeros(size, np.int64)
    for sender, receiver, region in plan:
        nbytes = math.prod(hi - lo for lo, hi in region) * item
        if sender == rank and receiver == rank:
            out[_relative(region, new_block)] = local[_relative(region, mine)]
        elif sender == rank:
            sends[receiver].append(np.ascontiguousarray(local[_relative(region, mine)]).reshape(-1).view(np.uint8))
        elif receiver == rank:
            recv_counts[sender] += nbytes
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
        dims = tuple(hi - lo for lo, hi in region)
        nbytes = math.prod(dims) * item
        piece = recvbuf[offsets[sender]:offsets[sender] + nbytes].view(local.dtype).reshape(dims)
        out[_relative(region, new_block)] = piece
        offsets[sender] += nbytes
    return out
