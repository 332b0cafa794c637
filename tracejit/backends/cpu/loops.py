"""Native control flow: ``while``, ``scan`` and ``cond`` whose bodies compile to native steps.

A control-flow equation becomes one LLVM function, the *driver*: each iteration
(or the chosen branch) calls the body's kernels and window copies directly
(same module, so LLVM inlines them), then moves the new carry into place, all
without returning to Python. Bodies may themselves hold loops and conds: those
are emitted inline in the same driver, recursively, so a nested ``fori_loop``
with a ``cond`` inside runs as one native function. Bodies that need a BLAS
or NumPy step run as host loops instead (``host_loops.py``); the reason is
recorded on the plan step and shown by ``as_text()``.

Carries are updated in place where the body allows it: a body output that
may be written over its own carry (the donation rules of memory planning:
read only at the element written, nothing reads the old value later) is
given the carry's memory, so ``x.at[i].set(v)`` in a loop writes one
window per iteration instead of copying the array. A carry the body returns
unchanged (a matrix threaded through the loop only to be read) is never
copied. Scan outputs (``ys``) are written straight into their row of the
stacked result.

Small loops keep their carries, arenas and outputs in the driver's stack
frame: LLVM then promotes them to registers, and a step costs a few cycles.
"""
from __future__ import annotations

import ctypes
import itertools
import weakref
from collections import OrderedDict

import numpy as np
from llvmlite import ir

from tracejit.compiler.memory import last_reads
from tracejit.compiler.plan import CONTROL_FLOW, DotStep, NumpyStep, WindowStep, base_buffer
from tracejit.compiler.kernel_ir import Kernel
from tracejit.backends.cpu import llvm_engine, mathlib, parallel
from tracejit.backends.cpu import object_cache as persistent_cache
from tracejit.backends.cpu import lowering as L
from tracejit.backends.cpu import native_blas
from tracejit.backends.cpu.native import native_emitter, native_steps, splits_over_threads, vector_bytes
from tracejit.backends.cpu.runtime import data_address, num_threads, openmp_min_work, team_granule
from tracejit.backends.cpu.window import copy_bytes, counted_loop

I8, I64, PTR, VOID = ir.IntType(8), ir.IntType(64), ir.PointerType(), ir.VoidType()
DRIVER_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)
# Loops whose carries, arenas and outputs fit in this many bytes keep them on the stack.
LOCAL_STORAGE_BYTES = 16 << 10
# Without an OpenMP runtime, bodies with a kernel this large run per iteration from Python (each
# kernel threaded by the Python pool); with one, the loop's native code forks the team itself.
THREADED_BODY_WORK = 1 << 16
ALIGN = 64
_tags = itertools.count()


