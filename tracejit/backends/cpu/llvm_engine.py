"""Thread-safe LLVM compile service for the CPU backend (llvmlite >= 0.45).

One process-wide target machine for the host CPU is shared by all compiles.
LLVM's global context and the MCJIT memory manager are not safe to use from
several threads at once, so every parse/optimize/codegen step runs under a
single re-entrant lock.  Compilation is rare compared to execution, so the
coarse lock costs little.

The persistent compile cache can store ``object_code(ir)`` bytes and later
rebuild a callable module with ``load_object(bytes)``: MCJIT accepts relocatable
object files through ``ExecutionEngine.add_object_file``.  Every compile loads
its code that way (an engine that code-generates a module itself keeps the
module and the code generator's state alive with the code: ~0.7 MB a compile).

Forking while another thread compiles is safe: see "fork safety" below.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from typing import Dict, Optional, Union

import llvmlite.binding as llvm
import llvmlite.ir as ir
from llvmlite.binding import ffi

__all__ = [
    "CompiledModule",
    "compile_ir",
    "object_code",
    "load_object",
    "optimize_ir",
    "host_cpu_name",
    "host_cpu_features",
    "target_machine",
    "target_data_layout",
    "triple",
    "COMPILE_LOCK",
]

# Re-entrant so helpers (e.g. object_code called from a cache layer that
# already holds the lock) do not deadlock.
COMPILE_LOCK = threading.RLock()


# --------------------------------------------------------------------------- fork safety
#
# A fork() copies only the forking thread.  A lock held by another thread at
# that moment stays held in the child forever, and LLVM's state (its global
# context, a module half parsed, llvmlite's own lock around every LLVM call)
# may be mid-update.  So, before a fork, the forking thread waits for the
# start-up work to stop and then takes COMPILE_LOCK and llvmlite's lock: no
# compile is inside LLVM while the process is copied.  The parent releases
# them after the fork; the child re-initializes them, and re-initializes the
# Python locks other threads may have held at the fork (they guard caches
# whose entries are published atomically, so fresh locks leave them
# consistent).  ``_CHILD_LOCKS`` lists those locks; each Jitted's own lock is
# re-initialized by tracejit.api, the thread pool and the OpenMP team by
# runtime.py and parallel.py.

_CHILD_LOCKS = (
    ("tracejit.config", "config._lock"),
    ("tracejit.backends.cpu.mathlib", "_lock"),
    ("tracejit.backends.cpu.rare_paths", "_cells_lock"),
    ("tracejit.backends.cpu.parallel", "_lock"),
    ("tracejit.backends.cpu.runtime", "_pool_lock"),
    ("tracejit.backends.cpu.blas", "_lock"),
    ("tracejit.backends.cpu.warmup", "_lock"),
    ("tracejit.backends.cpu.object_cache", "_lock"),
    ("tracejit.autograph.convert", "_lock"),
    ("tracejit.backends.cpu.native_calls", "_lock"),
    ("tracejit.backends.cpu.openblas_team", "_lock"),
)


def _llvmlite_lock():
    """llvmlite's process-wide lock around LLVM calls (an RLock), or None if its internals moved."""
    return getattr(getattr(getattr(ffi, "lib", None), "_lock", None), "_lock", None)


def reinit_lock(lock):
    """Return ``lock`` unlocked, for a forked child: re-initialized in place where possible."""
    reinit = getattr(lock, "_at_fork_reinit", None)
    if reinit is not None:
        reinit()
        return lock
    return type(lock)() if isinstance(lock, type(threading.RLock())) else threading.Lock()


def _before_fork() -> None:
    import sys
    warmup = sys.modules.get("tracejit.backends.cpu.warmup")
    if warmup is not None:
        warmup.wait()           # it takes COMPILE_LOCK: it must not be waiting for it
    COMPILE_LOCK.acquire()
    lock = _llvmlite_lock()
    if lock is not None:
        lock.acquire()


def _after_fork_in_parent() -> None:
    lock = _llvmlite_lock()
    if lock is not None:
        lock.release()
    COMPILE_LOCK.release()


