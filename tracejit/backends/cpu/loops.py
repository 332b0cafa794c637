"""Native loops: ``while`` and ``scan`` whose bodies compile to kernels only.

The whole loop becomes one LLVM function: each iteration calls the body's
kernels directly (same module, so LLVM may inline them), then copies the
new carry into place, all without returning to Python. Bodies that need a
BLAS or NumPy step fall back to running the compiled body once per
iteration from Python (``subprograms.py``).
"""
from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir

from tracejit.compiler.fusion import Planner
from tracejit.compiler.kernel_ir import Kernel
from tracejit.compiler.memory import plan_memory
from tracejit.compiler.passes import run_pipeline
from tracejit.backends.cpu import llvm_engine
from tracejit.backends.cpu.codegen import KernelEmitter

I8, I64, PTR, VOID = ir.IntType(8), ir.IntType(64), ir.PointerType(), ir.VoidType()
DRIVER_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)


class _SubPlan:
    """One sub-program's kernels and where each of its buffers lives."""

    def __init__(self, program, tag, module, vector_bytes):
        from tracejit.backends.cpu.backend import can_lower, can_reduce
        program, _ = run_pipeline(program)
        self.program = program
        plan = Planner(program, can_lower, can_reduce).build()
        if not all(isinstance(s, Kernel) for s in plan.steps) or program.const_vars:
            raise NotImplementedError("body needs non-kernel steps")
        if any(not isinstance(o, int) for o in plan.outputs):
            raise NotImplementedError("body returns a literal")
        from tracejit.backends.cpu.runtime import PARALLEL_MIN_WORK
        if any(k.size >= PARALLEL_MIN_WORK for k in plan.kernels):
            # Large bodies gain more from threaded kernels than they lose to per-iteration dispatch.
            raise NotImplementedError("body kernels are large enough to run threaded")
        self.plan = plan
        self.offsets, self.arena_bytes = plan_memory(plan)
        outs = [b for b in plan.buffers if b.kind == "output"]
        self.out_offsets, top = {}, 0
        for b in outs:
            self.out_offsets[b.id] = top
            top += -(-max(b.nbytes, 1) // 64) * 64
        # Outputs that pass an input through are saved here first: the carry copies
        # below would otherwise overwrite an input another output still reads.
        self.pass_offsets = {}
        for k, bid in enumerate(plan.outputs):
            base_buf = bid
            while plan.buffers[base_buf].kind == "alias":
                base_buf = plan.buffers[base_buf].alias_of
            if plan.buffers[base_buf].kind == "input":
                self.pass_offsets[k] = top
                top += -(-max(plan.buffers[bid].nbytes, 1) // 64) * 64
        self.out_bytes = top
        self.emitters = [(KernelEmitter(module, k, plan.buffers, vector_bytes), f"{tag}_{id(self):x}_k{i}")
                         for i, k in enumerate(plan.kernels)]
        for em, name in self.emitters:
            em.emit(name)


class _Slots:
    """Driver arguments: one pointer per named base (inputs, xs, ys, arenas)."""

    def __init__(self):
        self.names: list[str] = []

    def index(self, name):
        if name not in self.names:
            self.names.append(name)
        return self.names.index(name)


def _address(b, builder, slots_arg, sub, slots, input_ptr, tag):
    """Pointer to buffer ``b`` of ``sub`` inside the driver (at this iteration)."""
    bufs = sub.plan.buffers
    while bufs[b].kind == "alias":
        b = bufs[b].alias_of
    buf = bufs[b]

    def base(name):
        p = builder.gep(slots_arg, [ir.Constant(I64, slots.index(name))], source_etype=PTR)
        return builder.load(p, typ=PTR)
    if buf.kind == "input":
        return input_ptr(buf.index)
    if buf.kind == "temp":
        return builder.gep(base(f"{tag}_arena"), [ir.Constant(I64, sub.offsets.get(b, 0))], source_etype=I8)
    if buf.kind == "output":
        return builder.gep(base(f"{tag}_out"), [ir.Constant(I64, sub.out_offsets[b])], source_etype=I8)
    raise NotImplementedError(f"buffer kind {buf.kind}")


def _run_kernels(builder, fn, sub, slots_arg, slots, input_ptr, tag):
    for em, name in sub.emitters:
        kfn = fn.module.globals[name]
        entry = fn.entry_basic_block
        with builder.goto_block(entry):
            builder.position_at_start(entry)
            arr = builder.alloca(PTR, size=ir.Constant(I64, max(len(em.slots), 1)))
        for k, b in enumerate(em.slots):
            slot = builder.gep(arr, [ir.Constant(I64, k)], source_etype=PTR)
            builder.store(_address(b, builder, slots_arg, sub, slots, input_ptr, tag), slot)
        n = em.layout.parallel_size
        if n:
            builder.call(kfn, [arr, ir.Constant(I64, 0), ir.Constant(I64, n)])


def _output_sources(builder, slots_arg, sub, slots, input_ptr, tag, sizes):
    """Pointers to each output's value after the body ran, passthroughs saved to scratch first."""
    srcs = []
    for k, (bid, nbytes) in enumerate(zip(sub.plan.outputs, sizes)):
        src = _address(bid, builder, slots_arg, sub, slots, input_ptr, tag)
        if k in sub.pass_offsets:
            p = builder.gep(slots_arg, [ir.Constant(I64, slots.index(f"{tag}_out"))], source_etype=PTR)
            scratch = builder.gep(builder.load(p, typ=PTR), [ir.Constant(I64, sub.pass_offsets[k])], source_etype=I8)
            _memmove(builder, scratch, src, nbytes)
            src = scratch
        srcs.append(src)
    return srcs


def _memmove(builder, dst, src, nbytes):
    fn = builder.module.globals.get("llvm.memmove.p0.p0.i64")
    if fn is None:
        fn = ir.Function(builder.module, ir.FunctionType(VOID, [PTR, PTR, I64, ir.IntType(1)]),
                         name="llvm.memmove.p0.p0.i64")
    builder.call(fn, [dst, src, ir.Constant(I64, nbytes), ir.Constant(ir.IntType(1), 0)])


class NativeLoop:
    """A compiled ``while`` or ``scan``; called with the primitive's operands."""

    def __init__(self, kind, params):
        from tracejit.backends.cpu.backend import vector_bytes
        self.kind = kind
        self.params = params
        module = ir.Module(name=f"tracejit_{kind}_loop")
        module.triple = llvm_engine.triple
        module.data_layout = llvm_engine.target_data_layout
        vb = vector_bytes()
        self.slots = _Slots()
        fn = ir.Function(module, ir.FunctionType(VOID, [PTR, I64]), name="loop_driver")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        slots_arg, length = fn.args

        def base(name):
            p = b.gep(slots_arg, [ir.Constant(I64, self.slots.index(name))], source_etype=PTR)
            return b.load(p, typ=PTR)

        if kind == "scan":
            prog = params["program"]
            self.body = _SubPlan(prog, "body", module, vb)
            nc, ncarry = params["num_consts"], params["num_carry"]
            avals = prog.in_avals
            self.carry_avals = avals[nc:nc + ncarry]
            self.x_avals = avals[nc + ncarry:]
            self.y_avals = prog.out_avals[ncarry:]
            loop_bb, body_bb, end_bb = (fn.append_basic_block(n) for n in ("loop", "iter", "done"))
            counter = b.alloca(I64)
            b.store(ir.Constant(I64, 0), counter)
            b.branch(loop_bb)
            b.position_at_end(loop_bb)
            i = b.load(counter)
            b.cbranch(b.icmp_signed("<", i, length), body_bb, end_bb)
            b.position_at_end(body_bb)
            idx = b.sub(b.sub(length, ir.Constant(I64, 1)), i) if params["reverse"] else i

            def input_ptr(pos):
                if pos < nc:
                    return base(f"const{pos}")
                if pos < nc + ncarry:
                    return base(f"carry{pos - nc}")
                j = pos - nc - ncarry
                return b.gep(base(f"xs{j}"), [b.mul(idx, ir.Constant(I64, self.x_avals[j].nbytes))],
                             source_etype=I8)
            _run_kernels(b, fn, self.body, slots_arg, self.slots, input_ptr, "body")
            sizes = [a.nbytes for a in self.carry_avals] + [y.nbytes for y in self.y_avals]
            srcs = _output_sources(b, slots_arg, self.body, self.slots, input_ptr, "body", sizes)
            for k in range(ncarry):
                _memmove(b, base(f"carry{k}"), srcs[k], self.carry_avals[k].nbytes)
            for j, y in enumerate(self.y_avals):
                dst = b.gep(base(f"ys{j}"), [b.mul(idx, ir.Constant(I64, y.nbytes))], source_etype=I8)
                _memmove(b, dst, srcs[ncarry + j], y.nbytes)
            b.store(b.add(i, ir.Constant(I64, 1)), counter)
            b.branch(loop_bb)
            b.position_at_end(end_bb)
            b.ret_void()
        else:
            cn, bn = params["cond_nconsts"], params["body_nconsts"]
            self.cond = _SubPlan(params["cond_program"], "cond", module, vb)
            self.body = _SubPlan(params["body_program"], "body", module, vb)
            self.carry_avals = params["body_program"].in_avals[bn:]
            loop_bb, body_bb, end_bb = (fn.append_basic_block(n) for n in ("loop", "iter", "done"))
            b.branch(loop_bb)
            b.position_at_end(loop_bb)

            def cond_input(pos):
                return base(f"cconst{pos}") if pos < cn else base(f"carry{pos - cn}")

            def body_input(pos):
                return base(f"bconst{pos}") if pos < bn else base(f"carry{pos - bn}")
            _run_kernels(b, fn, self.cond, slots_arg, self.slots, cond_input, "cond")
            flag_ptr = _address(self.cond.plan.outputs[0], b, slots_arg, self.cond, self.slots, cond_input, "cond")
            flag = b.load(flag_ptr, typ=I8)
            b.cbranch(b.icmp_unsigned("!=", flag, ir.Constant(I8, 0)), body_bb, end_bb)
            b.position_at_end(body_bb)
            _run_kernels(b, fn, self.body, slots_arg, self.slots, body_input, "body")
            srcs = _output_sources(b, slots_arg, self.body, self.slots, body_input, "body",
                                   [a.nbytes for a in self.carry_avals])
            for k, aval in enumerate(self.carry_avals):
                _memmove(b, base(f"carry{k}"), srcs[k], aval.nbytes)
            b.branch(loop_bb)
            b.position_at_end(end_bb)
            b.ret_void()
        self.compiled = llvm_engine.compile_ir(module, name=f"{kind}_loop", vectorize=False)
        self.fn = DRIVER_FN(self.compiled.address("loop_driver"))

    def __call__(self, *args):
        arrays: dict[str, np.ndarray] = {}
        p = self.params
        if self.kind == "scan":
            nc, ncarry, length = p["num_consts"], p["num_carry"], p["length"]
            consts, carry, xs = args[:nc], args[nc:nc + ncarry], args[nc + ncarry:]
            for k, c in enumerate(consts):
                arrays[f"const{k}"] = np.ascontiguousarray(c)
            for j, x in enumerate(xs):
                arrays[f"xs{j}"] = np.ascontiguousarray(x)
            ys = [np.empty((length,) + y.shape, y.dtype) for y in self.y_avals]
            for j, y in enumerate(ys):
                arrays[f"ys{j}"] = y
            subs = [("body", self.body)]
        else:
            cn, bn = p["cond_nconsts"], p["body_nconsts"]
            for k, c in enumerate(args[:cn]):
                arrays[f"cconst{k}"] = np.ascontiguousarray(c)
            for k, c in enumerate(args[cn:cn + bn]):
                arrays[f"bconst{k}"] = np.ascontiguousarray(c)
            carry = args[cn + bn:]
            length = 0
            subs = [("cond", self.cond), ("body", self.body)]
        carries = [np.array(c, dtype=a.dtype, copy=True).reshape(a.shape) for c, a in zip(carry, self.carry_avals)]
        for k, c in enumerate(carries):
            arrays[f"carry{k}"] = c
        for tag, sub in subs:
            arrays[f"{tag}_arena"] = np.empty(max(sub.arena_bytes, 1), np.uint8)
            arrays[f"{tag}_out"] = np.empty(max(sub.out_bytes, 1), np.uint8)
        slots = (ctypes.c_void_p * max(len(self.slots.names), 1))(
            *[arrays[name].ctypes.data for name in self.slots.names])
        self.fn(slots, length)
        return carries + (ys if self.kind == "scan" else [])


_cache: dict = {}


def native_loop(eqn):
    """A NativeLoop for a ``while``/``scan`` equation, or None when its body needs Python."""
    key = (eqn.primitive.name, tuple(sorted((k, id(v)) for k, v in eqn.params.items())))
    hit = _cache.get(key)
    if hit is not None:
        return hit[0]
    loop = None
    try:
        if eqn.primitive.name in ("while", "scan"):
            loop = NativeLoop(eqn.primitive.name, eqn.params)
    except NotImplementedError:
        loop = None
    _cache[key] = (loop, eqn.params)   # the params keep their ids unique while cached
    return loop