def aligned_size(n: int) -> int:
    return -(-max(n, 1) // ALIGN) * ALIGN


class _SubPlan:
    """One body's native steps (and nested control flow) and where each of its buffers lives.

    ``body`` is the body as the compile driver optimized it (plan, arena, donated carries);
    ``carry_io`` maps a carry's input position to its output position;
    ``ys`` lists output positions stacked into scan results; with ``direct_outputs`` (a cond's
    branch) each output the body computes itself is written straight into the construct's result.
    """

    def __init__(self, body, module, vector_bytes, carry_io=None, ys=(), direct_outputs=False):
        program, plan = body.program, body.plan
        self.program = program
        self.tag = f"s{next(_tags)}"
        for s in plan.steps:
            if isinstance(s, NumpyStep) and s.eqn.primitive.name not in CONTROL_FLOW:
                raise NotImplementedError(f"body needs a NumPy step ({s.eqn.primitive.name})")
            if not isinstance(s, (Kernel, WindowStep, NumpyStep, DotStep)):
                raise NotImplementedError(f"body needs a step native code cannot run ({s.describe()})")
        if program.const_vars:
            raise NotImplementedError("body has constant arrays")
        if any(not isinstance(o, int) for o in plan.outputs):
            raise NotImplementedError("body returns a literal")
        team = parallel.runtime()
        if team is None and any(k.size >= THREADED_BODY_WORK for k in plan.kernels):
            # Large bodies gain more from threaded kernels than they lose to per-iteration dispatch.
            raise NotImplementedError("body kernels are large enough to run threaded (no OpenMP runtime loads)")
        self.plan = plan
        bufs = plan.buffers
        self.offsets, self.arena_bytes = body.offsets, body.arena_bytes
        once = [o for o in plan.outputs if plan.outputs.count(o) == 1 and bufs[o].kind == "output"]
        carry_io = carry_io or {}
        # Carries the body returns unchanged: nothing to copy, ever.
        self.unchanged = {k for pos, k in carry_io.items()
                          if bufs[base_buffer(bufs, plan.outputs[k])].kind == "input"
                          and bufs[base_buffer(bufs, plan.outputs[k])].index == pos
                          and bufs[plan.outputs[k]].shape == bufs[plan.inputs[pos]].shape}
        # Outputs written straight over their own carry.
        self.in_place: dict[int, int] = {}
        for out_buf, pos in body.donated_outputs.items():      # the carries are the donated inputs
            if out_buf in once and plan.outputs.index(out_buf) == carry_io[pos]:
                self.in_place[out_buf] = pos
        # A carry rewritten into a temporary and then updated in a window (LU's step): both in the
        # carry's memory (compiler/memory.donated_temporaries).
        self.temps_in_carry: dict[int, int] = {}
        for temp, (pos, out) in body.donated_temps.items():
            # (a chain of window updates puts several temporaries in one carry's memory)
            mine = out in self.in_place and self.in_place[out] == pos and pos in self.temps_in_carry.values()
            if out in once and plan.outputs.index(out) == carry_io.get(pos) and (
                    mine or pos not in self.in_place.values()):
                self.in_place[out] = pos
                self.temps_in_carry[temp] = pos
        self._nested_loops_in_place(plan, once, carry_io)
        # Outputs written straight into their row of a stacked scan result.
        self.direct_ys = {plan.outputs[k]: j for j, k in enumerate(ys) if plan.outputs[k] in once}
        # Outputs written straight into the result (a cond's branch: the result's memory is fresh,
        # never an operand's, so no copy from the body's own output memory afterwards).
        self.direct_out = {b: plan.outputs.index(b) for b in once
                           if direct_outputs and b not in self.in_place and b not in self.direct_ys}
        self.out_offsets, top = {}, 0
        for b in bufs:
            if b.kind == "output" and b.id not in self.in_place and b.id not in self.direct_ys \
                    and b.id not in self.direct_out:
                self.out_offsets[b.id] = top
                top += aligned_size(b.nbytes)
        # Outputs that pass an input through are saved here first: the carry copies
        # below would otherwise overwrite an input another output still reads.
        self.pass_offsets = {}
        for k, bid in enumerate(plan.outputs):
            if bufs[base_buffer(bufs, bid)].kind == "input" and k not in self.unchanged:
                self.pass_offsets[k] = top
                top += aligned_size(bufs[bid].nbytes)
        # Results of nested control flow get memory of their own here too.
        for s in plan.steps:
            if isinstance(s, NumpyStep):
                for b in s.outputs:
                    if bufs[b].kind != "output":
                        self.out_offsets[b] = top
                        top += aligned_size(bufs[b].nbytes)
        self.out_bytes = top
        # ("kernel", emitter, (name, team granule or None)) | ("nested", step, construct)
        # | ("blas", step, GemmCall), in plan order; a kernel with a granule forks the OpenMP team.
        self.items = []
        native = iter(native_steps(plan))
        for i, s in enumerate(plan.steps):
            if isinstance(s, NumpyStep):
                self.items.append(("nested", s, _construct(s, module, vector_bytes)))
            elif isinstance(s, DotStep):
                call = native_blas.gemm_call(s, bufs)
                split = native_blas.ProductKernel.split(call) if team is not None else None
                em = native_blas.ProductKernel(module, s, split, vector_bytes) if split is not None else None
                if em is not None and em.fuses_epilogue and em.work >= openmp_min_work(em):
                    # (a product too large for one thread's generated code: its row blocks over the team)
                    name = f"{self.tag}_k{i}"
                    em.emit(name)
                    self.items.append(("kernel", em, (name, team_granule(em.layout, em))))
                else:
                    self.items.append(("blas", s, call))
            else:
                step = next(native)
                em = native_emitter(module, step, bufs, vector_bytes)
                name = f"{self.tag}_k{i}"
                em.emit(name)
                threaded = (team is not None and splits_over_threads(step) and em.layout.parallel_size >= 2
                            and em.work >= openmp_min_work(em))
                self.items.append(("kernel", em, (name, team_granule(em.layout, em) if threaded else None)))

    def _nested_loops_in_place(self, plan, once, carry_io) -> None:
        """A nested loop that threads one of these carries through (its initial carry is the carry,
        its result the new carry) runs on the carry's memory: no copy into the nested loop and back
        on every iteration (Gauss-Seidel's row loop moved the whole grid twice per row).

        Safe when nothing after the nested loop reads the old carry (no later step, no other output),
        the loop reads it through no other operand (it would see the carry change under it), and no
        earlier step already writes into that carry."""
        bufs = plan.buffers
        last_read = last_reads(plan)
        passed_out = {base_buffer(bufs, o) for o in plan.outputs if isinstance(o, int)
                      and bufs[base_buffer(bufs, o)].kind == "input"}
        for i, s in enumerate(plan.steps):
            if not (isinstance(s, NumpyStep) and s.eqn.primitive.name in ("while", "scan")):
                continue
            p = s.eqn.params
            first = p["cond_nconsts"] + p["body_nconsts"] if s.eqn.primitive.name == "while" else p["num_consts"]
            n_carry = len(s.outputs) if s.eqn.primitive.name == "while" else p["num_carry"]
            for k in range(n_carry):
                operand, result = s.inputs[first + k], s.outputs[k]
                if not isinstance(operand, int) or bufs[operand].kind != "input":
                    continue
                pos = bufs[operand].index
                if (pos not in carry_io or result not in once or plan.outputs.index(result) != carry_io[pos]
                        or pos in self.in_place.values() or last_read.get(operand, -1) > i
                        or operand in passed_out
                        or any(isinstance(o, int) and base_buffer(bufs, o) == operand
                               for j, o in enumerate(s.inputs) if j != first + k)):
                    continue
                self.in_place[result] = pos

    def storage_bytes(self) -> int:
        """Working memory this sub-plan asks its driver for, nested constructs included."""
        nested = sum(c.storage_bytes() for kind, _, c in self.items if kind == "nested")
        return aligned_size(self.arena_bytes) + aligned_size(self.out_bytes) + nested


class _Driver:
    """Builds the driver function: named base pointers, loaded once at entry or kept on the stack."""

    def __init__(self, module, local: bool):
        self.fn = ir.Function(module, ir.FunctionType(VOID, [PTR, I64]), name="loop_driver")
        self.fn.args[0].add_attribute("noalias")
        self.entry = self.fn.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)
        self.local = local
        self.names: list[str] = []      # pointer arguments, in slot order
        self.sources: list[tuple] = []  # where each comes from at call time: ("arg" | "out" | "scratch", index)
        self.bases: dict[str, ir.Value] = {}
        self.scratch_bytes: dict[str, int] = {}   # caller-provided working memory, by slot name

    def arg(self, name, source):
        """A pointer passed in by the caller: operand, result or scratch ``source = (kind, index)``."""
        if name not in self.bases:
            with self.b.goto_block(self.entry):
                self.names.append(name)
                self.sources.append(source)
                p = self.b.gep(self.fn.args[0], [ir.Constant(I64, len(self.names) - 1)], source_etype=PTR)
                self.bases[name] = self.b.load(p, typ=PTR)
        return self.bases[name]

    def scratch(self, name, nbytes):
        """Working memory: a stack slot for small loops, else a caller-provided buffer."""
        if name not in self.bases:
            if not self.local:
                self.scratch_bytes[name] = nbytes
                return self.arg(name, ("scratch", len(self.scratch_bytes) - 1))
            with self.b.goto_block(self.entry):
                slot = self.b.alloca(ir.ArrayType(I8, aligned_size(nbytes)), name=name)
                slot.align = ALIGN
                self.bases[name] = slot
        return self.bases[name]

    def literal(self, value, dtype):
        """A pointer to a constant holding ``value`` (a literal operand of a nested construct)."""
        return literal_constant(self.fn.module, value, dtype)


