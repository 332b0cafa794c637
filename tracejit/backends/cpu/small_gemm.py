"""Small matrix products generated in LLVM: ``out = a @ b`` (or ``out += alpha * a @ b``) for
float32/float64 operands whose shapes are known when the code is compiled.

A library ``?gemm`` call costs microseconds before it multiplies anything (argument checks, a
choice of kernel and of threads, packing, waking its threads), and a small product is over by
then: on this project's 2-core machines MKL takes 1.9 us for a 16x64 by 64x64 float32 product
(about 20% of one core's peak) and 46 us for a 128x64 by 64x128 one called between other kernels.
Here the product is a register-blocked loop nest with every size a constant: 4 to 8 rows of
``out`` (4 to 6 with AVX2's 16 registers) by two vectors of columns are held in registers, and each
step of the contraction loads two vectors of a row of ``b``, broadcasts one element of a column of
``a`` per row and does two fused multiply-adds per row (1.2 and 13-14 us for the two products
above, on one core). The columns left after the whole blocks are a last block of as many vectors
as they need, read and written in plain pieces of the vector (no masked moves); rows past the last
full block are a smaller block. ``a`` may be read with any strides; ``b`` is read along its rows,
so one whose rows are not contiguous (``q @ k.T``), or lie far apart and are read by several
blocks of rows (attention's values), is first copied into a row-major block on the stack, per
matrix of the batch. The batch's axes may lie anywhere in the operands' memory (heads split off a
model axis), and a kernel form (:func:`kernel`) runs a range of its matrices, so a launch splits
a batch over threads.

The summation order along the contraction is sequential (``p = 0, 1, ...``), as in a textbook
loop: results may differ from a BLAS's in the last bits, as two BLAS libraries differ.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from tracejit.backends.cpu import llvm_engine
from tracejit.backends.cpu import lowering as L
from tracejit.backends.cpu.window import carried_loop, counted_loop

I32, I64, PTR = ir.IntType(32), ir.IntType(64), ir.PointerType()
_FLOATS = {np.dtype(np.float32): ir.FloatType(), np.dtype(np.float64): ir.DoubleType()}
# Rows of ``out`` per register block: from 4 (8 accumulators hide the fused multiply-add's latency
# on two ports) to 8 (16 accumulators, 2 loads and 1 broadcast of AVX-512's 32 vector registers).
# AVX2 has 16 registers: 6 rows (12 accumulators, 2 loads, 1 broadcast) is the most that fits. On
# the Zen 3 EPYC, one core, float32, 8 rows spilled and ran at 32-51 GFLOP/s where 6 rows ran at
# 52-94 (16x64x64 to 128x256x256; 4 rows 50-94, 3 rows 32-60).
ROW_BLOCKS = {32: (8, 7, 6, 5, 4), 16: (6, 5, 4)}
# The largest ``b`` copied into a row-major block on the stack (``SmallGemm.packs_b``): a 128x128
# float32 matrix, within any thread's stack.
PACK_MAX_BYTES = 1 << 16
# A row-contiguous ``b`` whose rows are far apart is packed for products of at least this many rows
# (its copy then costs at most 1/16 of the multiply-adds).
PACK_MIN_ROWS = 16


def row_block(m: int) -> int:
    """The rows per block for ``m`` rows on this host: fewest blocks, then the fullest last block."""
    blocks = ROW_BLOCKS[32 if _avx512() else 16]
    return min(blocks, key=lambda r: (-(-m // r), -(m % r or r)))


def _avx512() -> bool:
    """Whether this host has AVX-512: 32 vector registers, and mask registers that make a masked
    move cost what a plain one does."""
    return "+avx512f" in llvm_engine.host_cpu_features()


class UnitsLayout:
    """What a launcher needs of a kernel whose range is units of generated products (a
    convolution's output lines, a batch's matrices, a product's blocks of rows), split over
    threads."""

    elementwise_1d = False

    def __init__(self, units: int):
        self.parallel_size = units


@dataclass(frozen=True)
class _Columns:
    """One vector of a block's columns: ``count`` of its lanes hold columns; a partial vector has
    ``mask`` (its lanes before the last column), and ``masked`` says whether its moves use it (on
    AVX-512) or are plain pieces (the epilogue reads its own operands under ``mask`` either way)."""
    count: int
    mask: ir.Value | None = None
    masked: bool = False


def _lanes(indices) -> ir.Constant:
    """A shuffle's lane selection."""
    indices = list(indices)
    return ir.Constant(ir.VectorType(I32, len(indices)), indices)


@dataclass(frozen=True)
class SmallGemm:
    """``out[i, j] (+)= alpha * sum_p a[i, p] * b[p, j]`` for ``i < m, j < n, p < k``, for each
    matrix of a batch.

    ``a[i, p]`` is at ``a + i * a_row + p * a_col``, ``b[p, j]`` at ``b + p * ldb + j * b_col`` and
    ``out[i, j]`` at ``out + i * n + j`` (elements). ``batch``: the batch's axes, C order, as
    ``(size, stride of a, stride of b)`` (elements); the results of its matrices follow each other
    in ``out``, ``m * n`` elements apart (attention heads split off a model axis are a batch of two
    axes whose matrices' rows are far apart: ``a_row`` and ``ldb`` may exceed the row's length).
    ``accumulate``: add ``alpha`` times the product to ``out``.

    ``b`` may be copied into a row-major block on the stack first, per matrix (:attr:`packs_b`;
    callers keep a ``b`` with ``b_col != 1`` within :data:`PACK_MAX_BYTES`).

    ``taps``: the contraction is the sum over taps ``(a_offset, b_row)`` of ``k`` terms each, ``a``
    read from ``a + a_offset`` and ``b`` from its row ``b_row`` on: a convolution's taps, whose
    windows of its input overlap, so no im2col matrix is stored (``conv_gemm``).

    ``epilogue``: the key (``gemm_epilogue.epilogue_key``) of an epilogue applied to each block of
    results before it is stored (the function then takes the epilogue's inputs' addresses after
    ``out``)."""

    dtype: np.dtype
    m: int
    n: int
    k: int
    a_row: int
    a_col: int
    ldb: int
    alpha: float = 1.0
    accumulate: bool = False
    batch: tuple = ()
    b_col: int = 1
    taps: tuple = ((0, 0),)
    epilogue: str = ""

    @property
    def count(self) -> int:
        """Matrices in the batch."""
        return math.prod(size for size, _, _ in self.batch)

    @property
    def packs_b(self) -> bool:
        """Whether each matrix's ``b`` is copied into a row-major block first: where its rows are
        not contiguous, and where they are far apart and read by several blocks of rows (the
        values of attention heads, rows 768 floats apart: each column block's lines of ``b`` fell
        into a few of L1's sets and were evicted before the next block of rows read them)."""
        if self.n == 1:
            return False
        fits = self.k * self.n * self.dtype.itemsize <= PACK_MAX_BYTES
        far = self.ldb != self.n and self.m >= PACK_MIN_ROWS and self.taps == ((0, 0),)
        return self.b_col != 1 or (fits and far)

    @property
    def name(self) -> str:
        d = self
        taps = "" if d.taps == ((0, 0),) else "_taps" + hashlib.sha1(repr(d.taps).encode()).hexdigest()[:12]
        batch = "".join(f"_b{size}s{sa}s{sb}" for size, sa, sb in d.batch)
        return (f"tracejit_small_gemm_{d.dtype.name}_{d.m}x{d.n}x{d.k}_{d.a_row}_{d.a_col}_{d.ldb}_"
                f"{'acc' if d.accumulate else 'set'}{float(d.alpha)!r}{batch}_{d.b_col}{taps}"
                f"{'_epilogue' + d.epilogue if d.epilogue else ''}").replace(".", "p").replace("-", "m")


def function(module: ir.Module, g: SmallGemm, lanes: int, epilogue=None, ranged: bool = False) -> ir.Function:
    """The product as ``void name(a, b, out, *inputs)`` in ``module`` (defined once per ``g``), vectors
    of ``lanes`` elements; ``epilogue``: a ``gemm_epilogue.EpilogueEmitter`` (``g.epilogue`` its key)
    whose ``inputs`` are the addresses after ``out``. ``ranged``: ``void name_range(a, b, out, start,
    end, *inputs)``, the batch's matrices ``[start, end)`` only."""
    name = g.name + ("_range" if ranged else "")
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    extra = len(epilogue.inputs) if epilogue is not None else 0
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR] * 3 + [I64] * (2 * ranged) + [PTR] * extra),
                     name=name)
    fn.linkage = "internal"
    if g.taps != ((0, 0),):
        # (a convolution's product is called per output line from every step of its geometry:
        # one body per module, not one inlined copy per step)
        fn.attributes.add("noinline")
    for arg in fn.args[:3]:
        arg.add_attribute("noalias")    # (an epilogue's inputs may be one buffer twice, never the product)
    a, bm, out = fn.args[:3]
    start, end = fn.args[3:5] if ranged else (ir.Constant(I64, 0), ir.Constant(I64, g.count))
    _Emitter(fn, g, lanes, epilogue).emit(a, bm, out, start, end, fn.args[3 + 2 * ranged:])
    return fn


