"""Batching: evaluating a traced program over an extra axis (``vmap``).

:func:`batch_program` interprets a Program equation by equation, as
``ad.jvp_program`` does, with each value carrying a *batch dimension*: the
axis of the batch, or None for a value that is the same for every example.
An equation whose inputs are all unbatched is applied as it is; otherwise the
primitive's rule in ``batching_rules`` says how to apply it to whole batches
and where the batch axis of each result is.  Rules move the batch axis to the
front (axis 0) before anything else, so they only shift axis parameters by one.

A primitive without a rule (gamma/Poisson sampling, least squares, FFTs,
custom_vjp calls, ...) is applied once per example and the
results are stacked: the same values, but the program grows with the batch
size, so a large batch through such a primitive costs compile time.

Everything binds on the current trace, so batching composes with ``jit``
(staged), differentiation and itself (nested ``vmap``).
"""
from __future__ import annotations

import numpy as np

from tracejit.core.avals import ShapedArray
from tracejit.core.ir import Literal, Program, Var
from tracejit.core.named_axes import axis_names, innermost
from tracejit.core.primitive import ELEMENTWISE, abstract_eval_rules, batching_rules
from tracejit.core.trace import bind, trace_flat
from tracejit.ops.control_flow import closure_convert, cond_p, scan_p, while_p
from tracejit.ops.dot import dot_general_p
from tracejit.ops.elementwise import select_n_p
from tracejit.ops.linalg import cholesky_p, det_p, eigh_p, inv_p, pinv_p, qr_p, slogdet_p, solve_p, svd_p
from tracejit.ops.indexing import dynamic_slice_p, dynamic_update_slice_p, gather_p, scatter_p
from tracejit.ops.reductions import argmax_p, argmin_p, cumulative_prims, reduce_prims
from tracejit.ops.random_bits import threefry2x32_p
from tracejit.ops.sorting import sort_p
from tracejit.ops.structural import (broadcast_in_dim_p, concatenate_p, pad_p, reshape_p, rev_p, slice_p,
                                     squeeze_p, transpose_p)
from tracejit.ops import binders as ops
from tracejit.transforms.ad import aval_of


# Collectives over a named axis, computed over the batch of the vmap that names it:
# {primitive: rule(args, dims, size, **params) -> (outs, out_dims)} (transforms/collective_rules.py).
named_axis_rules: dict = {}


def batch_program(program: Program, const_values, args, dims, size: int):
    """Evaluate ``program`` with ``args[i]`` batched along axis ``dims[i]`` (None: not batched).

    Returns ``(outs, out_dims)``: each output with its batch axis (or None when it is not batched).

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> prog = tracejit.make_jaxpr(lambda x: x.sum())(np.zeros(3))
    >>> batch_program(prog, prog.const_values, [np.arange(6.0).reshape(2, 3)], [0], 2)
    ([array([ 3., 12.])], [0])
    """
    env: dict = {}
    denv: dict = {}

    def read(a):
        return a.val if type(a) is Literal else env[a]

    for v, val in zip(program.const_vars, const_values):
        env[v] = val
    for v, val, d in zip(program.in_vars, args, dims):
        env[v] = val
        if d is not None:
            denv[v] = d
    frame = innermost()
    for eqn in program.eqns:
        ins = [read(a) for a in eqn.inputs]
        ds = [None if type(a) is Literal else denv.get(a) for a in eqn.inputs]
        named = named_axis_rules.get(eqn.primitive)
        if named is not None and frame is not None and frame.name is not None \
                and frame.name in axis_names(eqn.params["axis_name"]):
            # A collective over this vmap's own axis: computed over the batch (collective_rules.py).
            outs, out_dims = named(ins, ds, size, **eqn.params)
        elif all(d is None for d in ds):
            outs, out_dims = bind(eqn.primitive, ins, eqn.params), [None] * len(eqn.outputs)
        else:
            rule = batching_rules.get(eqn.primitive)
            if rule is None:
                outs, out_dims = _one_example_at_a_time(eqn.primitive, ins, ds, size, eqn.params)
            else:
                outs, out_dims = rule(ins, ds, size, **eqn.params)
        for v, val, d in zip(eqn.outputs, outs, out_dims):
            env[v] = val
            if d is not None:
                denv[v] = d
    outs = [read(a) for a in program.outputs]
    return outs, [None if type(a) is Literal else denv.get(a) for a in program.outputs]


