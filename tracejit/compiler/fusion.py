"""Fusion: partition an optimized Program into steps — fused kernels, BLAS
contractions and per-op NumPy steps — over numbered buffers.

Decisions, in order:
1. *Materialize* a value (give it a buffer) when something needs memory:
   program inputs/outputs, results of non-fusible steps, operands of
   non-fusible steps, inputs of non-affine reshapes, and values used more than
   once whose computation is expensive (contains a transcendental or a
   reduction). Everything else is recomputed inside its consumers.
2. Structural ops (broadcast, transpose, slice, rev, squeeze, size-1
   reshapes) become index maps of loads: *layout* folding, no data moves.
   A reshape of a materialized (contiguous) buffer is an alias of it.
3. One loop kernel per materialized elementwise value; one row kernel per
   reduction with its producer expression inlined.
4. Merging: loop kernels over the same space combine (sibling outputs share
   one pass); row kernels over the same input space absorb later kernels
   that read their results per row (softmax and LayerNorm become one kernel).
"""
from __future__ import annotations

import math
import numpy as np

from tracejit.core import dtypes
from tracejit.core.avals import ShapedArray
from tracejit.core.ir import Literal, Program, Var
from tracejit.core.primitive import ELEMENTWISE, NATIVE_CALL
from tracejit.compiler.plan import (CONTROL_FLOW, Buffer, DotStep, NumpyStep, Plan, WindowStep,  # noqa: F401
                                    base_buffer, step_reads, step_writes)
from tracejit.compiler.kernel_ir import GatherSpec, IndexMap, Kernel, Node, Phase, is_gather, walk
from tracejit.compiler.index_maps import STRUCTURAL as _STRUCTURAL, native_storage as _native_storage, structural_terms
from tracejit.compiler.fused_pads import pad_as_load, pad_expr, pad_view_root
from tracejit.ops.conv_windows import conv_windows_p, conv_windows_wgrad_p
from tracejit.ops.dot import dot_general_p
from tracejit.ops.elementwise import iota_p
from tracejit.ops.indexing import dynamic_slice_p, dynamic_update_slice_p, gather_p, scatter_p
from tracejit.ops.reductions import argmax_p, argmin_p, cumulative_prims
from tracejit.ops.sorting import sort_p
from tracejit.ops.structural import (broadcast_in_dim_p, concatenate_p, pad_p, reshape_p, slice_p, squeeze_p,
                                     transpose_p)

_REDUCE_OPS = {"reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min", "reduce_prod": "prod",
               "reduce_and": "and", "reduce_or": "or"}
_EXPENSIVE = {"exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "tanh", "sinh",
              "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "erf", "logistic", "pow", "atan2",
              "cbrt", "floordiv", "rem", "fmod"}

_COSTLY = _EXPENSIVE | {"sqrt", "rsqrt", "div"}


# Scatters compiled as native loops (complex and float16 updates run NumPy's ufunc.at).
_NATIVE_SCATTER_DTYPES = {dtypes.bool_, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8,
                          dtypes.uint16, dtypes.uint32, dtypes.uint64, dtypes.float32, dtypes.float64}
# Cumulative ops, argmax/argmin and short sorts run as serial native loops along their axis
# (window.py), per primitive on these operand dtypes: NumPy's accumulate order, so sums and products
# are bit-identical. Complex cumprod (NumPy's scalar complex multiply) and float16 stay NumPy steps.
_NATIVE_AXIS_DTYPES = {p: _NATIVE_SCATTER_DTYPES - {dtypes.bool_} for p in (*cumulative_prims.values(), sort_p)}
_NATIVE_AXIS_DTYPES.update({argmax_p: _NATIVE_SCATTER_DTYPES, argmin_p: _NATIVE_SCATTER_DTYPES})
# A sort of one operand along an axis at most this long, of at most NATIVE_SORT_ELEMENTS elements, is
# a native insertion sort (stable, NaN last): what loop bodies sort. NumPy's sort is 1.5-2x faster on
# large arrays (measured here), so those stay NumPy steps.
NATIVE_SORT_MAX = 128
NATIVE_SORT_ELEMENTS = 16384
# A costly value broadcast to at least this many times its size is materialized at its own size.
# A value fused through more operations than this is stored (recursion depth; see _limit_depth).
MAX_FUSED_DEPTH = 64
BROADCAST_MATERIALIZE_FACTOR = 8
EXPENSIVE_BROADCAST_MATERIALIZE_FACTOR = 2
# A computed value read by at least this many slices (window taps) and costing at least this many
# operations is stored once instead of recomputed per tap.
TAP_MATERIALIZE_READS = 4
TAP_MATERIALIZE_OPS = 4
OP_COUNT_CAP = 1 << 10


# --------------------------------------------------------------------------- planner