def literal_constant(module, value, dtype):
    """A private constant of ``module`` holding ``value`` as ``dtype`` (one per value and dtype),
    aligned as the arena's buffers are: what a step reads for a literal operand."""
    raw = np.asarray(value, dtype).tobytes()
    name = f"lit_{raw.hex()}_{np.dtype(dtype).str[1:]}"
    g = module.globals.get(name)
    if g is None:
        t = ir.ArrayType(I8, len(raw))
        g = ir.GlobalVariable(module, t, name=name)
        g.initializer = ir.Constant(t, bytearray(raw))
        g.global_constant = True
        g.linkage = "private"
        g.align = ALIGN
    return g


class _Frame:
    """Where one run of a sub-plan finds its buffers: its inputs, and (scan) its output rows."""

    def __init__(self, drv, sub, input_ptr, ys_row=None, result_ptr=None):
        self.drv, self.sub, self.input_ptr, self.ys_row, self.result_ptr = drv, sub, input_ptr, ys_row, result_ptr

    def address(self, b):
        """Pointer to buffer ``b`` of the sub-plan (at this iteration)."""
        sub, drv = self.sub, self.drv
        bufs = sub.plan.buffers
        b = base_buffer(bufs, b)
        buf = bufs[b]
        builder = drv.b
        if buf.kind == "input":
            return self.input_ptr(buf.index)
        if buf.kind == "temp" and b in sub.temps_in_carry:
            return self.input_ptr(sub.temps_in_carry[b])
        if buf.kind == "temp":
            return builder.gep(drv.scratch(f"{sub.tag}_arena", sub.arena_bytes),
                               [ir.Constant(I64, sub.offsets.get(b, 0))], source_etype=I8)
        if buf.kind in ("output", "external"):
            if b in sub.in_place:
                return self.input_ptr(sub.in_place[b])
            if b in sub.direct_ys:
                return self.ys_row(sub.direct_ys[b])
            if b in sub.direct_out:
                return self.result_ptr(sub.direct_out[b])
            return builder.gep(drv.scratch(f"{sub.tag}_out", sub.out_bytes), [ir.Constant(I64, sub.out_offsets[b])],
                               source_etype=I8)
        raise NotImplementedError(f"buffer kind {buf.kind}")

    def run_steps(self):
        drv, builder = self.drv, self.drv.b
        for kind, what, how in self.sub.items:
            if kind == "nested":
                step, construct = what, how
                operands = [self.address(b) if isinstance(b, int) else drv.literal(b[1], a.aval.dtype)
                            for b, a in zip(step.inputs, step.eqn.inputs)]
                results = [self.address(b) for b in step.outputs]
                if isinstance(construct, _Cond):
                    construct.emit(drv, operands, results, fresh_results=not any(map(self._in_carry, step.outputs)))
                else:
                    construct.emit(drv, operands, results)
                continue
            if kind == "blas":
                step, call = what, how
                out = self.address(step.out)
                if call.accumulate_from is not None:      # out = c + alpha * (a @ b): BLAS's beta = 1 on a copy of c
                    memmove(builder, out, self.address(call.accumulate_from), self.sub.plan.buffers[step.out].nbytes)
                native_blas.emit_gemm(builder, call, self.address(step.lhs), self.address(step.rhs), out, self.address)
                continue
            em, (name, granule) = what, how
            kfn = drv.fn.module.globals[name]
            with builder.goto_block(drv.entry):
                arr = builder.alloca(PTR, size=ir.Constant(I64, max(len(em.slots), 1)))
            for k, b in enumerate(em.slots):
                slot = builder.gep(arr, [ir.Constant(I64, k)], source_etype=PTR)
                builder.store(self.address(b), slot)
            n = em.layout.parallel_size
            if n and granule is not None:
                with builder.goto_block(drv.entry):
                    data = builder.alloca(PTR, size=ir.Constant(I64, 4))
                parallel.emit_team_call(builder, parallel.runtime(), kfn, arr, n, granule, data)
            elif n:
                builder.call(kfn, [arr, ir.Constant(I64, 0), ir.Constant(I64, n)])

    def _in_carry(self, b) -> bool:
        """Buffer ``b`` lives in the memory of one of the sub-plan's inputs (a carry written in place)."""
        bufs = self.sub.plan.buffers
        b = base_buffer(bufs, b)
        return bufs[b].kind == "input" or b in self.sub.in_place or b in self.sub.temps_in_carry

    def output_sources(self, sizes):
        """Pointers to each output's value after the body ran, passthroughs saved to scratch first."""
        sub, drv = self.sub, self.drv
        srcs = []
        for k, (bid, nbytes) in enumerate(zip(sub.plan.outputs, sizes)):
            src = self.address(bid)
            if k in sub.pass_offsets:
                scratch = drv.b.gep(drv.scratch(f"{sub.tag}_out", sub.out_bytes),
                                    [ir.Constant(I64, sub.pass_offsets[k])], source_etype=I8)
                memmove(drv.b, scratch, src, nbytes)
                src = scratch
            srcs.append(src)
        return srcs


