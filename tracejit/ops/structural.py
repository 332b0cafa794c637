"""Shape and data-movement primitives: broadcast, reshape, transpose, slice,
concatenate, reverse, pad, squeeze. All params are static tuples of ints."""
from __future__ import annotations

import numpy as np

from tracejit.core.avals import ShapedArray
from tracejit.core.primitive import Primitive, def_rules
from tracejit.core.storage_dtypes import STORAGE_TRANSPARENT

_NO_COST = lambda i, o, **_: {"flops": 0, "transcendentals": 0}  # noqa: E731


def _err(name, msg):
    return TypeError(f"{name}: {msg}")


# --------------------------------------------------------------------------- broadcast_in_dim

def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim:
        raise _err("broadcast_in_dim", f"operand of shape {x.shape} needs {x.ndim} broadcast "
                   f"dimensions, got {broadcast_dimensions}")
    if list(broadcast_dimensions) != sorted(set(broadcast_dimensions)) or any(
            not 0 <= d < len(shape) for d in broadcast_dimensions):
        raise _err("broadcast_in_dim", f"broadcast_dimensions {broadcast_dimensions} must be strictly "
                   f"increasing and within the target rank {len(shape)}")
    for src, d in zip(x.shape, broadcast_dimensions):
        if src != 1 and src != shape[d]:
            raise _err("broadcast_in_dim", f"cannot broadcast operand shape {x.shape} to {shape} "
                       f"(dimension {d}: {src} vs {shape[d]})")
    return [ShapedArray(shape, x.dtype, x.weak_type)]


def _broadcast_in_dim_impl(x, *, shape, broadcast_dimensions):
    view = [1] * len(shape)
    for src, d in zip(np.shape(x), broadcast_dimensions):
        view[d] = src
    return [np.broadcast_to(np.reshape(x, view), shape)]


broadcast_in_dim_p = def_rules(Primitive("broadcast_in_dim"), abstract_eval=_broadcast_in_dim_abstract_eval,
                               impl=_broadcast_in_dim_impl, cost=_NO_COST)


# --------------------------------------------------------------------------- reshape

def _reshape_abstract_eval(x, *, new_sizes):
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        raise _err("reshape", f"cannot reshape array of shape {x.shape} (size {x.size}) into shape "
                   f"{tuple(new_sizes)}")
    return [ShapedArray(new_sizes, x.dtype, x.weak_type)]


reshape_p = def_rules(Primitive("reshape"), abstract_eval=_reshape_abstract_eval,
                      impl=lambda x, *, new_sizes: [np.reshape(x, new_sizes)], cost=_NO_COST)


# --------------------------------------------------------------------------- transpose

def _transpose_abstract_eval(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise _err("transpose", f"permutation {permutation} is not a permutation of the axes of {x.shape}")
    return [ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)]


transpose_p = def_rules(Primitive("transpose"), abstract_eval=_transpose_abstract_eval,
                        impl=lambda x, *, permutation: [np.transpose(x, permutation)], cost=_NO_COST)


# --------------------------------------------------------------------------- squeeze

def _squeeze_abstract_eval(x, *, dimensions):
    for d in dimensions:
        if not 0 <= d < x.ndim or x.shape[d] != 1:
            raise _err("squeeze", f"cannot squeeze dimension {d} of shape {x.shape} (it must have size 1)")
    return [ShapedArray(tuple(s for i, s in enumerate(x.shape) if i not in dimensions), x.dtype, x.weak_type)]


squeeze_p = def_rules(Primitive("squeeze"), abstract_eval=_squeeze_abstract_eval,
                      impl=lambda x, *, dimensions: [np.squeeze(x, axis=tuple(dimensions))], cost=_NO_COST)


# --------------------------------------------------------------------------- slice

