"""Convolutions as implicit GEMMs: the product of the kernel with the input's windows, read in place.

The im2col route stores every output position's window of the input (``taps * C`` values per
position; a 3x3 convolution of 4x56x56x64 float32 writes and rereads 29 MB) before one BLAS
product. Here the windows are never stored: an output *line* (one row of output positions along
the last spatial axis) is a generated product (``small_gemm``) whose rows are the line's
positions, each reading ``C`` input features per tap at ``a_offset(tap) + position * stride * C``
of the padded input, against the kernel's rows for that tap. Lines are the units a kernel's range
splits over threads, so the step runs like a fused kernel (``KernelLaunch``).

The operand is the channels-last input already padded (and dilated by ``lhs_dilation``), the
kernel ``(taps, C, O)``; the result is ``(N, out..., O)``. The sum runs over taps, then features,
in order (results may differ from a BLAS product's in the last bits, as two BLAS libraries do).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from tracejit.backends.cpu import lowering as L, small_gemm
from tracejit.backends.cpu.window import counted_loop

I64, PTR, VOID = ir.IntType(64), ir.PointerType(), ir.VoidType()


@dataclass(frozen=True)
class ConvGemm:
    """``out[n, o..., f] = sum over taps t and features c of x[n, o * strides + t * dilation..., c]
    * w[t, c, f]`` for a channels-last ``x`` of shape ``(batch, *in_sizes, features)`` (padded
    already), ``w`` of shape ``(*window, features, out_features)`` and ``out`` of shape
    ``(batch, *out_sizes, out_features)``."""

    dtype: np.dtype
    batch: int
    in_sizes: tuple
    features: int
    window: tuple
    strides: tuple
    dilation: tuple
    out_sizes: tuple
    out_features: int

    @property
    def lines(self) -> int:
        """Output lines: the units of work (``batch * prod(out_sizes[:-1])``)."""
        return self.batch * math.prod(self.out_sizes[:-1])

    def _in_strides(self) -> list:
        """Elements between neighbours along each spatial axis of ``x``."""
        strides, step = [], self.features
        for size in reversed(self.in_sizes):
            strides.append(step)
            step *= size
        return strides[::-1]

    @property
    def merges_last_axis(self) -> bool:
        """Whether the taps along the window's last axis are one run: undilated, the window's
        elements along that axis and their features lie next to each other in the input, in the
        order the kernel's rows hold them."""
        return self.dilation[-1] == 1

    @property
    def run(self) -> int:
        """Contraction terms per run (a tap's features, or a whole window line's when merged)."""
        return self.features * (self.window[-1] if self.merges_last_axis else 1)

    def tap_offsets(self) -> list:
        """Where each run's window starts in the input (elements), runs in C order (the taps, or the
        window's lines when :attr:`merges_last_axis`; run ``r``'s kernel rows are ``r * run`` on)."""
        in_strides = self._in_strides()
        window = self.window[:-1] + (1,) if self.merges_last_axis else self.window
        return [int(sum(k * d * s for k, d, s in zip(tap, self.dilation, in_strides)))
                for tap in np.ndindex(*window)]

    def line_starts(self) -> list:
        """Where each output line's first window starts in the input (elements), lines in C order."""
        in_strides = self._in_strides()
        batch_stride = in_strides[0] * self.in_sizes[0]
        return [int(n * batch_stride + sum(p * s * st for p, s, st in zip(pos, self.strides[:-1], in_strides[:-1])))
                for n, *pos in np.ndindex(self.batch, *self.out_sizes[:-1])]

    def line_product(self) -> small_gemm.SmallGemm:
        """One line's product: rows are the line's positions, each run (:meth:`tap_offsets`) a
        ``small_gemm`` tap of the contraction."""
        taps = tuple((offset, t * self.run) for t, offset in enumerate(self.tap_offsets()))
        return small_gemm.SmallGemm(np.dtype(self.dtype), self.out_sizes[-1], self.out_features, self.run,
                                    self.strides[-1] * self.features, 1, self.out_features, taps=taps)


def emit(module: ir.Module, conv: ConvGemm, lanes: int, name: str) -> ir.Function:
    """``void name(slots, begin, end)``: output lines ``[begin, end)`` of ``conv``; ``slots`` holds
    the addresses of ``out``, ``x`` and ``w``."""
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, I64, I64]), name=name)
    fn.args[0].add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    slots, begin, end = fn.args
    out, x, w = small_gemm.slot_pointers(b, slots, 3)
    line_fn = small_gemm.function(module, conv.line_product(), lanes)
    elem = L.scalar_type(np.dtype(conv.dtype))
    starts = L.i64_table(module, f"{name}_line_starts", conv.line_starts())
    line_len = conv.out_sizes[-1] * conv.out_features

    def line(i):
        b.call(line_fn, [b.gep(x, [L.load_i64(b, starts, i)], source_etype=elem), w,
                         b.gep(out, [b.mul(i, ir.Constant(I64, line_len))], source_etype=elem)])

    counted_loop(b, b.sub(end, begin), lambda k: line(b.add(begin, k)), "lines")
    b.ret_void()
    return fn