def memmove(builder, dst, src, nbytes):
    if nbytes:
        copy_bytes(builder, dst, src, nbytes, overlap=True)


def _initial_carry(builder, carry, operand, nbytes):
    """Copy a loop's initial carry into its carry memory, unless the loop runs on the operand's own
    memory (a nested loop threading its enclosing loop's carry: ``_SubPlan._nested_loops_in_place``)."""
    if nbytes:
        with builder.if_then(builder.icmp_unsigned("!=", carry, operand)):
            memmove(builder, carry, operand, nbytes)


def _store_carries(b, sub, carries, srcs, avals):
    """The body's new carries into place; those written in place, or unchanged, already are."""
    for k, aval in enumerate(avals):
        if sub.plan.outputs[k] not in sub.in_place and k not in sub.unchanged:
            memmove(b, carries[k], srcs[k], aval.nbytes)


# --------------------------------------------------------------------------- constructs

class _Scan:
    """``scan``: carries in the result memory, ``ys`` rows written in place."""

    def __init__(self, params, bodies, module, vb):
        self.params = params
        prog = params["program"]
        nc, ncarry = params["num_consts"], params["num_carry"]
        self.carry_avals = prog.in_avals[nc:nc + ncarry]
        self.x_avals = prog.in_avals[nc + ncarry:]
        self.y_avals = prog.out_avals[ncarry:]
        self.length = params["length"]
        self.body = _SubPlan(bodies[0], module, vb, {nc + k: k for k in range(ncarry)},
                             ys=range(ncarry, len(prog.out_avals)))

    def storage_bytes(self):
        return self.body.storage_bytes()

    def result_avals(self):
        return list(self.carry_avals) + [(self.length,) + tuple(y.shape) for y in self.y_avals]

    def emit(self, drv, operands, results):
        p = self.params
        nc, ncarry = p["num_consts"], p["num_carry"]
        b = drv.b
        carries = results[:ncarry]
        for k, a in enumerate(self.carry_avals):
            _initial_carry(b, carries[k], operands[nc + k], a.nbytes)
        length = ir.Constant(I64, self.length)
        sub = self.body

        def step(i):
            idx = b.sub(ir.Constant(I64, self.length - 1), i) if p["reverse"] else i

            def input_ptr(pos):
                if pos < nc:
                    return operands[pos]
                if pos < nc + ncarry:
                    return carries[pos - nc]
                j = pos - nc - ncarry
                return b.gep(operands[pos], [b.mul(idx, ir.Constant(I64, self.x_avals[j].nbytes))], source_etype=I8)

            def ys_row(j):
                return b.gep(results[ncarry + j], [b.mul(idx, ir.Constant(I64, self.y_avals[j].nbytes))],
                             source_etype=I8)
            frame = _Frame(drv, sub, input_ptr, ys_row)
            frame.run_steps()
            sizes = [a.nbytes for a in self.carry_avals] + [y.nbytes for y in self.y_avals]
            srcs = frame.output_sources(sizes)
            _store_carries(b, sub, carries, srcs, self.carry_avals)
            for j, y in enumerate(self.y_avals):
                if sub.plan.outputs[ncarry + j] not in sub.direct_ys:
                    memmove(b, ys_row(j), srcs[ncarry + j], y.nbytes)
        if self.length:
            counted_loop(b, length, step, "step")


