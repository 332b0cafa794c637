"""Native loops: ``while`` and ``scan`` whose bodies compile to native steps only.

The whole loop becomes one LLVM function, the *driver*: each iteration calls
the body's kernels and window copies directly (same module, so LLVM inlines
them), then moves the new carry into place, all without returning to Python.
Bodies that need a BLAS or NumPy step fall back to running the compiled body
once per iteration from Python (``subprograms.py``).

Carries are updated in place where the body allows it: a body output that
may be written over its own carry (the donation rules of memory planning:
read only at the element written, nothing reads the old value later) is
given the carry's memory, so ``x.at[i].set(v)`` in a loop writes one
window per iteration instead of copying the array. Scan outputs (``ys``)
are written straight into their row of the stacked result.

Small loops keep their carries, arenas and outputs in the driver's stack
frame: LLVM then promotes them to registers, and a step costs a few cycles.
"""
from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir

from tracejit.compiler.fusion import Planner, WindowStep, base_buffer
from tracejit.compiler.kernel_ir import Kernel
from tracejit.compiler.memory import donation_pairs, plan_memory
from tracejit.compiler.passes import run_pipeline
from tracejit.backends.cpu import llvm_engine
from tracejit.backends.cpu.runtime import data_address
from tracejit.backends.cpu.window import copy_bytes, counted_loop

I8, I64, PTR, VOID = ir.IntType(8), ir.IntType(64), ir.PointerType(), ir.VoidType()
DRIVER_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)
# Loops whose carries, arenas and outputs fit in this many bytes keep them on the stack.
LOCAL_STORAGE_BYTES = 16 << 10
# Bodies with a kernel this large run per iteration from Python, each kernel threaded.
THREADED_BODY_WORK = 1 << 16
ALIGN = 64


