"""Indexing primitives: gather, scatter, scatter_apply, dynamic_slice, dynamic_update_slice.

These are deliberately simpler than XLA's general gather/scatter: the
``tracejit.numpy`` front end transposes the operand so that the indexed axes
come first and builds one integer index array, so a single layout suffices.

Layout (shared by gather and the scatters)
------------------------------------------
``operand`` has shape ``I + P`` where ``I`` (``k`` axes) are the indexed axes
and ``P`` the pass-through axes. ``indices`` is an integer array of shape
``B + (k,)``: ``indices[b]`` names the element block ``operand[indices[b]]``
of shape ``P``. Gathered values and scatter updates have shape ``B + P``.
``k == 0`` is allowed (every index names the whole operand).

Out-of-bounds indices (after the front end wrapped negative indices once,
NumPy style) never touch memory outside the operand:

* gather ``mode="clip"`` clamps each index into ``[0, n - 1]``;
  ``mode="fill"`` returns ``fill_value`` for any index block that is out of range.
  (Gathering from an empty indexed axis yields ``fill_value`` / zeros.)
* scatter ``mode="drop"`` ignores out-of-range updates; ``mode="clip"`` clamps
  the indices first (JAX's ``mode='clip'``).

Repeated indices: ``add``/``mul``/``min``/``max`` combine every update (like
``np.add.at``); ``set`` is deterministic: the last update in row-major order of
``B`` wins. ``scatter_apply`` applies its unary function once per occurrence.
"""
from __future__ import annotations

import math

import numpy as np

from tracejit.core import dtypes
from tracejit.core.avals import ShapedArray
from tracejit.core.primitive import ELEMENTWISE, Primitive, def_rules
from tracejit.core.storage_dtypes import STORAGE_TRANSPARENT
from tracejit.core.interpret import interpret

GATHER_MODES = ("clip", "fill")
SCATTER_MODES = ("clip", "drop")
SCATTER_KINDS = ("set", "add", "mul", "min", "max")


def _err(name, msg):
    return TypeError(f"{name}: {msg}")


def _check_int(name, what, a):
    if not dtypes.is_integer(a.dtype):
        raise _err(name, f"{what} must have an integer dtype, got {a.dtype.name}")


def _split_layout(name, operand, indices):
    """Check the shared layout; returns (B, I, P)."""
    _check_int(name, "indices", indices)
    if indices.ndim < 1:
        raise _err(name, f"indices must have rank >= 1 (shape B + (k,)), got shape {indices.shape}")
    k = indices.shape[-1]
    if k > operand.ndim:
        raise _err(name, f"indices of shape {indices.shape} index {k} axes of an operand of rank {operand.ndim}")
    return indices.shape[:-1], operand.shape[:k], operand.shape[k:]


def _positions(indices, idx_shape, mode):
    """Row-major linear positions into the indexed axes, plus a validity mask.

    Indices are clamped (``clip``) or masked (``fill``/``drop``) *before* they
    are used, so no access can leave the operand.
    """
    k = len(idx_shape)
    idx = np.asarray(indices).reshape(-1, k)
    if idx.dtype == np.uint64:  # values >= 2**63 must stay out of range, not wrap to negatives
        idx = np.minimum(idx, np.uint64(np.iinfo(np.int64).max))
    idx = idx.astype(np.int64)
    dims = np.asarray(idx_shape, dtype=np.int64)
    if math.prod(idx_shape) == 0:
        return np.zeros(idx.shape[0], np.int64), np.zeros(idx.shape[0], bool)
    if mode == "clip":
        idx = np.clip(idx, 0, dims - 1)
        valid = np.ones(idx.shape[0], bool)
    else:
        valid = np.all((idx >= 0) & (idx < dims), axis=1)
        idx = np.where(valid[:, None], idx, 0)
    strides = np.asarray([math.prod(idx_shape[j + 1:]) for j in range(k)], dtype=np.int64)
    return idx @ strides if k else np.zeros(idx.shape[0], np.int64), valid


# --------------------------------------------------------------------------- gather

def _gather_abstract_eval(operand, indices, *, mode, fill_value):
    if mode not in GATHER_MODES:
        raise _err("gather", f"mode must be one of {GATHER_MODES}, got {mode!r}")
    if mode == "fill" and fill_value is None:
        raise _err("gather", "mode='fill' needs a fill_value")
    b, _, p = _split_layout("gather", operand, indices)
    return [ShapedArray(b + p, operand.dtype, operand.weak_type)]


