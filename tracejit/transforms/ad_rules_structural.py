"""Differentiation rules of data-movement, reduction, contraction and call primitives.

Most of these primitives are linear: the JVP applies the primitive to the
tangent and the VJP applies its transpose (broadcast <-> sum, slice <-> pad,
concatenate <-> slices, ...).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from tracejit.core.trace import bind
from tracejit.ops.call import call_p
from tracejit.ops.dot import dot_general_p
from tracejit.ops.reductions import cumulative_prims, reduce_prims
from tracejit.ops.structural import (broadcast_in_dim_p, concatenate_p, pad_p, reshape_p, rev_p, slice_p, squeeze_p,
                                     transpose_p)
from tracejit.transforms.ad import (aval_of, def_jvp, def_rules_by_function, def_simple_vjp, def_vjp, instantiate,
                                    jvp_program, vjp_program, zeros)
from tracejit.ops.binders import (add, binary, broadcast_in_dim, c, concatenate, convert, div, mul, pad, reduce_sum,
                                        reshape, rev, slice, transpose)


def _def_linear(prim, transpose_rule):
    """Single-operand linear primitive: JVP = the primitive on the tangent."""
    def jvp(primals, tangents, **params):
        out = bind(prim, primals, params)
        t = tangents[0]
        return out, [None if t is None else bind(prim, [t], params)[0]]

    def bwd(ct, needed, ins, outs, **params):
        return [transpose_rule(ct, aval_of(ins[0]), **params)]
    def_jvp(prim, jvp)
    def_simple_vjp(prim, bwd)


# --------------------------------------------------------------------------- shape primitives

def _broadcast_in_dim_t(ct, x, *, shape, broadcast_dimensions):
    new = [d for d in range(len(shape)) if d not in broadcast_dimensions]
    stretched = [d for s, d in zip(x.shape, broadcast_dimensions) if s == 1 and shape[d] != 1]
    return reshape(reduce_sum(ct, new + stretched), x.shape)


def _slice_t(ct, x, *, start_indices, limit_indices, strides):
    out_shape = aval_of(ct).shape
    if any(n == 0 for n in out_shape):
        return zeros(x)
    config = [(lo, s - (lo + (n - 1) * st + 1), st - 1)
              for s, lo, n, st in zip(x.shape, start_indices, out_shape, strides)]
    return pad(ct, c(0, ct), config)


_def_linear(broadcast_in_dim_p, _broadcast_in_dim_t)
_def_linear(reshape_p, lambda ct, x, *, new_sizes: reshape(ct, x.shape))
_def_linear(squeeze_p, lambda ct, x, *, dimensions: reshape(ct, x.shape))
_def_linear(transpose_p, lambda ct, x, *, permutation: transpose(ct, np.argsort(permutation)))
_def_linear(rev_p, lambda ct, x, *, dimensions: rev(ct, dimensions))
_def_linear(slice_p, _slice_t)


def _concatenate_jvp(primals, tangents, *, dimension):
    out = concatenate_p.bind(*primals, dimension=dimension)
    if all(t is None for t in tangents):
        return [out], [None]
    ts = [instantiate(t, aval_of(p)) for t, p in zip(tangents, primals)]
    return [out], [concatenate_p.bind(*ts, dimension=dimension)]


def _concatenate_bwd(ct, needed, ins, outs, *, dimension):
    res, offset = [], 0
    shape = aval_of(ct).shape
    for n, x in zip(needed, ins):
        size = aval_of(x).shape[dimension]
        if n:
            start = [0] * len(shape)
            limit = list(shape)
            start[dimension], limit[dimension] = offset, offset + size
            res.append(slice(ct, start, limit))
        else:
            res.append(None)
        offset += size
    return res


def_jvp(concatenate_p, _concatenate_jvp)
def_simple_vjp(concatenate_p, _concatenate_bwd)


def _pad_jvp(primals, tangents, *, padding_config):
    out = pad_p.bind(*primals, padding_config=padding_config)
    if all(t is None for t in tangents):
        return [out], [None]
    tx, tv = (instantiate(t, aval_of(p)) for t, p in zip(tangents, primals))
    return [out], [pad_p.bind(tx, tv, padding_config=padding_config)]


def _pad_bwd(ct, needed, ins, outs, *, padding_config):
    # Transpose as in JAX: undo negative padding, then take every (interior+1)-th element.
    lo, hi, interior = zip(*padding_config)
    unpadded = pad(ct, c(0, ct), [(-a, -b, 0) for a, b in zip(lo, hi)])
    shape = aval_of(unpadded).shape
    ct_x = slice(unpadded, [0] * len(shape), shape, [i + 1 for i in interior])
    ct_v = None
    if needed[1]:
        axes = range(len(shape))
        ct_v = binary("sub", reduce_sum(ct, axes), reduce_sum(ct_x, axes))
    return [ct_x if needed[0] else None, ct_v]


def_jvp(pad_p, _pad_jvp)
def_simple_vjp(pad_p, _pad_bwd)


# --------------------------------------------------------------------------- reductions

def _kept(ndim, axes):
    return [d for d in range(ndim) if d not in axes]


_def_linear(reduce_prims["reduce_sum"],
            lambda ct, x, *, axes: broadcast_in_dim(ct, x.shape, _kept(x.ndim, axes)))


def _chooser_parts(x, ans, axes):
    """Indicator of the positions attaining the extremum, and how many tie."""
    xa = aval_of(x)
    loc = convert(binary("eq", x, broadcast_in_dim(ans, xa.shape, _kept(xa.ndim, axes))), xa.dtype)
    return loc, reduce_sum(loc, axes)


def _def_chooser(prim):
    # The gradient goes to the extremal positions, split equally among ties (as in JAX).
    def jvp(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        loc, counts = _chooser_parts(x, ans, axes)
        return [ans], [div(reduce_sum(mul(t, loc), axes), counts)]

    def bwd(ct, needed, ins, outs, *, axes):
        x = ins[0]
        loc, counts = _chooser_parts(x, outs[0], axes)
        xa = aval_of(x)
        return [mul(loc, broadcast_in_dim(div(ct, counts), xa.shape, _kept(xa.ndim, axes)))]
    def_jvp(prim, jvp)
    def_simple_vjp(prim, bwd)


_def_chooser(reduce_prims["reduce_max"])
_def_chooser(reduce_prims["reduce_min"])


def _product_of_others(x, axes):
    """For each element, the product of the other elements of its reduction group
    (exclusive prefix times exclusive suffix products, so zeros are handled)."""
    xa = aval_of(x)
    kept = _kept(xa.ndim, axes)
    perm = kept + list(axes)
    xt = transpose(x, perm)
    kept_shape = tuple(xa.shape[d] for d in kept)
    n = math.prod(xa.shape[d] for d in axes)
    if n == 0:
        return zeros(xa)
    flat = reshape(xt, kept_shape + (n,))
    ax = len(kept_shape)
    cumprod = cumulative_prims["cumprod"]
    left = cumprod.bind(flat, axis=ax, reverse=False)
    right = cumprod.bind(flat, axis=ax, reverse=True)
    full = kept_shape + (n,)
    head = [0] * (ax + 1)
    one = c(1, x)
    no_pad = [(0, 0, 0)] * ax
    left_ex = pad(slice(left, head, kept_shape + (n - 1,)), one, no_pad + [(1, 0, 0)])
    right_ex = pad(slice(right, [0] * ax + [1], full), one, no_pad + [(0, 1, 0)])
    others = reshape(mul(left_ex, right_ex), aval_of(xt).shape)
    return transpose(others, np.argsort(perm))


def _reduce_prod_jvp(primals, tangents, *, axes):
    (x,), (t,) = primals, tangents
    ans = reduce_prims["reduce_prod"].bind(x, axes=axes)
    return [ans], [reduce_sum(mul(t, _product_of_others(x, axes)), axes)]


def _reduce_prod_bwd(ct, needed, ins, outs, *, axes):
    xa = aval_of(ins[0])
    return [mul(broadcast_in_dim(ct, xa.shape, _kept(xa.ndim, axes)), _product_of_others(ins[0], axes))]


def_jvp(reduce_prims["reduce_prod"], _reduce_prod_jvp)
def_simple_vjp(reduce_prims["reduce_prod"], _reduce_prod_bwd)


# --------------------------------------------------------------------------- cumulative reductions

_cumsum = cumulative_prims["cumsum"]
_def_linear(_cumsum, lambda ct, x, *, axis, reverse: _cumsum.bind(ct, axis=axis, reverse=not reverse))


def _slice_in_dim(x, start, limit, stride, axis):
    shape = aval_of(x).shape
    lo, hi, st = [0] * len(shape), list(shape), [1] * len(shape)
    lo[axis], hi[axis], st[axis] = start, limit, stride
    return slice(x, lo, hi, st)


def _interleave(a, b, axis):
    """``[a0, b0, a1, b1, ...]`` along ``axis`` (``a`` has as many elements as ``b``, or one more)."""
    sa, sb = aval_of(a).shape, aval_of(b).shape
    na, nb = sa[axis], sb[axis]
    head = a if na == nb else _slice_in_dim(a, 0, nb, 1, axis)
    pair = tuple(sb[:axis + 1]) + (1,) + tuple(sb[axis + 1:])
    both = concatenate([reshape(head, pair), reshape(b, pair)], axis + 1)
    merged = reshape(both, tuple(sb[:axis]) + (2 * nb,) + tuple(sb[axis + 1:]))
    return merged if na == nb else concatenate([merged, _slice_in_dim(a, nb, na, 1, axis)], axis)


def associative_scan(op, x, axis, reverse):
    """Inclusive scan of ``op`` along ``axis`` with JAX's ``lax.associative_scan``
    combination tree (pairs, recursion on the pair results, then the even
    positions), written with slices and concatenations so it differentiates like
    any program. JAX differentiates cumprod/cummax/cummin through exactly this
    tree, so ties in cummax/cummin share the derivative as in JAX."""
    if reverse:
        x = rev(x, (axis,))

    def scan(e):
        n = aval_of(e).shape[axis]
        if n < 2:
            return e
        reduced = op(_slice_in_dim(e, 0, n - 1, 2, axis), _slice_in_dim(e, 1, n, 2, axis))
        odd = scan(reduced)
        if n % 2 == 0:
            m = aval_of(odd).shape[axis]
            even = op(_slice_in_dim(odd, 0, m - 1, 1, axis), _slice_in_dim(e, 2, n, 2, axis))
        else:
            even = op(odd, _slice_in_dim(e, 2, n, 2, axis))
        even = concatenate([_slice_in_dim(e, 0, 1, 1, axis), even], axis)
        return _interleave(even, odd, axis)
    out = scan(x)
    return rev(out, (axis,)) if reverse else out


prefix_scan = associative_scan


def _scan_decomposition(op_name):
    def fn(x, *, axis, reverse):
        return [associative_scan(lambda a, b: binary(op_name, a, b), x, axis, reverse)]
    return fn


for _name, _op in (("cumprod", "mul"), ("cummax", "max"), ("cummin", "min")):
    def_rules_by_function(cumulative_prims[_name], _scan_decomposition(_op))


# --------------------------------------------------------------------------- dot_general

def _ranges_like(*xs):
    start = 0
    for x in xs:
        yield list(range(start, start + len(x)))
        start += len(x)


def _remaining(original, *removed_lists):
    removed = set(itertools.chain(*removed_lists))
    return [i for i in original if i not in removed]


def _dot_transpose_lhs(g, x_aval, y, dimension_numbers, swap_ans=False):
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    y_ndim = aval_of(y).ndim
    x_kept = _remaining(range(x_aval.ndim), x_contract, x_batch)
    y_kept = _remaining(range(y_ndim), y_contract, y_batch)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((tuple(ans_y), tuple(y_kept)), (tuple(ans_batch), tuple(y_batch)))
    x_contract_sorted_by_y = [x_contract[i] for i in np.argsort(y_contract)]
    out_axes = np.argsort(list(x_batch) + x_kept + x_contract_sorted_by_y)
    return transpose(dot_general_p.bind(g, y, dimension_numbers=dims), out_axes)


def _dot_transpose_rhs(g, x, y_aval, dimension_numbers):
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    swapped = ((y_contract, x_contract), (y_batch, x_batch))
    return _dot_transpose_lhs(g, y_aval, x, swapped, swap_ans=True)


def _dot_jvp(primals, tangents, *, dimension_numbers):
    (x, y), (tx, ty) = primals, tangents
    out = dot_general_p.bind(x, y, dimension_numbers=dimension_numbers)
    t = None
    if tx is not None:
        t = dot_general_p.bind(tx, y, dimension_numbers=dimension_numbers)
    if ty is not None:
        t = add(t, dot_general_p.bind(x, ty, dimension_numbers=dimension_numbers)) if t is not None else \
            dot_general_p.bind(x, ty, dimension_numbers=dimension_numbers)
    return [out], [t]


def _dot_bwd(ct, needed, ins, outs, *, dimension_numbers):
    x, y = ins
    return [_dot_transpose_lhs(ct, aval_of(x), y, dimension_numbers) if needed[0] else None,
            _dot_transpose_rhs(ct, x, aval_of(y), dimension_numbers) if needed[1] else None]


def_jvp(dot_general_p, _dot_jvp)
def_simple_vjp(dot_general_p, _dot_bwd)


# --------------------------------------------------------------------------- call

def _call_vjp(needed, *ins, program, name):
    # The sub-program is differentiated in place (its forward is inlined).
    n = len(program.const_vars)
    outs, _, bwd = vjp_program(program, ins[:n], ins[n:], needed[:n], needed[n:])

    def backward(cts):
        const_cts, arg_cts = bwd(cts)
        return const_cts + arg_cts
    return outs, backward


def _call_jvp(primals, tangents, *, program, name):
    n = len(program.const_vars)
    return jvp_program(program, primals[:n], primals[n:], tangents[:n], tangents[n:])


def_vjp(call_p, _call_vjp)
def_jvp(call_p, _call_jvp)
