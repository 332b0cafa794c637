"""The ``cpu`` backend: the driver's plan -> LLVM (one module, two for large programs) -> an executable.

The compile driver (``compiler/driver.py``) has already run every stage, loop
bodies included; ``build`` chooses how each loop runs (native or host),
generates and compiles the code, and assembles the executable.
"""
from __future__ import annotations

import os
import time

from tracejit.compiler.plan import CONTROL_FLOW, NumpyStep, WindowStep, DotStep, step_writes
from tracejit.compiler.kernel_ir import Kernel, walk
from tracejit.backends import register_backend
from tracejit.config import env_flag
from tracejit.backends.cpu import entry, llvm_engine, loops, mathlib, native_blas, native_calls, parallel, warmup
from tracejit.backends.cpu import object_cache as persistent_cache
from tracejit.backends.cpu.host_loops import HostLoop
from tracejit.backends.cpu.native import (can_lower, can_reduce, native_emitter, native_steps, splits_over_threads,  # noqa: F401
                                          vector_bytes)
from tracejit.backends.cpu.runtime import (CPUExecutable, KernelLaunch, WindowLaunch, output_pools,
                                           prime_in_background)


class CPUBackend:
    """Target of the compile driver: LLVM kernels, BLAS products, native or host loops."""

    name = "cpu"
    plans = True
    can_lower = staticmethod(can_lower)
    can_reduce = staticmethod(can_reduce)

    @staticmethod
    def can_split_call(step) -> bool:
        """Whether a ``call`` step's nonblocking form can run as a start and a wait (an MPI collective
        between processes), so that the compiler may overlap it with independent steps."""
        return step.combine[0] in native_calls.SPLIT_CALLS and native_calls.uses_mpi(step)

    def _choose_loops(self, plan) -> None:
        """Each control-flow step becomes a native loop, or a host loop whose bodies are built now
        (so an executable never compiles while it runs); the reason is recorded for ``as_text``."""
        for step in plan.steps:
            if isinstance(step, NumpyStep) and step.eqn.primitive.name in CONTROL_FLOW:
                step.loop, step.host_reason = loops.native_loop_or_reason(step)
                if step.loop is None:
                    step.loop = HostLoop(step, self._build_body, step.host_reason)

    def _build_body(self, optimized):
        return self.build(optimized, name="body")

    def build(self, optimized, *, name: str = "function"):
        """The executable of an optimized program (``driver.optimize(program, self)``)."""
        t0 = time.perf_counter()
        warmup.wait()
        warmup_ms = (time.perf_counter() - t0) * 1e3
        program, plan = optimized.program, optimized.plan
        t1 = time.perf_counter()
        self._choose_loops(plan)
        loops_ms = (time.perf_counter() - t1) * 1e3
        pools = output_pools(plan, optimized.donated_outputs)
        native = set().union(*(step_writes(s) for s in plan.steps if isinstance(s, (Kernel, WindowStep, DotStep))))
        prime_in_background([pool for bid, pool in pools.items() if bid in native])
        module = llvm_engine.new_module(f"tracejit_{name}")
        vb = vector_bytes()
        steps = native_steps(plan)
        made = [native_emitter(module, k, plan.buffers, vb) for k in steps]
        # Batches of small products (attention heads) are generated kernels split over threads.
        for s in plan.steps:
            call = native_blas.ProductKernel.call_for(s, plan.buffers) if isinstance(s, DotStep) else None
            if call is not None:
                steps.append(s)
                made.append(native_blas.ProductKernel(module, s, call, vb))
        products = {id(em.kernel): em for em in made if isinstance(em, native_blas.ProductKernel)}
        # (a product's epilogue is a kernel of its own where the product is a library call from
        # Python, or a generated product's epilogue that does not vectorize)
        for s in plan.steps:
            if isinstance(s, DotStep) and s.epilogue is not None and (
                    id(s) not in products or not products[id(s)].fuses_epilogue):
                steps.append(s.epilogue)
                made.append(native_emitter(module, s.epilogue, plan.buffers, vb))
        emitters = [(k, em, f"{_symbol(name)}_k{i}") for i, (k, em) in enumerate(zip(steps, made))]
        modules = spread_over_modules([em for _, em, _ in emitters], module, name)
        codegen_ms = [0.0]
        team = parallel.runtime()      # loaded (and its symbols registered) before any object code
        emitter_of = {id(k): em for k, em, _ in emitters}
        entry_layout, entry_reason = entry.entry_or_reason(
            plan, optimized.offsets or {}, optimized.arena_bytes, emitter_of,
            optimized.donated_outputs, pools, len(modules) if emitters else 1)

        def build():
            # Runs only when the persistent cache has no object code for this program.
            t = time.perf_counter()
            for _, em, fn_name in emitters:
                em.emit(fn_name)
            if entry_layout is not None:
                entry.emit_entry(module, plan, optimized.offsets or {}, entry_layout,
                                 emitter_of, {id(k): n for k, _, n in emitters})
            if team is not None and any(splits_over_threads(k) for k, _, _ in emitters):
                parallel.emit_trampoline(module, team)
            for m in modules:
                mathlib.finish_module(m)
            codegen_ms[0] = (time.perf_counter() - t) * 1e3
            return modules if len(modules) > 1 else module

        t2 = time.perf_counter()
        launches = []
        compiled = None
        compile_ms = {}
        outcome = "no kernels"
        if emitters or entry_layout is not None:
            from tracejit.ops.callback import holds_callbacks
            # A program calling back into Python is never stored or loaded: no key identifies a function.
            cacheable = not holds_callbacks(program)
            components = {"program": persistent_cache.program_fingerprint(program, plan), "name": name,
                          "vector_bytes": vb, "openmp": team.kind if team is not None else None,
                          "modules": [modules.index(em.module) for _, em, _ in emitters],
                          "entry": entry_layout is not None,
                          # the products the entry makes: a provider's symbol or generated code
                          "blas": sorted(c.own.name if c.own is not None else c.symbol
                                         for c in (entry_layout.gemms.values() if entry_layout else ())),
                          "product_kernels": [em.own.name for em in products.values()]}
            compiled, outcome = persistent_cache.compile_module(
                build, name=name, vectorize=False, speed_level=llvm_engine.LIGHT, components=components,
                extra_metadata=lambda: {"math": [spec for m in modules for spec in mathlib.specs_used(m)]},
                before_load=lambda meta: mathlib.ensure(meta.get("math", [])), cacheable=cacheable)
            if not cacheable:
                outcome = "compiled (not cached: host callback)"
            compile_ms = dict(compiled.timings)
            trampoline = _address_or_none(compiled, parallel.TRAMPOLINE) if team is not None else None
            parts = [compiled] + compiled.parts
            for kernel, em, fn_name in emitters:
                launch_type = KernelLaunch if splits_over_threads(kernel) else WindowLaunch
                address = parts[modules.index(em.module)].address(fn_name)
                launch = launch_type(kernel, em.layout, em.slots, address, em)
                launch.module = compiled  # the code lives as long as a launch refers to it
                launch.team = (team, trampoline) if trampoline else None
                launches.append(launch)
        native_entry = None
        if entry_layout is not None:
            native_entry = entry.NativeEntry(compiled.address(entry.ENTRY), entry_layout, plan,
                                             program.const_values)
            native_entry.module = compiled
        t3 = time.perf_counter()
        timings = {"warmup_wait_ms": warmup_ms, "llvm_modules": len(modules) if emitters else 0,
                   "loops_ms": loops_ms, "codegen_ms": codegen_ms[0],
                   "llvm_ms": (t3 - t2) * 1e3 - codegen_ms[0], "cache": outcome,
                   **{f"llvm_{k}_ms": v for k, v in compile_ms.items() if isinstance(v, (int, float))}}
        return CPUExecutable(program, plan, launches, optimized.offsets, optimized.arena_bytes, timings, compiled,
                             donated=optimized.donated, donated_outputs=optimized.donated_outputs, pools=pools,
                             name=name, native_entry=native_entry, entry_reason=entry_reason)


