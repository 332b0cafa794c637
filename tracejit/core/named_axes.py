"""Named axes in scope: the ``axis_name`` of each ``vmap`` whose function is being traced or batched.

Collectives (``lax.psum(x, 'i')``, ``axis_index('i')``) name an axis; ``vmap(f, axis_name='i')``
pushes a frame ``('i', size)`` for as long as it traces ``f`` and batches the traced program, so a
collective can check its name is bound (JAX's ``NameError: unbound axis name``) and the batching
interpreter knows which axis is its own (the innermost frame). Frames are per thread.

Examples
--------
>>> with axis_frame("i", 4):
...     bound_axis_size("i"), innermost().name
(4, 'i')
>>> bound_axis_size("i")
Traceback (most recent call last):
    ...
NameError: unbound axis name: i
"""
from __future__ import annotations

import contextlib
import threading
from typing import NamedTuple


class AxisFrame(NamedTuple):
    name: object        # a hashable name, or None for a vmap without one
    size: int
    # "vmap": the examples of a batch (collectives compute over the batch axis); "process": the
    # processes of a shard_map over MPI (collectives become MPI calls, tracejit/ops/mpi_collectives.py).
    kind: str = "vmap"
    # For a process axis: (axis names, shape, device ids in mesh order or None for rank order) of
    # its mesh, which groups the processes of a collective (mpi_collectives.process_params).
    mesh: tuple | None = None


_local = threading.local()


def _frames() -> list:
    frames = getattr(_local, "frames", None)
    if frames is None:
        frames = _local.frames = []
    return frames


@contextlib.contextmanager
def axis_frame(name, size: int, kind: str = "vmap", mesh: tuple | None = None):
    """Make ``name`` (of ``size`` examples, or processes when ``kind`` is ``"process"``, of a mesh
    ``(axis names, shape, device ids in mesh order or None for rank order)``) the innermost named
    axis while the block runs."""
    frames = _frames()
    frames.append(AxisFrame(name, int(size), kind, mesh))
    try:
        yield
    finally:
        frames.pop()


def innermost() -> AxisFrame | None:
    """The innermost frame (the vmap now tracing or batching), or None outside every vmap."""
    frames = _frames()
    return frames[-1] if frames else None


def bound_axis_size(name) -> int:
    """The size of the innermost axis called ``name``; NameError when none is in scope."""
    for frame in reversed(_frames()):
        if frame.name is not None and frame.name == name:
            return frame.size
    raise NameError(f"unbound axis name: {name}")


def bound_frame(name) -> AxisFrame:
    """The innermost frame called ``name``; NameError when none is in scope."""
    for frame in reversed(_frames()):
        if frame.name is not None and frame.name == name:
            return frame
    raise NameError(f"unbound axis name: {name}")


def axis_names(axis_name) -> tuple:
    """``axis_name`` as a tuple of names (a collective may name several axes at once)."""
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