def _gather_impl(operand, indices, *, mode, fill_value):
    operand = np.asarray(operand)
    k = indices.shape[-1]
    b, i_shape, p = indices.shape[:-1], operand.shape[:k], operand.shape[k:]
    lin, valid = _positions(indices, i_shape, mode)
    flat = operand.reshape((math.prod(i_shape),) + p)
    if flat.shape[0] == 0:
        out = np.zeros((lin.shape[0],) + p, operand.dtype)
    else:
        out = flat[lin]
    if mode == "fill" or flat.shape[0] == 0:
        with np.errstate(all="ignore"):
            out[~valid] = fill_value if mode == "fill" else 0
    return [out.reshape(b + p)]


def _move_cost(in_avals, out_avals, **_):
    return {"flops": 0, "transcendentals": 0}


gather_p = def_rules(Primitive("gather"), abstract_eval=_gather_abstract_eval, impl=_gather_impl,
                     cost=_move_cost)
# jvp: gather of the tangent with the same indices; transpose: scatter[kind=add, mode=drop]
# into zeros (clip-mode gathers transpose to clip-mode scatter-add).


# --------------------------------------------------------------------------- scatter

def _scatter_abstract_eval(operand, indices, updates, *, kind, mode):
    if kind not in SCATTER_KINDS:
        raise _err("scatter", f"kind must be one of {SCATTER_KINDS}, got {kind!r}")
    if mode not in SCATTER_MODES:
        raise _err("scatter", f"mode must be one of {SCATTER_MODES}, got {mode!r}")
    b, _, p = _split_layout("scatter", operand, indices)
    if updates.dtype != operand.dtype:
        raise _err("scatter", f"updates dtype {updates.dtype.name} differs from operand dtype {operand.dtype.name}")
    if updates.shape != b + p:
        raise _err("scatter", f"updates must have shape B + P = {b + p} for indices {indices.shape} and "
                   f"operand {operand.shape}, got {updates.shape}")
    return [ShapedArray(operand.shape, operand.dtype, operand.weak_type)]


_UFUNC_AT = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def _scatter_impl(operand, indices, updates, *, kind, mode):
    out = np.array(operand, order="C", copy=True)
    k = indices.shape[-1]
    i_shape, p = out.shape[:k], out.shape[k:]
    lin, valid = _positions(indices, i_shape, mode)
    flat = out.reshape((math.prod(i_shape),) + p)  # a view: `out` is a fresh contiguous copy
    upd = np.asarray(updates).reshape((lin.shape[0],) + p)
    lin, upd = lin[valid], upd[valid]
    with np.errstate(all="ignore"):
        if kind == "set":
            # Last occurrence wins, independent of NumPy's assignment order.
            _, first_from_end = np.unique(lin[::-1], return_index=True)
            keep = lin.shape[0] - 1 - first_from_end
            flat[lin[keep]] = upd[keep]
        else:
            _UFUNC_AT[kind].at(flat, lin, upd)
    return [out]


def _scatter_cost(in_avals, out_avals, *, kind, mode):
    return {"flops": 0 if kind == "set" else in_avals[2].size, "transcendentals": 0}


scatter_p = def_rules(Primitive("scatter"), abstract_eval=_scatter_abstract_eval, impl=_scatter_impl,
                      cost=_scatter_cost)
# jvp: scatter the tangents with the same kind (set/add linear; mul/min/max need the primal
# values). transpose (set/add): the updates' cotangent is a gather with the same indices.


# --------------------------------------------------------------------------- scatter_apply

def _scatter_apply_abstract_eval(operand, indices, *, program, mode):
    if mode not in SCATTER_MODES:
        raise _err("scatter_apply", f"mode must be one of {SCATTER_MODES}, got {mode!r}")
    _split_layout("scatter_apply", operand, indices)
    want = [ShapedArray((), operand.dtype)]
    if [v.aval.strip_weak() for v in program.in_vars] != want or [a.strip_weak() for a in program.out_avals] != want:
        raise _err("scatter_apply", f"program must map one {want[0].str_short()} scalar to one of the same type")
    return [ShapedArray(operand.shape, operand.dtype, operand.weak_type)]


def _apply_program(program, values):
    """Run a scalar program on an array of values: vectorized when every step is elementwise."""
    if all(e.primitive in ELEMENTWISE for e in program.eqns):
        out = interpret(program, program.const_values, [values])[0]
        return np.broadcast_to(np.asarray(out, values.dtype), values.shape)
    flat = [np.asarray(interpret(program, program.const_values, [v])[0], values.dtype) for v in values.ravel()]
    return np.asarray(flat, values.dtype).reshape(values.shape)


