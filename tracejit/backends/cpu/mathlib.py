"""How kernels reach the vector math helpers: inlined, or linked by symbol.

* Small helpers are inlined into the kernel: sqrt and the native float32
  kernels of ``vecmath_f32`` (exp, log, sin, tanh, ...: 20-60 vector
  instructions).  Inlined, their constants stay in registers across loop
  iterations and no vector registers are spilled around a call, which is
  worth ~4-10% of a transcendental-heavy kernel; they cost the kernel's
  compile only a few milliseconds, less than a separate module would
  (trig's huge-argument path is never inlined: ``rare_paths``).  A helper
  that a module calls from several loop sites is compiled once, out of
  line, instead (:func:`share_repeated_helpers`); one called outside loops
  goes through an unoptimized copy (:func:`outline_cold_calls`).
* Every other helper (float64, and float32 functions evaluated in float64
  lanes) is compiled once per process in its own small module and called as
  an external function (``__tj_vm_sin_v8f64`` ...), so compiling a program
  does not recompile e.g. float64 pow or erf.
"""
from __future__ import annotations

import threading

import llvmlite.binding as llvm
from llvmlite import ir

from tracejit.backends.cpu import llvm_engine, object_cache, rare_paths, vecmath
from tracejit.backends.cpu.vecmath_f32 import UNARY32

PREFIX = "__tj_vm_"
_compiled: dict[str, object] = {}
_specs: dict[str, list] = {}     # symbol -> [math name, lanes, element, arity] (JSON-able)
_lock = threading.Lock()


def call(builder: ir.IRBuilder, name: str, args) -> ir.Value:
    """Call math function ``name`` on ``args`` through the shared library."""
    ty = args[0].type
    element, _, suffix = vecmath._type_info(ty)
    symbol = f"{PREFIX}{name}_{suffix}"
    if name == "sqrt" or (len(args) == 1 and name in UNARY32 and isinstance(element, ir.FloatType)):
        return (vecmath.emit_unary(builder, name, *args) if len(args) == 1
                else vecmath.emit_binary(builder, name, *args))
    _ensure_symbol(symbol, name, ty, len(args))
    module = builder.module
    fn = module.globals.get(symbol)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ty, [ty] * len(args)), name=symbol)
        fn.attributes.add("nounwind")
    return builder.call(fn, list(args))


def finish_module(module: ir.Module) -> None:
    """Decide, once a module's kernels are emitted, where its helpers are inlined."""
    share_repeated_helpers(module)
    outline_cold_calls(module)


def share_repeated_helpers(module: ir.Module) -> None:
    """A helper called from several places in loops gets one out-of-line copy.

    Inlined, every call site is a full copy for LLVM's code generator: seed
    ``g`` calls float32 sin twice, and its machine-code generation took 14.5
    ms inlined, 11.2 ms with one shared copy.  Called, the loop spills its
    live vectors around each call and the helper reloads its constants:
    seed ``g`` runs ~4% slower (5.30 vs 5.07 ms).
    """
    sites: dict = {}
    for fn in module.functions:
        if not fn.blocks or fn.name.startswith(PREFIX):
            continue
        successors = {blk: _successors(blk) for blk in fn.blocks}
        for blk in fn.blocks:
            if not _in_cycle(blk, successors):
                continue
            for ins in blk.instructions:
                callee = getattr(ins, "callee", None) if isinstance(ins, ir.CallInstr) else None
                if isinstance(callee, ir.Function) and callee.name.startswith(PREFIX) and callee.blocks:
                    sites[callee.name] = sites.get(callee.name, 0) + 1
    for name, count in sites.items():
        if count > 1:
            helper = module.globals[name]
            helper.attributes.discard("alwaysinline")
            helper.attributes.add("noinline")


