"""A whole program in one native call.

When every step of a plan is native code that runs on the calling thread (kernels and window
copies too small to split over threads, native loops whose bodies fork no team), the backend
emits one more function into the kernels' module, ``tracejit_entry(io, loops, arena)``, that
runs the steps in plan order: it computes each step's buffer pointers from the argument, output
and constant pointers in ``io`` and the arena, and calls the kernels directly and the native
loops' drivers through the ``loops`` table of their addresses. A call then costs one ctypes
call instead of one per step with a pointer array built in Python each time (Collatz, a cond
in a 1000-step fori_loop: most of its ~12 us per call was that dispatch).

Matrix products of at most ``native_blas.ENTRY_GEMM_MACS`` multiply-adds are made by the entry
itself, as loop bodies make them (``native_blas``: generated code or a CBLAS call). Anything else
(larger products, host loops, NumPy steps, threaded kernels, donated arguments, recycled large
outputs, outputs that are inputs, literals or repeated) keeps the step-by-step executable;
``entry_or_reason`` says why (``executable.entry_reason``). Both run the same kernels on the same
memory plan; ``TRACEJIT_NATIVE_ENTRY=0`` turns the entry off (to compare the two).
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

from llvmlite import ir

from tracejit.config import env_flag
from tracejit.compiler.kernel_ir import Kernel
from tracejit.compiler.plan import DotStep, NumpyStep, WindowStep, base_buffer
from tracejit.backends.cpu import native_blas
from tracejit.backends.cpu.native import splits_over_threads
from tracejit.backends.cpu.loops import NativeLoop, aligned_size, literal_constant, memmove
from tracejit.backends.cpu.runtime import PARALLEL_MIN_WORK, openmp_min_work

I64 = ir.IntType(64)
I8 = ir.IntType(8)
PTR = ir.PointerType()
VOID = ir.VoidType()
ENTRY = "tracejit_entry"
ENTRY_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)

@dataclass
class EntryLayout:
    """Where the entry finds each buffer.

    ``io`` lists the buffers passed as pointers, in order: the inputs, then the outputs (in
    ``plan.outputs`` order), then the constants. Temporaries sit in the arena at the memory
    plan's offsets; values a native loop produces that are not outputs, and the loops' scratch
    memory, follow at ``extra`` offsets. ``loops`` are the native loops in the order of the
    ``loops`` table the entry is called with."""

    io: dict = field(default_factory=dict)          # buffer id -> io position
    extra: dict = field(default_factory=dict)       # buffer id or (loop step index, scratch k) -> arena offset
    arena_bytes: int = 0
    loops: list = field(default_factory=list)       # (plan step index, NativeLoop)
    gemms: dict = field(default_factory=dict)       # plan step index -> native_blas.GemmCall


def _runs_on_caller(emitter) -> bool:
    """The step-by-step executable would call this kernel (or convolution) on the calling thread,
    whatever the thread count (KernelLaunch's rule)."""
    if emitter.layout.parallel_size < 2:
        return True
    return emitter.work < openmp_min_work(emitter) and emitter.work < PARALLEL_MIN_WORK


def entry_or_reason(plan, offsets, arena_bytes, emitters, donated_outputs, pools, n_modules):
    """``(EntryLayout, None)`` when the plan can run as one native call, else ``(None, why not)``.

    ``emitters`` maps ``id(step)`` to the step's emitter; loops must have been chosen
    (``step.loop``)."""
    if not env_flag("TRACEJIT_NATIVE_ENTRY", True):
        return None, "TRACEJIT_NATIVE_ENTRY=0"
    bufs = plan.buffers
    if donated_outputs:
        return None, "donated arguments"
    if pools:
        return None, "large outputs come from the output pool"
    if n_modules > 1:
        return None, "kernels spread over several modules"
    outs = plan.outputs
    if any(not isinstance(o, int) or bufs[o].kind != "output" for o in outs) or len(set(outs)) != len(outs):
        return None, "an output is an input, a literal, a view or repeated"
    layout = EntryLayout()
    for b in bufs:
        if b.kind == "input":
            layout.io[b.id] = b.index
    for k, o in enumerate(outs):
        layout.io[o] = len(plan.inputs) + k
    for b in bufs:
        if b.kind == "const":
            layout.io[b.id] = len(plan.inputs) + len(outs) + b.index
    top = aligned_size(arena_bytes)
    for i, step in enumerate(plan.steps):
        if isinstance(step, (Kernel, WindowStep)):
            if splits_over_threads(step) and not _runs_on_caller(emitters[id(step)]):
                return None, "a kernel is large enough to run threaded"
            continue
        if isinstance(step, DotStep):
            try:
                call = native_blas.gemm_call(step, bufs)
            except NotImplementedError as e:
                return None, f"step {i}: {e}"
            if call.count * call.m * call.n * call.k > native_blas.ENTRY_GEMM_MACS:
                return None, f"step {i} is a large product (a library call or a kernel over its batch serves it)"
            layout.gemms[i] = call
            continue
        loop = getattr(step, "loop", None) if isinstance(step, NumpyStep) else None
        if not isinstance(loop, NativeLoop):
            return None, f"step {i} is not native code ({type(step).__name__})"
        if loop.team is not None:
            return None, "a loop body forks the thread team"
        layout.loops.append((i, loop))
        for k, nbytes in enumerate(loop._scratch.values()):
            layout.extra[(i, k)] = top
            top += aligned_size(nbytes)
        for o in step.outputs:
            if bufs[o].kind != "output" and o not in offsets:
                layout.extra[o] = top
                top += aligned_size(bufs[o].nbytes)
    for b in bufs:      # temporaries without a planned place (none expected; never share memory)
        if b.kind == "temp" and b.id not in offsets and b.id not in layout.extra:
            layout.extra[b.id] = top
            top += aligned_size(b.nbytes)
    layout.arena_bytes = top
    return layout, None


def emit_entry(module, plan, offsets, layout: EntryLayout, emitters, fn_names) -> None:
    """Add ``tracejit_entry`` to ``module`` (which holds every kernel of ``plan``)."""
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR, PTR]), name=ENTRY)
    io, loop_table, arena = fn.args
    for a in fn.args:
        a.add_attribute("noalias")
    entry = fn.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    bufs = plan.buffers
    pointers: dict = {}

    def arena_at(offset):
        return b.gep(arena, [ir.Constant(I64, offset)], source_etype=I8)

    def address(bid):
        bid = base_buffer(bufs, bid)
        if bid not in pointers:
            if bid in layout.io:
                p = b.gep(io, [ir.Constant(I64, layout.io[bid])], source_etype=PTR)
                pointers[bid] = b.load(p, typ=PTR)
            elif bid in layout.extra:
                pointers[bid] = arena_at(layout.extra[bid])
            else:
                pointers[bid] = arena_at(offsets[bid])
        return pointers[bid]

    def slot_array(values):
        arr = b.alloca(PTR, size=ir.Constant(I64, max(len(values), 1)))
        for k, v in enumerate(values):
            b.store(v, b.gep(arr, [ir.Constant(I64, k)], source_etype=PTR))
        return arr

    # (a typed pointer only tells llvmlite the callee's type; LLVM reads it as an opaque ptr)
    driver_type = ir.FunctionType(VOID, [PTR, I64]).as_pointer()
    loop_slot = {i: k for k, (i, _) in enumerate(layout.loops)}
    for i, step in enumerate(plan.steps):
        if i in layout.gemms:
            call = layout.gemms[i]
            out = address(step.out)
            if call.accumulate_from is not None:    # out = c + alpha * (a @ b): beta = 1 on a copy of c
                memmove(b, out, address(call.accumulate_from), bufs[step.out].nbytes)
            native_blas.emit_gemm(b, call, address(step.lhs), address(step.rhs), out, address)
            continue
        if isinstance(step, (Kernel, WindowStep)):
            em = emitters[id(step)]
            n = em.layout.parallel_size     # (a window copy is one unit; a convolution's are lines)
            if n == 0 or (isinstance(step, Kernel) and step.size == 0 and not step.is_row_kernel):
                continue        # (a reduction over an empty axis still writes its identity per row)
            kfn = module.globals[fn_names[id(step)]]
            b.call(kfn, [slot_array([address(s) for s in em.slots]), ir.Constant(I64, 0), ir.Constant(I64, n)])
            continue
        loop = step.loop
        sources = []
        for kind, k in loop._sources:
            if kind == "out":
                sources.append(address(step.outputs[k]))
            elif kind == "scratch":
                sources.append(arena_at(layout.extra[(i, k)]))
            elif isinstance(step.inputs[k], int):
                sources.append(address(step.inputs[k]))
            else:
                sources.append(literal_constant(module, step.inputs[k][1], step.eqn.inputs[k].aval.dtype))
        p = b.gep(loop_table, [ir.Constant(I64, loop_slot[i])], source_etype=PTR)
        driver = b.load(p, typ=driver_type)
        b.call(driver, [slot_array(sources), ir.Constant(I64, 0)])
    b.ret_void()


class NativeEntry:
    """Calls ``tracejit_entry``: the arguments' and fresh outputs' addresses, one call."""

    def __init__(self, address: int, layout: EntryLayout, plan, const_arrays):
        self.fn = ENTRY_FN(address)
        self.loops = [loop for _, loop in layout.loops]   # (their code must outlive the entry)
        table = (ctypes.c_void_p * max(len(self.loops), 1))(*[loop.compiled.address("loop_driver")
                                                               for loop in self.loops])
        self.loop_table = table
        self.loop_table_address = ctypes.addressof(table)
        self.out_specs = [(plan.buffers[o].shape, plan.buffers[o].dtype) for o in plan.outputs]
        self.consts = list(const_arrays)
        self.io_type = ctypes.c_void_p * max(len(plan.inputs) + len(plan.outputs) + len(self.consts), 1)
        self.arena_bytes = layout.arena_bytes