# --------------------------------------------------------------------------- helpers

def move_axis(x, source: int, dest: int):
    """``x`` with axis ``source`` moved to position ``dest``."""
    if source == dest:
        return x
    order = [a for a in range(aval_of(x).ndim) if a != source]
    order.insert(dest, source)
    return ops.transpose(x, order)


def to_front(x, d):
    """Batch axis ``d`` of ``x`` moved to the front (``x`` unchanged when not batched)."""
    return x if d is None else move_axis(x, d, 0)


def with_batch(x, d, size: int):
    """``x`` with its batch axis in front; an unbatched value is broadcast along a new one."""
    if d is not None:
        return move_axis(x, d, 0)
    a = aval_of(x)
    return ops.broadcast_in_dim(x, (size,) + a.shape, tuple(range(1, a.ndim + 1)))


def example_aval(a: ShapedArray, d) -> ShapedArray:
    """The aval of one example of a value of aval ``a`` batched along axis ``d`` (``a`` when None)."""
    return a if d is None else a.update(shape=a.shape[:d] + a.shape[d + 1:])


def _front_dims(dims) -> list:
    """Batch axes after :func:`to_front`: 0, or None where not batched."""
    return [None if d is None else 0 for d in dims]


def _example(x, d, i: int):
    """Example ``i`` of batched ``x`` (batch axis ``d``)."""
    a = aval_of(x)
    start = [0] * a.ndim
    limit = list(a.shape)
    start[d], limit[d] = i, i + 1
    return ops.reshape(ops.slice(x, start, limit), a.shape[:d] + a.shape[d + 1:])


def _stack(values, aval: ShapedArray):
    """Examples of shape ``aval.shape`` stacked along a new axis 0."""
    if not values:
        return ops.broadcast_in_dim(np.zeros((), aval.dtype), (0,) + aval.shape, ())
    parts = [ops.reshape(v, (1,) + aval.shape) for v in values]
    return ops.concatenate(parts, 0)


def _one_example_at_a_time(prim, args, dims, size: int, params):
    out_avals = abstract_eval_rules[prim](*[example_aval(aval_of(x), d) for x, d in zip(args, dims)], **params)
    results = [bind(prim, [_example(x, d, i) if d is not None else x for x, d in zip(args, dims)], params)
               for i in range(size)]
    outs = [_stack([r[k] for r in results], out_avals[k]) for k in range(len(out_avals))]
    return outs, [0] * len(outs)


# --------------------------------------------------------------------------- rules

def _elementwise(prim):
    # Operands have equal shapes, or rank 0 (broadcast). Batched operands get their batch axis in
    # front; the others of the example shape, and batched rank-0 ones, are broadcast to the batch.
    def rule(args, dims, size, **params):
        example = max((example_aval(aval_of(x), d).shape for x, d in zip(args, dims)), key=len)
        full = (size,) + example
        ins = []
        for x, d in zip(args, dims):
            if d is not None:
                x = move_axis(x, d, 0)
                if aval_of(x).shape != full:            # a batch of scalars
                    x = ops.broadcast_in_dim(x, full, (0,))
            elif aval_of(x).shape != ():
                x = with_batch(x, None, size)
            ins.append(x)
        outs = bind(prim, ins, params)
        return outs, [0] * len(outs)
    return rule


def _broadcast_in_dim(args, dims, size, *, shape, broadcast_dimensions):
    (x,), (d,) = args, dims
    out = broadcast_in_dim_p.bind(to_front(x, d), shape=(size,) + tuple(shape),
                                  broadcast_dimensions=(0,) + tuple(b + 1 for b in broadcast_dimensions))
    return [out], [0]