def batch_offsets(b: ir.IRBuilder, batch: tuple, q) -> tuple:
    """The elements from ``a`` and from ``b`` to matrix ``q`` (an i64 value; flat, C order) of a
    ``batch`` of ``(size, stride of a, stride of b)`` axes."""
    off_a, off_b, inner = ir.Constant(I64, 0), ir.Constant(I64, 0), 1
    for size, stride_a, stride_b in reversed(batch):
        index = b.urem(b.udiv(q, ir.Constant(I64, inner)), ir.Constant(I64, size))
        off_a = b.add(off_a, b.mul(index, ir.Constant(I64, stride_a)))
        off_b = b.add(off_b, b.mul(index, ir.Constant(I64, stride_b)))
        inner *= size
    return off_a, off_b


def slot_pointers(b: ir.IRBuilder, slots, count: int) -> list:
    """The first ``count`` buffer addresses of a kernel's ``slots`` array."""
    return [b.load(b.gep(slots, [ir.Constant(I64, k)], source_etype=PTR), typ=PTR) for k in range(count)]


def kernel(module: ir.Module, g: SmallGemm, lanes: int, name: str, epilogue=None) -> ir.Function:
    """The product as a kernel over the matrices of its batch: ``void name(slots, start, end)``, where
    ``slots`` holds the addresses of ``a``, ``b``, ``out`` and the epilogue's inputs (the form a
    kernel launch splits over threads)."""
    extra = len(epilogue.inputs) if epilogue is not None else 0
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, I64, I64]), name=name)
    slots, start, end = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    pointers = slot_pointers(b, slots, 3 + extra)
    b.call(function(module, g, lanes, epilogue, ranged=True), pointers[:3] + [start, end] + pointers[3:])
    b.ret_void()
    return fn


