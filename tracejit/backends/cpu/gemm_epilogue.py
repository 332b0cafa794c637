"""A product's epilogue (``DotStep.epilogue``) evaluated on vectors of the product's rows.

The epilogue is a one-phase elementwise kernel over the product's shape that reads the product as
``load(out)`` at the element it writes, and other buffers where its index maps say (a bias along
the columns, a residual, per-row scales). :class:`EpilogueEmitter` evaluates it with the kernel
code generator (``codegen.KernelEmitter``) at one vector of a row: the product's value comes in a
register, the other loads are addressed from the element's flat index. A generated product
(``small_gemm``) calls it on each block of results before the block is stored; after a library's
product, :meth:`EpilogueEmitter.apply_in_place` runs it over the stored result (applied tile by
tile inside large generated products instead, it was slower: see docs/compiler.md, blas_epilogues).
"""
from __future__ import annotations

import hashlib

from llvmlite import ir

from tracejit.compiler.kernel_ir import Kernel, exact_text, walk
from tracejit.backends.cpu import lowering as L
from tracejit.backends.cpu.codegen import KernelEmitter
from tracejit.backends.cpu.window import counted_loop

I64, PTR = ir.IntType(64), ir.PointerType()


def epilogue_key(kernel: Kernel, buffers) -> str:
    """A short name for the epilogue's code: its expression, and every load's index map and buffer
    (shape and dtype: the strides it is addressed with)."""
    text = exact_text(kernel) + "".join(f"\nb{b} {buffers[b].shape} {buffers[b].dtype.str}"
                                        for b in sorted({n.buffer for n in kernel.loads()}))
    return hashlib.sha1(text.encode()).hexdigest()[:12]


class EpilogueEmitter:
    """``out[flat...] = f(product, ...)`` for ``kernel`` (a ``DotStep.epilogue``) in ``module``.

    ``vector_lanes``: lanes of a vector of the product's dtype. ``inputs``: the buffers the epilogue
    reads besides the product, in the order a generated product takes their addresses."""

    def __init__(self, module: ir.Module, kernel: Kernel, buffers, vector_lanes: int):
        self.key = epilogue_key(kernel, buffers)
        self.expr = kernel.phases[0].exprs[0]
        self.out = kernel.phases[0].outputs[0]
        self.columns = buffers[self.out].shape[-1]
        self.nodes = walk([self.expr])
        self.product_loads = [n for n in self.nodes if n.kind == "load" and n.buffer == self.out]
        self.inputs = sorted({n.buffer for n in self.nodes if n.kind == "load"} - {self.out})
        self.em = KernelEmitter(module, kernel, buffers, vector_bytes=0)
        layout = self.em.layout
        # Lanes run along the innermost dim of the kernel's layout, which holds whole rows of the
        # product (its last axis, and any axes merged before it); every load must then read
        # consecutive elements or one element (a column bias, a row's scale) along it.
        self.vectorizes = layout.shape[-1] % self.columns == 0 and all(
            layout.access[id(n)].coeffs[-1] in (0, 1) for n in self.nodes if n.kind == "load")
        self.lanes = vector_lanes if self.vectorizes else 1

    def _digits(self, b, flat):
        """The layout's index of the element at ``flat`` (an i64 value), innermost last."""
        digits, rest = [], flat
        for n in reversed(self.em.layout.shape[1:]):
            digits.append(b.urem(rest, ir.Constant(I64, n)))
            rest = b.udiv(rest, ir.Constant(I64, n))
        return [rest] + digits[::-1]

    def value(self, b: ir.IRBuilder, bases: dict, product, flat, mask=None):
        """The epilogue at the ``lanes`` elements from ``flat`` (an i64 value: the first one's index in
        the product, C order), given the ``product`` there (a vector, or a scalar when ``lanes`` is 1);
        ``mask``: the lanes that exist (others are never loaded); ``bases``: buffer id -> address."""
        em = self.em
        em.b, em.entry, em.base = b, b.function.entry_basic_block, bases
        index = self._digits(b, flat)
        em._set_row_bases(self.nodes, index[:-1])
        previous, em.mask = em.mask, mask
        try:
            return em._eval(self.expr, self.lanes, index[-1], {id(n): product for n in self.product_loads})
        finally:
            em.mask = previous

    def apply_in_place(self, b: ir.IRBuilder, bases: dict, rows: int) -> None:
        """The epilogue over ``rows`` rows of the product already stored at ``bases[out]``: a call of
        a function of the module (defined once), whose pointer arguments are opaque whatever the
        caller's are (an arena's ``[n x i8]*``)."""
        name = f"tracejit_gemm_epilogue_{self.key}_{rows}"
        fn = b.module.globals.get(name)
        if fn is None:
            fn = ir.Function(b.module, ir.FunctionType(ir.VoidType(), [PTR] * (1 + len(self.inputs))), name=name)
            fn.linkage = "internal"
            self._emit_apply(fn, rows)
        b.call(fn, [bases[self.out]] + [bases[x] for x in self.inputs])

    def _emit_apply(self, fn: ir.Function, rows: int) -> None:
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        bases = dict(zip([self.out] + self.inputs, fn.args))
        em, lanes, n = self.em, self.lanes, self.columns

        def row(r):
            def block(k):
                j = b.mul(k, ir.Constant(I64, lanes))
                flat = b.add(b.mul(r, ir.Constant(I64, n)), j)
                em.b, em.entry, em.base = b, b.function.entry_basic_block, bases
                if lanes == 1:
                    em._store(self.out, flat, self.value(b, bases, em._load(self.out, flat, 1), flat))
                    return
                em.mask = mask = L.tail_mask(b, j, ir.Constant(I64, n), lanes)
                product = em._masked_load(self.out, flat, lanes)
                em._masked_store(self.out, flat, self.value(b, bases, product, flat, mask))
                em.mask = None
            counted_loop(b, -(-n // lanes), block, "epilogue_cols")
        counted_loop(b, rows, row, "epilogue_rows")
        b.ret_void()