def _reshape(args, dims, size, *, new_sizes, **params):
    (x,), (d,) = args, dims
    return [reshape_p.bind(to_front(x, d), new_sizes=(size,) + tuple(new_sizes), **params)], [0]


def _shift_axes(prim, name):
    """Rules of primitives whose only axis parameter ``name`` (an int or a tuple) counts from 0."""
    def rule(args, dims, size, **params):
        (x,), (d,) = args, dims
        axes = params[name]
        params = dict(params, **{name: axes + 1 if isinstance(axes, int) else tuple(a + 1 for a in axes)})
        return [prim.bind(to_front(x, d), **params)], [0]
    return rule


def _transpose(args, dims, size, *, permutation):
    (x,), (d,) = args, dims
    return [transpose_p.bind(to_front(x, d), permutation=(0,) + tuple(p + 1 for p in permutation))], [0]


def _slice(args, dims, size, *, start_indices, limit_indices, strides):
    (x,), (d,) = args, dims
    return [slice_p.bind(to_front(x, d), start_indices=(0,) + tuple(start_indices),
                         limit_indices=(size,) + tuple(limit_indices),
                         strides=(1,) + tuple(strides or (1,) * len(start_indices)))], [0]


def _pad(args, dims, size, *, padding_config):
    (x, value), (d, dv) = args, dims
    if dv is not None:      # a per-example padding value
        return _one_example_at_a_time(pad_p, args, dims, size, {"padding_config": padding_config})
    return [pad_p.bind(to_front(x, d), value, padding_config=((0, 0, 0),) + tuple(padding_config))], [0]


def _concatenate(args, dims, size, *, dimension):
    return [concatenate_p.bind(*[with_batch(x, d, size) for x, d in zip(args, dims)],
                               dimension=dimension + 1)], [0]


def _sort(args, dims, size, *, dimension, **params):
    outs = sort_p.bind(*[with_batch(x, d, size) for x, d in zip(args, dims)], dimension=dimension + 1, **params)
    return outs, [0] * len(outs)


def _zero_start(starts):
    """A start index 0 for the new leading batch axis, of the other starts' dtype."""
    return np.zeros((), aval_of(starts[0]).dtype) if starts else np.int64(0)


def _dynamic_slice(args, dims, size, *, slice_sizes):
    (x, *starts), (d, *start_dims) = args, dims
    if any(sd is not None for sd in start_dims):      # per-example start indices
        return _one_example_at_a_time(dynamic_slice_p, args, dims, size, {"slice_sizes": slice_sizes})
    return [dynamic_slice_p.bind(to_front(x, d), _zero_start(starts), *starts, slice_sizes=(size,) + tuple(slice_sizes))], [0]


def _dynamic_update_slice(args, dims, size, **params):
    (x, update, *starts), (d, du, *start_dims) = args, dims
    if any(sd is not None for sd in start_dims):
        return _one_example_at_a_time(dynamic_update_slice_p, args, dims, size, params)
    return [dynamic_update_slice_p.bind(with_batch(x, d, size), with_batch(update, du, size), _zero_start(starts),
                                        *starts,
                                        **params)], [0]


def _with_example_index(indices, size):
    """Batched gather/scatter indices ``(N,) + B + (k,)`` -> ``(N,) + B + (k+1,)``: each example's
    own position along the operand's (new, leading) batch axis comes first."""
    a = aval_of(indices)
    position = ops.broadcast_in_dim(np.arange(size, dtype=a.dtype), a.shape[:-1] + (1,), (0,))
    return ops.concatenate([position, indices], a.ndim - 1)


def _gather(args, dims, size, *, mode, fill_value):
    (operand, indices), (do, di) = args, dims
    if di is None:
        # Shared indices: the operand's batch axis becomes a pass-through axis after the indexed ones.
        k, nb = aval_of(indices).shape[-1], aval_of(indices).ndim - 1
        return [gather_p.bind(move_axis(operand, do, k), indices, mode=mode, fill_value=fill_value)], [nb]
    indices = move_axis(indices, di, 0)
    if do is not None:
        operand, indices = move_axis(operand, do, 0), _with_example_index(indices, size)
    return [gather_p.bind(operand, indices, mode=mode, fill_value=fill_value)], [0]


