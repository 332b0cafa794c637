"""Batching and derivative rules of the collectives (``tracejit/ops/collectives.py``).

The batching interpreter of ``vmap(f, axis_name=name)`` (``batching.batch_program``) hands a
collective that names ``name`` to :data:`batching.named_axis_rules`: the collective is computed over
the batch axis (``psum`` sums the examples, ``all_gather`` stacks them, ``axis_index`` is an iota...),
whether or not its operand is batched; other names in the same collective stay for an enclosing
``vmap``. A collective over another name, on a batched operand, is bound again with the batch axis
carried along (its ordinary batching rule). Derivatives follow JAX: ``psum``, ``all_gather``,
``psum_scatter``, ``all_to_all`` and ``ppermute`` are linear, transposing to ``psum``,
``psum_scatter``, ``all_gather``, the swapped ``all_to_all`` and the inverse permutation.
"""
from __future__ import annotations

from tracejit.core import dtypes
from tracejit.core.named_axes import axis_names, innermost
from tracejit.core.primitive import batching_rules
from tracejit.core.trace import bind
from tracejit.ops import binders as ops
from tracejit.ops.collectives import (all_gather_p, all_to_all_p, axis_index_p, pmax_p, pmin_p, ppermute_p,
                                      psum_p, psum_scatter_p)
from tracejit.ops.elementwise import iota_p
from tracejit.ops.reductions import reduce_prims
from tracejit.transforms import batching
from tracejit.transforms.ad import aval_of
from tracejit.transforms.ad_rules_structural import _def_linear


def _rest(axis_name, name):
    """The names of ``axis_name`` other than ``name`` (None when none are left)."""
    rest = tuple(n for n in axis_names(axis_name) if n != name)
    return None if not rest else rest if len(rest) > 1 else rest[0]


def _only(axis_name, what):
    if len(axis_names(axis_name)) != 1:
        raise NotImplementedError(f"{what} over several named axes at once is not implemented")


def _reduction(prim, reduce_name):
    def rule(args, dims, size, *, axis_name, **params):
        x, d = args[0], dims[0]
        if d is None:
            out = ops.mul(x, ops.c(size, x)) if prim is psum_p else x
        else:
            out = reduce_prims[reduce_name].bind(x, axes=(d,))
        rest = _rest(axis_name, innermost().name)
        return [out if rest is None else prim.bind(out, axis_name=rest, **params)], [None]
    return rule


def _all_gather(args, dims, size, *, axis_name, axis, tiled):
    _only(axis_name, "all_gather")
    x = batching.with_batch(args[0], dims[0], size)          # (n, *example)
    stacked = batching.move_axis(x, 0, axis)
    if tiled:
        shape = aval_of(stacked).shape
        stacked = ops.reshape(stacked, shape[:axis] + (shape[axis] * shape[axis + 1],) + shape[axis + 2:])
    return [stacked], [None]


def _psum_scatter(args, dims, size, *, axis_name, scatter_dimension, tiled):
    _only(axis_name, "psum_scatter")
    x, d = args[0], dims[0]
    total = ops.mul(x, ops.c(size, x)) if d is None else reduce_prims["reduce_sum"].bind(x, axes=(d,))
    sd = scatter_dimension
    if tiled:
        shape = aval_of(total).shape
        total = ops.reshape(total, shape[:sd] + (size, shape[sd] // size) + shape[sd + 1:])
    return [batching.move_axis(total, sd, 0)], [0]


def _all_to_all(args, dims, size, *, axis_name, split_axis, concat_axis, tiled):
    """Example ``k`` receives chunk ``k`` of every example's split axis, in example order along
    ``concat_axis``: with the batch in front, the chunk index becomes the new batch axis and the old
    batch axis moves to (and, tiled, merges into) the concatenation axis."""
    _only(axis_name, "all_to_all")
    x = batching.with_batch(args[0], dims[0], size)            # (n_src, *example)
    shape = aval_of(x).shape
    s = split_axis + 1
    if tiled:                                                  # split axis -> (n_dst, chunk)
        x = ops.reshape(x, shape[:s] + (size, shape[s] // size) + shape[s + 1:])
    y = batching.move_axis(x, s, 0)                            # (n_dst, n_src, *chunk example)
    y = batching.move_axis(y, 1, concat_axis + 1)
    if tiled:                                                  # (n_src, concat) -> one axis
        c = concat_axis + 1
        ys = aval_of(y).shape
        y = ops.reshape(y, ys[:c] + (ys[c] * ys[c + 1],) + ys[c + 2:])
    return [y], [0]


def _ppermute(args, dims, size, *, axis_name, perm):
    _only(axis_name, "ppermute")
    x = batching.with_batch(args[0], dims[0], size)
    example = batching.example_aval(aval_of(x), 0)
    source = {int(dst): int(src) for src, dst in perm}
    rows = [batching._example(x, 0, source[i]) if i in source else ops.broadcast_to(ops.c(0, x), example.shape)
            for i in range(size)]
    return [batching._stack(rows, example)], [0]


def _axis_index(args, dims, size, *, axis_name):
    return [iota_p.bind(dtype=dtypes.int32, shape=(size,), dimension=0)], [0]


batching.named_axis_rules.update({
    psum_p: _reduction(psum_p, "reduce_sum"),
    pmax_p: _reduction(pmax_p, "reduce_max"),
    pmin_p: _reduction(pmin_p, "reduce_min"),
    all_gather_p: _all_gather,
    psum_scatter_p: _psum_scatter,
    all_to_all_p: _all_to_all,
    ppermute_p: _ppermute,
    axis_index_p: _axis_index,
})


def carry_batch(prim, *axis_params):
    """The batching rule of a collective over another axis than the batch's (an enclosing vmap's,
    or a shard_map's processes: lax/parallel.py): the batch axis is carried along in front, where
    the collective's own ``axis_params`` shift by one."""
    # The batch size is not needed; ``params`` may hold an MPI collective's own ``size``, a name the
    # batching interpreter's positional argument must not take.
    def rule(args, dims, _batch_size, **params):
        x = batching.to_front(args[0], dims[0])
        params = dict(params, **{p: params[p] + 1 for p in axis_params})
        return bind(prim, [x], params), [0]
    return rule


for _prim in (psum_p, pmax_p, pmin_p, ppermute_p):
    batching_rules[_prim] = carry_batch(_prim)
batching_rules[all_gather_p] = carry_batch(all_gather_p, "axis")
batching_rules[psum_scatter_p] = carry_batch(psum_scatter_p, "scatter_dimension")
batching_rules[all_to_all_p] = carry_batch(all_to_all_p, "split_axis", "concat_axis")


# --------------------------------------------------------------------------- derivatives

_def_linear(psum_p, lambda ct, x, **params: psum_p.bind(ct, **params))
_def_linear(all_gather_p, lambda ct, x, *, axis_name, axis, tiled: psum_scatter_p.bind(
    ct, axis_name=axis_name, scatter_dimension=axis, tiled=tiled))
_def_linear(psum_scatter_p, lambda ct, x, *, axis_name, scatter_dimension, tiled: all_gather_p.bind(
    ct, axis_name=axis_name, axis=scatter_dimension, tiled=tiled))
_def_linear(all_to_all_p, lambda ct, x, *, axis_name, split_axis, concat_axis, tiled: all_to_all_p.bind(
    ct, axis_name=axis_name, split_axis=concat_axis, concat_axis=split_axis, tiled=tiled))
_def_linear(ppermute_p, lambda ct, x, *, axis_name, perm: ppermute_p.bind(
    ct, axis_name=axis_name, perm=tuple((dst, src) for src, dst in perm)))