class _While:
    """``while``: the cond sub-plan decides, the body updates the carries (in the result memory)."""

    def __init__(self, params, bodies, module, vb):
        self.params = params
        bn = params["body_nconsts"]
        self.carry_avals = params["body_program"].in_avals[bn:]
        self.cond = _SubPlan(bodies[0], module, vb)
        self.body = _SubPlan(bodies[1], module, vb, {bn + k: k for k in range(len(self.carry_avals))})

    def storage_bytes(self):
        return self.cond.storage_bytes() + self.body.storage_bytes()

    def result_avals(self):
        return list(self.carry_avals)

    def emit(self, drv, operands, results):
        p = self.params
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        b = drv.b
        carries = results
        for k, a in enumerate(self.carry_avals):
            _initial_carry(b, carries[k], operands[cn + bn + k], a.nbytes)
        tag = next(_tags)
        head, it, done = (drv.fn.append_basic_block(f"{n}{tag}") for n in ("loop", "iter", "done"))
        b.branch(head)
        b.position_at_end(head)
        cond = _Frame(drv, self.cond, lambda pos: operands[pos] if pos < cn else carries[pos - cn])
        cond.run_steps()
        flag = b.load(cond.address(self.cond.plan.outputs[0]), typ=I8)
        b.cbranch(b.icmp_unsigned("!=", flag, ir.Constant(I8, 0)), it, done)
        b.position_at_end(it)
        body = _Frame(drv, self.body, lambda pos: operands[cn + pos] if pos < bn else carries[pos - bn])
        body.run_steps()
        srcs = body.output_sources([a.nbytes for a in self.carry_avals])
        _store_carries(b, self.body, carries, srcs, self.carry_avals)
        b.branch(head)
        b.position_at_end(done)