# The weight gradient's contraction (over output positions) runs in chunks of output lines whose
# rows of ``g`` take at most this many bytes: every unit sums over one chunk before the next, so
# the chunk's rows of ``g`` and its windows of the input stay in L2 while all the units read them.
# Summed over all positions at once, each unit streamed all of ``g`` and the input from memory
# again: a 3x3 convolution's gradient of 4x56x56x64 float32 ran at 65 GFLOP/s on a 2-core Xeon.
WGRAD_CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True)
class ConvWeightGrad(ConvGemm):
    """The kernel's cotangent of a :class:`ConvGemm` (``ops.conv_windows.conv_windows_wgrad``):
    ``dw[t, c, f] = sum over output positions p of x[window of p at tap t, c] * g[p, f]``.

    Units are (run, block of its terms) (runs: :meth:`ConvGemm.tap_offsets`): each is a generated
    product whose rows are the block's terms (``a_row = 1``), its contraction the positions of
    output lines (a *tap* of ``small_gemm`` per line: the line's first input position and its row of
    ``g``), so ``g`` and the input are read where they lie. The positions are summed chunk by chunk
    (:meth:`chunks`), each chunk's sum added to ``dw`` in chunk order, positions in order within a
    chunk."""

    @property
    def rows(self) -> int:
        return small_gemm.row_block(self.run)

    @property
    def feature_blocks(self) -> int:
        return -(-self.run // self.rows)

    @property
    def units(self) -> int:
        return len(self.tap_offsets()) * self.feature_blocks

    def chunks(self) -> list:
        """``(first line, lines)`` of each chunk, in order: runs of consecutive lines along the
        output's second-to-last axis (the batch for 1-D convolutions), where each line starts a fixed
        distance after the previous one, cut to ``WGRAD_CHUNK_BYTES`` of ``g``; so every full chunk
        has the same layout, and a run's last chunk at most one other."""
        run = self.out_sizes[-2] if len(self.out_sizes) > 1 else self.batch
        line_bytes = self.out_sizes[-1] * self.out_features * np.dtype(self.dtype).itemsize
        per_chunk = max(1, min(run, WGRAD_CHUNK_BYTES // max(line_bytes, 1)))
        return [(first, min(per_chunk, start + run - first))
                for start in range(0, self.lines, run) for first in range(start, start + run, per_chunk)]

    def block_product(self, rows: int, starts: tuple) -> small_gemm.SmallGemm:
        """A unit's product over one chunk: ``rows`` input features by the output features, added to
        ``dw``; each of the chunk's lines a tap of the contraction (``starts``: its first window's
        input position from the chunk's first line's, and its row of ``g`` from the chunk's)."""
        width = self.out_sizes[-1]
        lines = tuple((start, line * width) for line, start in enumerate(starts))
        return small_gemm.SmallGemm(np.dtype(self.dtype), rows, self.out_features, width, 1,
                                    self.strides[-1] * self.features, self.out_features, accumulate=True,
                                    taps=lines)


def _call_one_of(b: ir.IRBuilder, index, fns: list, args) -> None:
    """``fns[index](*args)`` (``index``: an i64 value)."""
    if len(fns) == 1:
        b.call(fns[0], args)
        return
    done = b.append_basic_block("call.done")
    cases = [b.append_basic_block(f"call.{i}") for i in range(len(fns))]
    switch = b.switch(index, cases[0])
    for i, (case, fn) in enumerate(zip(cases, fns)):
        switch.add_case(ir.Constant(I64, i), case)
        b.position_at_end(case)
        b.call(fn, args)
        b.branch(done)
    b.position_at_end(done)


def emit_weight_grad(module: ir.Module, conv: ConvWeightGrad, lanes: int, name: str) -> ir.Function:
    """``void name(slots, begin, end)``: units ``[begin, end)`` of ``conv`` (run, block of its terms);
    ``slots`` holds the addresses of ``dw``, ``x`` and ``g``."""
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, I64, I64]), name=name)
    fn.args[0].add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    slots, begin, end = fn.args
    out, x, g = small_gemm.slot_pointers(b, slots, 3)
    elem = L.scalar_type(np.dtype(conv.dtype))
    item = np.dtype(conv.dtype).itemsize
    rows, blocks, run, f = conv.rows, conv.feature_blocks, conv.run, conv.out_features
    tail = run - (blocks - 1) * rows
    starts = conv.line_starts()
    chunks = conv.chunks()
    # each chunk's lines' starts from its first line's: at most two distinct layouts
    chunk_layouts = [tuple(s - starts[first] for s in starts[first:first + n]) for first, n in chunks]
    layouts = list(dict.fromkeys(chunk_layouts))
    # fns[2 * layout + 1]: a unit over the last feature block (fewer rows) on that layout of chunk
    fns = [small_gemm.function(module, conv.block_product(r, lay), lanes) for lay in layouts for r in (rows, tail)]
    offsets = L.i64_table(module, f"{name}_tap_offsets", conv.tap_offsets())
    x_at = L.i64_table(module, f"{name}_chunk_x", [starts[first] for first, _ in chunks])
    g_at = L.i64_table(module, f"{name}_chunk_g", [first * conv.out_sizes[-1] * f for first, _ in chunks])
    kind = L.i64_table(module, f"{name}_chunk_layout", [2 * layouts.index(lay) for lay in chunk_layouts])

    def unit_at(u):
        """``(run, first term of the block, whether it is the short last block)``."""
        block = b.urem(u, ir.Constant(I64, blocks))
        is_tail = b.icmp_unsigned("==", block, ir.Constant(I64, blocks - 1)) if tail != rows else ir.Constant(
            ir.IntType(1), 0)
        return b.udiv(u, ir.Constant(I64, blocks)), b.mul(block, ir.Constant(I64, rows)), is_tail

    def dw_at(tap, first):
        return b.gep(out, [b.mul(b.add(b.mul(tap, ir.Constant(I64, run)), first), ir.Constant(I64, f))],
                     source_etype=elem)

    def clear(u):
        tap, first, is_tail = unit_at(u)
        nbytes = b.select(is_tail, ir.Constant(I64, tail * f * item), ir.Constant(I64, rows * f * item))
        L.zero_bytes(b, dw_at(tap, first), nbytes)

    def chunk(k):
        x_k = b.gep(x, [L.load_i64(b, x_at, k)], source_etype=elem)
        g_k = b.gep(g, [L.load_i64(b, g_at, k)], source_etype=elem)
        layout = L.load_i64(b, kind, k)

        def unit(u):
            tap, first, is_tail = unit_at(u)
            at = b.add(L.load_i64(b, offsets, tap), first)
            _call_one_of(b, b.add(layout, b.zext(is_tail, I64)), fns,
                         [b.gep(x_k, [at], source_etype=elem), g_k, dw_at(tap, first)])
        counted_loop(b, b.sub(end, begin), lambda i: unit(b.add(begin, i)), "units")

    counted_loop(b, b.sub(end, begin), lambda i: clear(b.add(begin, i)), "clear")
    counted_loop(b, len(chunks), chunk, "chunks")
    b.ret_void()
    return fn