def _after_fork_in_child() -> None:
    import sys
    global COMPILE_LOCK
    lock = _llvmlite_lock()
    if lock is not None:
        ffi.lib._lock._lock = reinit_lock(lock)
    COMPILE_LOCK = reinit_lock(COMPILE_LOCK)
    for module_name, path in _CHILD_LOCKS:
        owner = sys.modules.get(module_name)
        if owner is None:
            continue
        *parents, attr = path.split(".")
        for name in parents:
            owner = getattr(owner, name, None)
        old = getattr(owner, attr, None) if owner is not None else None
        if old is not None:
            fresh = reinit_lock(old)
            if fresh is not old:
                object.__setattr__(owner, attr, fresh)
    rare = sys.modules.get("tracejit.backends.cpu.rare_paths")
    for cell in list(getattr(rare, "_cells", {}).values()):
        cell.compile_lock = reinit_lock(cell.compile_lock)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)

_initialized = False
_tm: Optional[llvm.TargetMachine] = None
# The host does not change while the process runs; asking LLVM costs ~0.2 ms a time.
_cpu_name = ""
_cpu_features = ""


def _ensure_init() -> None:
    # llvm.initialize() is gone in recent llvmlite; the native target and
    # asm printer are all MCJIT and emit_object/emit_assembly need.
    global _initialized, _tm, _cpu_name, _cpu_features
    if _initialized:
        return
    with COMPILE_LOCK:
        if _initialized:
            return
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _cpu_name = llvm.get_host_cpu_name()
        _cpu_features = llvm.get_host_cpu_features().flatten()
        _tm = _new_target_machine()
        _initialized = True


def _new_target_machine() -> llvm.TargetMachine:
    # reloc='pic' keeps emitted object files position independent, so the
    # same bytes can be reloaded by a later process from the disk cache.
    # codemodel='jitdefault' lets MCJIT place code anywhere in the address
    # space (it picks 'large' where needed).
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=_cpu_name,
        features=_cpu_features,
        opt=3,
        reloc="pic",
        codemodel="jitdefault",
    )


def target_machine() -> llvm.TargetMachine:
    _ensure_init()
    return _tm


def host_cpu_name() -> str:
    _ensure_init()
    return _cpu_name


def host_cpu_features() -> str:
    """Comma-separated '+feat,-feat' string (what create_target_machine wants)."""
    _ensure_init()
    return _cpu_features


def _triple() -> str:
    _ensure_init()
    return _tm.triple


def _data_layout() -> str:
    _ensure_init()
    return str(_tm.target_data)


def __getattr__(name):  # PEP 562: lazily computed module constants
    if name == "triple":
        return _triple()
    if name == "target_data_layout":
        return _data_layout()
    raise AttributeError(name)


def new_module(name: str) -> ir.Module:
    """An empty llvmlite module for the host (its triple and data layout set)."""
    module = ir.Module(name=name)
    module.triple = _triple()
    module.data_layout = _data_layout()
    return module


def _parse(ir_src: Union[str, ir.Module, llvm.ModuleRef], name: str, context=None) -> llvm.ModuleRef:
    if isinstance(ir_src, llvm.ModuleRef):
        return ir_src
    if isinstance(ir_src, ir.Module):
        if not ir_src.triple or ir_src.triple == "unknown-unknown-unknown":
            ir_src.triple = _triple()
        if not ir_src.data_layout:
            ir_src.data_layout = _data_layout()
        text = str(ir_src)
    else:
        text = ir_src
    mod = llvm.parse_assembly(text, context)
    mod.name = name
    mod.triple = _triple()
    mod.data_layout = _data_layout()
    mod.verify()
    return mod


# ``speed_level`` for code that is explicit vector code by construction
# (kernels, math helpers): see _optimize_light.
LIGHT = "light"


def _optimize(mod: llvm.ModuleRef, speed_level: Union[int, str] = 3, vectorize: bool = True) -> None:
    # A new pass builder for every run: llvmlite's run registers the callbacks of a short-lived
    # StandardInstrumentations object in the builder, so a builder run twice calls into freed
    # memory.  (llvmlite never frees a builder's instrumentation callbacks: about 10 KB of native
    # memory per compile stays allocated for good; see docs/diagnostics.md.)
    if speed_level == LIGHT:
        _optimize_light(mod)
        return
    pto = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    pto.loop_vectorization = vectorize
    pto.slp_vectorization = vectorize
    pto.loop_unrolling = vectorize
    pb = llvm.create_pass_builder(_tm, pto)
    mpm = pb.getModulePassManager()
    # pto/pb/mpm must stay alive until run() returns (the native pass manager
    # refers to the builder's analysis managers); the locals do that.
    mpm.run(mod, pb)
    del mpm, pb, pto