class Planner:
    def __init__(self, program: Program, can_lower, can_reduce, donated=()):
        self.program = program
        self.can_lower = can_lower      # eqn -> bool (elementwise codegen exists)
        self.can_reduce = can_reduce    # eqn -> bool
        # Inputs whose memory outputs may take over (a loop body's carries): rows are read out of
        # them through a copy, so that a kernel rewriting the whole input can still do it in place.
        self.donated_inputs = {id(program.in_vars[i]) for i in donated}
        self.producer: dict[int, object] = {}
        self.uses: dict[int, int] = {}
        self.plan = Plan()
        self.buffer_of: dict[int, int] = {}
        self._memo: dict = {}
        self._expr_memo: dict = {}
        self._expensive_memo: dict = {}
        self._costly_memo: dict = {}
        self._op_count_memo: dict = {}

    # ----------------------------------------------------------- classification
    def kind(self, eqn) -> str:
        p = eqn.primitive
        if p in NATIVE_CALL and all(isinstance(a, Var) for a in eqn.inputs) and NATIVE_CALL[p](eqn):
            return "window"     # one call into a C library (an MPI collective) on arena buffers
        if p is concatenate_p and all(isinstance(a, Var) for a in eqn.inputs) and self._fusible_dtype(eqn):
            return "window"     # row copies of each operand into place
        if p in _STRUCTURAL:
            if structural_terms(eqn) is not None and self._fusible_dtype(eqn):
                return "struct"
            if p is reshape_p and isinstance(eqn.inputs[0], Var):
                return "reshape"        # an alias of the operand's buffer (a literal has none)
            return "numpy"
        if p in ELEMENTWISE and self.can_lower(eqn):
            return "ew"
        if p.name in _REDUCE_OPS and self.can_reduce(eqn):
            return "reduce"
        if p is gather_p and isinstance(eqn.inputs[0], Var) and self._fusible_dtype(eqn) \
                and _native_storage(eqn.inputs[0].aval.dtype):
            return "gather"     # an indexed load inside a kernel (the operand stays in memory)
        if p is dot_general_p and eqn.inputs[0].aval.dtype.kind in "fc":
            return "dot"
        if p is pad_p and pad_as_load(eqn):
            return "gather"     # guarded loads of the operand inside its users' kernels
        if p is pad_p and isinstance(eqn.inputs[0], Var) and all(
                lo >= 0 and hi >= 0 and interior == 0 for lo, hi, interior in eqn.params["padding_config"]):
            return "window"     # a fill and one block copy (cropping or interior padding: NumPy)
        if p is scatter_p and all(isinstance(a, Var) for a in eqn.inputs) \
                and eqn.inputs[0].aval.dtype in _NATIVE_SCATTER_DTYPES:
            return "window"     # a serial loop over the updates, in place when the operand dies here
        if p in _NATIVE_AXIS_DTYPES and isinstance(eqn.inputs[0], Var) \
                and eqn.inputs[0].aval.dtype in _NATIVE_AXIS_DTYPES[p] and (p is not sort_p or (
                    len(eqn.inputs) == 1 and eqn.inputs[0].aval.size <= NATIVE_SORT_ELEMENTS
                    and eqn.inputs[0].aval.shape[eqn.params["dimension"]] <= NATIVE_SORT_MAX)):
            return "window"     # a serial native loop along the axis (a sort: insertion sort per line)
        if p is dynamic_slice_p and isinstance(eqn.inputs[0], Var) and self._fusible_dtype(eqn) \
                and _native_storage(eqn.inputs[0].aval.dtype) and _indexed_prefix(eqn) \
                and (_indexed_prefix(eqn) == eqn.inputs[0].aval.ndim or id(eqn.inputs[0]) not in self.donated_inputs):
            return "gather"     # x[i] / x[i, j] with traced i, j: a clamped load inside the kernel
        if p in (dynamic_slice_p, dynamic_update_slice_p):
            arrays = eqn.inputs[:1] if p is dynamic_slice_p else eqn.inputs[:2]
            return "window" if all(isinstance(a, Var) for a in arrays) else "numpy"
        if p in (conv_windows_p, conv_windows_wgrad_p) and all(isinstance(a, Var) for a in eqn.inputs):
            return "window"     # a convolution (or its kernel's cotangent) reading the input's windows in place
        return "numpy"

    def _fusible_dtype(self, eqn):
        # Complex loads and stores are native too (interleaved parts), and bfloat16's (16-bit
        # patterns widened to float registers); float16 is not.
        return all(_native_storage(v.aval.dtype) for v in eqn.outputs)

    def _new_buffer(self, aval, kind="temp", **kw) -> int:
        b = Buffer(len(self.plan.buffers), aval.shape, aval.dtype, kind, **kw)
        self.plan.buffers.append(b)
        return b.id

    # ----------------------------------------------------------- materialization
    def _expensive(self, var) -> bool:
        key = id(var)
        if key in self._expensive_memo:
            return self._expensive_memo[key]
        eqn = self.producer.get(key)
        result = False
        if eqn is not None and self.kinds[id(eqn)] in ("ew", "struct"):
            if eqn.primitive.name in _EXPENSIVE:
                result = True
            else:
                result = any(isinstance(a, Var) and id(a) not in self.materialized and self._expensive(a)
                             for a in eqn.inputs)
        self._expensive_memo[key] = result
        return result

    def _view_root(self, var):
        """``var`` with reshapes that keep its size (adding or dropping size-1 dims) looked through."""
        while isinstance(var, Var):
            eqn = self.producer.get(id(var))
            if (eqn is None or eqn.primitive not in (reshape_p, squeeze_p, broadcast_in_dim_p)
                    or self.kinds[id(eqn)] != "struct" or not isinstance(eqn.inputs[0], Var)
                    or eqn.inputs[0].aval.size != var.aval.size):
                return var
            var = eqn.inputs[0]
        return var

    def _costly(self, var) -> bool:
        """Contains a transcendental, sqrt or division before the nearest materialized values."""
        key = id(var)
        if key in self._costly_memo:      # memoized: shared sub-DAGs (threefry) would be exponential
            return self._costly_memo[key]
        eqn = self.producer.get(key)
        result = False
        if eqn is not None and self.kinds[id(eqn)] in ("ew", "struct"):
            result = eqn.primitive.name in _COSTLY or any(
                isinstance(a, Var) and id(a) not in self.materialized and self._costly(a) for a in eqn.inputs)
        self._costly_memo[key] = result
        return result

    def _op_count(self, var) -> int:
        """Elementwise operations computing ``var`` from the nearest materialized values (shared
        sub-expressions counted per use, at most OP_COUNT_CAP)."""
        key = id(var)
        if key in self._op_count_memo:
            return self._op_count_memo[key]
        eqn = self.producer.get(key)
        count = 0
        if eqn is not None and key not in self.materialized and self.kinds[id(eqn)] in ("ew", "struct"):
            count = (self.kinds[id(eqn)] == "ew") + sum(
                self._op_count(a) for a in eqn.inputs if isinstance(a, Var))
        self._op_count_memo[key] = count = min(count, OP_COUNT_CAP)
        return count

    def _computed_row(self, bcast, src) -> bool:
        """``src`` is computed (not a view of a load) and repeated along outer axes of ``bcast``.

        A value that varies along the innermost axis, repeated over outer ones (a masked vector in a
        matrix-vector product, ``L @ where(idx < j, v, 0)``), would be recomputed for every outer
        index: LLVM cannot hoist it out of the outer loop, and each vector of it costs its loads
        and ops again where one load of a stored copy would do (Cholesky's step: 2.6 -> 1.2 us for
        a 128x128 masked product). Broadcasts along the innermost axis (a per-row statistic)
        are loop-invariant in the inner loop already and stay fused.
        """
        out = bcast.outputs[0].aval
        dims = bcast.params["broadcast_dimensions"]
        varies_inner = any(d == out.ndim - 1 and s > 1 for s, d in zip(bcast.inputs[0].aval.shape, dims))
        eqn = self.producer.get(id(src))
        return varies_inner and eqn is not None and self.kinds[id(eqn)] == "ew" and eqn.primitive is not iota_p

    def decide(self):
        prog = self.program
        self.kinds = {id(e): self.kind(e) for e in prog.eqns}
        for e in prog.eqns:
            for v in e.outputs:
                self.producer[id(v)] = e
            for a in e.inputs:
                if isinstance(a, Var):
                    self.uses[id(a)] = self.uses.get(id(a), 0) + 1
        for a in prog.outputs:
            if isinstance(a, Var):
                self.uses[id(a)] = self.uses.get(id(a), 0) + 1
        m = set()
        self.materialized = m     # grows below; the cost checks look at what is materialized so far
        m.update(id(v) for v in prog.in_vars + prog.const_vars)
        m.update(id(a) for a in prog.outputs if isinstance(a, Var))
        for e in prog.eqns:
            k = self.kinds[id(e)]
            if k in ("numpy", "dot", "reduce", "reshape", "window"):
                m.update(id(v) for v in e.outputs)
            if k in ("numpy", "dot", "window"):
                m.update(id(a) for a in e.inputs if isinstance(a, Var))
            if k == "reshape":
                m.add(id(e.inputs[0]))
            if k == "gather":
                m.add(id(pad_view_root(self, e)[0] if e.primitive is pad_p else e.inputs[0]))
        # A scatter's updates computed by an expression used nowhere else are evaluated inside the
        # scatter loop (a CSR mat-vec's ``vals * x[cols]``): not written to memory and read back.
        for e in prog.eqns:
            upd = e.inputs[2] if e.primitive is scatter_p and len(e.inputs) == 3 else None
            if (self.kinds[id(e)] == "window" and isinstance(upd, Var) and self.uses.get(id(upd)) == 1
                    and id(upd) in self.producer
                    and self.kinds[id(self.producer[id(upd)])] in ("ew", "struct", "gather")
                    and upd.aval.dtype == e.outputs[0].aval.dtype and upd.aval.size > 0):
                m.discard(id(upd))
        # Concatenation operands computed by an expression used nowhere else are stored by their
        # kernels straight into their slab of the result (a convolution's im2col taps): no
        # per-operand buffer copied again by the concatenation.
        outputs = {id(a) for a in prog.outputs}
        for e in prog.eqns:
            if e.primitive is not concatenate_p or self.kinds[id(e)] != "window" or id(e.outputs[0]) in outputs:
                continue
            for a in e.inputs:
                if (self.uses.get(id(a)) == 1 and id(a) in self.producer and a.aval.size > 0
                        and self.kinds[id(self.producer[id(a)])] in ("ew", "struct", "gather")):
                    m.discard(id(a))
        # Dot operands that are transposes of materialized buffers stay views (BLAS flags), also
        # through a chain of transposes (attention's ``k.transpose(0, 2, 1, 3).transpose(0, 1, 3, 2)``).
        # A transpose read only by products (one or several: the backward of attention reads
        # q, k and v transposed in two products each) is never materialized.
        self.dot_views: dict[int, tuple] = {}
        dot_reads: dict[int, int] = {}
        for e in prog.eqns:
            if self.kinds[id(e)] == "dot":
                for a in e.inputs:
                    dot_reads[id(a)] = dot_reads.get(id(a), 0) + 1

        def transposed_once(v, readers=1):
            pe = self.producer.get(id(v))
            if pe is not None and pe.primitive is transpose_p and self.uses.get(id(v), 0) == readers \
                    and v not in prog.outputs:
                return pe
            return None

        for e in prog.eqns:
            if self.kinds[id(e)] != "dot":
                continue
            for a in e.inputs:
                pe = transposed_once(a, dot_reads[id(a)])
                if pe is None:
                    continue
                base, perm = pe.inputs[0], tuple(pe.params["permutation"])
                m.discard(id(a))
                while (inner := transposed_once(base)) is not None:
                    m.discard(id(base))
                    inner_perm = inner.params["permutation"]
                    base, perm = inner.inputs[0], tuple(inner_perm[p] for p in perm)
                m.add(id(base))
                self.dot_views[id(a)] = (base, perm)
        # Costly values broadcast over many elements are computed once at their own size: a
        # per-row statistic (LayerNorm's 1/sqrt(var + eps)) would otherwise be recomputed for
        # every element of the row, e.g. in a column kernel, which cannot hoist it. A value holding
        # a transcendental is worth a store and a load already when broadcast twice (n-body's
        # pairwise weights ``w[:, :, None]`` over 3 coordinates computed pow 3 times per pair).
        for e in prog.eqns:
            if e.primitive is broadcast_in_dim_p and self.kinds[id(e)] == "struct":
                # The value itself, not a reshaped view of it: its other users then load it too
                # (LU's multipliers are broadcast as l[:, None] and also stored as a column).
                src = self._view_root(e.inputs[0])
                if not isinstance(src, Var) or src.aval.ndim == 0 or id(src) in m:
                    continue
                factor = e.outputs[0].aval.size / max(src.aval.size, 1)
                if ((factor >= BROADCAST_MATERIALIZE_FACTOR and (self._costly(src) or self._computed_row(e, src)))
                        or (factor >= EXPENSIVE_BROADCAST_MATERIALIZE_FACTOR and self._expensive(src))):
                    m.add(id(src))
        # A value read by many window taps (slices of it: a pooled map under the next layer's
        # im2col) is computed once when it takes several operations: each tap would recompute it
        # (LeNet's second convolution recomputed its input's 2x2 max pool for each of 25 taps).
        slice_reads: dict = {}
        for e in prog.eqns:
            if e.primitive is slice_p and isinstance(e.inputs[0], Var):
                slice_reads[id(e.inputs[0])] = slice_reads.get(id(e.inputs[0]), 0) + 1
        for e in prog.eqns:
            if self.kinds[id(e)] == "ew":
                for v in e.outputs:
                    if (slice_reads.get(id(v), 0) >= TAP_MATERIALIZE_READS and id(v) not in m
                            and self._op_count(v) >= TAP_MATERIALIZE_OPS):
                        m.add(id(v))
        # Expensive values with several uses are computed once.
        for e in prog.eqns:
            if self.kinds[id(e)] in ("ew", "struct"):
                for v in e.outputs:
                    if self.uses.get(id(v), 0) > 1 and v.aval.ndim > 0 and self._expensive(v):
                        m.add(id(v))
        self._limit_depth(prog)

    def _limit_depth(self, prog) -> None:
        """Materialize every MAX_FUSED_DEPTH-th value of a long chain of fused operations (an
        unrolled loop's ``s = f(s)`` 200 times): expressions are built and lowered recursively, and a
        chain as deep as the program overflowed Python's stack."""
        m, depth = self.materialized, {}
        for e in prog.eqns:
            if self.kinds[id(e)] not in ("ew", "struct", "gather"):
                continue
            d = 1 + max((depth.get(id(a), 0) for a in e.inputs if isinstance(a, Var) and id(a) not in m), default=0)
            for v in e.outputs:
                if d >= MAX_FUSED_DEPTH and id(v) not in m:
                    m.add(id(v))
                depth[id(v)] = 0 if id(v) in m else d

    # ----------------------------------------------------------- expressions
    def expr(self, atom, imap: IndexMap, kernel_out=None) -> Node:
        # Memoized per (value, index map): programs such as threefry's rounds reuse
        # values heavily, and re-walking shared sub-DAGs would be exponential.
        key = (id(atom), imap, atom is kernel_out)
        node = self._expr_memo.get(key)
        if node is None:
            node = self._expr(atom, imap, kernel_out)
            self._expr_memo[key] = node
        return node

    def _expr(self, atom, imap: IndexMap, kernel_out=None) -> Node:
        if isinstance(atom, Literal):
            # Keyed by the value's bytes: 0.0 == -0.0 (and NaN != NaN) as Python values.
            return self._node(("const", atom.aval.dtype, np.asarray(atom.val).tobytes()), lambda: Node(
                "const", atom.aval.dtype, value=atom.val.item()))
        if atom.aval.ndim == 0:
            imap = IndexMap(())
        if id(atom) in self.materialized and atom is not kernel_out:
            return self._load(atom, imap)
        eqn = self.producer[id(atom)]
        k = self.kinds[id(eqn)]
        if k == "struct":
            return self.expr(eqn.inputs[0], imap.then(structural_terms(eqn)))
        if eqn.primitive is iota_p:
            dim = eqn.params["dimension"]
            term = imap.terms[dim] if imap.terms else (-1, 0, 0)
            return self._node(("iota", eqn.params["dtype"], term),
                              lambda: Node("iota", eqn.params["dtype"], map=IndexMap((term,))))
        if k == "gather" and eqn.primitive is dynamic_slice_p:
            return self._dynamic_slice_expr(eqn, imap)
        if k == "gather" and eqn.primitive is pad_p:
            return pad_expr(self, eqn, imap)
        if k == "gather":
            return self._gather_expr(eqn, imap)
        assert k == "ew", (eqn.primitive, k)
        args = tuple(self.expr(a, imap if a.aval.ndim else IndexMap(())) for a in eqn.inputs)
        params = tuple(sorted(eqn.params.items()))
        key = ("op", eqn.primitive, params, tuple(id(a) for a in args))
        return self._node(key, lambda: Node("op", eqn.outputs[0].aval.dtype, args=args, prim=eqn.primitive,
                                            params=params))

    def _gather_expr(self, eqn, imap: IndexMap) -> Node:
        """``operand[indices[b], p]`` at output index ``(b, p)``: one index expression per indexed dim."""
        operand, indices = eqn.inputs
        k = indices.aval.shape[-1]
        nb = indices.aval.ndim - 1
        indexed = operand.aval.shape[:k]
        mode, fill = eqn.params["mode"], eqn.params["fill_value"]
        d = operand.aval.dtype
        if math.prod(indexed) == 0:      # nothing to read: every element is the fill (or zero)
            value = fill if mode == "fill" else 0
            return self._node(("const", d, np.asarray(value, d).tobytes()),
                              lambda: Node("const", d, value=np.asarray(value, d).item()))
        terms = imap.terms if imap.terms else ((-1, 0, 0),) * (nb + operand.aval.ndim - k)
        args = tuple(self.expr(indices, IndexMap(tuple(terms[:nb]) + ((-1, 0, j),))) for j in range(k))
        omap = IndexMap(((-1, 0, 0),) * k + tuple(terms[nb:]))
        spec = GatherSpec(mode, fill if mode == "fill" else None, tuple(indexed))
        bid = self.buffer_of[id(operand)]
        key = ("gather", bid, omap, spec, np.asarray(fill, d).tobytes() if mode == "fill" else b"",
               tuple(id(a) for a in args))
        return self._node(key, lambda: Node("load", d, args=args, buffer=bid, map=omap, value=spec))

    def _dynamic_slice_expr(self, eqn, imap: IndexMap) -> Node:
        """``operand[s0, ..., s(k-1), :, ...]``: the leading ``k`` dims indexed by the (scalar) starts,
        as a gather in ``clip`` mode. For a window of size 1 XLA clamps the start into
        ``[0, dim - 1]``, which is what ``clip`` does to the index; the full trailing dims start at 0."""
        operand, *starts = eqn.inputs
        k = _indexed_prefix(eqn)
        d = operand.aval.dtype
        terms = imap.terms if imap.terms else ((-1, 0, 0),) * operand.aval.ndim
        args = tuple(self.expr(starts[j], IndexMap(())) for j in range(k))
        omap = IndexMap(((-1, 0, 0),) * k + tuple(terms[k:]))
        spec = GatherSpec("clip", None, tuple(operand.aval.shape[:k]))
        bid = self.buffer_of[id(operand)]
        key = ("gather", bid, omap, spec, b"", tuple(id(a) for a in args))
        return self._node(key, lambda: Node("load", d, args=args, buffer=bid, map=omap, value=spec))

    def _node(self, key, make):
        n = self._memo.get(key)
        if n is None:
            n = make()
            self._memo[key] = n
        return n

    def _load(self, var, imap):
        bid = self.buffer_of[id(var)]
        return self._node(("load", bid, imap), lambda: Node("load", var.aval.dtype, buffer=bid, map=imap))

    # ----------------------------------------------------------- building steps
    def build(self) -> Plan:
        self.decide()
        prog, plan = self.program, self.plan
        for i, v in enumerate(prog.in_vars):
            self.buffer_of[id(v)] = self._new_buffer(v.aval, "input", index=i)
        plan.inputs = [self.buffer_of[id(v)] for v in prog.in_vars]
        for i, v in enumerate(prog.const_vars):
            self.buffer_of[id(v)] = self._new_buffer(v.aval, "const", index=i)
        plan.consts = [self.buffer_of[id(v)] for v in prog.const_vars]
        out_positions: dict[int, int] = {}
        for i, a in enumerate(prog.outputs):
            if isinstance(a, Var) and id(a) not in out_positions and id(a) not in self.buffer_of:
                out_positions[id(a)] = i
        for eqn in prog.eqns:
            self._build_eqn(eqn, out_positions)
        plan.outputs = [("lit", a.val) if isinstance(a, Literal) else self.buffer_of[id(a)] for a in prog.outputs]
        return plan

    def _out_buffer(self, var, out_positions, kind="temp", **kw):
        if id(var) in out_positions:
            bid = self._new_buffer(var.aval, "output", index=out_positions[id(var)])
        else:
            bid = self._new_buffer(var.aval, kind, **kw)
        self.buffer_of[id(var)] = bid
        return bid

    def _build_eqn(self, eqn, out_positions):
        k = self.kinds[id(eqn)]
        outs = eqn.outputs
        if k == "reshape":
            src = self.buffer_of[id(eqn.inputs[0])]
            if id(outs[0]) in out_positions:
                # An output has memory of its own, so this reshape is a copy: a flat native
                # kernel (a weight gradient's (taps, I, O) product returned as (kh, kw, I, O)),
                # which keeps a loop body holding it native.
                out = self._out_buffer(outs[0], out_positions)
                if _native_storage(outs[0].aval.dtype):
                    self._flat_copy(src, out, outs[0].aval)
                else:
                    self.plan.steps.append(NumpyStep(eqn, [src], [out]))
            else:
                self._out_buffer(outs[0], out_positions, kind="alias", alias_of=src)
            return
        if k == "numpy":
            ins = [("lit", a.val) if isinstance(a, Literal) else self.buffer_of[id(a)] for a in eqn.inputs]
            res = [self._out_buffer(v, out_positions, kind="external") if id(v) not in out_positions
                   else self._out_buffer(v, out_positions) for v in outs]
            self.plan.steps.append(NumpyStep(eqn, ins, res))
            return
        if k == "dot":
            operands = []
            for a in eqn.inputs:
                if id(a) in self.dot_views:
                    base, perm = self.dot_views[id(a)]
                    operands.append((self.buffer_of[id(base)], perm))
                else:
                    operands.append((self.buffer_of[id(a)], tuple(range(a.aval.ndim))))
            out = self._out_buffer(outs[0], out_positions)
            self.plan.steps.append(DotStep(out, operands[0][0], operands[1][0], operands[0][1], operands[1][1],
                                           eqn.params["dimension_numbers"]))
            return
        if k == "reduce":
            self._build_reduce(eqn, out_positions)
            return
        if k == "window":
            ins = [("lit", a.val.item()) if isinstance(a, Literal) else self.buffer_of.get(id(a)) for a in eqn.inputs]
            out = self._out_buffer(outs[0], out_positions)
            if eqn.primitive is pad_p:
                lows = [("lit", lo) for lo, _, _ in eqn.params["padding_config"]]
                step = WindowStep("pad", out, ins[1], ins[0], lows, eqn.inputs[0].aval.shape)
            elif eqn.primitive in NATIVE_CALL:
                step = WindowStep("call", out, ins[0] if ins else None, None, [], (),
                                  (eqn.primitive.name, tuple(sorted(eqn.params.items()))))
            elif eqn.primitive is concatenate_p:
                axis = eqn.params["dimension"]
                offsets = np.cumsum([0] + [a.aval.shape[axis] for a in eqn.inputs[:-1]]).tolist()
                for a, offset in zip(eqn.inputs, offsets):
                    if id(a) not in self.materialized and a.aval.size:
                        self._build_slab(a, out, axis, offset)
                copies = [(b, o) for b, o in zip(ins, offsets) if b is not None]
                if not copies:
                    return
                step = WindowStep("concat", out, None, tuple(b for b, _ in copies), [o for _, o in copies], (),
                                  (axis,))
            elif eqn.primitive is scatter_p:
                fused = None if id(eqn.inputs[2]) in self.materialized else self._update_kernel(eqn.inputs[2], out)
                step = WindowStep("scatter", out, ins[0], None if fused else ins[2], [ins[1]], (),
                                  (eqn.params["kind"], eqn.params["mode"]), fused)
            elif eqn.primitive in _NATIVE_AXIS_DTYPES:
                par = eqn.params
                axis, reverse = (par["axes"][0], False) if "axes" in par else (
                    (par["dimension"], False) if "dimension" in par else (par["axis"], par["reverse"]))
                step = WindowStep("axis", out, ins[0], None, [], (), (eqn.primitive.name, axis, reverse))
            elif eqn.primitive is dynamic_slice_p:
                step = WindowStep("slice", out, ins[0], None, ins[1:], tuple(eqn.params["slice_sizes"]))
            elif eqn.primitive in (conv_windows_p, conv_windows_wgrad_p):
                step = WindowStep("conv" if eqn.primitive is conv_windows_p else "conv_wgrad", out, ins[0], ins[1],
                                  [], (), tuple(sorted(eqn.params.items())))
            else:
                step = WindowStep("update", out, ins[0], ins[1], ins[2:], eqn.inputs[1].aval.shape)
            self.plan.steps.append(step)
            return
        if k == "struct" and self._same_memory_view(eqn) and id(outs[0]) in self.materialized \
                and id(outs[0]) not in out_positions:
            # A materialized reshape-like view of a materialized value (an im2col matrix given a
            # leading group dim for its product) is the same bytes: an alias, not a copy kernel.
            self._out_buffer(outs[0], out_positions, kind="alias", alias_of=self.buffer_of[id(eqn.inputs[0])])
            return
        for v in outs:
            if id(v) in self.materialized:
                self._build_loop(v, out_positions)

    def _flat_copy(self, src, out, aval) -> None:
        """A kernel copying buffer ``src`` into ``out`` (same size and dtype) in C order."""
        flat = ShapedArray((aval.size,), aval.dtype)
        flat_src = self._new_buffer(flat, "alias", alias_of=src)
        flat_out = self._new_buffer(flat, "alias", alias_of=out)
        ident = IndexMap.identity(1)
        load = Node("load", aval.dtype, buffer=flat_src, map=ident)
        self.plan.steps.append(Kernel(f"k{len(self.plan.steps)}", (aval.size,), 0,
                                      [Phase(None, [load], [flat_out], [ident])], ["copy"]))

    def _build_slab(self, var, out, axis, offset) -> None:
        """A kernel computing ``var`` straight into its slab of the concatenation ``out``."""
        nd = var.aval.ndim
        e = self.expr(var, IndexMap.identity(nd))
        store = IndexMap(tuple((d, 1, offset if d == axis else 0) for d in range(nd)))
        self.plan.steps.append(Kernel(f"k{len(self.plan.steps)}", var.aval.shape, max(nd - 1, 0),
                                      [Phase(None, [e], [out], [store])], _op_names([e]) or ["copy"]))

    def _update_kernel(self, updates, out) -> Kernel:
        """The expression of a scatter's updates as a one-phase kernel over their shape, evaluated
        per update inside the scatter loop (``backends/cpu/window.py``)."""
        nd = updates.aval.ndim
        e = self.expr(updates, IndexMap.identity(nd))
        shape = updates.aval.shape if nd else (1,)
        return Kernel(f"k{len(self.plan.steps)}u", shape, max(len(shape) - 1, 0),
                      [Phase(None, [e], [out], [IndexMap.identity(len(shape)) if nd else IndexMap(())])],
                      _op_names([e]) or ["copy"])

    def _same_memory_view(self, eqn) -> bool:
        """A size-keeping reshape, squeeze or broadcast (size-1 dims added) of a value that has a buffer:
        the result's C-order elements are the operand's, in the same order."""
        src = eqn.inputs[0]
        return (eqn.primitive in (reshape_p, squeeze_p, broadcast_in_dim_p) and isinstance(src, Var)
                and id(src) in self.buffer_of and src.aval.size == eqn.outputs[0].aval.size)

    def _build_loop(self, var, out_positions):
        out = self._out_buffer(var, out_positions)
        nd = var.aval.ndim
        e = self.expr(var, IndexMap.identity(nd), kernel_out=var)
        shape = var.aval.shape if nd else (1,)
        kernel = Kernel(f"k{len(self.plan.steps)}", shape, max(len(shape) - 1, 0),
                        [Phase(None, [e], [out], [IndexMap.identity(len(shape)) if nd else IndexMap(())])],
                        _op_names([e]) or ["copy"])
        self.plan.steps.append(kernel)

    def _build_reduce(self, eqn, out_positions):
        x = eqn.inputs[0]
        axes = eqn.params["axes"]
        xshape = x.aval.shape
        keep = [d for d in range(len(xshape)) if d not in axes]
        perm = tuple(keep + list(axes))
        # Iteration dim i is X dim perm[i]: the X-index map picks it back.
        inv = [0] * len(perm)
        for i, d in enumerate(perm):
            inv[d] = i
        imap = IndexMap(tuple((inv[d], 1, 0) for d in range(len(xshape))))
        e = self.expr(x, imap)
        out = self._out_buffer(eqn.outputs[0], out_positions)
        shape = tuple(xshape[d] for d in perm)
        n_outer = len(keep)
        kernel = Kernel(f"k{len(self.plan.steps)}", shape if shape else (1,), n_outer,
                        [Phase(_REDUCE_OPS[eqn.primitive.name], [e], [out])],
                        [eqn.primitive.name] + _op_names([e]),
                        reduced_shape=tuple(xshape), perm=perm)
        self.plan.steps.append(kernel)


