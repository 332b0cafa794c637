"""LLVM IR for one fused kernel.

Generated signature: ``void kernel(ptr* buffers, i64 begin, i64 end)``. The
range is over elements for 1-D loop kernels and over rows otherwise, so the
runtime can split it across threads. Every address is a GEP from a buffer
base: offsets are affine in the iteration index with compile-time
coefficients (shapes are static). The innermost loop is written as explicit
``<VL x T>`` vector code when every access in it is contiguous or
broadcast, followed by a scalar remainder loop.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from tracejit.core import dtypes
from tracejit.compiler.kernel_ir import Kernel, is_gather, walk
from tracejit.backends.cpu import lowering as L
from tracejit.backends.cpu import lowering_complex as LC

I64 = ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()
# How far ahead vector loops prefetch their streamed inputs (see KernelEmitter._prefetch).
PREFETCH_BYTES = 2048
# Buffers up to this size are left to the hardware prefetchers: they sit in L2 when a loop body
# rereads them, where a prefetch per vector load only takes load slots (Cholesky's row dots).
PREFETCH_MIN_BYTES = 256 * 1024
# Loads of one buffer along the same walk this close behind another (a stencil's taps) find their
# lines already fetched by the leading one: only that one prefetches (see _trailing_loads).
PREFETCH_TRAIL_BYTES = 64 * 1024
# Rows a shared-operand row reduction takes at once (KernelEmitter._row_block), and the largest
# expression (in nodes) it does that for: each row of the block holds its own copy of the values.
ROW_BLOCK = 4
ROW_BLOCK_MAX_NODES = 12


@dataclass(frozen=True)
class Access:
    """``offset = const + sum(coeffs[i] * it[i])`` (elements, or the value of an iota)."""

    const: int
    coeffs: tuple


def _access(terms, strides, ndim) -> Access:
    coeffs = [0] * ndim
    const = 0
    for (src, scale, off), st in zip(terms, strides):
        const += st * off
        if src >= 0:
            coeffs[src] += st * scale
    return Access(const, tuple(coeffs))


def c_strides(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return tuple(reversed(out))


# Ranges handed to 1-D elementwise kernels (thread chunks) are multiples of this many elements.
ELEMENTWISE_GRANULE = 64
# Registers per step of float32 map kernels that call transcendental helpers (half as many
# when a kernel makes more than FEW_MATH_CALLS calls: compile time grows with both).
MATH_MAP_VECTORS = 4
FEW_MATH_CALLS = 4
# Vectors side by side in one block of a column-style (outer-vector) kernel.
OUTER_BLOCK_VECTORS = 4
# From this many elements of work a column kernel is split over threads (runtime.OPENMP_MIN_WORK).
THREADED_COLUMN_WORK = 1 << 17


def mathlib_call_needed(node) -> bool:
    """Whether an op lowers to a math-library helper (compiled per vector width)."""
    return node.prim.name in L.MATH_HELPER_PRIMS


class KernelLayout:
    """The kernel's iteration space after dropping size-1 dims and merging
    adjacent dims that every access walks contiguously."""

    def __init__(self, kernel: Kernel, buffers):
        self.kernel = kernel
        shape = list(kernel.shape)
        n = len(shape)
        self.access: dict[int, Access] = {}
        nodes = []
        for phase in kernel.phases:
            for e in phase.exprs:
                nodes.extend(_walk(e))
        for node in nodes:
            if node.kind == "load":
                self.access[id(node)] = _access(node.map.terms, c_strides(buffers[node.buffer].shape), n)
            elif node.kind == "iota":
                self.access[id(node)] = _access(node.map.terms, (1,), n)
        self.stores = []
        for phase in kernel.phases:
            for bid, m in zip(phase.outputs, phase.out_maps or [None] * len(phase.outputs)):
                if phase.reduce_op:
                    st = c_strides(buffers[bid].shape)
                    acc = Access(0, tuple(list(st) + [0] * (n - len(st))) if len(st) <= kernel.n_outer else ())
                else:
                    acc = _access(m.terms, c_strides(buffers[bid].shape), n)
                self.stores.append(acc)
        self._store_iter = None
        accesses = list(self.access.values()) + self.stores
        groups = [list(range(kernel.n_outer)), list(range(kernel.n_outer, n))]
        if not kernel.is_row_kernel:
            groups = [list(range(n))]
        new_groups = []
        for g in groups:
            dims = [d for d in g if shape[d] != 1]
            merged: list[list[int]] = []
            for d in dims:
                if merged:
                    prev = merged[-1][-1]
                    if all(a.coeffs[prev] == a.coeffs[d] * shape[d] for a in accesses):
                        merged[-1].append(d)
                        continue
                merged.append([d])
            new_groups.append(merged)
        # New dim = a run of old dims; its size is the product and its coefficient the innermost one's.
        runs = [run for g in new_groups for run in g]
        self.n_outer = len(new_groups[0]) if kernel.is_row_kernel else 0
        self.shape = tuple(math.prod(shape[d] for d in run) for run in runs)
        inner_of = [run[-1] for run in runs]
        if kernel.is_row_kernel and not new_groups[1]:
            # Every reduced dim has size 1: the row is one element, but the code generator
            # still needs a row dim (its last coefficient is the lane's, the others the
            # outer index's). Without it the outer index would be read as the row index.
            self.shape += (1,)
            inner_of.append(None)
        remap = lambda a: Access(a.const, tuple(0 if d is None else a.coeffs[d] for d in inner_of))  # noqa: E731
        self.access = {k: remap(a) for k, a in self.access.items()}
        self.stores = [remap(a) for a in self.stores]
        if not kernel.is_row_kernel:
            self.n_outer = max(len(self.shape) - 1, 0)
        if not self.shape:
            self.shape = (1,)
            self.access = {k: Access(a.const, (0,)) for k, a in self.access.items()}
            self.stores = [Access(a.const, (0,)) for a in self.stores]
            self.n_outer = 0

    @property
    def elementwise_1d(self) -> bool:
        return not self.kernel.is_row_kernel and len(self.shape) == 1

    @property
    def parallel_size(self) -> int:
        return self.shape[0] if self.elementwise_1d else math.prod(self.shape[:self.n_outer])


def _walk(e):
    return walk([e])


def _sum_chains(op, d, lanes, n) -> int:
    """Vector accumulators a float sum over a row of ``n`` uses: 4 (or 2) when the row holds that
    many vectors, else 1. Only real float sums: products and min/max keep one chain (their
    lane order decides signed zeros and NaN payloads the tests pin), integer adds are 1-cycle."""
    if lanes == 1 or op != "sum" or d.kind != "f":
        return 1
    return 4 if n >= 4 * lanes else 2 if n >= 2 * lanes else 1


def _trailing_loads(kernel: Kernel, layout: KernelLayout, buffers) -> set:
    """Ids of the plain loads that trail another load of the same buffer with the same coefficients
    by at most PREFETCH_TRAIL_BYTES: they read what the leading load (the largest offset) read a few
    steps before, so their prefetches only take load slots. With a prefetch per tap, a 2-D five-point
    stencil on a 2048x2048 float32 image ran 1.14x slower than with no prefetch at all, while a 1-D
    three-point stencil ran 0.85x of that time (its stream is worth prefetching); with one prefetch
    per stream both took 0.81-0.87x of the time they took with one per tap."""
    groups: dict = {}
    for n in kernel.loads():
        if not is_gather(n):
            acc = layout.access[id(n)]
            groups.setdefault((n.buffer, acc.coeffs), []).append((acc.const, id(n)))
    trailing = set()
    for (bid, _), members in groups.items():
        lead = max(const for const, _ in members)
        trailing.update(i for const, i in members
                        if const < lead and (lead - const) * buffers[bid].dtype.itemsize <= PREFETCH_TRAIL_BYTES)
    return trailing


def _lane_bytes(d) -> int:
    """Bytes of one vector lane: a complex value's parts live in two vectors of its part dtype."""
    return d.itemsize // 2 if d.kind == "c" else d.itemsize


