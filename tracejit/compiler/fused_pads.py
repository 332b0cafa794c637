"""Pads read in place: the users of a ``pad`` load its operand through guarded loads.

A ``pad`` with a constant padding value whose operand's last dim is not padded is not stored as a
padded copy: each kernel that reads it loads the operand in ``fill`` mode (a gather whose indexed
dims are the padded ones), through the operand's own slices, transposes and unit reshapes down to
the array in memory. Interior padding and negative edges (crops) are the same formula. A SAME
convolution's im2col, a max-pool gradient's sum of interior-padded taps and a col2im's sum of
padded slices of one product then read their operands directly. The functions here build the
expressions for fusion's :class:`~tracejit.compiler.fusion.Planner` (``planner``).
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.core.ir import Literal, Var
from tracejit.compiler.index_maps import native_storage, structural_terms
from tracejit.compiler.kernel_ir import GatherSpec, IndexMap, Node
from tracejit.ops.elementwise import binary_prims, select_n_p


def pad_as_load(eqn) -> bool:
    """Whether the users of ``pad`` read its operand through guarded loads (:func:`pad_expr`): a
    constant padding value on a stored operand whose last dim is not padded, so the loads of a
    row stay contiguous vectors. Other pads are copies (``native_pads`` rewrites the interior
    and negative ones first)."""
    operand, value = eqn.inputs
    config = eqn.params["padding_config"]
    return (isinstance(operand, Var) and isinstance(value, Literal) and operand.aval.ndim >= 2
            and native_storage(operand.aval.dtype)
            and tuple(config[-1]) == (0, 0, 0))


def pad_view_root(planner, eqn, stop=()):
    """The stored array a fused pad reads, and the view (an :class:`IndexMap` from the pad's
    operand index to that array's index) through which it reads it: the operand's chain of
    slices, transposes and unit reshapes is looked through (col2im pads slices of one product)
    as long as every padded dim still selects elements (a broadcast along one would not)."""
    config = eqn.params["padding_config"]
    padded = {j for j, c in enumerate(config) if tuple(c) != (0, 0, 0)}
    var, view = eqn.inputs[0], IndexMap.identity(eqn.inputs[0].aval.ndim)
    while id(var) not in stop:
        prod = planner.producer.get(id(var))
        if prod is None or planner.kinds[id(prod)] != "struct" or not isinstance(prod.inputs[0], Var):
            break
        inner = view.then(structural_terms(prod))
        if not padded <= {src for src, _, _ in inner.terms}:
            break
        var, view = prod.inputs[0], inner
    return var, view


def pad_expr(planner, eqn, imap: IndexMap) -> Node:
    """A padded array read in place: output index ``i`` of a padded dim reads the operand at
    ``(i - lo) / (interior + 1)`` when that divides exactly and lands inside the operand, and is
    the padding value otherwise: a gather in ``fill`` mode on the stored array under the
    operand's views, over its dims up to the last one a padded dim selects (negative edges are
    crops, the same formula). No padded copy is stored: a SAME convolution's im2col, a pool
    gradient's sum of interior-padded taps and a col2im's sum of padded taps read their
    operands directly."""
    operand, value = eqn.inputs
    config = eqn.params["padding_config"]
    d = operand.aval.dtype
    fill = np.asarray(value.val, d)
    if operand.aval.size == 0:
        return _const(planner, d, fill.item())
    padded = {j for j, c in enumerate(config) if tuple(c) != (0, 0, 0)}
    if not padded:
        return planner.expr(operand, imap)
    root, view = pad_view_root(planner, eqn, stop=planner.materialized)
    through = imap.then(view.terms)        # iteration index -> root index (unpadded dims)
    k = 1 + max(r for r, (src, _, _) in enumerate(view.terms) if src in padded)
    args = []
    for r, (src, scale, off) in enumerate(view.terms[:k]):
        if src not in padded:
            args.append(_index(planner, through.terms[r]))
            continue
        q = _padded_index(planner, imap.terms[src], *config[src])
        n = operand.aval.shape[src]
        if (scale, off) == (1, 0) and root.aval.shape[r] == n:
            args.append(q)          # the gather's own range check is the operand's
            continue
        i64 = dtypes.int64
        inside = _op(planner, "and", dtypes.bool_, _op(planner, "ge", dtypes.bool_, q, _const(planner, i64, 0)),
                     _op(planner, "lt", dtypes.bool_, q, _const(planner, i64, n)))
        at = _op(planner, "add", i64, _op(planner, "mul", i64, q, _const(planner, i64, scale)),
                 _const(planner, i64, off))
        args.append(_op(planner, select_n_p, i64, inside, _const(planner, i64, -1), at))
    omap = IndexMap(((-1, 0, 0),) * k + tuple(through.terms[k:]))
    spec = GatherSpec("fill", fill.item(), tuple(root.aval.shape[:k]))
    bid = planner.buffer_of[id(root)]
    key = ("gather", bid, omap, spec, fill.tobytes(), tuple(id(a) for a in args))
    return planner._node(key, lambda: Node("load", d, args=tuple(args), buffer=bid, map=omap, value=spec))


def _index(planner, term) -> Node:
    """The int64 value of one index-map term (an iota node, or a constant)."""
    i64 = dtypes.int64
    if term[0] < 0:
        return _const(planner, i64, term[2])
    return planner._node(("iota", i64, term), lambda: Node("iota", i64, map=IndexMap((term,))))


def _padded_index(planner, term, lo, hi, interior) -> Node:
    """The operand index an output index ``term`` of a padded dim reads, -1 where it reads padding."""
    i64 = dtypes.int64
    src, scale, off = term
    step = interior + 1
    if src < 0:         # a constant output index: resolved here
        q, r = divmod(off - lo, step)
        return _const(planner, i64, q if r == 0 and q >= 0 else -1)
    shifted = _index(planner, (src, scale, off - lo))
    if step == 1:
        return shifted
    divisor = _const(planner, i64, step)
    on_element = _op(planner, "eq", dtypes.bool_, _op(planner, "rem", i64, shifted, divisor), _const(planner, i64, 0))
    return _op(planner, select_n_p, i64, on_element, _const(planner, i64, -1),
               _op(planner, "floordiv", i64, shifted, divisor))


def _const(planner, d, value) -> Node:
    return planner._node(("const", d, np.asarray(value, d).tobytes()), lambda: Node("const", d, value=value))


def _op(planner, prim, d, *args) -> Node:
    """An operation node (``prim`` a primitive or a binary primitive's name), shared like fusion's."""
    prim = binary_prims[prim] if isinstance(prim, str) else prim
    return planner._node(("op", prim, (), tuple(id(a) for a in args)), lambda: Node("op", d, args=args, prim=prim))