def _round_up(n: int) -> int:
    return -(-max(n, 1) // ALIGN) * ALIGN


class _SubPlan:
    """One sub-program's native steps and where each of its buffers lives.

    ``carry_io`` maps a carry's input position to its output position;
    ``ys`` lists output positions stacked into scan results.
    """

    def __init__(self, program, tag, module, vector_bytes, carry_io=None, ys=()):
        from tracejit.backends.cpu.backend import can_lower, can_reduce, native_emitter, native_steps
        program, _ = run_pipeline(program)
        self.program = program
        plan = Planner(program, can_lower, can_reduce).build()
        if not all(isinstance(s, (Kernel, WindowStep)) for s in plan.steps) or program.const_vars:
            raise NotImplementedError("body needs non-native steps")
        if any(not isinstance(o, int) for o in plan.outputs):
            raise NotImplementedError("body returns a literal")
        if any(k.size >= THREADED_BODY_WORK for k in plan.kernels):
            # Large bodies gain more from threaded kernels than they lose to per-iteration dispatch.
            raise NotImplementedError("body kernels are large enough to run threaded")
        self.plan = plan
        bufs = plan.buffers
        self.offsets, self.arena_bytes = plan_memory(plan)
        once = [o for o in plan.outputs if plan.outputs.count(o) == 1 and bufs[o].kind == "output"]
        # Outputs written straight over their own carry.
        self.in_place: dict[int, int] = {}
        carry_io = carry_io or {}
        for out_buf, pos in donation_pairs(plan, list(carry_io)).items():
            if out_buf in once and plan.outputs.index(out_buf) == carry_io[pos]:
                self.in_place[out_buf] = pos
        # Outputs written straight into their row of a stacked scan result.
        self.direct_ys = {plan.outputs[k]: j for j, k in enumerate(ys) if plan.outputs[k] in once}
        self.out_offsets, top = {}, 0
        for b in bufs:
            if b.kind == "output" and b.id not in self.in_place and b.id not in self.direct_ys:
                self.out_offsets[b.id] = top
                top += _round_up(b.nbytes)
        # Outputs that pass an input through are saved here first: the carry copies
        # below would otherwise overwrite an input another output still reads.
        self.pass_offsets = {}
        for k, bid in enumerate(plan.outputs):
            if bufs[base_buffer(bufs, bid)].kind == "input":
                self.pass_offsets[k] = top
                top += _round_up(bufs[bid].nbytes)
        self.out_bytes = top
        self.emitters = [(native_emitter(module, s, bufs, vector_bytes), f"{tag}_{id(self):x}_k{i}")
                         for i, s in enumerate(native_steps(plan))]
        for em, name in self.emitters:
            em.emit(name)


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
                slot = self.b.alloca(ir.ArrayType(I8, _round_up(nbytes)), name=name)
                slot.align = ALIGN
                self.bases[name] = slot
        return self.bases[name]


def _address(b, drv, sub, input_ptr, tag, ys_row=None):
    """Pointer to buffer ``b`` of ``sub`` inside the driver (at this iteration)."""
    bufs = sub.plan.buffers
    b = base_buffer(bufs, b)
    buf = bufs[b]
    builder = drv.b
    if buf.kind == "input":
        return input_ptr(buf.index)
    if buf.kind == "temp":
        return builder.gep(drv.scratch(f"{tag}_arena", sub.arena_bytes),
                           [ir.Constant(I64, sub.offsets.get(b, 0))], source_etype=I8)
    if buf.kind == "output":
        if b in sub.in_place:
            return input_ptr(sub.in_place[b])
        if b in sub.direct_ys:
            return ys_row(sub.direct_ys[b])
        return builder.gep(drv.scratch(f"{tag}_out", sub.out_bytes), [ir.Constant(I64, sub.out_offsets[b])],
                           source_etype=I8)
    raise NotImplementedError(f"buffer kind {buf.kind}")


def _run_steps(drv, sub, input_ptr, tag, ys_row=None):
    builder = drv.b
    for em, name in sub.emitters:
        kfn = drv.fn.module.globals[name]
        with builder.goto_block(drv.entry):
            arr = builder.alloca(PTR, size=ir.Constant(I64, max(len(em.slots), 1)))
        for k, b in enumerate(em.slots):
            slot = builder.gep(arr, [ir.Constant(I64, k)], source_etype=PTR)
            builder.store(_address(b, drv, sub, input_ptr, tag, ys_row), slot)
        n = em.layout.parallel_size
        if n:
            builder.call(kfn, [arr, ir.Constant(I64, 0), ir.Constant(I64, n)])


def _output_sources(drv, sub, input_ptr, tag, sizes, ys_row=None):
    """Pointers to each output's value after the body ran, passthroughs saved to scratch first."""
    srcs = []
    for k, (bid, nbytes) in enumerate(zip(sub.plan.outputs, sizes)):
        src = _address(bid, drv, sub, input_ptr, tag, ys_row)
        if k in sub.pass_offsets:
            scratch = drv.b.gep(drv.scratch(f"{tag}_out", sub.out_bytes), [ir.Constant(I64, sub.pass_offsets[k])],
                                source_etype=I8)
            _memmove(drv.b, scratch, src, nbytes)
            src = scratch
        srcs.append(src)
    return srcs


def _memmove(builder, dst, src, nbytes):
    copy_bytes(builder, dst, src, nbytes, overlap=True)


class NativeLoop:
    """A compiled ``while`` or ``scan``; called with the primitive's operands."""

    def __init__(self, kind, params):
        from tracejit.backends.cpu.backend import vector_bytes
        self.kind = kind
        self.params = params
        module = llvm_engine.new_module(f"tracejit_{kind}_loop")
        vb = vector_bytes()
        if kind == "scan":
            prog = params["program"]
            nc, ncarry = params["num_consts"], params["num_carry"]
            self.carry_avals = prog.in_avals[nc:nc + ncarry]
            self.x_avals = prog.in_avals[nc + ncarry:]
            self.y_avals = prog.out_avals[ncarry:]
            self.body = _SubPlan(prog, "body", module, vb, {nc + k: k for k in range(ncarry)},
                                 ys=range(ncarry, len(prog.out_avals)))
            subs = [self.body]
        else:
            cn, bn = params["cond_nconsts"], params["body_nconsts"]
            self.carry_avals = params["body_program"].in_avals[bn:]
            self.cond = _SubPlan(params["cond_program"], "cond", module, vb)
            self.body = _SubPlan(params["body_program"], "body", module, vb,
                                 {bn + k: k for k in range(len(self.carry_avals))})
            subs = [self.cond, self.body]
        self._arg_positions = self._first_operand_positions()
        local_bytes = sum(_round_up(a.nbytes) for a in self.carry_avals) + sum(
            _round_up(s.arena_bytes) + _round_up(s.out_bytes) for s in subs)
        drv = _Driver(module, local_bytes <= LOCAL_STORAGE_BYTES)
        self.local = drv.local
        carries = [self._carry_in(drv, k, a) for k, a in enumerate(self.carry_avals)]
        if kind == "scan":
            self._scan_body(drv, carries)
        else:
            self._while_body(drv, carries)
        if self.local:
            for k, a in enumerate(self.carry_avals):
                _memmove(drv.b, drv.arg(f"carry{k}", ("out", k)), carries[k], a.nbytes)
        drv.b.ret_void()
        self.slot_names = list(drv.names)
        self._sources = list(drv.sources)
        self.compiled = llvm_engine.compile_ir(module, name=f"{kind}_loop", vectorize=False)
        self.fn = DRIVER_FN(self.compiled.address("loop_driver"))
        self._slots_type = ctypes.c_void_p * max(len(self.slot_names), 1)
        self._scratch = {name: max(n, 1) for name, n in drv.scratch_bytes.items()}
        self.length = params["length"] if kind == "scan" else 0
        if kind != "scan":
            self.y_avals = []
        self._result_specs = [(a.shape, a.dtype) for a in self.carry_avals] + [
            ((self.length,) + y.shape, y.dtype) for y in self.y_avals]
        self._init_checks = [(self._arg_positions["init"] + k, a) for k, a in enumerate(self.carry_avals)]

    def _carry_in(self, drv, k, aval):
        """The carry's working memory, holding the initial value."""
        src = drv.arg(f"init{k}", ("arg", self._arg_positions["init"] + k))
        dst = drv.scratch(f"work{k}", aval.nbytes) if drv.local else drv.arg(f"carry{k}", ("out", k))
        _memmove(drv.b, dst, src, aval.nbytes)
        return dst

    def _scan_body(self, drv, carries):
        p, first = self.params, self._arg_positions
        nc, ncarry = p["num_consts"], p["num_carry"]
        b = drv.b
        length = drv.fn.args[1]
        sub = self.body

        def step(i):
            idx = b.sub(b.sub(length, ir.Constant(I64, 1)), i) if p["reverse"] else i

            def input_ptr(pos):
                if pos < nc:
                    return drv.arg(f"const{pos}", ("arg", first["const"] + pos))
                if pos < nc + ncarry:
                    return carries[pos - nc]
                j = pos - nc - ncarry
                xs = drv.arg(f"xs{j}", ("arg", first["xs"] + j))
                return b.gep(xs, [b.mul(idx, ir.Constant(I64, self.x_avals[j].nbytes))], source_etype=I8)

            def ys_row(j):
                ys = drv.arg(f"ys{j}", ("out", ncarry + j))
                return b.gep(ys, [b.mul(idx, ir.Constant(I64, self.y_avals[j].nbytes))], source_etype=I8)
            _run_steps(drv, sub, input_ptr, "body", ys_row)
            sizes = [a.nbytes for a in self.carry_avals] + [y.nbytes for y in self.y_avals]
            srcs = _output_sources(drv, sub, input_ptr, "body", sizes, ys_row)
            self._store_carries(b, sub, carries, srcs)
            for j, y in enumerate(self.y_avals):
                if sub.plan.outputs[ncarry + j] not in sub.direct_ys:
                    _memmove(b, ys_row(j), srcs[ncarry + j], y.nbytes)
        counted_loop(b, length, step, "step")

    def _while_body(self, drv, carries):
        p, first = self.params, self._arg_positions
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        b = drv.b
        head, it, done = (drv.fn.append_basic_block(n) for n in ("loop", "iter", "done"))
        b.branch(head)
        b.position_at_end(head)

        def cond_input(pos):
            return drv.arg(f"cconst{pos}", ("arg", first["cconst"] + pos)) if pos < cn else carries[pos - cn]

        def body_input(pos):
            return drv.arg(f"bconst{pos}", ("arg", first["bconst"] + pos)) if pos < bn else carries[pos - bn]
        _run_steps(drv, self.cond, cond_input, "cond")
        flag = b.load(_address(self.cond.plan.outputs[0], drv, self.cond, cond_input, "cond"), typ=I8)
        b.cbranch(b.icmp_unsigned("!=", flag, ir.Constant(I8, 0)), it, done)
        b.position_at_end(it)
        _run_steps(drv, self.body, body_input, "body")
        srcs = _output_sources(drv, self.body, body_input, "body", [a.nbytes for a in self.carry_avals])
        self._store_carries(b, self.body, carries, srcs)
        b.branch(head)
        b.position_at_end(done)

    def _first_operand_positions(self) -> dict:
        """Position of the first operand of each group among the primitive's operands."""
        p = self.params
        if self.kind == "scan":
            nc, ncarry = p["num_consts"], p["num_carry"]
            return {"const": 0, "init": nc, "xs": nc + ncarry}
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        return {"cconst": 0, "bconst": cn, "init": cn + bn}

    def _store_carries(self, b, sub, carries, srcs):
        """The body's new carries into place; those written in place already are."""
        for k, aval in enumerate(self.carry_avals):
            if sub.plan.outputs[k] not in sub.in_place:
                _memmove(b, carries[k], srcs[k], aval.nbytes)

    def __call__(self, *args):
        ins = [a if type(a) is np.ndarray and a.flags.c_contiguous else np.ascontiguousarray(a) for a in args]
        for pos, aval in self._init_checks:
            if ins[pos].dtype != aval.dtype:     # a literal initial value, e.g. a Python int
                ins[pos] = np.asarray(ins[pos], aval.dtype).reshape(aval.shape)
        return self.run_prepared(ins)

    def run_prepared(self, ins):
        """Run with operands already C-contiguous arrays of the operand types (an executable's buffers)."""
        results = [np.empty(shape, dtype) for shape, dtype in self._result_specs]
        # Scratch arrays live in `arrays` until the call returns.
        arrays = {"arg": ins, "out": results, "scratch": [np.empty(n, np.uint8) for n in self._scratch.values()]}
        self.fn(self._slots_type(*[data_address(arrays[kind][k]) for kind, k in self._sources]), self.length)
        return results


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