# --------------------------------------------------------------------------- emitter

def _lane_nodes(exprs) -> list:
    """The nodes of ``exprs`` whose values fill vector lanes: all but a gather's index operands
    (a gather vectorizes only when those are the same in every lane, computed as scalars)."""
    return walk(exprs, descend=lambda n: not is_gather(n))


@dataclass(frozen=True)
class _GatherRow:
    """The key of a gather's row offset and range check in a vector loop's cache of hoisted values."""
    node: int


class KernelEmitter:
    def __init__(self, module: ir.Module, kernel: Kernel, buffers, vector_bytes: int):
        self.module = module
        self.kernel = kernel
        self.buffers = buffers
        self.layout = KernelLayout(kernel, buffers)
        self.trailing = _trailing_loads(kernel, self.layout, buffers)
        self.slots = sorted({n.buffer for p in kernel.phases for e in p.exprs for n in _walk(e) if n.kind == "load"}
                            | {b for p in kernel.phases for b in p.outputs})
        # The widest value a lane holds sets the lanes; a gather's indices are not among them (they
        # are scalars, the same in every lane: int64 iotas gave a float32 depthwise convolution's
        # padded taps half of AVX2's lanes).
        lane_nodes = _lane_nodes([e for p in kernel.phases for e in p.exprs])
        widest = max([_lane_bytes(buffers[b].dtype) for p in kernel.phases for b in p.outputs]
                     + [_lane_bytes(buffers[n.buffer].dtype) for n in lane_nodes if n.kind == "load"]
                     + [_lane_bytes(n.dtype) for n in lane_nodes] + [1])
        self.lanes = max(1, vector_bytes // widest)
        self.work = kernel.size     # elements: what decides whether the kernel is split over threads
        self.mask = None
        self.lane_dim = -1          # the iteration dim that vector lanes run along
        self.outer_vector = self._outer_vector_ok()
        # Calls of math-library helpers (the launcher also uses this to choose when to go threaded).
        self.math_calls = sum(1 for p in kernel.phases for e in p.exprs for n in _walk(e)
                              if n.kind == "op" and mathlib_call_needed(n))
        if not kernel.is_row_kernel and widest == 4 and self.lanes > 1 and self.math_calls:
            # float32 maps calling transcendentals: several registers per step give the out-of-order
            # core independent polynomial chains to overlap; fewer when there is much code to compile.
            self.lanes *= MATH_MAP_VECTORS if self.math_calls <= FEW_MATH_CALLS else MATH_MAP_VECTORS // 2
        if self.outer_vector and not self.math_calls:
            # Each step down the strided axis then touches several whole cache lines per array,
            # not one: far fewer lines in flight per byte, so the strided walk keeps up with memory.
            # A kernel big enough to be threaded keeps at least two blocks, so that two threads share
            # it (a bias gradient's 64 channels of float32 were one block of 64 lanes: one thread).
            blocks = 2 if kernel.size >= THREADED_COLUMN_WORK else 1
            for vectors in (OUTER_BLOCK_VECTORS, OUTER_BLOCK_VECTORS // 2):
                if self.layout.shape[0] >= vectors * self.lanes * blocks:
                    self.lanes *= vectors
                    break

    # ------------------------------------------------------------- helpers
    def _alloca(self, t, name=""):
        with self.b.goto_block(self.entry):
            self.b.position_at_start(self.entry)
            return self.b.alloca(t, name=name)

    @contextlib.contextmanager
    def _loop(self, start, stop, step=1, name="i"):
        """``for i in range(start, stop, step)`` with the counter in a stack slot."""
        b = self.b
        slot = self._alloca(I64, name)
        b.store(start, slot)
        cond_bb = b.append_basic_block(f"{name}.cond")
        body_bb = b.append_basic_block(f"{name}.body")
        end_bb = b.append_basic_block(f"{name}.end")
        b.branch(cond_bb)
        b.position_at_end(cond_bb)
        i = b.load(slot)
        limit = stop if step == 1 else b.sub(stop, ir.Constant(I64, step - 1))
        b.cbranch(b.icmp_signed("<", i, limit), body_bb, end_bb)
        b.position_at_end(body_bb)
        yield i
        b.store(b.add(b.load(slot), ir.Constant(I64, step)), slot)
        b.branch(cond_bb)
        b.position_at_end(end_bb)
        self.last_counter = slot

    def _ptr(self, bid, offset):
        return self.b.gep(self.base[bid], [offset], source_etype=L.memory_type(self.buffers[bid].dtype))

    def _load(self, bid, offset, lanes, prefetch=True):
        d = self.buffers[bid].dtype
        mt = L.memory_type(d)
        ptr = self._ptr(bid, offset)
        if LC.is_complex(d):
            return LC.load(self.b, ptr, d, lanes)
        if lanes == 1:
            v = self.b.load(ptr, typ=mt)
        else:
            if prefetch and self.lane_dim < 0 and self.buffers[bid].nbytes > PREFETCH_MIN_BYTES:
                self._prefetch(ptr)   # lanes along the inner loop: the stream runs ahead in memory
            v = self.b.load(ptr, typ=ir.VectorType(mt, lanes))
            v.align = d.itemsize
        if d == dtypes.bool_:
            zero = ir.Constant(v.type, 0) if lanes == 1 else ir.Constant(v.type, [ir.Constant(mt, 0)] * lanes)
            v = self.b.icmp_unsigned("!=", v, zero)
        elif d == dtypes.bfloat16:
            v = L.bfloat16_from_memory(self.b, v)
        return v

    def _prefetch(self, ptr):
        """Prefetch a streamed input PREFETCH_BYTES ahead of its vector load.

        The hardware prefetchers stop at 4 KiB page boundaries and fall
        behind when each cache line takes many instructions to consume (a
        transcendental-heavy loop), so DRAM latency is exposed on every page.
        Prefetches never fault, so running past the end of the buffer is fine."""
        L.prefetch(self.b, self.b.gep(ptr, [ir.Constant(I64, PREFETCH_BYTES)], source_etype=ir.IntType(8)))

    def _masked_load(self, bid, offset, lanes):
        d = self.buffers[bid].dtype
        if LC.is_complex(d):
            return LC.deinterleave(self.b, self._masked_parts_load(bid, offset, 2 * lanes))
        vt = ir.VectorType(L.memory_type(d), lanes)
        fn = L.masked_intrinsic(self.module, "load", vt)
        zero = ir.Constant(vt, None)
        v = self.b.call(fn, [self._ptr(bid, offset), ir.Constant(ir.IntType(32), d.itemsize), self.mask, zero])
        if d == dtypes.bool_:
            v = self.b.icmp_unsigned("!=", v, zero)
        elif d == dtypes.bfloat16:
            v = L.bfloat16_from_memory(self.b, v)
        return v

    def _masked_store(self, bid, offset, value):
        d = self.buffers[bid].dtype
        if LC.is_complex(d):
            self._masked_parts_store(bid, offset, LC.interleave(self.b, value))
            return
        lanes = L.lanes_of(value)
        if d == dtypes.bool_:
            value = self.b.zext(value, ir.VectorType(L.memory_type(d), lanes))
        elif d == dtypes.bfloat16:
            value = L.bfloat16_to_memory(self.b, value)
        fn = L.masked_intrinsic(self.module, "store", value.type)
        self.b.call(fn, [value, self._ptr(bid, offset), ir.Constant(ir.IntType(32), d.itemsize), self.mask])

    # A complex element is two parts in memory: the lane mask covers both.
    def _masked_parts_load(self, bid, offset, n_parts):
        part = LC.part_dtype(self.buffers[bid].dtype)
        vt = ir.VectorType(L.scalar_type(part), n_parts)
        zero = ir.Constant(vt, None)
        return self.b.call(L.masked_intrinsic(self.module, "load", vt), [
            self._ptr(bid, offset), ir.Constant(ir.IntType(32), part.itemsize),
            LC.duplicate_lanes(self.b, self.mask), zero])

    def _masked_parts_store(self, bid, offset, parts):
        part = LC.part_dtype(self.buffers[bid].dtype)
        self.b.call(L.masked_intrinsic(self.module, "store", parts.type), [
            parts, self._ptr(bid, offset), ir.Constant(ir.IntType(32), part.itemsize),
            LC.duplicate_lanes(self.b, self.mask)])

    def _store(self, bid, offset, value):
        d = self.buffers[bid].dtype
        if LC.is_complex(d):
            LC.store(self.b, self._ptr(bid, offset), d, value)
            return
        mt = L.memory_type(d)
        lanes = L.lanes_of(value)
        if d == dtypes.bool_:
            value = self.b.zext(value, mt if lanes == 1 else ir.VectorType(mt, lanes))
        elif d == dtypes.bfloat16:
            value = L.bfloat16_to_memory(self.b, value)
        st = self.b.store(value, self._ptr(bid, offset))
        if lanes > 1:
            st.align = d.itemsize

    # ------------------------------------------------------------- expressions
    def _eval(self, node, lanes, j, cache):
        key = id(node)
        if key in cache:
            return cache[key]
        b = self.b
        if node.kind == "const":
            v = L.const(node.dtype, node.value, lanes)
        elif is_gather(node):
            v = self._gather(node, lanes, j, cache)
        elif node.kind in ("load", "iota"):
            acc = self.layout.access[id(node)]
            base = self.row_base[id(node)]
            inner = acc.coeffs[self.lane_dim]
            if node.kind == "iota":
                idx = b.add(base, b.mul(j, ir.Constant(I64, inner))) if inner else base
                v = L.convert(b, idx, dtypes.int64, node.dtype) if node.dtype != dtypes.int64 else idx
                if lanes > 1:
                    ramp = ir.Constant(ir.VectorType(I64, lanes), [ir.Constant(I64, k * inner) for k in range(lanes)])
                    vec = b.add(L.splat(b, idx, lanes), ramp)
                    v = L.convert(b, vec, dtypes.int64, node.dtype)
            else:
                off = b.add(base, b.mul(j, ir.Constant(I64, inner))) if inner else base
                if lanes > 1 and inner == 0:
                    v = L.splat(b, self._load(node.buffer, off, 1), lanes)
                elif lanes > 1 and self.mask is not None:
                    v = self._masked_load(node.buffer, off, lanes)
                else:
                    v = self._load(node.buffer, off, lanes if inner == 1 else 1, prefetch=id(node) not in self.trailing)
                    if lanes > 1 and inner != 1:
                        raise AssertionError("strided access in a vector loop")
        else:
            args = [self._eval(a, lanes, j, cache) for a in node.args]
            v = L.emit(b, node.prim.name, args, [a.dtype for a in node.args], node.dtype, dict(node.params))
        cache[key] = v
        return v

    def _gather(self, node, lanes, j, cache):
        """``operand[idx..., p]``: the map's offset plus each clamped (or checked) index times its
        dim's stride. In a vector loop (``lanes > 1``) the indices are the same in every lane
        (``_vectorizable`` checked), so the same along the loop: computed once as scalars before
        it (``_invariants``), and the lanes load consecutive (or, along a broadcast dim, the same)
        elements of the selected row."""
        b = self.b
        spec = node.value
        inner = self.layout.access[id(node)].coeffs[self.lane_dim]
        row = cache.get(_GatherRow(id(node))) if lanes > 1 else None
        off, valid = row if row is not None else self._gather_row(node, j, cache if lanes == 1 else {})
        if inner:
            off = b.add(off, b.mul(j, ir.Constant(I64, inner)))
        if lanes == 1:
            v = self._load(node.buffer, off, 1)
        elif inner == 0:
            v = L.splat(b, self._load(node.buffer, off, 1), lanes)
        elif self.mask is not None:
            v = self._masked_load(node.buffer, off, lanes)
        else:
            # The vector loop reads the selected row, and the row after it is the next indices' pick:
            # a prefetch ahead of a row shorter than that distance fetches what this loop never reads
            # (and a padded convolution's nine taps of three rows issued nine). A 3x3 depthwise
            # convolution, 64 channels (256-byte rows): 1.51 -> 1.28 ms without them.
            row_bytes = self.layout.shape[-1] * abs(inner) * self.buffers[node.buffer].dtype.itemsize
            v = self._load(node.buffer, off, lanes, prefetch=row_bytes > PREFETCH_BYTES)
        if valid is not None:
            v = L.select_value(b, valid, v, L.const(node.dtype, spec.fill_value, lanes))
        return v

    def _gather_row(self, node, j, cache):
        """``(offset, in range)`` of a gather's element at the loop's index ``j`` without the lane
        dim's part: the map's offset plus each clamped (or checked) index times its dim's stride,
        and whether every index was in range (None when no index is checked)."""
        b = self.b
        spec = node.value
        off = self.row_base[id(node)]
        valid = None
        for arg, n, stride in zip(node.args, spec.indexed_shape, c_strides(self.buffers[node.buffer].shape)):
            idx, ok = L.index_in_range(b, self._eval(arg, 1, j, cache), arg.dtype, n, spec.mode)
            if ok is not None:
                valid = ok if valid is None else b.and_(valid, ok)
            off = b.add(off, b.mul(idx, ir.Constant(I64, stride)))
        return off, valid

    def _lane_invariant(self, node) -> bool:
        """The same value in every lane of a vector step (no gather: its operand may be written)."""
        if node.kind == "const":
            return True
        if is_gather(node):
            return False
        if node.kind in ("load", "iota"):
            return self.layout.access[id(node)].coeffs[self.lane_dim] == 0
        return all(self._lane_invariant(a) for a in node.args)

    def _vectorizable(self, phase_nodes, store_accesses):
        # A gather vectorizes when its indices are the same in every lane (a row picked by traced
        # indices: ``A[i]`` in a loop body), its lanes then read along the row's own dims.
        if any(is_gather(n) and not all(self._lane_invariant(a) for a in n.args) for n in phase_nodes):
            return False
        for n in phase_nodes:
            if n.kind in ("load", "iota") and self.layout.access[id(n)].coeffs[-1] not in (0, 1):
                return False
        return all(a.coeffs[-1] == 1 for a in store_accesses)

    def _set_row_bases(self, nodes, index_values):
        """Offsets of every access at the start of the innermost loop."""
        b = self.b
        self.row_base = {}
        for n in nodes:
            if n.kind not in ("load", "iota"):
                continue
            acc = self.layout.access[id(n)]
            off = ir.Constant(I64, acc.const)
            for c, iv in zip(acc.coeffs[:-1], index_values):
                if c:
                    off = b.add(off, b.mul(iv, ir.Constant(I64, c)))
            self.row_base[id(n)] = off

    def _store_base(self, acc, index_values):
        off = ir.Constant(I64, acc.const)
        for c, iv in zip(acc.coeffs[:-1], index_values):
            if c:
                off = self.b.add(off, self.b.mul(iv, ir.Constant(I64, c)))
        return off

    # ------------------------------------------------------------- phases
    def _invariants(self, nodes, lanes):
        """Values that do not change along the innermost loop (e.g. a row's mean),
        computed once before it: returns a cache seeded with them (splatted for vectors).

        LLVM cannot hoist these itself: the loads might alias the loop's stores.
        """
        inv: dict[int, bool] = {}
        order = list(reversed(nodes))      # _walk lists parents first; evaluate children first
        for n in order:
            if n.kind == "const":
                inv[id(n)] = True
            elif is_gather(n):
                inv[id(n)] = False
            elif n.kind in ("load", "iota"):
                inv[id(n)] = self.layout.access[id(n)].coeffs[self.lane_dim] == 0
            else:
                inv[id(n)] = all(inv.get(id(a), False) for a in n.args)
        scalar_cache: dict = {}
        seeded: dict = {}
        zero = ir.Constant(I64, 0)
        for n in order:
            if n.kind == "op" and inv[id(n)]:
                v = self._eval(n, 1, zero, scalar_cache)
                seeded[id(n)] = v if lanes == 1 else L.splat(self.b, v, lanes)
        if lanes > 1:
            # A vector loop's gathers select the same row at every step (their indices are the same
            # in every lane): the offset and range checks once here, not per vector (a padded
            # 3x3 depthwise convolution's nine taps spent most of its time on them).
            for n in order:
                if is_gather(n):
                    seeded[_GatherRow(id(n))] = self._gather_row(n, zero, scalar_cache)
        return seeded

    def _emit_map(self, phase, store_accs, prefix, inner_start, inner_stop):
        nodes = [n for e in phase.exprs for n in _walk(e)]
        self._set_row_bases(nodes, prefix)
        bases = [self._store_base(a, prefix) for a in store_accs]
        b = self.b
        lanes = self.lanes if self._vectorizable(nodes, store_accs) else 1
        hoisted = self._invariants(nodes, lanes)
        cursor = self._alloca(I64, "j")
        b.store(inner_start, cursor)
        if lanes > 1:
            with self._loop(inner_start, inner_stop, lanes, "vj") as j:
                cache = dict(hoisted)
                for e, bid, base, acc in zip(phase.exprs, phase.outputs, bases, store_accs):
                    self._store(bid, b.add(base, j), self._eval(e, lanes, j, cache))
            if self._tail_never_runs(inner_start, inner_stop, lanes):
                return
            # The remainder runs as one masked vector step: the same code, no scalar copy of the math.
            j = b.load(self.last_counter)
            with b.if_then(b.icmp_signed("<", j, inner_stop)):
                self.mask = L.tail_mask(self.b, j, inner_stop, lanes)
                cache = dict(hoisted)
                for e, bid, base in zip(phase.exprs, phase.outputs, bases):
                    self._masked_store(bid, b.add(base, j), self._eval(e, lanes, j, cache))
                self.mask = None
            return
        with self._loop(b.load(cursor), inner_stop, 1, "sj") as j:
            cache = dict(hoisted)
            for e, bid, base, acc in zip(phase.exprs, phase.outputs, bases, store_accs):
                off = b.add(base, b.mul(j, ir.Constant(I64, acc.coeffs[-1])))
                self._store(bid, off, self._eval(e, 1, j, cache))

    def _tail_never_runs(self, start, stop, lanes) -> bool:
        """Whether every range this loop gets is whole vectors (then no tail code is emitted:
        with inlined math a tail is a second copy of the kernel body to compile)."""
        if isinstance(start, ir.Constant) and isinstance(stop, ir.Constant):
            return (stop.constant - start.constant) % lanes == 0
        # Thread chunks of 1-D kernels are multiples of ELEMENTWISE_GRANULE, the last ends at the size.
        return (self.layout.elementwise_1d and self.layout.parallel_size % lanes == 0
                and ELEMENTWISE_GRANULE % lanes == 0)

    def _emit_per_row(self, phase, store_accs, outer_idx, n_row_dims):
        """A value per row (e.g. 1/sqrt(var + eps)): computed once, before the row's later phases."""
        zero = ir.Constant(I64, 0)
        prefix = list(outer_idx) + [zero] * (n_row_dims - 1)
        nodes = [n for e in phase.exprs for n in _walk(e)]
        self._set_row_bases(nodes, prefix)
        cache = {}
        for e, bid, acc in zip(phase.exprs, phase.outputs, store_accs):
            self._store(bid, self._store_base(acc, prefix), self._eval(e, 1, zero, cache))

    def _identity(self, op, d, lanes):
        if op == "sum":
            return L.const(d, 0, lanes)
        if op == "prod":
            return L.const(d, 1, lanes)
        if op == "and":
            return L.const(d, True, lanes)
        if op == "or":
            return L.const(d, False, lanes)
        if d.kind == "f":
            return L.const(d, -np.inf if op == "max" else np.inf, lanes)
        info = np.iinfo(d) if d.kind in "iu" else None
        if d == dtypes.bool_:
            return L.const(d, op == "min", lanes)
        return L.const(d, info.min if op == "max" else info.max, lanes)

    def _combine(self, op, acc, v, d):
        b = self.b
        if LC.is_complex(d):
            return LC.REDUCE_RULES[op](b, acc, v, d)
        if op == "sum":
            return b.fadd(acc, v) if d.kind == "f" else (b.or_(acc, v) if d == dtypes.bool_ else b.add(acc, v))
        if op == "prod":
            return b.fmul(acc, v) if d.kind == "f" else (b.and_(acc, v) if d == dtypes.bool_ else b.mul(acc, v))
        if op == "and":
            return b.and_(acc, v)
        if op == "or":
            return b.or_(acc, v)
        return L.np_maximum(b, acc, v, d, is_max=(op == "max"))

    def _emit_reduce(self, phase, prefix_outer, row_shape):
        b = self.b
        d = phase.exprs[0].dtype
        op = phase.reduce_op
        nodes = _walk(phase.exprs[0])
        lanes = self.lanes if self._vectorizable(nodes, []) else 1
        sacc = self._accumulator(op, d, 1, "acc")
        vacc = self._accumulator(op, d, lanes, "vacc") if lanes > 1 else None
        chains = [vacc] + [self._accumulator(op, d, lanes, f"vacc{k}")
                           for k in range(1, _sum_chains(op, d, lanes, row_shape[-1]))]

        def inner(prefix):
            self._set_row_bases(nodes, prefix)
            hoisted = self._invariants(nodes, lanes)
            cursor = self._alloca(I64, "j")
            b.store(ir.Constant(I64, 0), cursor)
            stop = ir.Constant(I64, row_shape[-1])
            if lanes > 1:
                start = ir.Constant(I64, 0)
                if len(chains) > 1:
                    # Independent chains hide the add's latency (one chain: a row dot product waits
                    # on every vector add in turn); chain k takes vectors k, k + K, k + 2K, ...
                    with self._loop(start, stop, lanes * len(chains), "ru") as j:
                        for k, acc in enumerate(chains):
                            jk = b.add(j, ir.Constant(I64, k * lanes)) if k else j
                            v = self._eval(phase.exprs[0], lanes, jk, dict(hoisted))
                            self._set_acc(acc, self._combine(op, self._get_acc(acc), v, d))
                    start = b.load(self.last_counter)
                with self._loop(start, stop, lanes, "rv") as j:
                    v = self._eval(phase.exprs[0], lanes, j, dict(hoisted))
                    self._set_acc(vacc, self._combine(op, self._get_acc(vacc), v, d))
                j = b.load(self.last_counter)
                with b.if_then(b.icmp_signed("<", j, stop)):
                    self.mask = L.tail_mask(self.b, j, stop, lanes)
                    v = self._eval(phase.exprs[0], lanes, j, dict(hoisted))
                    v = L.select_value(b, self.mask, v, self._identity(op, d, lanes))
                    self._set_acc(vacc, self._combine(op, self._get_acc(vacc), v, d))
                    self.mask = None
                return
            with self._loop(b.load(cursor), stop, 1, "rs") as j:
                v = self._eval(phase.exprs[0], 1, j, dict(hoisted))
                self._set_acc(sacc, self._combine(op, self._get_acc(sacc), v, d))

        self._nest(row_shape[:-1], prefix_outer, inner)
        result = self._get_acc(sacc)
        if lanes > 1:
            parts = [self._get_acc(acc) for acc in chains]
            while len(parts) > 1:       # pairwise: ((c0 + c1) + (c2 + c3))
                parts = [self._combine(op, parts[i], parts[i + 1], d) for i in range(0, len(parts), 2)]
            v = parts[0]
            total = L.extract_lane(b, v, 0)
            for k in range(1, lanes):
                total = self._combine(op, total, L.extract_lane(b, v, k), d)
            result = self._combine(op, total, result, d)
        return result

    # A running reduction lives in stack slots: one per register part (two for complex).
    def _accumulator(self, op, d, lanes, name):
        parts = (LC.part_dtype(d),) * 2 if LC.is_complex(d) else (d,)
        slots = tuple(self._alloca(L.value_type(p, lanes), name) for p in parts)
        self._set_acc(slots, self._identity(op, d, lanes))
        return slots

    def _get_acc(self, slots):
        parts = tuple(self.b.load(s) for s in slots)
        return parts if len(parts) > 1 else parts[0]

    def _set_acc(self, slots, value):
        for s, v in zip(slots, value if isinstance(value, tuple) else (value,)):
            self.b.store(v, s)

    def _nest(self, dims, prefix, body):
        if not dims:
            body(list(prefix))
            return
        with self._loop(ir.Constant(I64, 0), ir.Constant(I64, dims[0]), 1, "r") as i:
            self._nest(dims[1:], list(prefix) + [i], body)

    # ------------------------------------------------------------- function
    # ------------------------------------------------------------- column-style row kernels
    def _outer_vector_ok(self) -> bool:
        """Reductions along a strided axis (e.g. sum over axis 0 of a C-order matrix)
        vectorize better across neighbouring rows: lanes take consecutive outer
        indices, which are contiguous in memory, and each lane accumulates its own row."""
        lay = self.layout
        if not self.kernel.is_row_kernel or lay.n_outer != 1 or len(lay.shape) < 2 or self.lanes == 1:
            return False
        if any(is_gather(n) for n in self.kernel.loads()):
            return False
        loads = list(lay.access.values())
        if not any(a.coeffs[-1] not in (0, 1) for a in loads):
            return False
        if any(a.coeffs[0] not in (0, 1) for a in loads):
            return False
        return all(a.coeffs[0] == 1 for a in lay.stores)

    def _set_bases_excluding_lanes(self, nodes, idx):
        """Offsets of accesses with every dim but the lane dim fixed (``idx[0]`` is the lane dim)."""
        self.row_base = {}
        for n in nodes:
            if n.kind in ("load", "iota"):
                self.row_base[id(n)] = self._offset_excluding_lanes(self.layout.access[id(n)], idx)

    def _offset_excluding_lanes(self, acc, idx):
        off = ir.Constant(I64, acc.const)
        for d, (c, iv) in enumerate(zip(acc.coeffs, idx)):
            if d != 0 and c:
                off = self.b.add(off, self.b.mul(iv, ir.Constant(I64, c)))
        return off

    def _emit_outer_block(self, o, phase_stores):
        b = self.b
        row_shape = self.layout.shape[1:]
        for phase, stores in zip(self.kernel.phases, phase_stores):
            nodes = [n for e in phase.exprs for n in _walk(e)]
            store = self._masked_store if self.mask is not None else self._store
            if phase.reduce_op:
                d = phase.exprs[0].dtype
                vacc = self._accumulator(phase.reduce_op, d, self.lanes, "cacc")

                def body(prefix, phase=phase, nodes=nodes, vacc=vacc, d=d):
                    self._set_bases_excluding_lanes(nodes, [None] + list(prefix))
                    v = self._eval(phase.exprs[0], self.lanes, o, {})
                    self._set_acc(vacc, self._combine(phase.reduce_op, self._get_acc(vacc), v, d))
                self._nest(row_shape, [], body)
                base = self._offset_excluding_lanes(stores[0], [None] * len(self.layout.shape))
                store(phase.outputs[0], b.add(base, o), self._get_acc(vacc))
            else:
                def body(prefix, phase=phase, nodes=nodes, stores=stores):
                    idx = [None] + list(prefix)
                    self._set_bases_excluding_lanes(nodes, idx)
                    cache = {}
                    for e, bid, acc in zip(phase.exprs, phase.outputs, stores):
                        base = self._offset_excluding_lanes(acc, idx)
                        store(bid, b.add(base, o), self._eval(e, self.lanes, o, cache))
                if phase.per_row:
                    body([ir.Constant(I64, 0)] * len(row_shape))
                else:
                    self._nest(row_shape, [], body)

    def _emit_outer_vector(self, begin, end, phase_stores):
        b = self.b
        self.lane_dim = 0
        with self._loop(begin, end, self.lanes, "ob") as o:
            self._emit_outer_block(o, phase_stores)
        o = b.load(self.last_counter)
        with b.if_then(b.icmp_signed("<", o, end)):
            self.mask = L.tail_mask(self.b, o, end, self.lanes)
            self._emit_outer_block(o, phase_stores)
            self.mask = None
        self.lane_dim = -1

    def _emit_row_phases(self, phases, outer_idx, row_shape):
        """Every phase of one row, in order."""
        for phase, stores in phases:
            if phase.reduce_op:
                self._store_row_result(phase, stores[0], outer_idx, self._emit_reduce(phase, outer_idx, row_shape))
            elif phase.per_row:
                self._emit_per_row(phase, stores, outer_idx, len(row_shape))
            else:
                def body_fn(prefix, phase=phase, stores=stores):
                    self._emit_map(phase, stores, prefix, ir.Constant(I64, 0), ir.Constant(I64, row_shape[-1]))
                self._nest(row_shape[:-1], outer_idx, body_fn)

    def _store_row_result(self, phase, acc, outer_idx, value):
        b = self.b
        off = ir.Constant(I64, acc.const)
        for c, iv in zip(acc.coeffs, outer_idx):
            if c:
                off = b.add(off, b.mul(iv, ir.Constant(I64, c)))
        self._store(phase.outputs[0], off, value)

    # ------------------------------------------------------------- row blocks
    def _shared_across_rows(self, node) -> bool:
        """The same value for every row (no load or iota moves with the outer index)."""
        if node.kind == "const":
            return True
        if is_gather(node):
            return False
        if node.kind in ("load", "iota"):
            return self.layout.access[id(node)].coeffs[0] == 0
        return all(self._shared_across_rows(a) for a in node.args)

    def _row_block(self, row_shape) -> int:
        """Rows whose first-phase reduction runs together (1: row by row).

        A row reduction that reads a vector every row shares (a matrix-vector product's ``x``,
        ``sum(A * w, -1)``) loads it once per ``ROW_BLOCK`` rows instead of once per row: one
        load per multiply-add instead of two, which is what holds a row-major GEMV back when its
        matrix streams from L2 (128-256 rows: 1.3-1.5x). Only one outer and one row dim, float
        sums with vector lanes, small expressions without math calls or gathers (register
        pressure), rows of several vectors; each row then keeps a single accumulator chain, the
        block's rows being the independent chains.
        """
        lay = self.layout
        phase = self.kernel.phases[0]
        if (lay.n_outer != 1 or len(row_shape) != 1 or self.lanes == 1 or phase.reduce_op != "sum"
                or phase.exprs[0].dtype.kind != "f" or self.math_calls
                or row_shape[0] < 2 * self.lanes or lay.shape[0] < ROW_BLOCK):
            return 1
        nodes = _walk(phase.exprs[0])
        if len(nodes) > ROW_BLOCK_MAX_NODES or any(is_gather(n) for n in nodes) \
                or not self._vectorizable(nodes, []):
            return 1
        vector_loads = [n for n in nodes if n.kind == "load" and self.layout.access[id(n)].coeffs[-1] == 1]
        shared = [n for n in vector_loads if self._shared_across_rows(n)]
        if not shared or len(shared) == len(vector_loads):
            return 1
        return ROW_BLOCK

    def _emit_reduce_rows(self, phase, rows, n):
        """The first phase's sum over ``len(rows)`` rows at once; returns each row's result.

        Values shared by all rows are computed once per vector step (row 0's) and seeded into the
        other rows' caches, so a shared load is issued once for the block."""
        b = self.b
        d = phase.exprs[0].dtype
        op = phase.reduce_op
        expr = phase.exprs[0]
        nodes = _walk(expr)
        lanes = self.lanes
        shared = [id(x) for x in nodes if x.kind != "const" and self._shared_across_rows(x)]
        bases, hoisted = [], []
        for row in rows:
            self._set_row_bases(nodes, [row])
            bases.append(self.row_base)
            hoisted.append(self._invariants(nodes, lanes))
        accs = [self._accumulator(op, d, lanes, f"bacc{k}") for k in range(len(rows))]

        def step(j):
            first = None
            for k, acc in enumerate(accs):
                cache = dict(hoisted[k])
                if first is not None:
                    cache.update((key, first[key]) for key in shared if key in first)
                self.row_base = bases[k]
                v = self._eval(expr, lanes, j, cache)
                if self.mask is not None:
                    v = L.select_value(b, self.mask, v, self._identity(op, d, lanes))
                self._set_acc(acc, self._combine(op, self._get_acc(acc), v, d))
                first = cache if first is None else first

        stop = ir.Constant(I64, n)
        with self._loop(ir.Constant(I64, 0), stop, lanes, "bv") as j:
            step(j)
        if n % lanes:
            j = b.load(self.last_counter)
            self.mask = L.tail_mask(self.b, j, stop, lanes)
            step(j)
            self.mask = None
        results = []
        for acc in accs:
            v = self._get_acc(acc)
            total = L.extract_lane(b, v, 0)
            for k in range(1, lanes):
                total = self._combine(op, total, L.extract_lane(b, v, k), d)
            results.append(self._combine(op, total, self._identity(op, d, 1), d))
        return results

    def emit(self, name: str) -> str:
        fn = ir.Function(self.module, ir.FunctionType(VOID, [PTR, I64, I64]), name=name)
        fn.args[0].add_attribute("noalias")
        self.entry = fn.append_basic_block("entry")
        body = fn.append_basic_block("body")
        self.b = ir.IRBuilder(body)
        b = self.b
        bufs, begin, end = fn.args
        self.base = {}
        for slot, bid in enumerate(self.slots):
            p = b.gep(bufs, [ir.Constant(I64, slot)], source_etype=PTR)
            self.base[bid] = b.load(p, typ=PTR)
        lay = self.layout
        store_iter = iter(lay.stores)
        phase_stores = [[next(store_iter) for _ in p.outputs] for p in self.kernel.phases]
        if self.outer_vector:
            self._emit_outer_vector(begin, end, phase_stores)
        elif lay.elementwise_1d:
            phase = self.kernel.phases[0]
            self._emit_map(phase, phase_stores[0], [], begin, end)
        else:
            outer_shape = lay.shape[:lay.n_outer]
            row_shape = lay.shape[lay.n_outer:] or (1,)
            phases = list(zip(self.kernel.phases, phase_stores))
            block = self._row_block(row_shape)
            if block > 1:
                # Rows in blocks: the first phase's reduction runs over `block` rows at once, sharing
                # the loads the rows have in common; later phases then run row by row.
                span = b.sub(end, begin)
                blocked_end = b.sub(end, b.srem(span, ir.Constant(I64, block)))
                with self._loop(begin, blocked_end, block, "ob") as o:
                    rows = [b.add(o, ir.Constant(I64, k)) if k else o for k in range(block)]
                    phase, stores = phases[0]
                    for row, r in zip(rows, self._emit_reduce_rows(phase, rows, row_shape[-1])):
                        self._store_row_result(phase, stores[0], [row], r)
                    if len(phases) > 1:
                        with self._loop(o, b.add(o, ir.Constant(I64, block)), 1, "ok") as row:
                            self._emit_row_phases(phases[1:], [row], row_shape)
                begin = blocked_end
            with self._loop(begin, end, 1, "o") as o:
                # Recover the outer multi-index from the flat row number.
                idx, rem = [], o
                for s in reversed(outer_shape[1:]):
                    idx.append(b.urem(rem, ir.Constant(I64, s)))
                    rem = b.udiv(rem, ir.Constant(I64, s))
                outer_idx = ([rem] + list(reversed(idx))) if outer_shape else []
                self._emit_row_phases(phases, outer_idx, row_shape)
        b.ret_void()
        with b.goto_block(self.entry):
            b.position_at_end(self.entry)
            b.branch(body)
        return name