def _optimize_light(mod: llvm.ModuleRef) -> None:
    """The few passes explicit vector code needs, ~5x cheaper than -O1.

    Kernels and math helpers are emitted as straight-line ``<VL x T>`` code
    with invariants already hoisted, so the standard pipelines' loop
    vectorizer, unroller, GVN and LICM find nothing to do, yet cost 7-10 ms a
    module.  What remains useful: inlining the helpers, promoting the
    emitters' allocas to registers, folding the constants and selects that
    inlining exposes, rotating loops into canonical form, and dropping
    unused helper bodies.  Instruction selection, scheduling, register
    allocation, machine LICM and loop strength reduction still run at -O3
    in the code generator.
    """
    pto = llvm.create_pipeline_tuning_options(speed_level=1)
    pb = llvm.create_pass_builder(_tm, pto)
    mpm = llvm.create_new_module_pass_manager()
    mpm.add_always_inliner_pass()
    mpm.add_sroa_pass()
    mpm.add_instruction_combine_pass()
    mpm.add_simplify_cfg_pass()
    # Rotated loops (with the loop-simplify form the pass adaptor builds) get
    # preheaders, where the code generator hoists the vector constants that
    # inner loops of row kernels would otherwise reload every iteration.
    mpm.add_loop_rotate_pass()
    mpm.add_global_dead_code_eliminate_pass()
    mpm.run(mod, pb)
    del mpm, pb, pto


def optimize_ir(ir_src, *, name: str = "module", speed_level: Union[int, str] = 3) -> str:
    """Parse + optimize only; returns optimized IR text."""
    _ensure_init()
    with COMPILE_LOCK:
        mod = _parse(ir_src, name)
        _optimize(mod, speed_level)
        return str(mod)


class CompiledModule:
    """A JIT-compiled module; keeps its MCJIT engine (and thus code) alive."""

    def __init__(self, engine, llvm_ir: Optional[str], timings: Dict[str, float],
                 name: str, module_ref=None):
        self._engine = engine
        self._module_ref = module_ref
        self._llvm_ir = llvm_ir
        self.timings = timings
        self.name = name
        self._asm: Optional[str] = None
        self._addr_cache: Dict[str, int] = {}
        self.parts: list = []       # modules compiled alongside this one (their code lives as long as it)
        self.nbytes = 0             # size of its object code (what the in-process cache budgets)

    @property
    def llvm_ir(self) -> Optional[str]:
        """Optimized IR text (rendered on first request)."""
        if self._llvm_ir is None and self._module_ref is not None:
            with COMPILE_LOCK:
                self._llvm_ir = str(self._module_ref)
        return self._llvm_ir

    def address(self, symbol: str) -> int:
        addr = self._addr_cache.get(symbol)
        if addr is None:
            with COMPILE_LOCK:
                addr = self._engine.get_function_address(symbol)
            if not addr:
                raise KeyError(f"symbol {symbol!r} not found in compiled module {self.name!r}")
            self._addr_cache[symbol] = addr
        return addr

    def asm(self) -> str:
        """Assembly text (generated lazily from the optimized IR)."""
        if self._asm is None:
            if self.llvm_ir is None:
                raise RuntimeError("assembly unavailable: module was loaded from object code")
            with COMPILE_LOCK:
                mod = llvm.parse_assembly(self.llvm_ir)
                self._asm = _tm.emit_assembly(mod)
        return self._asm

    def __repr__(self):
        return f"<CompiledModule {self.name!r} timings={self.timings}>"


def compile_ir(ir_src, *, name: str = "module", optimize: bool = True, speed_level: Union[int, str] = 3,
               vectorize: bool = True) -> CompiledModule:
    """Parse, optimize (new pass builder) and JIT ``ir_src`` (text or ir.Module).

    Code generators that emit explicit vector loops pass ``vectorize=False``:
    LLVM's loop vectorizer and unroller then have nothing to gain and cost
    compile time.

    The module is emitted as object code and loaded like a persistent-cache
    hit (:func:`load_object`): an engine that code-generates its own module
    keeps that module and the code generator's state alive with the code
    (~0.7 MB for a small kernel); a loaded object costs only its code.
    """
    _ensure_init()
    with COMPILE_LOCK:
        t0 = time.perf_counter()
        mod = _parse(ir_src, name)
        t1 = time.perf_counter()
        if optimize:
            _optimize(mod, speed_level, vectorize)
        t2 = time.perf_counter()
        compiled = load_object(_tm.emit_object(mod), name=name)
        t3 = time.perf_counter()
    compiled._module_ref = mod        # the optimized IR, for llvm_ir
    compiled.timings = {"parse": (t1 - t0) * 1e3, "optimize": (t2 - t1) * 1e3, "codegen": (t3 - t2) * 1e3}
    return compiled


