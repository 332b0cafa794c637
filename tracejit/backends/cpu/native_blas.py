"""Matrix products made by native code: a loop body's or the native entry's ``DotStep``, and
batches of small products run as kernels of their own.

A product inside a loop body used to keep the whole loop on the host (one return to Python per
iteration). The loop's own code now makes it: small real products are generated code
(``small_gemm``), others one call to the BLAS the host would have used for that product
(``blas.native_symbol``: the provider measured fastest for its dtype and shape class), when that
provider has a C entry point. Operands are read where they lie: each operand's free axes and its
contracted axes must each merge into one strided axis (an (m, k) or (k, m) matrix whose rows may
be far apart, read with a transpose flag and a leading dimension), never copied; batch axes may
lie anywhere in memory (attention heads split off a model axis), one product per matrix of the
batch, in a native loop. Complex products pass alpha and beta by address, as CBLAS takes them.
NumPy's ``matmul`` forced (``TRACEJIT_BLAS=numpy``: no C entry point) keeps the loop on the host.

``ProductKernel`` is generated code as a kernel over units a launch splits over threads: the
matrices of a batch larger than the native entry makes (a program's attention heads), or blocks of
rows of one product in a loop body (``ProductKernel.split``).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from tracejit.config import env_flag
from tracejit.backends.cpu import blas, llvm_engine, small_gemm
from tracejit.backends.cpu.gemm_epilogue import EpilogueEmitter, epilogue_key
from tracejit.backends.cpu.native import vector_bytes
from tracejit.backends.cpu.window import counted_loop
from tracejit.compiler.plan import DotStep, base_buffer

I32, I64, PTR, VOID = ir.IntType(32), ir.IntType(64), ir.PointerType(), ir.VoidType()
_FLOATS = {np.dtype(np.float32): ir.FloatType(), np.dtype(np.float64): ir.DoubleType()}
# Real products of at most this many multiply-adds per matrix (and a contraction of at most
# OWN_GEMM_MAX_K) are generated code (small_gemm): on the 2-core Xeon/EPYC machines a 64x128 by
# 128x128 float32 product took it 16.5 us on one core, MKL 11 us on two cores called back to back
# but 46 us called between other kernels (its threads asleep); a 16x64x64 one 1.2 against 1.9 us.
OWN_GEMM_MACS = 1 << 20
OWN_GEMM_MAX_K = 1024
_COMPLEX_PART = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}


@dataclass
class GemmCall:
    """``out = alpha * op(a) @ op(b) + beta * out`` with everything but the pointers known."""
    symbol: str
    int64: bool
    dtype: np.dtype
    m: int
    n: int
    k: int
    trans_a: int
    lda: int
    trans_b: int
    ldb: int
    alpha: float
    beta: float
    accumulate_from: int | None     # buffer copied into ``out`` first (beta = 1), unless it is ``out``
    batch: tuple = ()               # the batch's axes: (size, stride of a, stride of b), elements
    strides: tuple = ()             # (a's rows, a's columns, b's rows, b's columns), elements
    own: small_gemm.SmallGemm | None = None     # generated here instead of calling ``symbol``
    epilogue: object = None         # the step's epilogue kernel (DotStep.epilogue), applied to ``out``
    buffers: list = None            # the plan's buffers (what the epilogue's loads index)

    @property
    def count(self) -> int:
        """Matrices in the batch (one library call each)."""
        return math.prod(size for size, _, _ in self.batch)


def _c_strides(shape) -> list:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return strides[::-1]


def _merged(shape, strides, axes):
    """``(size, stride)`` of buffer ``axes`` (in the view's order) read as one strided axis, or None
    where they do not merge without a copy; axes of size 1 drop out."""
    axes = [a for a in axes if shape[a] != 1]
    for outer, inner in zip(axes, axes[1:]):
        if strides[outer] != strides[inner] * shape[inner]:
            return None
    return math.prod(shape[a] for a in axes), (strides[axes[-1]] if axes else 1)


def _operand(shape, perm, batch, free, contracted):
    """The batch's ``(size, stride)`` per axis, and ``(free size, stride, contracted size, stride)``
    of an operand whose view is ``transpose(buffer, perm)``; raises NotImplementedError where its
    free or contracted axes do not merge into one strided axis each."""
    strides = _c_strides(shape)
    rows = _merged(shape, strides, [perm[d] for d in free])
    cols = _merged(shape, strides, [perm[d] for d in contracted])
    if rows is None or cols is None:
        raise NotImplementedError("body needs a BLAS product of operands that are not matrices in memory")
    return [(shape[perm[d]], strides[perm[d]]) for d in batch], rows + cols


def _library_layout(rows, row_stride, cols, col_stride):
    """``(trans flag, leading dimension)`` of a row-major (rows, cols) matrix with these strides, as
    CBLAS reads it, or None."""
    if col_stride == 1 or cols == 1:
        lead = row_stride if rows > 1 else cols
        return (blas.NO_TRANS, lead) if lead >= max(cols, 1) else None
    if row_stride == 1 or rows == 1:
        return (blas.TRANS, col_stride) if col_stride >= max(rows, 1) else None
    return None


def _batch_axes(lhs_batch, rhs_batch) -> tuple:
    """The batch's ``(size, stride of a, stride of b)`` axes, size-1 axes dropped and neighbours
    merged where both operands allow."""
    axes = []
    for (size, sa), (_, sb) in zip(lhs_batch, rhs_batch):
        if size == 1:
            continue
        if axes and axes[-1][1] == sa * size and axes[-1][2] == sb * size:
            axes[-1] = (axes[-1][0] * size, sa, sb)
        else:
            axes.append((size, sa, sb))
    return tuple(axes)


def gemm_call(step: DotStep, bufs) -> GemmCall:
    """How native code calls BLAS for ``step``; raises NotImplementedError (the loop's host reason)."""
    (lc, rc), (lb, rb) = step.dimension_numbers
    out = bufs[step.out]
    dtype = out.dtype
    if (dtype not in _FLOATS and dtype not in _COMPLEX_PART) or bufs[step.lhs].dtype != dtype \
            or bufs[step.rhs].dtype != dtype:
        raise NotImplementedError(f"body needs a BLAS product of {dtype.name}")
    lhs, rhs = bufs[step.lhs].shape, bufs[step.rhs].shape
    lf = [d for d in range(len(lhs)) if d not in lc and d not in lb]
    rf = [d for d in range(len(rhs)) if d not in rc and d not in rb]
    lhs_batch, (m, a_row, k, a_col) = _operand(lhs, step.lhs_perm, lb, lf, lc)
    rhs_batch, (n, b_col, k2, b_row) = _operand(rhs, step.rhs_perm, rb, rf, rc)
    batch = _batch_axes(lhs_batch, rhs_batch)
    if k != k2 or 0 in (m, n, k) or 0 in (size for size, _ in lhs_batch):
        raise NotImplementedError("body needs a BLAS product with an empty dimension")
    alpha, beta, source = 1.0, 0.0, None
    if step.accumulate is not None:
        c, alpha = step.accumulate
        beta = 1.0
        if base_buffer(bufs, c) != base_buffer(bufs, step.out):
            source = c
    own = _own_gemm(dtype, m, n, k, a_row, a_col, b_row, b_col, float(alpha), beta, batch,
                    _epilogue_key(step.epilogue, bufs))
    a_layout, b_layout = _library_layout(m, a_row, k, a_col), _library_layout(k, b_row, n, b_col)
    if own is None and (a_layout is None or b_layout is None):
        raise NotImplementedError("body needs a BLAS product of operands that are not matrices in memory")
    (ta, lda), (tb, ldb) = a_layout or (blas.NO_TRANS, 0), b_layout or (blas.NO_TRANS, 0)
    found = blas.native_symbol(dtype, m, n, k) if own is None else ("", False)
    if found is None:
        raise NotImplementedError("body needs a BLAS product whose provider has no C entry point (NumPy)")
    symbol, int64 = found
    return GemmCall(symbol, int64, dtype, m, n, k, ta, lda, tb, ldb, float(alpha), beta, source,
                    batch, (a_row, a_col, b_row, b_col), own, step.epilogue, bufs)


def _epilogue_key(epilogue, bufs) -> str:
    """What names a step's epilogue in generated code's names (``""``: none)."""
    return epilogue_key(epilogue, bufs) if epilogue is not None else ""


def _own_gemm(dtype, m, n, k, a_row, a_col, b_row, b_col, alpha, beta, batch, epilogue, max_macs=OWN_GEMM_MACS):
    """The generated product (``small_gemm``) for a real product of at most ``max_macs``
    multiply-adds per matrix (a ``b`` whose rows are not contiguous is packed, up to
    ``small_gemm.PACK_MAX_BYTES``), on a CPU with fused multiply-add; None where BLAS serves it."""
    if (dtype not in _FLOATS or m * n * k > max_macs or k > OWN_GEMM_MAX_K
            or (b_col != 1 and n > 1 and k * n * dtype.itemsize > small_gemm.PACK_MAX_BYTES)
            or not env_flag("TRACEJIT_OWN_GEMM", True) or "+fma" not in llvm_engine.host_cpu_features()):
        return None
    return small_gemm.SmallGemm(np.dtype(dtype), m, n, k, a_row, a_col, b_row, alpha, beta == 1.0, batch,
                                b_col if n > 1 else 1, epilogue=epilogue)


# A product split into blocks of rows over threads (ProductKernel.split) has a right
# operand of at most this size: every block reads all of it, from L2.
SPLIT_MAX_RIGHT_BYTES = 1 << 18
SPLIT_MAX_MACS = 1 << 24
# Products of at most this many multiply-adds (the whole batch) are made by the native entry
# (entry.py), as loop bodies make them: a small product's dispatch (a step from Python, ~6 us) was
# most of its time. Larger ones run from the step-by-step executable: a batch of generated products
# as a kernel split over threads (ProductKernel), anything else one library call from Python.
ENTRY_GEMM_MACS = 1 << 21


class ProductKernel:
    """Generated products as a kernel over units that a launch (or a loop body's code) splits over
    threads as a fused kernel's range: the matrices of a batch of small products (attention heads:
    ``q @ k.T`` and ``att @ v`` per batch and head; :meth:`call_for`), or blocks of rows of one
    product (:meth:`split`). Its epilogue is applied to each block of results before the
    block is stored where it vectorizes (else it runs after, as its own kernel: ``fuses_epilogue``)."""

    math_calls = False
    outer_vector = False

    def __init__(self, module: ir.Module, step: DotStep, call: GemmCall, vector_bytes: int):
        self.module, self.kernel, self.call = module, step, call
        self.lanes = vector_bytes // call.dtype.itemsize
        epilogue = (EpilogueEmitter(module, step.epilogue, call.buffers, self.lanes)
                    if step.epilogue is not None else None)
        self.fuses_epilogue = epilogue is None or epilogue.vectorizes
        self.epilogue = epilogue if self.fuses_epilogue else None
        self.own = call.own if self.epilogue is not None else dataclasses.replace(call.own, epilogue="")
        self.layout = small_gemm.UnitsLayout(call.own.count)
        self.slots = [step.lhs, step.rhs, step.out] + (list(self.epilogue.inputs) if self.epilogue else [])
        self.work = call.count * call.m * call.n * call.k       # multiply-adds: what decides threading

    @staticmethod
    def split(call: GemmCall) -> GemmCall | None:
        """``call`` (a loop body's product) as generated products over blocks of its rows, where it
        is too large for one thread's generated code (1M to 16M multiply-adds) and its right
        operand fits in L2 (a recurrent cell's ``x @ w``, 128x256 by 256x256): a batch whose
        matrices are the blocks (``b`` shared, results one after the other as the rows are), which
        the body splits over the thread team. None where it is not one (also where its rows do not
        split into equal blocks of 8 to 64)."""
        m, n, k = call.m, call.n, call.k
        if (call.own is not None or call.batch or call.accumulate_from is not None
                or n * k * call.dtype.itemsize > SPLIT_MAX_RIGHT_BYTES or m * n * k > SPLIT_MAX_MACS):
            return None
        rows = max((r for r in range(8, min(64, m // 2) + 1) if m % r == 0), default=None)
        if rows is None:
            return None
        a_row, a_col, b_row, b_col = call.strides
        own = _own_gemm(call.dtype, rows, n, k, a_row, a_col, b_row, b_col, call.alpha, call.beta,
                        ((m // rows, rows * a_row, 0),), _epilogue_key(call.epilogue, call.buffers),
                        max_macs=SPLIT_MAX_MACS)
        return dataclasses.replace(call, own=own) if own is not None else None

    @staticmethod
    def call_for(step: DotStep, bufs) -> GemmCall | None:
        """The generated product of a program's ``step`` when it is one: a batch of small real
        products, larger than the native entry makes, whose result starts empty; else None (a
        library call from Python: one product split into blocks of rows, as loop bodies make them,
        ran 0.8-1.2x the library's speed there, 128x256x256 to 4096x256x256 on the Zen 3 EPYC)."""
        try:
            call = gemm_call(step, bufs)
        except NotImplementedError:
            return None
        if (call.own is None or call.count < 2 or call.accumulate_from is not None
                or call.count * call.m * call.n * call.k <= ENTRY_GEMM_MACS):
            return None
        return call

    def emit(self, name: str) -> str:
        small_gemm.kernel(self.module, self.own, self.lanes, name, self.epilogue)
        return name


def emit_gemm(b: ir.IRBuilder, call: GemmCall, a, b_ptr, out, address=None) -> None:
    """Emit the call, one per matrix of a batch (``out`` already holds the accumulated value when
    ``beta`` is 1), and the step's epilogue; ``address(buffer id)``: the address of a buffer the
    epilogue reads. Generated code applies the epilogue to each block of results before storing it;
    after a library's product it runs over ``out``."""
    module = b.module
    lanes = vector_bytes() // call.dtype.itemsize
    epilogue = EpilogueEmitter(module, call.epilogue, call.buffers, lanes) if call.epilogue is not None else None
    if call.own is not None and (epilogue is None or epilogue.vectorizes):
        inputs = [address(x) for x in epilogue.inputs] if epilogue is not None else []
        b.call(small_gemm.function(module, call.own, lanes, epilogue), [a, b_ptr, out] + inputs)
        return
    own = dataclasses.replace(call.own, epilogue="") if call.own is not None else None
    _emit_product(b, call, own, a, b_ptr, out, lanes)
    if epilogue is not None:
        bases = {x: address(x) for x in epilogue.inputs}
        bases[epilogue.out] = out
        epilogue.apply_in_place(b, bases, call.count * call.m)


def _emit_product(b: ir.IRBuilder, call: GemmCall, own, a, b_ptr, out, lanes: int) -> None:
    """The product alone: generated code (``own``) or the provider's ``?gemm``."""
    module = b.module
    if own is not None:
        b.call(small_gemm.function(module, own, lanes), [a, b_ptr, out])
        return
    it = I64 if call.int64 else I32
    if call.dtype in _FLOATS:
        scalar_type = _FLOATS[call.dtype]
        alpha, beta = ir.Constant(scalar_type, call.alpha), ir.Constant(scalar_type, call.beta)
    else:                   # complex: CBLAS takes alpha and beta by address
        scalar_type = PTR
        alpha, beta = (_complex_constant(module, v, call.dtype) for v in (call.alpha, call.beta))
    fn = module.globals.get(call.symbol)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(VOID, [I32, I32, I32, it, it, it, scalar_type, PTR, it, PTR, it,
                                                         scalar_type, PTR, it]), name=call.symbol)
    ints = [ir.Constant(I32, v) for v in (blas.ROW_MAJOR, call.trans_a, call.trans_b)]
    item = call.dtype.itemsize

    def one(a_i, b_i, out_i):
        b.call(fn, ints + [ir.Constant(it, call.m), ir.Constant(it, call.n), ir.Constant(it, call.k),
                           alpha, a_i, ir.Constant(it, max(call.lda, 1)), b_i,
                           ir.Constant(it, max(call.ldb, 1)), beta, out_i, ir.Constant(it, max(call.n, 1))])

    if not call.batch:
        one(a, b_ptr, out)
        return

    def at(ptr, offset):
        return b.gep(ptr, [b.mul(offset, ir.Constant(I64, item))], source_etype=ir.IntType(8))

    def matrix(q):
        off_a, off_b = small_gemm.batch_offsets(b, call.batch, q)
        one(at(a, off_a), at(b_ptr, off_b), at(out, b.mul(q, ir.Constant(I64, call.m * call.n))))
    counted_loop(b, call.count, matrix, "gemm_batch")


def _complex_constant(module, value: float, dtype):
    """A private global ``{value, 0}`` of ``dtype``'s part type (CBLAS's complex alpha/beta)."""
    part = _FLOATS[_COMPLEX_PART[dtype]]
    name = f"tracejit_blas_{dtype.name}_{value!r}".replace(".", "_").replace("-", "m")
    g = module.globals.get(name)
    if g is None:
        t = ir.ArrayType(part, 2)
        g = ir.GlobalVariable(module, t, name=name)
        g.initializer = ir.Constant(t, [ir.Constant(part, value), ir.Constant(part, 0.0)])
        g.global_constant = True
        g.linkage = "private"
    return g