def _scatter(args, dims, size, *, kind, mode):
    (operand, indices, updates), (do, di, du) = args, dims
    if di is None:
        # Shared indices: the batch is a pass-through axis of the operand and of the updates.
        k, nb = aval_of(indices).shape[-1], aval_of(indices).ndim - 1
        operand = move_axis(with_batch(operand, do, size), 0, k)
        updates = move_axis(with_batch(updates, du, size), 0, nb)
        return [scatter_p.bind(operand, indices, updates, kind=kind, mode=mode)], [k]
    indices = _with_example_index(move_axis(indices, di, 0), size)
    return [scatter_p.bind(with_batch(operand, do, size), indices, with_batch(updates, du, size),
                           kind=kind, mode=mode)], [0]


def batched_program(program: Program, in_avals, in_dims, size: int, batch_outputs=None):
    """``program`` traced again over batched inputs (``in_avals``, batch axes ``in_dims``).

    Outputs keep their batch axis, moved to the front; output ``k`` is batched
    (broadcast if need be) where ``batch_outputs[k]`` is true (all when None).
    A loop carry that ``batch_outputs`` leaves unbatched but the body batches
    stays batched: its caller sees it in the returned batch axes (0 or None)
    and tries again. Returns ``(program, out_dims)``.
    """
    out_dims: list = []

    def flat(*values):
        outs, dims = batch_program(program, program.const_values, list(values), in_dims, size)
        forced = [True] * len(outs) if batch_outputs is None else batch_outputs
        out_dims[:] = [0 if (k < len(forced) and forced[k]) or d is not None else None
                       for k, d in enumerate(dims)]
        return [with_batch(o, d, size) if k < len(forced) and forced[k] else to_front(o, d)
                for k, (o, d) in enumerate(zip(outs, dims))]
    return trace_flat(flat, in_avals, "batched"), out_dims


def _cond(args, dims, size, *, branches):
    (index, *operands), (di, *operand_dims) = args, dims
    if di is None:
        # Every example takes the same branch: each branch is batched.
        operands = [to_front(x, d) for x, d in zip(operands, operand_dims)]
        avals, front = [aval_of(x) for x in operands], _front_dims(operand_dims)
        new, extra = _closed_alike([batched_program(b, avals, front, size)[0] for b in branches])
        outs = cond_p.bind(index, *extra, *operands, branches=tuple(new))
        return outs, [0] * len(outs)
    # Examples take different branches: every branch runs on the whole batch and each example's
    # results are selected (as JAX does; a branch's values for other examples are discarded).
    results = []
    for b in branches:
        outs, out_dims = batch_program(b, b.const_values, operands, operand_dims, size)
        results.append([with_batch(o, d, size) for o, d in zip(outs, out_dims)])
    which = move_axis(index, di, 0)
    selected = []
    for cases in zip(*results):
        shape = aval_of(cases[0]).shape
        selected.append(select_n_p.bind(ops.broadcast_in_dim(which, shape, (0,)), *cases))
    return selected, [0] * len(selected)