class ConvEmitter:
    """Emits a ``conv`` window step (``ops/conv_windows.py``) as a kernel over output lines, a
    ``conv_wgrad`` step over (tap, feature block) units."""

    math_calls = False
    outer_vector = False

    def __init__(self, module: ir.Module, step, buffers, vector_bytes: int):
        self.module, self.kernel, self.buffers = module, step, buffers
        x, other, out = buffers[step.operand], buffers[step.update], buffers[step.out]
        params = dict(step.combine)
        if step.kind == "conv":           # other: the kernel (*window, C, O); out: (N, *out_sizes, O)
            self.conv = ConvGemm(np.dtype(x.dtype), x.shape[0], tuple(x.shape[1:-1]), x.shape[-1],
                                 tuple(other.shape[:-2]), tuple(params["strides"]), tuple(params["dilation"]),
                                 tuple(out.shape[1:-1]), out.shape[-1])
            units, macs = self.conv.lines, math.prod(out.shape) * math.prod(other.shape[:-1])
        else:                             # other: the output's cotangent g; out: the kernel's cotangent
            self.conv = ConvWeightGrad(np.dtype(x.dtype), x.shape[0], tuple(x.shape[1:-1]), x.shape[-1],
                                       tuple(params["window"]), tuple(params["strides"]),
                                       tuple(params["dilation"]), tuple(other.shape[1:-1]), other.shape[-1])
            units, macs = self.conv.units, math.prod(other.shape) * math.prod(out.shape[:-1])
        self.layout = small_gemm.UnitsLayout(units)
        self.slots = [step.out, step.operand, step.update]
        self.lanes = max(vector_bytes // np.dtype(x.dtype).itemsize, 1)
        self.work = macs                  # multiply-adds: what decides threading

    def emit(self, name: str) -> str:
        (emit if self.kernel.kind == "conv" else emit_weight_grad)(self.module, self.conv, self.lanes, name)
        return name