def _indexed_prefix(eqn) -> int:
    """For a ``dynamic_slice`` whose window is 1 wide in its leading ``k >= 1`` dims and whole in
    the others (``x[i]``, ``x[i, j]`` with traced indices), ``k``; else 0."""
    shape, sizes = eqn.inputs[0].aval.shape, eqn.params["slice_sizes"]
    k = 0
    while k < len(shape) and sizes[k] == 1:
        k += 1
    if k == 0 or any(sizes[j] != shape[j] for j in range(k, len(shape))) or 0 in shape:
        return 0
    return k


def _op_names(exprs) -> list:
    """Primitive names of the operations in expressions, each node once, inputs first."""
    return [n.prim.name if n.kind == "op" else "gather" for n in reversed(walk(exprs))
            if n.kind == "op" or is_gather(n)]


# --------------------------------------------------------------------------- merging

def _reads(kernel):
    return [(n.buffer, n) for n in kernel.loads()]


def _row_space_map(kernel, other):
    """Permutation taking ``other`` (a loop kernel over X) into ``kernel``'s (outer, row) order, or None."""
    if other.is_row_kernel:
        if (other.reduced_shape == kernel.reduced_shape and other.perm == kernel.perm
                and other.n_outer == kernel.n_outer):
            return tuple(range(len(kernel.shape)))
        return None
    if len(kernel.shape) != len(kernel.reduced_shape):
        return None
    if tuple(other.shape) == kernel.reduced_shape:
        return kernel.perm
    return None