def outline_cold_calls(module: ir.Module) -> None:
    """Keep inlined helpers inlined only where they run repeatedly: in loops.

    A helper called outside every loop (a kernel's masked tail step, a
    once-per-call scalar) calls one shared out-of-line copy instead, compiled
    without optimization (``optnone``: fast instruction selection and
    register allocation).  That roughly halves the machine code LLVM
    generates for a typical kernel, at no measurable run-time cost.  Run
    after all kernels of ``module`` are emitted, before it is compiled.
    """
    kernels = [fn for fn in module.functions if fn.blocks and not fn.name.startswith(PREFIX)]
    for fn in kernels:
        successors = {blk: _successors(blk) for blk in fn.blocks}
        for blk in fn.blocks:
            calls = [ins for ins in blk.instructions if isinstance(ins, ir.CallInstr)
                     and getattr(ins.callee, "name", "").startswith(PREFIX) and ins.callee.blocks]
            if calls and not _in_cycle(blk, successors):
                for ins in calls:
                    ins.replace_callee(_cold_copy(module, ins.callee))


def _cold_copy(module: ir.Module, helper: ir.Function) -> ir.Function:
    name = f"{helper.name}.cold"
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, helper.function_type, name=name)
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        fn.attributes.add("optnone")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.ret(b.call(helper, list(fn.args)))    # the helper is inlined here
    return fn


def _successors(blk) -> list:
    term = blk.terminator
    if term is None:
        return []
    if isinstance(term, ir.SwitchInstr):
        return [term.default] + [target for _, target in term.cases]
    return [op for op in term.operands if isinstance(op, ir.Block)]


def _in_cycle(start, successors) -> bool:
    seen, stack = set(), list(successors[start])
    while stack:
        blk = stack.pop()
        if blk is start:
            return True
        if id(blk) not in seen:
            seen.add(id(blk))
            stack.extend(successors[blk])
    return False


def _type_from(lanes: int, element: str):
    el = ir.FloatType() if element == "f32" else ir.DoubleType()
    return el if lanes == 1 else ir.VectorType(el, lanes)


def specs_used(module: ir.Module) -> list:
    """What a module needs from the library (stored with cached object code)."""
    return [[fn.name] + _specs[fn.name] for fn in module.functions
            if fn.name in _specs and not fn.blocks] + rare_paths.symbols_used(module)


def ensure(specs) -> None:
    """Compile and register every library symbol in ``specs`` (from :func:`specs_used`)."""
    for spec in specs:
        if spec[0].startswith(rare_paths.PREFIX):
            rare_paths.ensure([spec])
            continue
        symbol, name, lanes, element, arity = spec
        _ensure_symbol(symbol, name, _type_from(lanes, element), arity)


def _ensure_symbol(symbol: str, name: str, ty, arity: int) -> None:
    if symbol in _compiled:
        return
    lanes = ty.count if isinstance(ty, ir.VectorType) else 1
    element = "f32" if isinstance(getattr(ty, "element", ty), ir.FloatType) else "f64"
    _specs[symbol] = [name, lanes, element, arity]
    with _lock:
        if symbol in _compiled:
            return
        built = []

        def build():
            # Runs only when the persistent cache has no object code for this helper.
            lib = llvm_engine.new_module(f"tracejit_math_{symbol}")
            helper = vecmath.helper_function(lib, name, ty, arity)
            helper.linkage = ""                       # exported from the library module
            helper.attributes.discard("alwaysinline")
            built.append(lib)
            return lib

        # A helper may call a rare path (sin/cos/tan of huge arguments: a cell the helper's code
        # reads through an external symbol). A cached helper lists the cells it needs, which are
        # registered before its object code is loaded: an unregistered one resolved to nothing
        # and the rare branch jumped through it (SIGSEGV for |x| >= 2^20 on a cache hit).
        compiled, _ = object_cache.compile_module(
            build, name=symbol, vectorize=False, speed_level=llvm_engine.LIGHT,
            components={"math_helper": symbol},
            extra_metadata=lambda: {"rare_paths": rare_paths.symbols_used(built[0])},
            before_load=lambda meta: rare_paths.ensure(meta.get("rare_paths", [])))
        llvm.add_symbol(symbol, compiled.address(symbol))
        _compiled[symbol] = compiled