class _Cond:
    """``cond``: the clamped index picks a branch; its outputs are copied into the results."""

    def __init__(self, params, bodies, index_dtype, module, vb):
        self.branches = [_SubPlan(body, module, vb, direct_outputs=True) for body in bodies]
        self.index_dtype = index_dtype
        self.out_avals = params["branches"][0].out_avals

    def storage_bytes(self):
        return sum(s.storage_bytes() for s in self.branches)

    def result_avals(self):
        return list(self.out_avals)

    def emit(self, drv, operands, results, fresh_results=True):
        """``fresh_results``: the results' memory is none of the operands' (then each branch writes
        its outputs straight into it); False when a result is a carry an enclosing loop updates in place."""
        b = drv.b
        d = self.index_dtype if self.index_dtype.kind != "b" else np.dtype(np.uint8)   # a bool is one byte
        raw = b.load(operands[0], typ=ir.IntType(8 * d.itemsize))
        index, _ = L.index_in_range(b, raw, d, len(self.branches), "clip")
        tag = next(_tags)
        done = drv.fn.append_basic_block(f"cond_done{tag}")
        blocks = [drv.fn.append_basic_block(f"branch{tag}_{i}") for i in range(len(self.branches))]
        switch = b.switch(index, blocks[-1])
        for i, block in enumerate(blocks[:-1]):
            switch.add_case(ir.Constant(I64, i), block)
        for sub, block in zip(self.branches, blocks):
            b.position_at_end(block)
            frame = _Frame(drv, sub, lambda pos: operands[1 + pos], result_ptr=(lambda k: results[k]) if fresh_results
                           else (lambda k: b.gep(drv.scratch(f"{sub.tag}_direct{k}", self.out_avals[k].nbytes),
                                                 [ir.Constant(I64, 0)], source_etype=I8)))
            frame.run_steps()
            srcs = frame.output_sources([a.nbytes for a in self.out_avals])
            direct = set(sub.direct_out.values()) if fresh_results else set()
            for k, (dst, src, a) in enumerate(zip(results, srcs, self.out_avals)):
                if k not in direct:
                    memmove(b, dst, src, a.nbytes)
            b.branch(done)
        b.position_at_end(done)