def _per_row_map(kernel, other):
    """For a loop kernel over the *reduced* space (a value per row), the dim mapping into
    ``kernel``'s outer dims; None if ``other`` is not such a kernel."""
    if other.is_row_kernel or len(kernel.shape) != len(kernel.reduced_shape):
        return None
    xs, keep = kernel.reduced_shape, kernel.perm[:kernel.n_outer]
    outer = tuple(xs[d] for d in keep)
    keepdims = tuple(1 if d not in keep else s for d, s in enumerate(xs))
    shape = tuple(other.shape)
    if shape == keepdims:
        # Dim d of `other` is X dim d: kept dims land on their outer position, reduced ones vanish.
        return {d: (keep.index(d) if d in keep else -1) for d in range(len(xs))}
    if shape == outer or (not outer and shape == (1,)):
        return {i: (i if outer else -1) for i in range(len(shape))}
    return None


def _remap_phases(phases, perm, per_row=False):
    memo = {}

    def remap(n):
        if id(n) in memo:
            return memo[id(n)]
        if n.kind == "load":
            new = Node("load", n.dtype, args=tuple(remap(a) for a in n.args), buffer=n.buffer,
                       map=n.map.permuted(perm), value=n.value)
        elif n.kind == "iota":
            new = Node("iota", n.dtype, map=n.map.permuted(perm), value=n.value)
        elif n.kind == "const":
            new = n
        else:
            new = Node("op", n.dtype, args=tuple(remap(a) for a in n.args), prim=n.prim, params=n.params)
        memo[id(n)] = new
        return new
    return [Phase(p.reduce_op, [remap(e) for e in p.exprs], list(p.outputs),
                  [m.permuted(perm) for m in p.out_maps] if p.out_maps else None, per_row or p.per_row)
            for p in phases]


