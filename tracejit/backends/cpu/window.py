"""LLVM IR for a window step: ``dynamic_slice`` / ``dynamic_update_slice`` / ``pad`` as row copies.

Same signature as a kernel, ``void f(ptr* buffers, i64 begin, i64 end)``
(the range is ignored: a window copy is one unit of work), so executables
and native loops call both alike. Starts are read from their scalar buffers
at run time and clamped to ``[0, n - size]`` (XLA's rule), so no copy ever
leaves the operand. Trailing axes that the window covers whole merge into
one contiguous run, so ``x[i] = row`` is a single ``memcpy``.

An update copies the operand into the output first unless both are the same
memory (the planner put the output in place: a last-use temporary, a donated
argument or a loop carry); the check is a pointer comparison at run time.
A pad (no interior padding, no cropping) fills its output with the padding
value, then copies the operand in at the static low edges.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir

from tracejit.core import dtypes
from tracejit.compiler.plan import CALL_KINDS, WindowStep
from tracejit.backends.cpu import lowering as L
from tracejit.backends.cpu import native_calls
from tracejit.backends.cpu.codegen import KernelEmitter, c_strides
from tracejit.compiler.kernel_ir import walk

I1, I8, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(64)
PTR, VOID = ir.PointerType(), ir.VoidType()


def counted_loop(b: ir.IRBuilder, count, body, name: str = "loop") -> None:
    """``for i in range(count): body(i)`` at the builder's position (counter on the entry block's stack)."""
    with b.goto_entry_block():
        counter = b.alloca(I64)
    b.store(ir.Constant(I64, 0), counter)
    fn = b.function
    head, it, done = (fn.append_basic_block(f"{name}_{n}") for n in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    i = b.load(counter)
    b.cbranch(b.icmp_signed("<", i, count if isinstance(count, ir.Value) else ir.Constant(I64, count)), it, done)
    b.position_at_end(it)
    body(i)
    b.store(b.add(i, ir.Constant(I64, 1)), counter)
    b.branch(head)
    b.position_at_end(done)


def carried_loop(b: ir.IRBuilder, start, stop, step: int, body, name: str = "loop", carried=()) -> list:
    """``for i in range(start, stop, step): carried = body(i, carried)`` at the builder's position,
    the index and the carried values (a product's accumulators) in phis, so they stay in registers;
    ``start``, ``stop``: i64 values. Returns the carried values after the loop."""
    fn = b.function
    pre = b.block
    head, loop, done = (fn.append_basic_block(f"{name}.{part}") for part in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64, name=name)
    i.add_incoming(start, pre)
    phis = [b.phi(v.type) for v in carried]
    for phi, v in zip(phis, carried):
        phi.add_incoming(v, pre)
    b.cbranch(b.icmp_signed("<", i, stop), loop, done)
    b.position_at_end(loop)
    new = body(i, phis)
    for phi, v in zip(phis, new):
        phi.add_incoming(v, b.block)
    i.add_incoming(b.add(i, ir.Constant(I64, step)), b.block)
    b.branch(head)
    b.position_at_end(done)
    return phis


def _each_line(b: ir.IRBuilder, outer: int, inner: int, line) -> None:
    """``line(o, j)`` for every line along the axis of an ``(outer, n, inner)`` array."""
    counted_loop(b, outer, lambda o: counted_loop(b, inner, lambda j: line(o, j), "inner"), "outer")


def _line_element(b: ir.IRBuilder, o, k, j, n: int, inner: int):
    """Flat index of element ``[o, k, j]`` of an ``(outer, n, inner)`` array."""
    return b.add(b.mul(b.add(b.mul(o, ir.Constant(I64, n)), k), ir.Constant(I64, inner)), j)


class WindowLayout:
    """What a launcher needs: one unit of work, never split across threads."""

    parallel_size = 1
    elementwise_1d = False


def copy_bytes(builder, dst, src, nbytes: int, overlap: bool = False):
    """``llvm.memcpy`` (or ``llvm.memmove`` when the ranges may overlap) of ``nbytes`` bytes."""
    name = f"llvm.{'memmove' if overlap else 'memcpy'}.p0.p0.i64"
    fn = builder.module.globals.get(name)
    if fn is None:
        fn = ir.Function(builder.module, ir.FunctionType(VOID, [PTR, PTR, I64, I1]), name=name)
    builder.call(fn, [dst, src, ir.Constant(I64, nbytes), ir.Constant(I1, 0)])


class _Run:
    """The pending element of a combining scatter: its position (-1: none) and value, in registers."""

    def __init__(self, b, out_ptr, et, combine):
        self.b, self.out_ptr, self.et, self.combine_values = b, out_ptr, et, combine
        with b.goto_entry_block():
            self.pos, self.value = b.alloca(I64), b.alloca(et)
        b.store(ir.Constant(I64, -1), self.pos)

    def _element(self, pos):
        return self.b.gep(self.out_ptr, [pos], source_etype=self.et)

    def flush(self):
        b = self.b
        pending = b.load(self.pos, typ=I64)
        with b.if_then(b.icmp_signed(">=", pending, ir.Constant(I64, 0))):
            b.store(b.load(self.value, typ=self.et), self._element(pending))

    def combine(self, pos, new):
        b = self.b
        with b.if_else(b.icmp_signed("==", pos, b.load(self.pos, typ=I64))) as (same, other):
            with same:
                b.store(self.combine_values(b.load(self.value, typ=self.et), new), self.value)
            with other:
                self.flush()
                b.store(self.combine_values(b.load(self._element(pos), typ=self.et), new), self.value)
                b.store(pos, self.pos)


class WindowEmitter:
    """Emits one :class:`WindowStep` into ``module``."""

    def __init__(self, module: ir.Module, step: WindowStep, buffers, vector_bytes: int = 0):
        self.module = module
        self.step = step
        self.buffers = buffers
        self.layout = WindowLayout()
        self.kernel = step
        self.slots = []
        for b in [*step.writes(), *step.reads()]:
            if b not in self.slots:
                self.slots.append(b)
        if step.kind in CALL_KINDS and native_calls.uses_mpi(step):
            native_calls.register()     # before any link: also a module the persistent cache holds

    def _start(self, b, bases, start, axis_len, size):
        """Start index on one axis as i64, clamped so the window fits."""
        if isinstance(start, int):
            dt = self.buffers[start].dtype
            raw = b.load(bases[start], typ=ir.IntType(8 * dt.itemsize))
            if dt.itemsize < 8:
                raw = b.zext(raw, I64) if dt.kind in "ub" else b.sext(raw, I64)
            elif dt.kind == "u":
                # A uint64 above int64's range is past every end: clamp it high, not negative.
                raw = b.select(b.icmp_signed("<", raw, ir.Constant(I64, 0)), ir.Constant(I64, 2 ** 63 - 1), raw)
        else:
            value = int(start[1])
            raw = ir.Constant(I64, min(max(value, -(2 ** 63)), 2 ** 63 - 1))
        hi = ir.Constant(I64, axis_len - size)
        lo = ir.Constant(I64, 0)
        raw = b.select(b.icmp_signed("<", raw, lo), lo, raw)
        return b.select(b.icmp_signed(">", raw, hi), hi, raw)

    def emit(self, name: str) -> str:
        step = self.step
        fn = ir.Function(self.module, ir.FunctionType(VOID, [PTR, I64, I64]), name=name)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        bases = {}
        for slot, bid in enumerate(self.slots):
            p = b.gep(fn.args[0], [ir.Constant(I64, slot)], source_etype=PTR)
            bases[bid] = b.load(p, typ=PTR)
        if step.kind == "scatter":
            self._scatter(b, bases)
            b.ret_void()
            return name
        if step.kind in CALL_KINDS:
            native_calls.emit_call(b, step, bases, self.buffers)
            b.ret_void()
            return name
        if step.kind == "axis":
            self._axis(b, bases)
            b.ret_void()
            return name
        if step.kind == "concat":
            out = self.buffers[step.out]
            axis = step.combine[0]
            for operand, offset in zip(step.update, step.starts):
                window = tuple(self.buffers[operand].shape)
                starts = [ir.Constant(I64, offset if d == axis else 0) for d in range(len(window))]
                self._copy_window(b, tuple(out.shape), window, starts, bases[step.out], bases[operand],
                                  np.dtype(out.dtype).itemsize, True)
            b.ret_void()
            return name
        big = self.buffers[step.out if step.kind == "pad" else step.operand]
        shape, window = tuple(big.shape), tuple(step.window)
        itemsize = np.dtype(big.dtype).itemsize
        if step.kind == "pad":
            self._fill(b, bases, big)
        if step.kind == "update":
            same = b.icmp_unsigned("==", bases[step.out], bases[step.operand])
            with b.if_then(b.not_(same)):
                copy_bytes(b, bases[step.out], bases[step.operand], big.nbytes)
        writes_window = step.kind in ("update", "pad")
        big_ptr = bases[step.out] if writes_window else bases[step.operand]
        small_ptr = bases[step.update] if writes_window else bases[step.out]
        if not shape:       # a 0-d operand: the window is its one element
            copy_bytes(b, *((big_ptr, small_ptr) if writes_window else (small_ptr, big_ptr)), itemsize)
        else:
            starts = [self._start(b, bases, s, n, w) for s, n, w in zip(step.starts, shape, window)]
            self._copy_window(b, shape, window, starts, big_ptr, small_ptr, itemsize, writes_window)
        b.ret_void()
        return name

    def _copy_window(self, b, shape, window, starts, big_ptr, small_ptr, itemsize, to_big):
        """Copy a ``window``-shaped block between the big array (at ``starts``) and the small one."""
        if not math.prod(window):
            return
        # Merge trailing axes the window spans whole: one contiguous run per remaining index.
        k = len(shape)
        while k > 1 and window[k - 1] == shape[k - 1]:
            k -= 1
        run = math.prod(window[k - 1:])
        strides = c_strides(shape)
        base_off = ir.Constant(I64, 0)
        for d in range(k):
            base_off = b.add(base_off, b.mul(starts[d], ir.Constant(I64, strides[d])))
        self._rows(b, window[:k - 1], strides[:k - 1], c_strides(window)[:k - 1], base_off,
                   ir.Constant(I64, 0), big_ptr, small_ptr, run * itemsize, itemsize, to_big)

    def _scatter(self, b, bases):
        """``out = operand`` (skipped in place), then for each index row in row-major order: the
        row's block of ``out`` combined with its updates. Serial, so repeated indices combine in
        order (``set``: the last wins; ``add``: sums in NumPy's ``ufunc.at`` order)."""
        step = self.step
        kind, mode = step.combine
        out_buf, idx_buf = self.buffers[step.out], self.buffers[step.starts[0]]
        d = out_buf.dtype
        same = b.icmp_unsigned("==", bases[step.out], bases[step.operand])
        with b.if_then(b.not_(same)):
            copy_bytes(b, bases[step.out], bases[step.operand], out_buf.nbytes)
        k = idx_buf.shape[-1]
        indexed = tuple(out_buf.shape[:k])
        rows = math.prod(idx_buf.shape[:-1])
        block = math.prod(out_buf.shape[k:])
        if not rows or not block or not math.prod(indexed):
            return
        et = L.memory_type(d)
        it = ir.IntType(8 * idx_buf.dtype.itemsize)
        strides = c_strides(indexed)
        fused = self._fused_updates(b, bases) if step.fused is not None else None

        def row(r):
            pos, valid = ir.Constant(I64, 0), None
            for j in range(k):
                at = b.gep(bases[step.starts[0]], [b.add(b.mul(r, ir.Constant(I64, k)), ir.Constant(I64, j))],
                           source_etype=it)
                idx, ok = L.index_in_range(b, b.load(at, typ=it), idx_buf.dtype, indexed[j],
                                           "clip" if mode == "clip" else "drop")
                if ok is not None:
                    valid = ok if valid is None else b.and_(valid, ok)
                pos = b.add(pos, b.mul(idx, ir.Constant(I64, strides[j])))

            def element(e):
                dst = b.gep(bases[step.out], [b.add(b.mul(pos, ir.Constant(I64, block)), e)], source_etype=et)
                at = b.add(b.mul(r, ir.Constant(I64, block)), e)
                new = fused(at) if fused else b.load(b.gep(bases[step.update], [at], source_etype=et), typ=et)
                if kind != "set":
                    new = self._combine(b, kind, b.load(dst, typ=et), new, d)
                b.store(new, dst)

            def block_loop():
                if run is not None:
                    run.combine(pos, fused(r) if fused else b.load(
                        b.gep(bases[step.update], [r], source_etype=et), typ=et))
                else:
                    counted_loop(b, block, element, "elem")
            if valid is None:
                block_loop()
            else:
                with b.if_then(valid):
                    block_loop()
        # Scalar updates of a combining scatter keep a run of equal indices in a register (CSR rows,
        # sorted segment ids): the element is loaded at the run's first update and stored when the run
        # ends, the same sequence of operations as NumPy's ufunc.at without a store and reload per update.
        run = _Run(b, bases[step.out], et, lambda old, new: self._combine(b, kind, old, new, d)) \
            if block == 1 and kind != "set" else None
        counted_loop(b, rows, row, "row")
        if run is not None:
            run.flush()

    def _fused_updates(self, b, bases):
        """``update(flat index)``: the scatter's fused update expression (``step.fused``, a one-phase
        kernel over the updates' shape) evaluated as a scalar at that update, by the kernel code
        generator sharing this function's builder and buffer pointers."""
        kernel = self.step.fused
        em = KernelEmitter(self.module, kernel, self.buffers, vector_bytes=0)
        em.b, em.entry = b, b.function.entry_basic_block
        em.base = {bid: bases[bid] for bid in em.slots}
        expr = kernel.phases[0].exprs[0]
        nodes = walk([expr])
        shape = em.layout.shape

        def update(flat):
            digits, rest = [], flat
            for n in reversed(shape[1:]):
                digits.append(b.urem(rest, ir.Constant(I64, n)))
                rest = b.udiv(rest, ir.Constant(I64, n))
            index = [rest] + digits[::-1]
            em._set_row_bases(nodes, index[:-1])
            value = em._eval(expr, 1, index[-1], {})
            # As stored: a bool is a byte in memory, an i1 in expressions.
            return b.zext(value, L.memory_type(expr.dtype)) if expr.dtype == dtypes.bool_ else value
        return update

    def _axis(self, b, bases):
        """A serial loop along one axis for every other index: ``cumsum``/``cumprod``/``cummax``/
        ``cummin`` in NumPy's accumulate order (``out[k] = op(out[k-1], x[k])``, so sums are
        bit-identical), or ``argmax``/``argmin`` (the first extreme; the first NaN wins)."""
        op, axis, reverse = self.step.combine
        x_buf, out_buf = self.buffers[self.step.operand], self.buffers[self.step.out]
        d = x_buf.dtype
        shape = tuple(x_buf.shape)
        n, outer, inner = shape[axis], math.prod(shape[:axis]), math.prod(shape[axis + 1:])
        if not (n and outer and inner):
            return
        et = L.memory_type(d)
        x_ptr, out_ptr = bases[self.step.operand], bases[self.step.out]
        if op == "sort":
            self._insertion_sort(b, x_ptr, out_ptr, x_buf, n, outer, inner, et)
            return
        with b.goto_entry_block():
            acc, best_at = b.alloca(et), b.alloca(I64)

        def at(o, k, j):
            return _line_element(b, o, k, j, n, inner)

        def position(k):
            return b.sub(ir.Constant(I64, n - 1), k) if reverse else k

        def load(o, k, j):
            return b.load(b.gep(x_ptr, [at(o, position(k), j)], source_etype=et), typ=et)

        def line(o, j):
            b.store(load(o, ir.Constant(I64, 0), j), acc)
            b.store(ir.Constant(I64, 0), best_at)
            if op.startswith("cum"):
                b.store(b.load(acc, typ=et), b.gep(out_ptr, [at(o, position(ir.Constant(I64, 0)), j)], source_etype=et))

            def step(k1):
                k = b.add(k1, ir.Constant(I64, 1))
                old, new = b.load(acc, typ=et), load(o, k, j)
                if op.startswith("arg"):
                    take = self._beats(b, new, old, d, op == "argmax")
                    b.store(b.select(take, new, old), acc)
                    b.store(b.select(take, k, b.load(best_at, typ=I64)), best_at)
                    return
                value = self._combine(b, {"cumsum": "add", "cumprod": "mul", "cummax": "max", "cummin": "min"}[op],
                                      old, new, d)
                b.store(value, acc)
                b.store(value, b.gep(out_ptr, [at(o, position(k), j)], source_etype=et))
            counted_loop(b, n - 1, step, "along")
            if op.startswith("arg"):
                it = ir.IntType(8 * out_buf.dtype.itemsize)
                index = b.load(best_at, typ=I64)
                b.store(b.trunc(index, it) if it.width < 64 else index,
                        b.gep(out_ptr, [b.add(b.mul(o, ir.Constant(I64, inner)), j)], source_etype=it))

        _each_line(b, outer, inner, line)

    def _insertion_sort(self, b, x_ptr, out_ptr, x_buf, n, outer, inner, et):
        """Each line copied to ``out`` and insertion-sorted there: stable, NaN last (NumPy's order;
        -0.0 and 0.0 keep their order, as ``np.sort(kind="stable")``). For short axes only."""
        d = x_buf.dtype
        with b.if_then(b.not_(b.icmp_unsigned("==", out_ptr, x_ptr))):
            copy_bytes(b, out_ptr, x_ptr, x_buf.nbytes)
        with b.goto_entry_block():
            hole = b.alloca(I64)
        fn = b.function

        def line(o, j):
            def ptr(k):
                return b.gep(out_ptr, [_line_element(b, o, k, j, n, inner)], source_etype=et)

            def insert(k1):
                k = b.add(k1, ir.Constant(I64, 1))
                v = b.load(ptr(k), typ=et)
                b.store(k, hole)
                head, shift, done = (fn.append_basic_block(f"ins_{s}") for s in ("head", "shift", "done"))
                b.branch(head)
                b.position_at_end(head)
                h = b.load(hole, typ=I64)
                at_start = b.icmp_signed("==", h, ir.Constant(I64, 0))
                prev_at = b.select(at_start, h, b.sub(h, ir.Constant(I64, 1)))
                prev = b.load(ptr(prev_at), typ=et)
                b.cbranch(b.and_(b.not_(at_start), self._before(b, v, prev, d)), shift, done)
                b.position_at_end(shift)
                b.store(prev, ptr(h))
                b.store(prev_at, hole)
                b.branch(head)
                b.position_at_end(done)
                b.store(v, ptr(b.load(hole, typ=I64)))
            counted_loop(b, n - 1, insert, "sort")

        _each_line(b, outer, inner, line)

    @staticmethod
    def _before(b, v, w, d):
        """``v`` sorts strictly before ``w`` in NumPy's order (NaN last)."""
        if d.kind == "f":
            return b.or_(b.fcmp_ordered("<", v, w), b.and_(L.is_nan(b, w), b.not_(L.is_nan(b, v))))
        return (b.icmp_signed if d.kind == "i" else b.icmp_unsigned)("<", v, w)

    @staticmethod
    def _beats(b, new, old, d, is_max):
        """``new`` replaces the best so far: strictly greater (less), or the first NaN."""
        if d.kind == "f":
            better = b.or_(b.fcmp_ordered(">" if is_max else "<", new, old), L.is_nan(b, new))
            return b.and_(better, b.not_(L.is_nan(b, old)))
        cmp = b.icmp_signed if d.kind == "i" else b.icmp_unsigned
        return cmp(">" if is_max else "<", new, old)

    @staticmethod
    def _combine(b, kind, old, new, d):
        """NumPy's ``ufunc.at`` step on values as stored (bool as a byte 0/1)."""
        if d == dtypes.bool_:
            return b.or_(old, new) if kind in ("add", "max") else b.and_(old, new)
        if kind in ("min", "max"):
            return L.np_maximum(b, old, new, d, is_max=(kind == "max"))
        if d.kind == "f":
            return b.fadd(old, new) if kind == "add" else b.fmul(old, new)
        return b.add(old, new) if kind == "add" else b.mul(old, new)

    def _fill(self, b, bases, buf):
        """Every element of ``buf`` set to the padding value (a memset when its bytes are zero)."""
        n = math.prod(buf.shape)
        value = self.step.operand
        if not n:
            return
        if not isinstance(value, int) and not np.asarray(value[1], buf.dtype).tobytes().strip(b"\0"):
            L.zero_bytes(b, bases[self.step.out], buf.nbytes)
            return
        element = ir.ArrayType(I8, np.dtype(buf.dtype).itemsize)
        if isinstance(value, int):
            scalar = b.load(bases[value], typ=element)
        else:
            raw = np.asarray(value[1], buf.dtype).tobytes()
            scalar = ir.Constant(element, bytearray(raw))
        out = bases[self.step.out]
        counted_loop(b, n, lambda i: b.store(scalar, b.gep(out, [i], source_etype=element)), "fill")

    def _rows(self, b, counts, big_strides, small_strides, big_off, small_off, big_ptr, small_ptr,
              run_bytes, itemsize, to_big):
        """Nested loops over the window's leading axes; one memcpy of ``run_bytes`` per row."""
        if not counts:
            big_at = b.gep(big_ptr, [b.mul(big_off, ir.Constant(I64, itemsize))], source_etype=I8)
            small_at = b.gep(small_ptr, [b.mul(small_off, ir.Constant(I64, itemsize))], source_etype=I8)
            dst, src = (big_at, small_at) if to_big else (small_at, big_at)
            copy_bytes(b, dst, src, run_bytes)
            return
        counted_loop(b, counts[0], lambda i: self._rows(
            b, counts[1:], big_strides[1:], small_strides[1:],
            b.add(big_off, b.mul(i, ir.Constant(I64, big_strides[0]))),
            b.add(small_off, b.mul(i, ir.Constant(I64, small_strides[0]))),
            big_ptr, small_ptr, run_bytes, itemsize, to_big), "row")
