"""Matrix products called from native code: a loop body's ``DotStep`` as one CBLAS ``?gemm`` call.

A product inside a loop body used to keep the whole loop on the host (one return to Python per
iteration). The loop's own code now calls the BLAS that the host would have used for that product
(``blas.native_symbol``: the provider measured fastest for its dtype and shape class), when that
provider has a C entry point and the operands are matrices in memory as they are: each operand's
free and contracted axes must each be contiguous runs of its buffer's axes, in order, so the
operand is an (m, k) or (k, m) row-major matrix read with a transpose flag, never copied. A
batched product (``einsum('bij,bjk->bik')``) whose batch axes lead both operands in memory is one
call per matrix of the batch, in a native loop; complex products pass alpha and beta by address,
as CBLAS takes them. NumPy's ``matmul`` forced (``TRACEJIT_BLAS=numpy``: no C entry point) keeps
the loop on the host.
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
    batch: int = 1                  # matrices in the batch (one call each)
    stride_a: int = 0               # elements between consecutive matrices of each operand
    stride_b: int = 0
    own: small_gemm.SmallGemm | None = None     # generated here instead of calling ``symbol``
    epilogue: object = None         # the step's epilogue kernel (DotStep.epilogue), applied to ``out``
    buffers: list = None            # the plan's buffers (what the epilogue's loads index)


def _matrix(shape, perm, contracted):
    """``(trans flag, rows, cols, leading dim)`` of an operand whose view is ``transpose(buffer, perm)``
    and whose ``contracted`` view dims are summed over: the matrix is (free, contracted) when the free
    axes come first in memory, (contracted, free) read transposed when they come last."""
    free = [d for d in range(len(perm)) if d not in contracted]
    free_axes, con_axes = [perm[d] for d in free], [perm[d] for d in contracted]
    view = [shape[p] for p in perm]
    rows, cols = math.prod(view[d] for d in free), math.prod(view[d] for d in contracted)
    nf = len(free)
    if free_axes == list(range(nf)) and con_axes == list(range(nf, len(perm))):
        return blas.NO_TRANS, rows, cols, cols
    if con_axes == list(range(len(contracted))) and free_axes == list(range(len(contracted), len(perm))):
        return blas.TRANS, rows, cols, rows
    raise NotImplementedError("body needs a BLAS product of operands that are not matrices in memory")


def _batched_matrix(shape, perm, batch, contracted):
    """``_matrix`` of one matrix of a batch, plus the batch's size and stride (elements): the batch
    axes must be the buffer's leading axes, in order."""
    nb = len(batch)
    if [perm[d] for d in batch] != list(range(nb)):
        raise NotImplementedError("body needs a batched BLAS product whose batch axes do not lead in memory")
    rest = [d for d in range(len(perm)) if d not in batch]
    matrix = _matrix(shape[nb:], [perm[d] - nb for d in rest], [rest.index(d) for d in contracted])
    return matrix, math.prod(shape[:nb]), math.prod(shape[nb:])


def gemm_call(step: DotStep, bufs) -> GemmCall:
    """How native code calls BLAS for ``step``; raises NotImplementedError (the loop's host reason)."""
    (lc, rc), (lb, rb) = step.dimension_numbers
    out = bufs[step.out]
    dtype = out.dtype
    if (dtype not in _FLOATS and dtype not in _COMPLEX_PART) or bufs[step.lhs].dtype != dtype \
            or bufs[step.rhs].dtype != dtype:
        raise NotImplementedError(f"body needs a BLAS product of {dtype.name}")
    (ta, m, k, lda), batch, stride_a = _batched_matrix(bufs[step.lhs].shape, step.lhs_perm, list(lb), list(lc))
    # The right operand's matrix is (k, n): its contracted dims are its rows.
    (tb_t, n, k2, ldb), _, stride_b = _batched_matrix(bufs[step.rhs].shape, step.rhs_perm, list(rb), list(rc))
    tb = blas.TRANS if tb_t == blas.NO_TRANS else blas.NO_TRANS
    if k != k2 or 0 in (m, n, k, batch):
        raise NotImplementedError("body needs a BLAS product with an empty dimension")
    alpha, beta, source = 1.0, 0.0, None
    if step.accumulate is not None:
        c, alpha = step.accumulate
        beta = 1.0
        if base_buffer(bufs, c) != base_buffer(bufs, step.out):
            source = c
    own = _own_gemm(dtype, m, n, k, ta, lda, tb, ldb, float(alpha), beta, batch, stride_a, stride_b,
                    epilogue_key(step.epilogue, bufs) if step.epilogue is not None else "")
    found = blas.native_symbol(dtype, m, n, k) if own is None else ("", False)
    if found is None:
        raise NotImplementedError("body needs a BLAS product whose provider has no C entry point (NumPy)")
    symbol, int64 = found
    return GemmCall(symbol, int64, dtype, m, n, k, ta, lda, tb, ldb, float(alpha), beta, source,
                    batch, stride_a, stride_b, own, step.epilogue, bufs)


def _own_gemm(dtype, m, n, k, ta, lda, tb, ldb, alpha, beta, batch, stride_a, stride_b, epilogue):
    """The generated product (``small_gemm``) for a small real product whose right operand's rows
    are contiguous, on a CPU with fused multiply-add; None where BLAS serves it."""
    if (dtype not in _FLOATS or tb != blas.NO_TRANS or m * n * k > OWN_GEMM_MACS or k > OWN_GEMM_MAX_K
            or not env_flag("TRACEJIT_OWN_GEMM", True) or "+fma" not in llvm_engine.host_cpu_features()):
        return None
    a_row, a_col = (lda, 1) if ta == blas.NO_TRANS else (1, lda)
    return small_gemm.SmallGemm(np.dtype(dtype), m, n, k, a_row, a_col, ldb, alpha, beta == 1.0, batch,
                                stride_a, stride_b, epilogue=epilogue)


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
        epilogue.apply_in_place(b, bases, call.batch * call.m)


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

    if call.batch == 1:
        one(a, b_ptr, out)
        return

    def at(ptr, i, stride):
        return b.gep(ptr, [b.mul(i, ir.Constant(I64, stride * item))], source_etype=ir.IntType(8))
    counted_loop(b, call.batch, lambda i: one(at(a, i, call.stride_a), at(b_ptr, i, call.stride_b),
                                              at(out, i, call.m * call.n)), "gemm_batch")


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