def _reads_ok_within_row(kernel, phases, written, n_outer, buffers):
    """Later phases may read earlier phases' outputs only at the same row.

    A buffer the kernel stores through a permuted map (its iteration order is the transpose of
    the buffer's layout) may only be read at the very element this iteration stored: a
    transposed read of it, identity in the kernel's space, is another row's element, maybe not
    yet written (gradient fuzzer seed 6004547: slogdet's cotangent solve read garbage)."""
    store_maps = {}
    for phase in kernel.phases:
        for bid, m in zip(phase.outputs, phase.out_maps or ()):
            store_maps[bid] = m.terms
    for p in phases:
        stack = list(p.exprs)
        seen = set()
        while stack:
            n = stack.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            stack.extend(n.args)
            if n.kind != "load" or n.buffer not in written:
                continue
            shape = buffers[n.buffer].shape
            terms = n.map.terms
            stored = store_maps.get(n.buffer)
            if stored is not None and tuple(stored) != tuple(IndexMap.identity(len(stored)).terms):
                if tuple(terms) != tuple(stored):
                    return False
                continue
            # The buffer's leading dims must be exactly this row's outer index.
            if len(shape) < n_outer or any(terms[j] != (j, 1, 0) for j in range(n_outer)):
                return False
            if len(shape) > n_outer and any(t != (n_outer + j, 1, 0) and not (t == (-1, 0, 0) and shape[n_outer + j] == 1)
                                            for j, t in enumerate(terms[n_outer:])):
                return False
    return True