def _scan(args, dims, size, *, program, length, reverse, num_consts, num_carry, **params):
    nc, nk = num_consts, num_carry
    consts = [to_front(x, d) for x, d in zip(args[:nc], dims[:nc])]
    init, init_dims = args[nc:nc + nk], dims[nc:nc + nk]
    # A scanned operand keeps its leading scan axis; the batch goes right after it.
    xs = [x if d is None else move_axis(x, d, 1) for x, d in zip(args[nc + nk:], dims[nc + nk:])]
    fixed = _front_dims(dims[:nc]) + _front_dims(dims[nc + nk:])
    const_avals = [aval_of(x) for x in consts]
    x_avals = [example_aval(aval_of(x), 0) for x in xs]
    # A carry is batched if its initial value is, or if the body makes it so (found by iterating).
    batched = [d is not None for d in init_dims]
    while True:
        carry_avals = [_carry_aval(c, d, b, size) for c, d, b in zip(init, init_dims, batched)]
        in_dims = fixed[:nc] + [0 if b else None for b in batched] + fixed[nc:]
        body, out_dims = batched_program(program, const_avals + carry_avals + x_avals, in_dims, size, batched)
        grown = [b or d is not None for b, d in zip(batched, out_dims[:nk])]
        if grown == batched:
            break
        batched = grown
    init = [with_batch(c, d, size) if b else c for c, d, b in zip(init, init_dims, batched)]
    body, extra = closure_convert(body)
    outs = scan_p.bind(*extra, *consts, *init, *xs, program=body, length=length, reverse=reverse,
                       num_consts=len(extra) + nc, num_carry=nk, **params)
    return outs, [0 if b else None for b in batched] + [None if d is None else 1 for d in out_dims[nk:]]


def _carry_aval(value, d, batched, size) -> ShapedArray:
    a = example_aval(aval_of(value), d)
    return a.update(shape=(size,) + a.shape) if batched else a


