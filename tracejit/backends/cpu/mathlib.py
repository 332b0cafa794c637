"""The vector math library, compiled once per process and linked by symbol.

Kernels call math helpers (``__tj_vm_sin_v16f32`` ...) as external
functions. Each helper is compiled on first use in its own small module and
registered with LLVM's symbol table, so a program's module holds only its
loops: compiling a kernel no longer recompiles sin's range reduction.
"""
from __future__ import annotations

import threading

import llvmlite.binding as llvm
from llvmlite import ir

from tracejit.backends.cpu import llvm_engine, vecmath

PREFIX = "__tj_vm_"
_INLINE = ("__tj_vm_sqrt_",)   # tiny helpers stay inlined
_compiled: dict[str, object] = {}
_specs: dict[str, list] = {}     # symbol -> [math name, lanes, element, arity] (JSON-able)
_lock = threading.Lock()


def call(builder: ir.IRBuilder, name: str, args) -> ir.Value:
    """Call math function ``name`` on ``args`` through the shared library."""
    ty = args[0].type
    symbol = f"{PREFIX}{name}_{vecmath._type_info(ty)[2]}"
    if symbol.startswith(_INLINE):
        return (vecmath.emit_unary(builder, name, *args) if len(args) == 1
                else vecmath.emit_binary(builder, name, *args))
    _ensure_symbol(symbol, name, ty, len(args))
    module = builder.module
    fn = module.globals.get(symbol)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ty, [ty] * len(args)), name=symbol)
        fn.attributes.add("nounwind")
    return builder.call(fn, list(args))


def _type_from(lanes: int, element: str):
    el = ir.FloatType() if element == "f32" else ir.DoubleType()
    return el if lanes == 1 else ir.VectorType(el, lanes)


def specs_used(module: ir.Module) -> list:
    """What a module needs from the library (stored with cached object code)."""
    return [[fn.name] + _specs[fn.name] for fn in module.functions
            if fn.name in _specs and not fn.blocks]


def ensure(specs) -> None:
    """Compile and register every library symbol in ``specs`` (from :func:`specs_used`)."""
    for symbol, name, lanes, element, arity in specs:
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
        def build():
            # Runs only when the persistent cache has no object code for this helper.
            lib = ir.Module(name=f"tracejit_math_{symbol}")
            lib.triple = llvm_engine.triple
            lib.data_layout = llvm_engine.target_data_layout
            helper = vecmath.helper_function(lib, name, ty, arity)
            helper.linkage = ""                       # exported from the library module
            helper.attributes.discard("alwaysinline")
            return lib

        from tracejit.diagnostics import persistent_cache
        compiled, _ = persistent_cache.compile_module(build, name=symbol, vectorize=False,
                                                      components={"math_helper": symbol})
        llvm.add_symbol(symbol, compiled.address(symbol))
        _compiled[symbol] = compiled