def merge_kernels(plan: Plan) -> None:
    steps = plan.steps
    merged: list = []
    produced_at: dict[int, int] = {}     # buffer -> index in merged
    for step in steps:
        if isinstance(step, Kernel) and merged:
            target = _find_merge_target(merged, step, produced_at, plan)
            if target is not None:
                k, phases = target
                k.phases.extend(phases)
                k.eqn_names.extend(step.eqn_names)
                # A buffer written in slabs (a concatenation) keeps the index of its *last*
                # writer: a reader must not join a kernel that runs before a later slab.
                for b in _with_bases(plan, step.buffers_written()):
                    produced_at[b] = max(produced_at.get(b, -1), merged.index(k))
                continue
        merged.append(step)
        # (a write through an alias, a reshape view, produces the buffer it views: seed 30123583
        # merged a reader of an output into a kernel before the kernel writing it through its alias)
        for b in _with_bases(plan, step_writes(step)):
            produced_at[b] = len(merged) - 1
    plan.steps[:] = merged


def _with_bases(plan, buffer_ids) -> set:
    """The buffers and the buffers they are views of."""
    return set(buffer_ids) | {base_buffer(plan.buffers, b) for b in buffer_ids}


def _substitute_own(exprs, own_exprs):
    """Replace loads of buffers this kernel computes (same element) by their expressions."""
    memo = {}

    def sub(n):
        if id(n) in memo:
            return memo[id(n)]
        if n.kind == "load" and n.buffer in own_exprs and not is_gather(n):
            new = own_exprs[n.buffer]
        elif n.kind == "op" or is_gather(n):
            # (A gather reads other elements than the one computed here: it keeps its load.)
            args = tuple(sub(a) for a in n.args)
            new = n if all(x is y for x, y in zip(args, n.args)) else Node(
                n.kind, n.dtype, args=args, prim=n.prim, params=n.params, buffer=n.buffer, map=n.map,
                value=n.value)
        else:
            new = n
        memo[id(n)] = new
        return new
    return [sub(e) for e in exprs]


