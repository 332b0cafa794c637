"""Process-axis collectives along other axes than 0 written as axis-0 collectives and transposes.

An MPI gather, reduce-scatter or all-to-all exchanges rank-major blocks that must be contiguous, so
only the axis-0 forms are native calls (``ops/mpi_collectives.py``); along another axis they ran as
NumPy steps (mpi4py with copies through Python). Moving the axis to the front with a transpose (a
native kernel), making the axis-0 call, and moving it back gives the same array element for
element (only data moves), so every one becomes a native call:

- ``all_gather(x, axis=a)``: gather untiled along 0 (``(size, *x.shape)``), move axis 0 to ``a``,
  and merge it with the next axis when tiled;
- ``psum_scatter(x, scatter_dimension=d)``: move ``d`` to the front, reduce-scatter along 0, move the
  block axis back to ``d`` (untiled, the other axes are already in order);
- ``all_to_all(x, split_axis=s, concat_axis=c)``: move ``s`` to the front and exchange along 0; the
  received ``(rank, chunk, others...)`` blocks are transposed so the chunk sits at ``s`` and the rank
  axis before axis ``c`` (merged with it when tiled; untiled, a new axis at ``c``).
"""
from __future__ import annotations

from tracejit.ops import mpi_collectives as mpi
from tracejit.ops.binders import reshape, transpose
from tracejit.compiler.passes.retrace import retrace


def _needs_rewrite(eqn) -> bool:
    return (eqn.primitive in (mpi.mpi_allgather_p, mpi.mpi_reduce_scatter_p, mpi.mpi_alltoall_p)
            and mpi.along_other_axes(eqn) and mpi.native_operands_ok(eqn))


def _to_front(x, axis, ndim):
    return transpose(x, (axis,) + tuple(i for i in range(ndim) if i != axis)) if axis else x


def _front_to(x, axis, ndim):
    """Move axis 0 of an ``ndim``-dimensional ``x`` to position ``axis``."""
    if axis == 0:
        return x
    return transpose(x, tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, ndim)))


def _common(p) -> dict:
    """The parameters naming the processes: axis name, size and (part of a multi-axis mesh) group."""
    return {k: p[k] for k in ("axis_name", "size", "group") if k in p}


def _all_gather(eqn, x):
    p = eqn.params
    ndim = len(eqn.inputs[0].aval.shape)
    g = mpi.mpi_allgather_p.bind(x, axis=0, tiled=False, **_common(p))
    out = _front_to(g, p["axis"], ndim + 1)
    return reshape(out, eqn.outputs[0].aval.shape) if p["tiled"] else out


def _psum_scatter(eqn, x):
    p = eqn.params
    d, ndim = p["scatter_dimension"], len(eqn.inputs[0].aval.shape)
    r = mpi.mpi_reduce_scatter_p.bind(_to_front(x, d, ndim), scatter_dimension=0, tiled=p["tiled"],
                                      **_common(p))
    return _front_to(r, d, ndim) if p["tiled"] else r


def _all_to_all(eqn, x):
    p = eqn.params
    s, c, size = p["split_axis"], p["concat_axis"], p["size"]
    shape = tuple(eqn.inputs[0].aval.shape)
    ndim = len(shape)
    y = mpi.mpi_alltoall_p.bind(_to_front(x, s, ndim), split_axis=0, concat_axis=0, tiled=p["tiled"],
                                **_common(p))
    if not p["tiled"]:     # y[r]: rank r's chunk, the other axes in order; a new axis at c
        return _front_to(y, c, ndim)
    others = [i for i in range(ndim) if i != s]
    y = reshape(y, (size, shape[s] // size) + tuple(shape[i] for i in others))   # (rank, chunk, others)
    perm = []
    for i in range(ndim):
        if i == s and i == c:
            perm += [0, 1]
        elif i == s:
            perm.append(1)
        elif i == c:
            perm += [0, 2 + others.index(i)]
        else:
            perm.append(2 + others.index(i))
    return reshape(transpose(y, tuple(perm)), eqn.outputs[0].aval.shape)


_REWRITES = {mpi.mpi_allgather_p: _all_gather, mpi.mpi_reduce_scatter_p: _psum_scatter,
             mpi.mpi_alltoall_p: _all_to_all}


def collectives_along_axis_0(program):
    """Rewrite every process-axis gather, scatter or all-to-all along other axes into axis-0 native
    calls and transposes."""
    if not any(_needs_rewrite(e) for e in program.eqns):
        return program
    return retrace(program, lambda eqn, ins: [_REWRITES[eqn.primitive](eqn, ins[0])] if _needs_rewrite(eqn)
                   else None, "native_collective_axes")
