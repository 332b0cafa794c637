"""The ``cpu`` backend: passes -> fusion -> memory planning -> LLVM (one module, two for large programs)."""
from __future__ import annotations

import os
import time

from tracejit.compiler.fusion import CONTROL_FLOW, DotStep, NumpyStep, Planner, WindowStep, step_writes
from tracejit.compiler.kernel_ir import Kernel, walk
from tracejit.compiler.memory import plan_memory
from tracejit.compiler.passes import run_pipeline
from tracejit.backends import register_backend
from tracejit.config import env_flag
from tracejit.backends.cpu import llvm_engine, loops, mathlib, parallel, warmup
from tracejit.backends.cpu.host_loops import HostLoop
from tracejit.backends.cpu.native import (can_lower, can_reduce, native_emitter, native_steps,  # noqa: F401
                                          vector_bytes)
from tracejit.backends.cpu.runtime import (CPUExecutable, KernelLaunch, WindowLaunch, output_pools,
                                           prime_in_background)


class CPUBackend:
    name = "cpu"

    def optimize(self, program):
        program, pass_ms = run_pipeline(program)
        t0 = time.perf_counter()
        plan = Planner(program, can_lower, can_reduce).build()
        # Layout folding happens while fusion builds index maps: one timing covers both.
        pass_ms["layout+fusion"] = (time.perf_counter() - t0) * 1e3
        _dump_plan("fusion", plan)
        return program, plan, pass_ms

    def optimized_text(self, program) -> str:
        program, plan, _ = self.optimize(program)
        return f"{program}\n\n# kernels and steps\n" + _plan_text(plan)

    def _choose_loops(self, plan) -> None:
        """Each control-flow step becomes a native loop, or a host loop whose bodies are compiled now
        (so an executable never compiles while it runs); the reason is recorded for ``as_text``."""
        for step in plan.steps:
            if isinstance(step, NumpyStep) and step.eqn.primitive.name in CONTROL_FLOW:
                step.loop, step.host_reason = loops.native_loop_or_reason(step.eqn)
                if step.loop is None:
                    step.loop = HostLoop(step.eqn, self._compile_body, step.host_reason)

    def _compile_body(self, program, donate_argnums):
        return self.compile(program, name="body", donate_argnums=donate_argnums)

    def compile(self, program, *, name: str = "function", donate_argnums=()):
        t0 = time.perf_counter()
        warmup.wait()
        warmup_ms = (time.perf_counter() - t0) * 1e3
        t0 = time.perf_counter()
        program, plan, pass_ms = self.optimize(program)
        t1 = time.perf_counter()
        offsets, arena_bytes = plan_memory(plan)
        pass_ms["memory"] = (time.perf_counter() - t1) * 1e3
        _dump_plan("memory", plan, f"arena {arena_bytes} bytes, offsets {offsets}")
        self._choose_loops(plan)
        pools = output_pools(plan, donate_argnums)
        native = set().union(*(step_writes(s) for s in plan.steps if isinstance(s, (Kernel, WindowStep, DotStep))))
        prime_in_background([pool for bid, pool in pools.items() if bid in native])
        module = llvm_engine.new_module(f"tracejit_{name}")
        vb = vector_bytes()
        emitters = [(k, native_emitter(module, k, plan.buffers, vb), f"{_symbol(name)}_k{i}")
                    for i, k in enumerate(native_steps(plan))]
        modules = spread_over_modules([em for _, em, _ in emitters], module, name)
        codegen_ms = [0.0]
        team = parallel.runtime()      # loaded (and its symbols registered) before any object code

        def build():
            # Runs only when the persistent cache has no object code for this program.
            t = time.perf_counter()
            for _, em, fn_name in emitters:
                em.emit(fn_name)
            if team is not None and any(isinstance(k, Kernel) for k, _, _ in emitters):
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
        if emitters:
            from tracejit.diagnostics import persistent_cache
            from tracejit.ops.callback import holds_callbacks
            # A program calling back into Python is never stored or loaded: no key identifies a function.
            cacheable = not holds_callbacks(program)
            components = {"program": persistent_cache.program_fingerprint(program, plan), "name": name,
                          "vector_bytes": vb, "openmp": team.kind if team is not None else None,
                          "modules": [modules.index(em.module) for _, em, _ in emitters]}
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
                launch_type = WindowLaunch if isinstance(kernel, WindowStep) else KernelLaunch
                address = parts[modules.index(em.module)].address(fn_name)
                launch = launch_type(kernel, em.layout, em.slots, address, em)
                launch.module = compiled  # the code lives as long as a launch refers to it
                launch.team = (team, trampoline) if trampoline else None
                launches.append(launch)
        t3 = time.perf_counter()
        timings = {"warmup_wait_ms": warmup_ms, "llvm_modules": len(modules) if emitters else 0,
                   "passes_ms": (t1 - t0) * 1e3, "codegen_ms": codegen_ms[0],
                   "llvm_ms": (t3 - t2) * 1e3 - codegen_ms[0], "cache": outcome,
                   **{f"pass_{k}_ms": v for k, v in pass_ms.items()},
                   **{f"llvm_{k}_ms": v for k, v in compile_ms.items() if isinstance(v, (int, float))}}
        llvm_ir_text = compiled
        return CPUExecutable(program, plan, launches, offsets, arena_bytes, timings, llvm_ir_text,
                             donated=donate_argnums, pools=pools, name=name)


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


def _dump_plan(stage, plan, extra=""):
    from tracejit.config import config
    dump = {p.strip() for p in (config.dump_passes or "").split(",")}
    if stage in dump or "all" in dump or ("layout" in dump and stage == "fusion"):
        import sys
        print(f"--- after {stage} ---\n{_plan_text(plan)}\n{extra}", file=sys.stderr)


def _symbol(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name) or "fn"


def _plan_text(plan) -> str:
    return "\n".join(s.describe() for s in plan.steps)


BACKEND = CPUBackend()
register_backend("cpu", BACKEND)