def _find_merge_target(merged, step, produced_at, plan):
    """The kernel ``step`` joins and the phases it brings (``[]``: it joined a sibling pass), or None.

    A map over a reduction's input space prefers a row kernel that walks that
    space in memory order: joining a column-style kernel (a reduction along a
    strided axis) would make the map's own loads and stores strided too.
    """
    fallback = None
    for k, phases in _merge_candidates(merged, step, produced_at, plan):
        if phases is None:      # a loop kernel over the same space: share its single pass
            _join_sibling(k, step)
            return k, []
        walks_in_order = tuple(k.perm) == tuple(range(len(k.perm)))
        if step.is_row_kernel or walks_in_order or any(p.per_row for p in phases):
            return k, phases
        fallback = fallback or (k, phases)
    return fallback


def _expr_depth(exprs) -> int:
    """The longest path from a root of ``exprs`` to a leaf (iteratively: the trees may be deep)."""
    depth: dict[int, int] = {}
    for root in exprs:
        stack = [(root, False)]
        while stack:
            n, done = stack.pop()
            if id(n) in depth:
                continue
            if done or not n.args:
                depth[id(n)] = 1 + max((depth[id(a)] for a in n.args), default=0)
                continue
            stack.append((n, True))
            stack.extend((a, False) for a in n.args if id(a) not in depth)
    return max((depth[id(r)] for r in exprs), default=0)


