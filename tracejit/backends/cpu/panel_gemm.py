"""Panel products generated in LLVM: ``out = alpha * a @ b`` or ``out += a @ b`` (float32, float64)
with at most ``MAX_ROWS`` rows and many columns -- the products of a transformer's MLP and
projections at a small batch, ``(128, 3072) @ (3072, 12288)``, skinny ones such as
``(16, 768) @ (768, 3072)`` and rank-k updates. ``blas`` offers this code as the provider
``tracejit`` and uses it only in the shape classes where it measured faster than the chosen library
on the host (``blas.measure``), and only for the products it serves (``PanelKernels.serves``).

Why it can win there: a BLAS's kernels are tuned for large square products; with M rows, each
element of ``b`` it packs serves only 2M flops. On the 2-core EPYC (Zen 5, AVX-512), in one process,
alternating, two threads: (128, 3072) @ (3072, 12288) float32 ran at 402 GFLOP/s here and 329 in
NumPy's OpenBLAS, (16, 768) @ (768, 3072) at 287 and 109, (1024, 64) @ (64, 1024) at 435 and 331,
(512, 768) @ (768, 3072) at 469 and 436, 1024^3 at 470 and 454, float64 (128, 3072) @ (3072, 12288)
at 192 and 173; 2048^3 at 444 and 456 (hence ``MAX_ROWS``).

The loop nest, per thread of the OpenMP team (which splits the columns in whole column blocks):

* column blocks of ``vectors`` vectors (6 x 16 float32 or 6 x 8 float64 columns with AVX-512); the
  team's shares are whole vectors, not whole blocks, and the last block of a share has only the
  vectors its columns need (the last one masked): with 1024 columns two threads got 6 and 4.7 blocks
  of work, now 5.3 each (1024^3 float32: 405-436 -> 470 GFLOP/s, OpenBLAS 454 in the same run);
* contraction blocks of 256 rows, each first copied (packed) from ``b`` into a contiguous
  96 KB stack buffer (float32: 256 rows x 96 columns x 4 bytes), lanes past the last column zero.
  Read in place, the rows of a block lie ``ldb`` apart -- 48 KB for 12288 float32 columns, which
  maps them onto a few cache sets -- and the block did not stay in L2 between row blocks. A ``b``
  whose columns are contiguous (``x @ w.T``, the input gradient of a dense layer) is packed by
  transposing square tiles in registers: on the Zen 4 VM, in turns, (512, 768) @ (768, 3072) ran
  at 198 GFLOP/s, and at 195 from a row-major ``b``, where OpenBLAS ran at 171 and copying ``w.T``
  row-major first took half as long as the product. A transposed ``a`` is read in place too.
  While row blocks compute, they prefetch the block the next pack copies (see ``_block``);
* row blocks of ``rows`` rows of ``out`` (the last one smaller): ``rows x vectors`` accumulators
  in registers; each step of the contraction loads ``vectors`` vectors of the packed block,
  broadcasts one element of ``a`` per row and does ``rows x vectors`` fused multiply-adds. Four
  rows by six vectors beat eight by three (206 against 190 GFLOP/s on one core): a broadcast costs
  an issue slot the fused multiply-adds need, and this shape has one per six of them.

Partial sums of a contraction block are stored in ``out`` and loaded by the next block. The
summation order along the contraction is sequential, as a textbook loop's: results may differ from
a BLAS's in the last bits, as two BLAS libraries differ. Each thread needs the 96 KB buffer on its
stack (thread stacks are 2-8 MB by default).
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np
from llvmlite import ir

from tracejit.backends.cpu import llvm_engine, object_cache, parallel
from tracejit.backends.cpu import lowering as L
from tracejit.backends.cpu.native import vector_bytes
from tracejit.backends.cpu.pointers import data_address
from tracejit.backends.cpu.window import carried_loop

I32, I64, PTR, VOID = ir.IntType(32), ir.IntType(64), ir.PointerType(), ir.VoidType()
_FLOATS = {np.dtype(np.float32): ir.FloatType(), np.dtype(np.float64): ir.DoubleType()}
# Rows and columns it serves. With more rows OpenBLAS was faster on square products (2048^2: 456
# against 444 GFLOP/s); with fewer than four column blocks the team's two threads get one block each,
# or two and one ((1024, 1024) @ (1024, 16): 43 against 217; (1024, 512) @ (512, 256): 329 against 448).
MAX_ROWS = 1024
MIN_COLUMN_BLOCKS = 4
# Smaller products go to the library: this call costs ~4 us more than NumPy's matmul (a launch from
# Python over the team), which larger products repay (measured crossover on the EPYC, one call at a
# time: float32 near 2^21 multiply-adds, float64 near 2^18; at 2^23 it was 1.2x and 1.9x faster).
MIN_MACS = {np.dtype(np.float32): 1 << 21, np.dtype(np.float64): 1 << 18}
PACKED_BYTES = 96 << 10     # one contraction block of ``b``, packed (on each thread's stack)
_DIMS = ("m", "n", "k", "a_row", "a_col", "ldb", "accumulate", "b_transposed")
KERNEL_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


def contraction_block(dtype, lanes: int, vectors: int) -> int:
    """Rows of ``b`` per contraction block: a packed block of ``PACKED_BYTES`` (a multiple of
    ``lanes`` rows: a transposed ``b`` is packed in square tiles)."""
    return PACKED_BYTES // (vectors * lanes * np.dtype(dtype).itemsize) // lanes * lanes


def kernel_name(dtype) -> str:
    return f"tracejit_panel_gemm_{np.dtype(dtype).name}"


def emit_kernel(module: ir.Module, dtype, lanes: int, rows: int, vectors: int) -> ir.Function:
    """``void kernel(ptr slots[4], i64 begin, i64 end)``: columns ``[begin, end)`` of the product.

    ``slots``: ``a``, ``b``, ``out`` and an int64 array of the sizes and strides, in elements:
    ``m, n, k, a_row, a_col, ldb, accumulate, b_transposed`` (``a[i, p]`` at
    ``a + i * a_row + p * a_col``, ``b[p, j]`` at ``b + p * ldb + j``, or at ``b + j * ldb + p`` when
    ``b_transposed`` is 1 (``b`` is the transpose of a row-major matrix: ``x @ w.T``), ``out[i, j]``
    at ``out + i * n + j``; ``accumulate``: 1 adds the product to ``out``, 0 overwrites it).
    ``begin`` is a multiple of ``lanes``; column blocks of ``vectors * lanes`` columns from
    ``begin`` (the last one narrower), row blocks of ``rows``."""
    fn = ir.Function(module, parallel.KERNEL_TYPE, name=kernel_name(dtype))
    _Emitter(fn, np.dtype(dtype), lanes, rows, vectors).emit()
    return fn


class _Emitter:
    def __init__(self, fn, dtype, lanes: int, rows: int, vectors: int):
        self.fn, self.t, self.lanes, self.rows, self.vectors = fn, _FLOATS[dtype], lanes, rows, vectors
        self.item = dtype.itemsize
        self.vt = ir.VectorType(self.t, lanes)
        self.width = vectors * lanes
        self.kc = contraction_block(dtype, lanes, vectors)
        assert self.kc % lanes == 0     # a transposed ``b`` is packed in tiles of lanes x lanes
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))

    def _const(self, v):
        return ir.Constant(I64, v)

    def _at(self, ptr, offset):
        return self.b.gep(ptr, [offset], source_etype=self.t)

    # ------------------------------------------------------------------ the product
    def emit(self):
        b = self.b
        slots, begin, end = self.fn.args
        a, bm, out, dims = (b.load(b.gep(slots, [self._const(s)], source_etype=PTR), typ=PTR) for s in range(4))
        d = {name: b.load(b.gep(dims, [self._const(s)], source_etype=I64), typ=I64) for s, name in enumerate(_DIMS)}
        self.a, self.bm, self.out, self.d, self.end = a, bm, out, d, end
        # the block of ``b`` being multiplied, copied contiguous (see the module docstring)
        self.packed = b.alloca(self.vt, size=self._const(self.kc * self.vectors), name="packed_b")
        self.packed.align = 64
        self.full_rows = b.mul(b.sdiv(d["m"], self._const(self.rows)), self._const(self.rows))
        self.tail_rows = b.sub(d["m"], self.full_rows)

        def column_block(j0, _):
            cols = b.sub(end, j0)
            with b.if_else(b.icmp_signed(">=", cols, self._const(self.width))) as (full, partial):
                with full:
                    self._column_block(j0, self.vectors, None)
                with partial:
                    # the last block of a range: as many vectors as its columns need (a thread's range
                    # ends on any vector, so the team's shares are even), the last one masked
                    needed = b.sdiv(b.add(cols, self._const(self.lanes - 1)), self._const(self.lanes))
                    for vectors in range(1, self.vectors + 1):
                        with b.if_then(b.icmp_signed("==", needed, self._const(vectors))):
                            self._column_block(j0, vectors, [
                                L.tail_mask(b, b.add(j0, self._const(v * self.lanes)), end, self.lanes)
                                for v in range(vectors)])
            return []
        carried_loop(self.b, begin, end, self.width, column_block, "cols")
        b.ret_void()

    def _min(self, x, y):
        return self.b.select(self.b.icmp_signed("<", x, y), x, y)

    def _column_block(self, j0, vectors: int, masks):
        b, d = self.b, self.d

        def rows_of_b(k0, _):
            k1 = self._min(b.add(k0, self._const(self.kc)), d["k"])
            # the first block starts from zero unless the product is added to ``out``
            fresh = b.and_(b.icmp_signed("==", k0, self._const(0)),
                           b.icmp_signed("==", d["accumulate"], self._const(0)))
            self._pack(j0, k0, k1, vectors, masks)
            ahead = self._next_block(j0, k1)
            rows = self.rows
            carried_loop(self.b, self._const(0), self.full_rows, rows,
                         lambda i0, _: self._block(i0, j0, k0, k1, fresh, rows, vectors, masks, ahead) or [],
                         "rows")
            for tail in range(1, rows):
                with b.if_then(b.icmp_signed("==", self.tail_rows, self._const(tail))):
                    self._block(self.full_rows, j0, k0, k1, fresh, tail, vectors, masks, ahead)
            return []
        carried_loop(self.b, self._const(0), d["k"], self.kc, rows_of_b, "kc")

    def _next_block(self, j0, k1):
        """``(first row, rows, first column)`` of ``b`` that the next pack copies: the next contraction
        block of this column block, else the first of the next column block of this thread's range
        (else this block again: nothing is left to fetch)."""
        b, d = self.b, self.d
        more_k = b.icmp_signed("<", k1, d["k"])
        next_j = b.add(j0, self._const(self.width))
        column = b.select(more_k, j0, b.select(b.icmp_signed("<", next_j, self.end), next_j, j0))
        first = b.select(more_k, k1, self._const(0))
        return first, self._min(self._const(self.kc), b.sub(d["k"], first)), column

    def _pack(self, j0, k0, k1, vectors: int, masks):
        """Copy rows ``[k0, k1)`` of the column block at ``j0`` (``vectors`` vectors) of ``b`` to
        ``packed`` (lanes past the last column zero)."""
        b = self.b
        with b.if_else(b.icmp_signed("!=", self.d["b_transposed"], self._const(0))) as (transposed, rows):
            with transposed:
                self._pack_transposed(j0, k0, k1, vectors)
            with rows:
                self._pack_rows(j0, k0, k1, vectors, masks)

    def _pack_rows(self, j0, k0, k1, vectors: int, masks):
        b, d = self.b, self.d
        b_cols = [self._at(self.bm, b.add(j0, self._const(v * self.lanes))) for v in range(vectors)]

        def row(p, _):
            at = b.mul(b.sub(p, k0), self._const(vectors))
            for v in range(vectors):
                value = self._load(self._at(b_cols[v], b.mul(p, d["ldb"])), masks, v)
                b.store(value, b.gep(self.packed, [b.add(at, self._const(v))], source_etype=self.vt), align=64)
            return []
        carried_loop(self.b, k0, k1, 1, row, "pack")

    def _pack_transposed(self, j0, k0, k1, vectors: int):
        """:meth:`_pack` where ``b``'s columns are contiguous: tiles of ``lanes`` columns by ``lanes``
        rows, each loaded as ``lanes`` vectors along the contraction and transposed in registers
        (a gather per packed vector, or a scalar copy, costs more than the product's arithmetic at
        128 rows). Rows past ``k1`` (the last tile's) and columns past the range's end load as zero:
        the rows fall inside the buffer (``kc`` is a multiple of ``lanes``) and are never read."""
        b, d, lanes = self.b, self.d, self.lanes
        load = L.masked_intrinsic(self.fn.module, "load", self.vt)
        zero = ir.Constant(self.vt, None)

        def tile_row(p, _):
            along_k = L.tail_mask(b, p, k1, lanes)
            at = b.mul(b.sub(p, k0), self._const(vectors))
            for v in range(vectors):
                tile = []
                for c in range(lanes):
                    column = b.add(j0, self._const(v * lanes + c))
                    mask = b.and_(along_k, L.splat(b, b.icmp_signed("<", column, self.end), lanes))
                    ptr = self._at(self.bm, b.add(b.mul(column, d["ldb"]), p))
                    tile.append(b.call(load, [ptr, ir.Constant(I32, self.item), mask, zero]))
                for q, value in enumerate(_transposed(b, tile)):
                    slot = b.add(at, self._const(q * vectors + v))
                    b.store(value, b.gep(self.packed, [slot], source_etype=self.vt), align=64)
            return []
        carried_loop(self.b, k0, k1, lanes, tile_row, "pack_t")

    def _block(self, i0, j0, k0, k1, fresh, rows, vectors: int, masks, ahead):
        """Rows ``i0 .. i0 + rows`` by the column block at ``j0`` (``vectors`` vectors), over the
        contraction ``[k0, k1)``.

        Each step also prefetches one cache line of the block the next pack copies (``ahead``, see
        :meth:`_next_block`): row ``p - k0`` of it, the line ``(i0 / rows) mod vectors`` along its
        columns, so ``vectors`` row blocks fetch the whole block into L2 while they compute. The
        pack then copies from L2 instead of waiting on L3 or memory with the FMA units idle (with
        128 rows a block serves only 32 row blocks: (128, 12288) @ (12288, 3072) float32 ran 1.10x
        faster with the prefetches). With a transposed ``b`` the block's lines lie along its
        columns: step ``p`` fetches column ``min(p - k0, width - 1)``, each row block the line
        ``(i0 / rows) mod (kc / lanes)`` along the contraction."""
        b, d, lanes = self.b, self.d, self.lanes
        ptrs = [[self._at(self.out, b.add(b.add(b.mul(b.add(i0, self._const(r)), d["n"]), j0), self._const(v * lanes)))
                 for v in range(vectors)] for r in range(rows)]
        zero_bb, load_bb, go_bb = (self.fn.append_basic_block(s) for s in ("acc.zero", "acc.load", "acc.go"))
        b.cbranch(fresh, zero_bb, load_bb)
        b.position_at_end(load_bb)
        loaded = [self._load(p, masks, v) for row in ptrs for v, p in enumerate(row)]
        b.branch(go_bb)
        b.position_at_end(zero_bb)
        b.branch(go_bb)
        b.position_at_end(go_bb)
        accs = []
        for value in loaded:
            phi = b.phi(self.vt)
            phi.add_incoming(value, load_bb)
            phi.add_incoming(ir.Constant(self.vt, None), zero_bb)
            accs.append(phi)
        # row starts of ``a`` and column starts of ``b``, outside the loop: each step indexes them by p
        a_rows = [self._at(self.a, b.mul(b.add(i0, self._const(r)), d["a_row"])) for r in range(rows)]
        first, ahead_rows, column = ahead
        transposed = b.icmp_signed("!=", d["b_transposed"], self._const(0))
        block = b.sdiv(i0, self._const(self.rows))
        line = b.mul(b.srem(block, b.select(transposed, self._const(self.kc // lanes), self._const(self.vectors))),
                     self._const(lanes))
        ahead_at = self._at(self.bm, b.select(transposed, b.add(b.mul(column, d["ldb"]), b.add(first, line)),
                                              b.add(b.mul(first, d["ldb"]), b.add(column, line))))
        last_ahead = b.select(transposed, self._const(self.width - 1), b.sub(ahead_rows, self._const(1)))

        def step(p, accs):
            L.prefetch(b, self._at(ahead_at, b.mul(self._min(b.sub(p, k0), last_ahead), d["ldb"])), locality=2)
            at = b.mul(b.sub(p, k0), self._const(vectors))
            bv = [b.load(b.gep(self.packed, [b.add(at, self._const(v))], source_etype=self.vt), typ=self.vt, align=64)
                  for v in range(vectors)]
            new = []
            for r in range(rows):
                x = L.splat(b, b.load(self._at(a_rows[r], b.mul(p, d["a_col"])), typ=self.t), lanes)
                new += [L.intrinsic(b, "llvm.fma", [x, bv[v], accs[r * vectors + v]]) for v in range(vectors)]
            return new
        accs = carried_loop(self.b, k0, k1, 1, step, "p", accs)
        for r in range(rows):
            for v in range(vectors):
                self._store(accs[r * vectors + v], ptrs[r][v], masks, v)

    def _load(self, ptr, masks, v):
        if masks is None:
            return self.b.load(ptr, typ=self.vt, align=self.item)
        fn = L.masked_intrinsic(self.fn.module, "load", self.vt)
        return self.b.call(fn, [ptr, ir.Constant(I32, self.item), masks[v], ir.Constant(self.vt, None)])

    def _store(self, value, ptr, masks, v):
        if masks is None:
            self.b.store(value, ptr, align=self.item)
            return
        fn = L.masked_intrinsic(self.fn.module, "store", self.vt)
        self.b.call(fn, [value, ptr, ir.Constant(I32, self.item), masks[v]])


def _transposed(b, rows: list) -> list:
    """The transpose of a square tile held as ``len(rows)`` vectors of as many lanes: at each scale
    ``h`` (half the tile, then a quarter, ...) rows ``i`` and ``i + h`` swap their off-diagonal
    ``h``-blocks, one shuffle each (log2(lanes) rounds of ``lanes`` shuffles)."""
    lanes = len(rows)
    h = lanes // 2
    while h:
        low = ir.Constant(ir.VectorType(I32, lanes), [c if c & h == 0 else lanes + c - h for c in range(lanes)])
        high = ir.Constant(ir.VectorType(I32, lanes), [c + h if c & h == 0 else lanes + c for c in range(lanes)])
        out = list(rows)
        for i in range(lanes):
            if i & h == 0:
                out[i] = b.shuffle_vector(rows[i], rows[i + h], low)
                out[i + h] = b.shuffle_vector(rows[i], rows[i + h], high)
        rows, h = out, h // 2
    return rows


# --------------------------------------------------------------------------- running it

class PanelKernels:
    """The kernels of this host (one per dtype, compiled at first use or loaded from the persistent
    cache) and their launch over the OpenMP team."""

    def __init__(self):
        if "+fma" not in llvm_engine.host_cpu_features():
            raise RuntimeError("no fused multiply-add on this CPU")
        self.vector_bytes = vector_bytes()           # 64 with AVX-512, else 32 (FMA implies AVX)
        # 4 rows x 6 vectors: 24 accumulators of AVX-512's 32 registers; AVX2's 16 hold 4 x 3
        self.rows, self.vectors = 4, (6 if self.vector_bytes == 64 else 3)
        self.team = parallel.runtime()
        self._compiled: dict = {}
        self._lock = threading.Lock()

    def lanes(self, dtype) -> int:
        return self.vector_bytes // np.dtype(dtype).itemsize

    def _kernel(self, dtype):
        """``(kernel address, the kernel as a ctypes function, trampoline address or None, the module
        keeping them alive)``."""
        hit = self._compiled.get(dtype)
        if hit is not None:
            return hit
        with self._lock:
            if dtype not in self._compiled:
                team = self.team

                def build():
                    module = llvm_engine.new_module(kernel_name(dtype))
                    emit_kernel(module, dtype, self.lanes(dtype), self.rows, self.vectors)
                    if team is not None:
                        parallel.emit_trampoline(module, team)
                    return module
                compiled, _ = object_cache.compile_module(
                    build, name=kernel_name(dtype), vectorize=False,
                    components={"panel_gemm": kernel_name(dtype), "rows": self.rows, "vectors": self.vectors,
                                "packed_bytes": PACKED_BYTES, "dims": _DIMS,
                                "vector_bytes": self.vector_bytes, "openmp": team.kind if team else None})
                trampoline = compiled.address(parallel.TRAMPOLINE) if team is not None else None
                address = compiled.address(kernel_name(dtype))
                self._compiled[dtype] = (address, KERNEL_FN(address), trampoline, compiled)
        return self._compiled[dtype]

    def serves_shape(self, dtype, m: int, n: int, k: int) -> bool:
        """Whether an ``(m, k) @ (k, n)`` product of ``dtype`` has a shape this code takes (the sizes
        where it can win: see ``MAX_ROWS``, ``MIN_COLUMN_BLOCKS``, ``MIN_MACS``)."""
        dtype = np.dtype(dtype)
        return (dtype in _FLOATS and m <= MAX_ROWS and m * n * k >= MIN_MACS[dtype]
                and n >= MIN_COLUMN_BLOCKS * self.vectors * self.lanes(dtype))

    def serves(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, alpha: float, beta: float) -> bool:
        """Whether :meth:`run` computes this product (else a BLAS must)."""
        dtype = out.dtype
        if (a.dtype != dtype or b.dtype != dtype or out.ndim != 2 or a.ndim != 2 or b.ndim != 2
                or (beta != 0.0 and (beta != 1.0 or alpha != 1.0))):
            return False
        (m, k), (k2, n) = a.shape, b.shape
        if not self.serves_shape(dtype, m, n, k) or out.shape != (m, n) or k2 != k or not out.flags.c_contiguous:
            return False
        item = dtype.itemsize
        sa, sb = a.strides, b.strides
        # rows of ``b`` contiguous, or its columns (``x @ w.T``: packed by transposing tiles)
        return ((sb[1] == item and sb[0] >= 0 and sb[0] % item == 0 or sb[0] == item and sb[1] > 0
                 and sb[1] % item == 0) and sa[0] >= 0 and sa[0] % item == 0
                and sa[1] >= 0 and sa[1] % item == 0
                and not np.may_share_memory(out, a) and not np.may_share_memory(out, b))

    def run(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, alpha: float = 1.0, beta: float = 0.0,
            threads: int = 1) -> None:
        """``out[...] = alpha * a @ b`` (``beta`` 0) or ``out += a @ b`` (``beta`` 1, ``alpha`` 1) for
        operands :meth:`serves`, over ``threads`` threads of the team."""
        dtype = out.dtype
        kernel, call, trampoline, _ = self._kernel(dtype)
        (m, k), n = a.shape, out.shape[1]
        item = dtype.itemsize
        transposed = b.strides[1] != item
        # (``a`` is read where it lies, a transposed one too: a step broadcasts a[i0:i0+4, p], which
        # then lie next to each other)
        dims = np.array([m, n, k, a.strides[0] // item, a.strides[1] // item, b.strides[transposed] // item,
                         int(beta == 1.0), int(transposed)], np.int64)
        slots = (ctypes.c_void_p * 4)(data_address(a), data_address(b), data_address(out), dims.ctypes.data)
        lanes = self.lanes(dtype)
        if threads > 1 and trampoline is not None and self.team.usable and n > self.vectors * lanes:
            self.team.run(trampoline, kernel, slots, n, lanes, threads)     # shares of whole vectors
        else:
            call(ctypes.addressof(slots), 0, n)
        if alpha != 1.0:
            out *= dtype.type(alpha)