def _slice_abstract_eval(x, *, start_indices, limit_indices, strides):
    if not (len(start_indices) == len(limit_indices) == len(strides) == x.ndim):
        raise _err("slice", f"start/limit/strides must have one entry per axis of {x.shape}")
    out = []
    for s, lo, hi, st in zip(x.shape, start_indices, limit_indices, strides):
        if not (0 <= lo <= hi <= s) or st < 1:
            raise _err("slice", f"invalid slice [{lo}:{hi}:{st}] of a dimension of size {s} in shape {x.shape}")
        out.append(max(0, -(-(hi - lo) // st)))
    return [ShapedArray(out, x.dtype, x.weak_type)]


def _slice_impl(x, *, start_indices, limit_indices, strides):
    idx = tuple(slice(lo, hi, st) for lo, hi, st in zip(start_indices, limit_indices, strides))
    return [x[idx]]


slice_p = def_rules(Primitive("slice"), abstract_eval=_slice_abstract_eval, impl=_slice_impl, cost=_NO_COST)


# --------------------------------------------------------------------------- concatenate

def _concatenate_abstract_eval(*xs, dimension):
    if not xs:
        raise _err("concatenate", "needs at least one operand")
    first = xs[0]
    if not 0 <= dimension < first.ndim:
        raise _err("concatenate", f"axis {dimension} out of range for rank {first.ndim}")
    for x in xs:
        if x.dtype != first.dtype:
            raise _err("concatenate", f"operands must share a dtype, got {[a.dtype.name for a in xs]}")
        if x.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, first.shape))
                                       if i != dimension):
            raise _err("concatenate", f"shapes {[a.shape for a in xs]} differ outside axis {dimension}")
    shape = list(first.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return [ShapedArray(shape, first.dtype, all(x.weak_type for x in xs))]


concatenate_p = def_rules(Primitive("concatenate"), abstract_eval=_concatenate_abstract_eval,
                          impl=lambda *xs, dimension: [np.concatenate(xs, axis=dimension)], cost=_NO_COST)


# --------------------------------------------------------------------------- rev

def _rev_abstract_eval(x, *, dimensions):
    if any(not 0 <= d < x.ndim for d in dimensions):
        raise _err("rev", f"dimensions {dimensions} out of range for shape {x.shape}")
    return [x]


rev_p = def_rules(Primitive("rev"), abstract_eval=_rev_abstract_eval,
                  impl=lambda x, *, dimensions: [np.flip(x, axis=tuple(dimensions)) if dimensions else x],
                  cost=_NO_COST)


# --------------------------------------------------------------------------- pad

def _pad_abstract_eval(x, padval, *, padding_config):
    if padval.shape != () or padval.dtype != x.dtype:
        raise _err("pad", f"padding value must be a scalar of dtype {x.dtype.name}")
    if len(padding_config) != x.ndim:
        raise _err("pad", f"padding_config needs one (lo, hi, interior) per axis of {x.shape}")
    shape = []
    for s, (lo, hi, interior) in zip(x.shape, padding_config):
        if interior < 0:
            raise _err("pad", "interior padding must be non-negative")
        n = lo + hi + s + max(0, s - 1) * interior
        if n < 0:
            raise _err("pad", f"padding {padding_config} makes a negative dimension for shape {x.shape}")
        shape.append(n)
    return [ShapedArray(shape, x.dtype, x.weak_type)]


def _pad_impl(x, padval, *, padding_config):
    shape = _pad_abstract_eval(ShapedArray(x.shape, x.dtype), ShapedArray((), x.dtype),
                               padding_config=padding_config)[0].shape
    out = np.full(shape, padval, dtype=x.dtype)
    src, dst = [], []
    for s, (lo, hi, interior) in zip(x.shape, padding_config):
        step = interior + 1
        positions = lo + step * np.arange(s)
        keep = (positions >= 0) & (positions < lo + hi + s + max(0, s - 1) * interior)
        src.append(np.nonzero(keep)[0])
        dst.append(positions[keep])
    out[np.ix_(*dst)] = x[np.ix_(*src)]
    return [out]


pad_p = def_rules(Primitive("pad"), abstract_eval=_pad_abstract_eval, impl=_pad_impl, cost=_NO_COST)

STRUCTURAL = {broadcast_in_dim_p, reshape_p, transpose_p, squeeze_p, slice_p, concatenate_p, rev_p, pad_p}
STORAGE_TRANSPARENT.update(STRUCTURAL)  # they move elements: bfloat16 stays bfloat16