def _while(args, dims, size, *, cond_program, body_program, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    cconsts = [to_front(x, d) for x, d in zip(args[:nc], dims[:nc])]
    bconsts = [to_front(x, d) for x, d in zip(args[nc:nc + nb], dims[nc:nc + nb])]
    init, init_dims = args[nc + nb:], dims[nc + nb:]
    cdims, bdims = _front_dims(dims[:nc]), _front_dims(dims[nc:nc + nb])
    cavals, bavals = [aval_of(x) for x in cconsts], [aval_of(x) for x in bconsts]
    batched = [d is not None for d in init_dims]
    while True:
        carry_avals = [_carry_aval(c, d, b, size) for c, d, b in zip(init, init_dims, batched)]
        carry_dims = [0 if b else None for b in batched]
        body, out_dims = batched_program(body_program, bavals + carry_avals, bdims + carry_dims, size, batched)
        cond, pred_dims = batched_program(cond_program, cavals + carry_avals, cdims + carry_dims, size, [False])
        grown = [b or d is not None for b, d in zip(batched, out_dims)]
        if pred_dims[0] is not None:
            grown = [True] * len(batched)     # examples stop at different steps: every carry is per example
        if grown == batched:
            break
        batched = grown
    init = [with_batch(c, d, size) if b else c for c, d, b in zip(init, init_dims, batched)]
    if pred_dims[0] is None:
        return _while_closed(cond, cconsts, body, bconsts, init), carry_dims
    # A per-example predicate: loop while any example goes on; finished examples keep their carries.
    def going_on(cvals, carry):
        return batch_program(cond_program, cond_program.const_values, [*cvals, *carry], cdims + carry_dims,
                             size)[0][0]

    def any_going_on(*values):
        return [reduce_prims["reduce_or"].bind(going_on(values[:nc], values[nc:]), axes=(0,))]

    def step_going_on(*values):
        cvals, bvals, carry = values[:nc], values[nc:nc + nb], list(values[nc + nb:])
        pred = going_on(cvals, carry)
        new, new_dims = batch_program(body_program, body_program.const_values, [*bvals, *carry],
                                      bdims + carry_dims, size)
        return [select_n_p.bind(ops.broadcast_in_dim(pred, aval_of(old).shape, (0,)), old, with_batch(n, d, size))
                for old, n, d in zip(carry, new, new_dims)]
    cond = trace_flat(any_going_on, cavals + carry_avals, "batched while cond")
    body = trace_flat(step_going_on, cavals + bavals + carry_avals, "batched while body")
    return _while_closed(cond, cconsts, body, [*cconsts, *bconsts], init), [0] * len(init)


def _while_closed(cond, cconsts, body, bconsts, init) -> list:
    """A ``while`` of batched programs, whose captured constants (an example index, ...) become
    leading operands: loop programs must be closed."""
    cond, cextra = closure_convert(cond)
    body, bextra = closure_convert(body)
    return while_p.bind(*cextra, *cconsts, *bextra, *bconsts, *init, cond_program=cond, body_program=body,
                        cond_nconsts=len(cextra) + len(cconsts), body_nconsts=len(bextra) + len(bconsts))


def _closed_alike(programs):
    """Closure-convert branch programs so that all take the same leading operands: every branch's
    captured constants, each branch ignoring the others'. Returns ``(programs, constants)``."""
    converted = [closure_convert(p) for p in programs]
    extra = [c for _, consts in converted for c in consts]
    out, start = [], 0
    for p, consts in converted:
        n = len(consts)
        own, rest = list(p.in_vars[:n]), list(p.in_vars[n:])
        before = [Var(aval_of(c)) for c in extra[:start]]
        after = [Var(aval_of(c)) for c in extra[start + n:]]
        out.append(Program([], [], before + own + after + rest, p.eqns, p.outputs))
        start += n
    return out, extra


def _leading_batch_axes(prim):
    """Rules of primitives that already take leading batch axes (the linear-algebra ones, as NumPy's)."""
    def rule(args, dims, size, **params):
        outs = bind(prim, [with_batch(x, d, size) for x, d in zip(args, dims)], params)
        return outs, [0] * len(outs)
    return rule


def _dot_general(args, dims, size, *, dimension_numbers, **params):
    (lhs, rhs), (dl, dr) = args, dims
    (lc, rc), (lb, rb) = dimension_numbers
    shift = lambda axes: tuple(a + 1 for a in axes)  # noqa: E731
    if dl is not None and dr is not None:
        # The vmapped axis becomes the first batch dimension: the result's axis 0.
        numbers = ((shift(lc), shift(rc)), ((0,) + shift(lb), (0,) + shift(rb)))
        return [dot_general_p.bind(to_front(lhs, dl), to_front(rhs, dr), dimension_numbers=numbers,
                                   **params)], [0]
    if dl is not None:
        # A free dimension of the left operand: after the batch dimensions in the result.
        numbers = ((shift(lc), rc), (shift(lb), rb))
        return [dot_general_p.bind(to_front(lhs, dl), rhs, dimension_numbers=numbers, **params)], [len(lb)]
    # A free dimension of the right operand: after the batch and the left free dimensions.
    numbers = ((lc, shift(rc)), (lb, shift(rb)))
    lhs_free = aval_of(lhs).ndim - len(lc) - len(lb)
    return [dot_general_p.bind(lhs, to_front(rhs, dr), dimension_numbers=numbers, **params)], [len(lb) + lhs_free]


for _p in (*ELEMENTWISE, threefry2x32_p):     # threefry: elementwise over counters, keys broadcast
    if _p.name != "iota":
        batching_rules[_p] = _elementwise(_p)
batching_rules[broadcast_in_dim_p] = _broadcast_in_dim
batching_rules[reshape_p] = _reshape
batching_rules[transpose_p] = _transpose
batching_rules[squeeze_p] = _shift_axes(squeeze_p, "dimensions")
batching_rules[rev_p] = _shift_axes(rev_p, "dimensions")
batching_rules[slice_p] = _slice
batching_rules[pad_p] = _pad
batching_rules[concatenate_p] = _concatenate
batching_rules[dot_general_p] = _dot_general
for _p in (*reduce_prims.values(), argmax_p, argmin_p):
    batching_rules[_p] = _shift_axes(_p, "axes")
for _p in cumulative_prims.values():
    batching_rules[_p] = _shift_axes(_p, "axis")
batching_rules[sort_p] = _sort
batching_rules[dynamic_slice_p] = _dynamic_slice
batching_rules[dynamic_update_slice_p] = _dynamic_update_slice
for _p in (cholesky_p, det_p, eigh_p, inv_p, pinv_p, qr_p, slogdet_p, solve_p, svd_p):
    batching_rules[_p] = _leading_batch_axes(_p)
batching_rules[cond_p] = _cond
batching_rules[scan_p] = _scan
batching_rules[while_p] = _while
batching_rules[gather_p] = _gather
batching_rules[scatter_p] = _scatter
