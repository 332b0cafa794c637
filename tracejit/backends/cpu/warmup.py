"""The CPU backend's one-time start-up work, done on a background thread after import.

A process's first compile used to pay ~10 ms that had nothing to do with the
function being compiled:

* LLVM's first parse, pass pipeline and instruction selection run ~2x slower
  than later ones (its code and tables are touched for the first time);
* the OpenMP runtime is found and loaded, and (Intel's, which survives
  fork) its first parallel region starts the worker threads;
* the persistent cache key hashes tracejit's own sources.

JAX pays its equivalent when its backend starts (``jax.devices()``, the first
``device_put``).  Here :func:`start` runs it on a thread when the package is
imported.  LLVM calls, file reads and hashing release the GIL, so the
importing program goes on meanwhile (typically building its input arrays).
A compile that comes first calls :func:`wait`: the thread finishes the step
it is in and skips the rest, so the compile never waits for work it does
not need (a persistent-cache hit needs no sample compile).  Forking waits
too, so a child never inherits a lock held by the thread.

``TRACEJIT_WARMUP=0`` turns it off (the work then happens in the first
compile, as before).
"""
from __future__ import annotations

import os
import threading

from tracejit.config import env_flag

_thread: threading.Thread | None = None
_lock = threading.Lock()
_stop = threading.Event()


def start() -> None:
    """Begin the start-up work in the background (once per process; no-op when turned off)."""
    global _thread
    if not env_flag("TRACEJIT_WARMUP", True):
        return
    with _lock:
        if _thread is None:
            # Not a daemon: interpreter shutdown waits for it, so LLVM's static destructors
            # never run under a thread that is still compiling.
            _thread = threading.Thread(target=_work, name="tracejit-warmup")
            _thread.start()


def wait() -> None:
    """Stop the start-up work after its current step and wait for that (no-op when it is done)."""
    thread = _thread
    if thread is not None and thread is not threading.current_thread():
        _stop.set()
        thread.join()


def _work() -> None:
    try:
        from tracejit.backends.cpu import llvm_engine, parallel
        from tracejit.compiler import blas_epilogues  # noqa: F401  (imported by the first compile)
        from tracejit.backends.cpu import object_cache
        llvm_engine.target_machine()
        object_cache.default_components()
        team = parallel.runtime()
        if _stop.is_set():
            return
        sample = _compile_sample(llvm_engine)
        # Not GNU libgomp's team: a child forked after it started could not use it.
        if team is not None and team.kind == "iomp5" and team.usable and not _stop.is_set():
            team.start_team(sample.address("tracejit_warmup_nothing"))
    except Exception:  # noqa: BLE001 - a failed warm-up only means the first compile does this work
        pass


def _compile_sample(llvm_engine):
    """Compile and load a small kernel of the kind real ones are: vector float32 math in a loop body."""
    from llvmlite import ir
    from tracejit.backends.cpu import vecmath
    module = llvm_engine.new_module("tracejit_warmup")
    vector = ir.VectorType(ir.FloatType(), 16)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.PointerType()]), name="tracejit_warmup")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    x = b.load(fn.args[0], typ=vector)
    y = vecmath.emit_unary(b, "exp", vecmath.emit_unary(b, "sin", x))
    b.store(b.fsub(y, x), fn.args[0])
    b.ret_void()
    nothing = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.PointerType()]), name="tracejit_warmup_nothing")
    ir.IRBuilder(nothing.append_basic_block("entry")).ret_void()
    with llvm_engine.COMPILE_LOCK:        # the path of every compile: object_cache.compile_module
        [(_, obj)], _ = llvm_engine.object_codes([module], ["tracejit_warmup"], llvm_engine.LIGHT)
    return llvm_engine.load_object(obj, name="tracejit_warmup")


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=wait)
# A program that ends right after importing tracejit waits for the current step only (the
# interpreter joins the thread at exit; this hook runs just before that).
if hasattr(threading, "_register_atexit"):
    threading._register_atexit(_stop.set)