def _construct(step, module, vb):
    """The construct of a control-flow plan step, over the bodies the driver optimized."""
    eqn, bodies = step.eqn, step.bodies
    name = eqn.primitive.name
    if name == "scan":
        return _Scan(eqn.params, bodies, module, vb)
    if name == "while":
        return _While(eqn.params, bodies, module, vb)
    return _Cond(eqn.params, bodies, eqn.inputs[0].aval.dtype, module, vb)


# --------------------------------------------------------------------------- the compiled driver

class NativeLoop:
    """A compiled ``while``, ``scan`` or ``cond``; called with the primitive's operands."""

    native = True

    def __init__(self, step):
        eqn = step.eqn
        self.kind = eqn.primitive.name
        self.params = eqn.params
        module = llvm_engine.new_module(f"tracejit_{self.kind}_loop")
        self.construct = c = _construct(step, module, vector_bytes())
        in_avals = [a.aval for a in eqn.inputs]
        out_avals = [v.aval for v in eqn.outputs]
        carries = len(c.carry_avals) if self.kind != "cond" else 0
        local_bytes = sum(aligned_size(a.nbytes) for a in out_avals[:carries]) + c.storage_bytes()
        drv = _Driver(module, local_bytes <= LOCAL_STORAGE_BYTES)
        self.local = drv.local
        operands = [drv.arg(f"in{k}", ("arg", k)) for k in range(len(in_avals))]
        outs = [drv.arg(f"out{k}", ("out", k)) for k in range(len(out_avals))]
        # Small loops work on carries in the stack frame (registers, after LLVM), copied out at the end.
        work = [drv.scratch(f"work{k}", out_avals[k].nbytes) if drv.local else outs[k] for k in range(carries)]
        c.emit(drv, operands, work + outs[carries:])
        if drv.local:
            for k in range(carries):
                memmove(drv.b, outs[k], work[k], out_avals[k].nbytes)
        drv.b.ret_void()
        self.slot_names = list(drv.names)
        self._sources = list(drv.sources)
        # Whether a body kernel forks the OpenMP team (then each call says how many threads it may use).
        self.team = parallel.runtime() if parallel.TEAM_THREADS_SYMBOL in module.globals else None
        self.compiled, self.cache_outcome = _compile_driver(module, step, f"{self.kind}_loop", self.team)
        self.fn = DRIVER_FN(self.compiled.address("loop_driver"))
        self._slots_type = ctypes.c_void_p * max(len(self.slot_names), 1)
        self._scratch = {name: max(n, 1) for name, n in drv.scratch_bytes.items()}
        self._result_specs = [(a.shape, a.dtype) for a in out_avals]
        self._in_avals = in_avals

    def __call__(self, *args):
        ins = [a if type(a) is np.ndarray and a.flags.c_contiguous else np.asarray(a, order="C") for a in args]
        for pos, aval in enumerate(self._in_avals):
            if ins[pos].dtype != aval.dtype:     # a literal operand, e.g. a Python int
                ins[pos] = np.asarray(ins[pos], aval.dtype).reshape(aval.shape)
        return self.run_prepared(ins)

    def run_prepared(self, ins):
        """Run with operands already C-contiguous arrays of the operand types (an executable's buffers)."""
        results = [np.empty(shape, dtype) for shape, dtype in self._result_specs]
        # Scratch arrays live in `arrays` until the call returns.
        arrays = {"arg": ins, "out": results, "scratch": [np.empty(n, np.uint8) for n in self._scratch.values()]}
        if self.team is not None:
            if self.team.usable:
                self.team.started = True     # (a forked child then knows whether libgomp's team exists)
            parallel.team_threads.value = num_threads() if self.team.usable else 1
        self.fn(self._slots_type(*[data_address(arrays[kind][k]) for kind, k in self._sources]), 0)
        return results