class _Emitter:
    def __init__(self, fn, g: SmallGemm, lanes: int, epilogue=None):
        self.fn, self.g, self.lanes, self.epilogue = fn, g, lanes, epilogue
        self.t = _FLOATS[g.dtype]
        self.vt = ir.VectorType(self.t, lanes)
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))

    # ------------------------------------------------------------------ helpers
    def _at(self, ptr, offset):
        return self.b.gep(ptr, [offset], source_etype=self.t)

    def _const(self, v):
        return ir.Constant(I64, v)

    def _fma(self, x, y, z):
        return L.intrinsic(self.b, "llvm.fma", [x, y, z])

    def _pieces(self, count: int):
        """``(first lane, lanes)`` of the plain accesses that cover a vector's first ``count`` lanes:
        the whole vector, or power-of-two runs (6 = 4 + 2)."""
        if count == self.lanes:
            return [(0, count)]
        pieces, first = [], 0
        for size in (16, 8, 4, 2, 1):
            if count - first >= size:
                pieces.append((first, size))
                first += size
        return pieces

    def _load(self, ptr, cols: _Columns):
        """A vector of the ``cols.count`` elements at ``ptr`` (lanes past them zero; nothing past them
        read): one load, a masked one where ``cols.masked``, else plain pieces."""
        b, value = self.b, ir.Constant(self.vt, None)
        if cols.masked:
            fn = L.masked_intrinsic(self.fn.module, "load", self.vt)
            return b.call(fn, [ptr, ir.Constant(I32, self.g.dtype.itemsize), cols.mask, value])
        for first, size in self._pieces(cols.count):
            at = self._at(ptr, self._const(first))
            if size == self.lanes:
                return b.load(at, typ=self.vt, align=self.g.dtype.itemsize)
            piece = b.load(at, typ=ir.VectorType(self.t, size), align=self.g.dtype.itemsize)
            wide = b.shuffle_vector(piece, piece, _lanes([l if l < size else 0 for l in range(self.lanes)]))
            value = b.shuffle_vector(value, wide, _lanes([self.lanes + l - first if first <= l < first + size else l
                                                          for l in range(self.lanes)]))
        return value

    def _store(self, value, ptr, cols: _Columns):
        """Store the first ``cols.count`` lanes of ``value`` at ``ptr`` (nothing past them written)."""
        b = self.b
        if cols.masked:
            fn = L.masked_intrinsic(self.fn.module, "store", self.vt)
            b.call(fn, [value, ptr, ir.Constant(I32, self.g.dtype.itemsize), cols.mask])
            return
        for first, size in self._pieces(cols.count):
            at = self._at(ptr, self._const(first))
            if size == self.lanes:
                b.store(value, at, align=self.g.dtype.itemsize)
            else:
                piece = b.shuffle_vector(value, value, _lanes(range(first, first + size)))
                b.store(piece, at, align=self.g.dtype.itemsize)

    # ------------------------------------------------------------------ the product
    def emit(self, a, bm, out, start, end, inputs):
        """Matrices ``[start, end)`` of the batch (i64 values)."""
        g, b = self.g, self.b
        if self.epilogue is not None:
            self.bases = dict(zip(self.epilogue.inputs, inputs))
            self.bases[self.epilogue.out] = out
        pack = None
        if g.packs_b:
            with b.goto_entry_block():
                pack = b.alloca(self.t, size=self._const(g.k * g.n))
                pack.align = 64

        def matrix(q):
            off_a, off_b = batch_offsets(b, g.batch, q)
            b_at = self._at(bm, off_b)
            if pack is not None:
                self._pack(b_at, pack)
                b_at = pack
            self._matrix(self._at(a, off_a), b_at, self._at(out, b.mul(q, self._const(g.m * g.n))),
                         b.mul(q, self._const(g.m)))
        if g.count == 1 and isinstance(start, ir.Constant):
            matrix(self._const(0))
        else:
            carried_loop(b, start, end, 1, lambda q, _: matrix(q) or [], "batch")
        self.b.ret_void()

    def _pack(self, src, pack):
        """Copy a matrix of ``b`` into ``pack``, row-major (``k`` rows of ``n``), reading along the
        operand's contiguous axis."""
        g, b = self.g, self.b

        def copy(p, j):
            value = b.load(self._at(src, b.add(b.mul(p, self._const(g.ldb)), b.mul(j, self._const(g.b_col)))),
                           typ=self.t)
            b.store(value, self._at(pack, b.add(b.mul(p, self._const(g.n)), j)))
        if g.ldb <= g.b_col:        # columns of b contiguous (q @ k.T): read down them
            counted_loop(b, g.n, lambda j: counted_loop(b, g.k, lambda p: copy(p, j), "pack_p"), "pack_j")
        else:
            counted_loop(b, g.k, lambda p: counted_loop(b, g.n, lambda j: copy(p, j), "pack_j"), "pack_p")

    def _matrix(self, a, bm, out, first_row):
        """One matrix of the batch; ``first_row``: its first row's index in the whole result (what an
        epilogue's other operands are indexed by)."""
        g, b, lanes = self.g, self.b, self.lanes
        width = 2 * lanes
        mr = row_block(g.m)
        full_rows, tail_rows = divmod(g.m, mr)

        def column_block(j0, vectors):
            if full_rows:
                counted_loop(b, full_rows, lambda ib: self._block(a, bm, out, b.mul(ib, self._const(mr)), j0, mr,
                                                                   vectors, first_row), "rows")
            if tail_rows:
                self._block(a, bm, out, self._const(full_rows * mr), j0, tail_rows, vectors, first_row)
        # ``vectors``: the columns each vector of a block holds. The last block holds the columns
        # left, in as many vectors as they need (no multiply-adds on lanes never stored). Its
        # partial vector is read and written under a mask where the host has mask registers
        # (AVX-512), else in plain pieces: AVX2's masked moves (vmaskmovps) doubled the inner
        # loop's time on the Zen 3 EPYC, and its masked stores took about 40 cycles each.
        full_cols, tail_cols = divmod(g.n, width)
        if full_cols:
            whole = [_Columns(lanes), _Columns(lanes)]
            counted_loop(b, full_cols, lambda jb: column_block(b.mul(jb, self._const(width)), whole), "cols")
        if tail_cols:
            j0 = self._const(full_cols * width)
            tail = []
            for v in range(-(-tail_cols // lanes)):
                count = min(lanes, tail_cols - v * lanes)
                tail.append(_Columns(count) if count == lanes else _Columns(
                    count, L.tail_mask(b, b.add(j0, self._const(v * lanes)), self._const(g.n), lanes), _avx512()))
            column_block(j0, tail)

    def _block(self, a, bm, out, i0, j0, rows, vectors, first_row):
        """``rows`` rows from ``i0`` by ``len(vectors)`` vectors of columns from ``j0`` (``vectors[v]``:
        the :class:`_Columns` of vector ``v``), accumulated in registers over each tap's contraction
        in turn, then stored (through the epilogue, if any)."""
        g, b = self.g, self.b
        zero = ir.Constant(self.vt, None)
        accs = [[zero] * len(vectors) for _ in range(rows)]
        if len(g.taps) == 1:
            accs = self._tap(a, bm, i0, j0, rows, vectors, accs, *(self._const(v) for v in g.taps[0]))
        else:
            accs = self._tap_loop(a, bm, i0, j0, rows, vectors, accs)
        alpha = L.splat(b, ir.Constant(self.t, g.alpha), self.lanes)
        for r in range(rows):
            row_at = b.add(b.mul(b.add(i0, self._const(r)), self._const(g.n)), j0)
            for v, cols in enumerate(vectors):
                ptr = self._at(out, b.add(row_at, self._const(v * self.lanes)))
                value = accs[r][v]
                if g.accumulate:
                    value = self._fma(alpha, value, self._load(ptr, cols))
                elif g.alpha != 1.0:
                    value = b.fmul(alpha, value)
                if self.epilogue is not None:
                    # (the epilogue's own operands are read under a mask of the lanes that exist)
                    col = b.add(j0, self._const(v * self.lanes))
                    flat = b.add(b.mul(b.add(first_row, b.add(i0, self._const(r))), self._const(g.n)), col)
                    value = self.epilogue.value(b, self.bases, value, flat, cols.mask)
                self._store(value, ptr, cols)

    def _accumulating_loop(self, count: int, accs, body, name: str):
        """``for i in range(count): accs = body(i, accs)`` with the accumulators (rows of vectors) in
        phis (registers)."""
        widths = [len(row) for row in accs]

        def rows(flat):
            at = [sum(widths[:r]) for r in range(len(widths))]
            return [list(flat[s:s + w]) for s, w in zip(at, widths)]
        flat = carried_loop(self.b, self._const(0), self._const(count), 1,
                            lambda i, phis: [v for row in body(i, rows(phis)) for v in row], name,
                            [v for row in accs for v in row])
        return rows(flat)

    def _tap_loop(self, a, bm, i0, j0, rows, vectors, accs):
        """``accs`` plus every tap's terms: a loop over the taps (their offsets from a constant table,
        so the code is one tap's whatever their number) around :meth:`_tap`."""
        g, b = self.g, self.b
        table = L.i64_table(self.fn.module, f"{g.name}_taps", [v for tap in g.taps for v in tap])

        def tap(t, phis):
            at = b.mul(t, self._const(2))
            a_offset, b_row = L.load_i64(b, table, at), L.load_i64(b, table, b.add(at, self._const(1)))
            return self._tap(a, bm, i0, j0, rows, vectors, phis, a_offset, b_row)
        return self._accumulating_loop(len(g.taps), accs, tap, "tap")

    def _tap(self, a, bm, i0, j0, rows, vectors, accs, a_offset, b_row):
        """``accs`` plus one tap's ``k`` terms (``a_offset``, ``b_row``: i64 values): a loop whose
        accumulators are phis."""
        g, b, lanes = self.g, self.b, self.lanes

        def term(p, phis):
            b_row_at = b.add(b.mul(b.add(p, b_row), self._const(g.n if g.packs_b else g.ldb)), j0)
            bv = [self._load(self._at(bm, b.add(b_row_at, self._const(v * lanes))), cols)
                  for v, cols in enumerate(vectors)]
            a_col = b.add(b.mul(p, self._const(g.a_col)), a_offset)
            new = []
            for r in range(rows):
                a_at = b.add(b.mul(b.add(i0, self._const(r)), self._const(g.a_row)), a_col)
                x = L.splat(b, b.load(self._at(a, a_at), typ=self.t), self.lanes)
                new.append([self._fma(x, bv[v], phis[r][v]) for v in range(len(vectors))])
            return new
        return self._accumulating_loop(g.k, accs, term, "p")