def _join_sibling(k, step):
    phase = k.phases[0]
    own_exprs = dict(zip(phase.outputs, phase.exprs))
    new = step.phases[0]
    phase.exprs.extend(_substitute_own(new.exprs, own_exprs))
    phase.outputs.extend(new.outputs)
    phase.out_maps.extend(new.out_maps)


def _merge_candidates(merged, step, produced_at, plan):
    """Kernels ``step`` may join, latest first: ``(kernel, phases)``, phases None for a sibling pass."""
    reads = _reads(step)
    read_ids = _with_bases(plan, [b for b, _ in reads])
    for ti in range(len(merged) - 1, -1, -1):
        k = merged[ti]
        if not isinstance(k, Kernel):
            if _with_bases(plan, step_writes(k)) & read_ids:
                return
            continue
        own = set(k.buffers_written())
        own_bases = _with_bases(plan, own)
        # Every buffer read must be complete when k runs: its last writer is k or earlier.
        if any(produced_at.get(b, -1) > ti for b in read_ids):
            continue
        # A reshape view of a buffer k writes (or the buffer k writes through a view) is read at
        # other elements than the one k's iteration has written (possibly before it is written):
        # no merge.
        if any(b not in own and base_buffer(plan.buffers, b) in own_bases for b, _ in reads):
            continue
        if k.is_row_kernel or step.is_row_kernel:
            if not k.is_row_kernel:
                continue
            perm = _row_space_map(k, step)
            per_row = False
            if perm is None:
                perm = _per_row_map(k, step)
                per_row = perm is not None
            if perm is None:
                continue
            phases = _remap_phases(step.phases, perm, per_row)
            if not _reads_ok_within_row(k, phases, own, k.n_outer, plan.buffers):
                continue
            yield k, phases
            continue
        if tuple(k.shape) != tuple(step.shape) or len(k.phases) != 1:
            continue
        identity = IndexMap.identity(len(step.shape)).terms
        # Over a one-element space, a one-element buffer is read at the element it is written
        # (a loop body's scalar steps, ``j = i + k; jj = j if j >= 0 else j + n``, chain into one kernel).
        single = all(d == 1 for d in step.shape)

        def same_element(b, terms):
            return terms == identity or single and all(d == 1 for d in plan.buffers[b].shape)
        if not all(same_element(b, n.map.terms) for b, n in reads if b in own):
            continue
        # A buffer k stores into at several places or through a map (slabs of a concatenation) is
        # not one expression per element: a sibling reading it keeps its load, so it cannot join.
        stores = [(bid, m.terms) for bid, m in zip(k.phases[0].outputs, k.phases[0].out_maps)]
        if any(b in own and (sum(bid == b for bid, _ in stores) > 1
                             or not any(bid == b and same_element(b, t) for bid, t in stores)) for b, _ in reads):
            continue
        # Substituting k's expressions into step's stacks their depths: keep code generation's
        # recursion bounded (a chain of scalar steps merged whole was as deep as the program).
        if any(b in own for b, _ in reads) and \
                _expr_depth(k.phases[0].exprs) + _expr_depth(step.phases[0].exprs) > 2 * MAX_FUSED_DEPTH:
            continue
        yield k, None


def prune_dead_stores(plan: Plan) -> None:
    """Drop kernel outputs that are temporaries nobody reads (merging computed them in registers)."""
    read: set[int] = set()
    for step in plan.steps:
        read.update(step_reads(step))
    read.update(b for b in plan.outputs if isinstance(b, int))
    for b in plan.buffers:
        if b.kind == "alias":
            read.add(b.alias_of)
    for step in plan.steps:
        if not isinstance(step, Kernel):
            continue
        for phase in step.phases:
            if phase.reduce_op:
                continue
            keep = [i for i, bid in enumerate(phase.outputs)
                    if bid in read or plan.buffers[bid].kind != "temp"]
            phase.exprs = [phase.exprs[i] for i in keep]
            phase.outputs = [phase.outputs[i] for i in keep]
            phase.out_maps = [phase.out_maps[i] for i in keep]
        step.phases = [p for p in step.phases if p.outputs]
    # A kernel left without outputs (a concatenation slab whose readers all took its expression) goes.
    plan.steps[:] = [s for s in plan.steps if not isinstance(s, Kernel) or s.phases]