def _scatter_apply_impl(operand, indices, *, program, mode):
    out = np.array(operand, order="C", copy=True)
    k = indices.shape[-1]
    i_shape, p = out.shape[:k], out.shape[k:]
    lin, valid = _positions(indices, i_shape, mode)
    flat = out.reshape((math.prod(i_shape),) + p)
    counts = np.bincount(lin[valid], minlength=flat.shape[0])
    # Each occurrence of a position applies the function once more (like ufunc.at).
    for r in range(int(counts.max()) if counts.size else 0):
        pos = np.nonzero(counts > r)[0]
        with np.errstate(all="ignore"):
            flat[pos] = _apply_program(program, flat[pos])
    return [out]


scatter_apply_p = def_rules(Primitive("scatter_apply"), abstract_eval=_scatter_apply_abstract_eval,
                            impl=_scatter_apply_impl, cost=_move_cost)
# jvp/transpose: not differentiable (as in JAX).


# --------------------------------------------------------------------------- dynamic_slice

def _check_starts(name, operand, starts):
    if len(starts) != operand.ndim:
        raise _err(name, f"needs one start index per axis of {operand.shape}, got {len(starts)}")
    for s in starts:
        if s.shape != () or not dtypes.is_integer(s.dtype):
            raise _err(name, f"start indices must be integer scalars, got {s.str_short()}")


def _clamped_starts(shape, sizes, starts):
    """XLA semantics: each start is clamped to ``[0, n - size]`` so the window stays inside."""
    out = []
    for n, size, s in zip(shape, sizes, starts):
        s = np.asarray(s)
        s = int(np.minimum(s, np.iinfo(np.int64).max).astype(np.int64)) if s.dtype == np.uint64 else int(s)
        out.append(min(max(s, 0), n - size))
    return out


def _dynamic_slice_abstract_eval(operand, *starts, slice_sizes):
    _check_starts("dynamic_slice", operand, starts)
    if len(slice_sizes) != operand.ndim or any(not 0 <= s <= n for s, n in zip(slice_sizes, operand.shape)):
        raise _err("dynamic_slice", f"slice_sizes {tuple(slice_sizes)} must be within the operand shape {operand.shape}")
    return [ShapedArray(slice_sizes, operand.dtype, operand.weak_type)]


def _dynamic_slice_impl(operand, *starts, slice_sizes):
    operand = np.asarray(operand)
    lo = _clamped_starts(operand.shape, slice_sizes, starts)
    return [np.array(operand[tuple(slice(a, a + s) for a, s in zip(lo, slice_sizes))])]


dynamic_slice_p = def_rules(Primitive("dynamic_slice"), abstract_eval=_dynamic_slice_abstract_eval,
                            impl=_dynamic_slice_impl, cost=_move_cost)
# jvp: dynamic_slice of the tangent; transpose: dynamic_update_slice of the cotangent into zeros.


# --------------------------------------------------------------------------- dynamic_update_slice

def _dynamic_update_slice_abstract_eval(operand, update, *starts):
    _check_starts("dynamic_update_slice", operand, starts)
    if update.dtype != operand.dtype:
        raise _err("dynamic_update_slice", f"update dtype {update.dtype.name} differs from operand dtype "
                   f"{operand.dtype.name}")
    if update.ndim != operand.ndim or any(u > n for u, n in zip(update.shape, operand.shape)):
        raise _err("dynamic_update_slice", f"update of shape {update.shape} does not fit in operand {operand.shape}")
    return [ShapedArray(operand.shape, operand.dtype, operand.weak_type)]


def _dynamic_update_slice_impl(operand, update, *starts):
    out = np.array(operand, order="C", copy=True)
    update = np.asarray(update)
    lo = _clamped_starts(out.shape, update.shape, starts)
    out[tuple(slice(a, a + s) for a, s in zip(lo, update.shape))] = update
    return [out]


dynamic_update_slice_p = def_rules(Primitive("dynamic_update_slice"),
                                   abstract_eval=_dynamic_update_slice_abstract_eval,
                                   impl=_dynamic_update_slice_impl, cost=_move_cost)
# jvp: dynamic_update_slice of the tangents; transpose: the operand's cotangent with the window
# zeroed (dynamic_update_slice of zeros) and the update's cotangent is a dynamic_slice.

INDEXING = {gather_p, scatter_p, scatter_apply_p, dynamic_slice_p, dynamic_update_slice_p}
# Reads and overwrites move bfloat16 elements as they are (scatter may combine: it computes in float32).
STORAGE_TRANSPARENT.update({gather_p, dynamic_slice_p, dynamic_update_slice_p})