def _address_or_none(compiled, symbol):
    try:
        return compiled.address(symbol)
    except KeyError:
        return None


# Programs with less machine code than this (in _code_weight units, ~0.2 ms of LLVM each) compile as
# one module: a second one costs ~1 ms to load.
SPREAD_MIN_WEIGHT = 60


def parallel_compile_enabled() -> bool:
    """A second core to compile on, unless ``TRACEJIT_PARALLEL_COMPILE=0``."""
    if not env_flag("TRACEJIT_PARALLEL_COMPILE", True):
        return False
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cpus >= 2


def _code_weight(emitter) -> int:
    """Rough machine code of one native step: its expression nodes, inlined math counting ~10."""
    kernel = getattr(emitter, "kernel", None)
    if not isinstance(kernel, Kernel):
        return 2                          # a window copy
    nodes = walk([e for p in kernel.phases for e in p.exprs])
    return 2 + len(nodes) + 10 * emitter.math_calls


def spread_over_modules(emitters, main, name) -> list:
    """Give the native steps of a large program two LLVM modules, so that they compile on two
    cores at once (``llvm_engine.object_codes``): the heaviest first, each to the lighter module.
    Returns the modules; each emitter's ``module`` says where its function goes."""
    weights = sorted(((_code_weight(em), i) for i, em in enumerate(emitters)), reverse=True)
    if len(emitters) < 2 or sum(w for w, _ in weights) < SPREAD_MIN_WEIGHT or not parallel_compile_enabled():
        return [main]
    side = llvm_engine.new_module(f"tracejit_{name}_part1")
    loads = [0, 0]
    for w, i in weights:
        target = 0 if loads[0] <= loads[1] else 1
        loads[target] += w
        emitters[i].module = (main, side)[target]
    return [main, side]


def _symbol(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name) or "fn"


BACKEND = CPUBackend()
register_backend("cpu", BACKEND)