def _emit_object_unlocked(tm: llvm.TargetMachine, mod: llvm.ModuleRef) -> bytes:
    """``tm.emit_object(mod)`` without llvmlite's process-wide lock.

    llvmlite serializes every call into LLVM; code generation -- most of a
    compile -- is safe to run concurrently for modules that live in their own
    LLVM contexts and use their own target machines, which is how
    :func:`object_codes` calls this.  Falls back to the locked call where the
    llvmlite internals it reaches for are missing.
    """
    emit = getattr(ffi.lib.LLVMPY_TargetMachineEmitToMemory, "_cfn", None)
    if emit is None:
        return bytes(tm.emit_object(mod))
    with ffi.OutputString() as err:
        buffer = emit(tm, mod, 1, err)
        if not buffer:
            raise RuntimeError(str(err))
    try:
        return ctypes.string_at(ffi.lib.LLVMPY_GetBufferStart(buffer), ffi.lib.LLVMPY_GetBufferSize(buffer))
    finally:
        ffi.lib.LLVMPY_DisposeMemoryBuffer(buffer)


def object_codes(modules, names, speed_level: Union[int, str] = 3, vectorize: bool = True):
    """Parse, optimize and emit one or several modules (call with COMPILE_LOCK held).

    One module compiles on the calling thread in LLVM's global context.
    Several compile at once, one thread each beyond the first: each gets its
    own LLVM context and target machine, so the code generators run in
    parallel (see :func:`_emit_object_unlocked`).  Returns
    ``([(optimized ModuleRef, object bytes)], timings)`` in ``modules`` order;
    the timings (parse, optimize) are the calling thread's.
    """
    _ensure_init()
    results: list = [None] * len(modules)
    errors: list = []
    timings: Dict[str, float] = {}
    alone = len(modules) == 1

    def build(i):
        try:
            t0 = time.perf_counter()
            # A module keeps its context alive.
            mod = _parse(modules[i], names[i], None if alone else llvm.create_context())
            t1 = time.perf_counter()
            _optimize(mod, speed_level, vectorize)
            t2 = time.perf_counter()
            obj = bytes(_tm.emit_object(mod)) if alone else _emit_object_unlocked(_new_target_machine(), mod)
            results[i] = (mod, obj)
            if i == 0:
                timings.update(parse=(t1 - t0) * 1e3, optimize=(t2 - t1) * 1e3)
        except BaseException as e:  # noqa: BLE001 - re-raised on the calling thread
            errors.append(e)

    helpers = [threading.Thread(target=build, args=(i,), name="tracejit-llvm") for i in range(1, len(modules))]
    for thread in helpers:
        thread.start()
    build(0)
    for thread in helpers:
        thread.join()
    if errors:
        raise errors[0]
    return results, timings


def object_code(ir_src, *, name: str = "module", optimize: bool = True) -> bytes:
    """Optimize and emit a relocatable ELF object for ``ir_src``."""
    _ensure_init()
    with COMPILE_LOCK:
        mod = _parse(ir_src, name)
        if optimize:
            _optimize(mod)
        return bytes(_tm.emit_object(mod))


def load_object(obj: bytes, *, name: str = "module") -> CompiledModule:
    """Build a CompiledModule from bytes produced by ``object_code``.

    MCJIT needs an owning module to create an engine, so an empty module with
    the host triple/data layout is used and the object file is added to it.
    """
    _ensure_init()
    with COMPILE_LOCK:
        t0 = time.perf_counter()
        empty = llvm.parse_assembly(
            f'target triple = "{_triple()}"\ntarget datalayout = "{_data_layout()}"\n')
        engine = llvm.create_mcjit_compiler(empty, _new_target_machine())
        engine.add_object_file(llvm.ObjectFileRef.from_data(bytes(obj)))
        engine.finalize_object()
        t1 = time.perf_counter()
    compiled = CompiledModule(engine, None, {"parse": 0.0, "optimize": 0.0,
                                             "codegen": (t1 - t0) * 1e3}, name, empty)
    compiled.nbytes = len(obj)
    return compiled
