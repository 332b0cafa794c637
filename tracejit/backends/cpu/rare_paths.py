"""Rarely taken math slow paths, compiled on their first call (lazy binding).

Some helpers have a slow path that almost no input takes but that dominates
compile time: float32 sin/cos/tan of |x| >= 2^17 need the float64
Payne-Hanek reduction (a 4096-entry table of 2/pi bits and double-double
arithmetic) -- ~10x the code of the fast path.  Compiling it into every
kernel, or even once per process before the first call, would cost tens of
milliseconds that almost no program needs.

So the fast path calls the slow one through a *cell*: an 8-byte global
``__tj_rare_<name>_<el>`` holding a function pointer ``void(T* data, i64 n)``
that maps ``data[i] -> name(data[i])`` in place.  The cell starts out
pointing at a ctypes trampoline; its first call compiles the real function,
stores its address in the cell (later calls go straight to native code) and
forwards the call.  This is what a dynamic linker's lazy PLT binding does.

The cell is registered with LLVM's process symbol table when IR that uses it
is emitted, and by :func:`ensure` for object code loaded from the persistent
cache, so modules referring to it always link.
"""
from __future__ import annotations

import ctypes
import threading

import llvmlite.binding as llvm
from llvmlite import ir

from tracejit.backends.cpu import object_cache

PREFIX = "__tj_rare_"
_ELEMENTS = {"f32": ir.FloatType(), "f64": ir.DoubleType()}
_TRAMPOLINE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)
_I64 = ir.IntType(64)
_SIGNATURE = ir.FunctionType(ir.VoidType(), [ir.PointerType(), _I64])

_cells: dict[str, "_Cell"] = {}
_cells_lock = threading.Lock()


class _Cell:
    def __init__(self, name: str, element: str):
        self.name, self.element = name, element
        self.symbol = f"{PREFIX}{name}_{element}"
        self.compiled = None
        # Its own lock: a first call compiles while holding it (and then
        # LLVM's lock), so it must never be a lock that IR emission takes.
        self.compile_lock = threading.Lock()
        self.trampoline = _TRAMPOLINE(self._first_call)   # kept alive with the cell
        self.pointer = ctypes.c_void_p(ctypes.cast(self.trampoline, ctypes.c_void_p).value)
        llvm.add_symbol(self.symbol, ctypes.addressof(self.pointer))

    def _first_call(self, data, count):
        # Runs on a kernel thread (ctypes takes the GIL); racing first calls
        # compile once.  Exceptions cannot propagate out of a callback, so
        # a failed compile leaves NaN (and ctypes prints the traceback).
        try:
            with self.compile_lock:
                if self.compiled is None:
                    self.compiled = _compile(self)
                    self.pointer.value = self.compiled.address(self.symbol)
            _TRAMPOLINE(self.pointer.value)(data, count)
        except BaseException:
            scalar = ctypes.c_float if self.element == "f32" else ctypes.c_double
            ctypes.memmove(data, (scalar * count)(*[float("nan")] * count), count * ctypes.sizeof(scalar))
            raise


def _cell(name: str, element: str) -> _Cell:
    symbol = f"{PREFIX}{name}_{element}"
    cell = _cells.get(symbol)
    if cell is None:
        with _cells_lock:
            cell = _cells.get(symbol)
            if cell is None:
                cell = _cells[symbol] = _Cell(name, element)
    return cell


def _compile(cell: _Cell):
    """void f(T* data, i64 n): data[i] = name(data[i]) with the complete scalar helper."""
    from tracejit.backends.cpu import llvm_engine, vecmath

    def build():
        el = _ELEMENTS[cell.element]
        m = llvm_engine.new_module(cell.symbol)
        fn = ir.Function(m, _SIGNATURE, name=cell.symbol)
        data, n = fn.args
        entry, body, done = (fn.append_basic_block(s) for s in ("entry", "body", "done"))
        b = ir.IRBuilder(entry)
        b.cbranch(b.icmp_signed(">", n, ir.Constant(_I64, 0)), body, done)
        b.position_at_end(body)
        i = b.phi(_I64)
        i.add_incoming(ir.Constant(_I64, 0), entry)
        ptr = b.gep(data, [i], source_etype=el)
        b.store(vecmath.emit_unary(b, cell.name, b.load(ptr, typ=el)), ptr)
        nxt = b.add(i, ir.Constant(_I64, 1))
        i.add_incoming(nxt, body)
        b.cbranch(b.icmp_signed("<", nxt, n), body, done)
        b.position_at_end(done)
        b.ret_void()
        return m

    compiled, _ = object_cache.compile_module(build, name=cell.symbol, vectorize=False,
                                              speed_level=llvm_engine.LIGHT,
                                              components={"rare_path": cell.symbol})
    return compiled


def call(b: ir.IRBuilder, name: str, x: ir.Value) -> ir.Value:
    """``name(x)`` lane by lane through the lazily compiled slow path.

    Emit it behind a branch that is rarely taken: each call stores the
    vector, makes one indirect call and reloads it.
    """
    ty = x.type
    el = ty.element if isinstance(ty, ir.VectorType) else ty
    element = "f32" if isinstance(el, ir.FloatType) else "f64"
    cell = _cell(name, element)
    m = b.module
    gv = m.globals.get(cell.symbol)
    if gv is None:
        gv = ir.GlobalVariable(m, ir.PointerType(), name=cell.symbol)
        gv.linkage = "external"
    lanes = ty.count if isinstance(ty, ir.VectorType) else 1
    # The slot lives in the entry block so a call inside a loop reuses it.
    with b.goto_entry_block():
        slot = b.alloca(ty)
    b.store(x, slot)
    fn_ptr = b.load(gv, typ=_SIGNATURE.as_pointer())
    b.call(fn_ptr, [slot, ir.Constant(_I64, lanes)])
    return b.load(slot, typ=ty)


def symbols_used(module: ir.Module) -> list:
    """Cells a module refers to (stored with its cached object code)."""
    return [[gv.name, cell.name, cell.element] for gv in module.global_values
            if (cell := _cells.get(gv.name)) is not None]


def ensure(specs) -> None:
    """Register the cells in ``specs`` (from :func:`symbols_used`) before loading object code."""
    for _symbol, name, element in specs:
        _cell(name, element)