def _compile_driver(module, step, name, team):
    """The driver's object code, through the persistent cache like kernels: keyed by the loop
    equation's text (its bodies, literals and operand types), the plans its bodies were compiled
    from, and the compile environment, so a new process loads it instead of running LLVM.
    Returns ``(CompiledModule, outcome)``."""
    from tracejit.core.ir import Program, Var
    eqn = step.eqn
    holder = Program([], [], [a for a in eqn.inputs if isinstance(a, Var)], [eqn], eqn.outputs)
    components = {"loop": persistent_cache.program_fingerprint(holder), "vector_bytes": vector_bytes(),
                  "local_storage_bytes": LOCAL_STORAGE_BYTES, "bodies": _bodies_fingerprint(step),
                  "openmp": team.kind if team is not None else None,
                  "blas": sorted(g.name for g in module.globals.values()
                                 if g.name.startswith(("tracejit_blas_", "tracejit_small_gemm_")))}
    return persistent_cache.compile_module(
        module, name=name, vectorize=False, components=components,
        extra_metadata=lambda: {"math": mathlib.specs_used(module)},
        before_load=lambda meta: mathlib.ensure(meta.get("math", [])), symbols=("loop_driver",))


def _bodies_fingerprint(step) -> list:
    """The plans of a control-flow step's bodies, nested loops' bodies included: the code the driver
    holds is made from them, so its cache key names them (not only the equation they came from)."""
    out = []
    for body in step.bodies:
        out.append(persistent_cache.program_fingerprint(body.program, body.plan))
        out.extend(_bodies_fingerprint(s) for s in body.plan.steps if isinstance(s, NumpyStep) and s.bodies)
    return out


# Compiled loops, held weakly: a loop lives as long as an executable that runs it (its params,
# which it keeps, keep the ids in its key unique meanwhile).  A global dict of loops kept every
# loop's native code for the life of the process.
_cache: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()
# Equations that cannot run natively, the most recent few: (params, for unique ids; the reason).
_not_native: "OrderedDict[tuple, tuple]" = OrderedDict()
_NOT_NATIVE_KEEP = 256


def native_loop_or_reason(step):
    """``(NativeLoop, None)`` for a ``while``/``scan``/``cond`` plan step whose bodies (optimized by the
    driver: ``step.bodies``) compile to native steps, else ``(None, why not)``."""
    eqn = step.eqn
    key = (eqn.primitive.name, tuple(sorted((k, id(v)) for k, v in eqn.params.items())),
           tuple(a.aval for a in eqn.inputs))
    hit = _cache.get(key)
    if hit is not None:
        return hit, None
    if key in _not_native:
        return None, _not_native[key][1]
    loop, reason = None, None
    try:
        loop = NativeLoop(step)
    except NotImplementedError as e:
        reason = str(e)
    if loop is not None:
        _cache[key] = loop
    else:
        _not_native[key] = (eqn.params, reason)
        while len(_not_native) > _NOT_NATIVE_KEEP:
            _not_native.popitem(last=False)
    return loop, reason


def native_loop(step):
    """A NativeLoop for a control-flow plan step, or None when a body needs Python."""
    return native_loop_or_reason(step)[0]


def clear_cache() -> None:
    """Forget the equations known not to run natively (compiled loops go with their executables)."""
    _not_native.clear()
