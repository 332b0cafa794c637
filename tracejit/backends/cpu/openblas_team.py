"""NumPy's OpenBLAS computes on the kernels' OpenMP team, not on a thread pool of its own.

OpenBLAS (0.3.27 and later) lets a program run its parallel work: ``openblas_set_threads_callback_function``
takes a function that OpenBLAS calls with ``numjobs`` jobs instead of waking its own threads. The jobs
of one call must run at the same time (a level-3 product's threads wait for each other's packed
panels), so each gets a thread of its own.

Why: with two pools on two cores, each one's idle threads spin while the other computes. OpenBLAS's
poll after a call (``openblas_idle``) is a compromise between spinning into the kernels that follow a
product and sleeping before the next product (waking them cost 10-20 ms on the Zen 3 VM). With
PyTorch loaded the kernels' team is PyTorch's ``libgomp``, whose idle workers spin for milliseconds:
the GPT-2-style MLP at (128, 768) ran 20-21.5 ms there against 12-14.5 with ``libiomp5``, and NumPy's
own product in that program 6.7 ms against 4.9. On one team, the product's threads are the kernels'
threads, already awake.

:func:`install` compiles the callback (cached like every module) and gives it to the library; the
callback forks the team with ``GOMP_parallel`` for ``numjobs`` threads, and thread ``t`` runs job
``t``. When the team cannot give that many threads -- a call from inside a parallel region, where
OpenMP runs nested regions on one thread -- no job runs there and the callback starts ``numjobs - 1``
POSIX threads instead (the calling thread runs job 0). A forked child goes back to OpenBLAS's own
threads (GNU ``libgomp``'s team does not survive ``fork``).

Measured on the 2-core Zen 3 VM, in processes one after the other, with the callback off and on:
the MLP at (128, 768) 12.4 -> 10.5 ms, at (1024, 768) 69.3 -> 64.8, the GPT-2 layer forward 60.8 ->
51.7 and forward+backward 177.9 -> 165.8, an MLP training step 10.8 -> 7.8; with PyTorch imported
first (its ``libgomp`` the team) the step 19.3 and 16.8 -> 8.2 and 8.6 ms, the MLP at (128, 768)
20.3 -> 12.7.

Not installed when ``TRACEJIT_OPENBLAS_ON_TEAM=0``, when no OpenMP runtime loads
(``TRACEJIT_OPENMP=0``), or when the library has no such function.
"""
from __future__ import annotations

import ctypes
import logging
import os
import threading

from llvmlite import ir

from tracejit.backends.cpu import llvm_engine, object_cache, parallel
from tracejit.backends.cpu.window import carried_loop
from tracejit.config import env_flag

logger = logging.getLogger("tracejit.blas")

I32, I64, PTR, VOID = ir.IntType(32), ir.IntType(64), ir.PointerType(), ir.VoidType()
CALLBACK = "tracejit_openblas_threads"
_DOJOB = ir.FunctionType(VOID, [I32, PTR, I32])       # void dojob(int job, void *jobdata, int dojob_data)
# The call's context, as i64 fields: what every thread needs to run its job, and the team's verdict.
_DOJOB_AT, _JOBS_AT, _SIZE_AT, _DATA_AT, _ARG_AT, _SHORT_AT, _FIELDS = range(7)
_PTHREAD_SYMBOLS = {"pthread_create": "tracejit_pthread_create", "pthread_join": "tracejit_pthread_join"}

_lock = threading.Lock()
_installed: dict = {}           # library path -> (setter, the compiled module kept alive)


def _field(b: ir.IRBuilder, ctx, k: int):
    return b.gep(ctx, [ir.Constant(I64, k)], source_etype=I64)


def _run_job(b: ir.IRBuilder, ctx, job) -> None:
    """``dojob(job, jobdata + job * size, arg)``, all read from the context."""
    dojob = b.load(_field(b, ctx, _DOJOB_AT), typ=_DOJOB.as_pointer())
    data = b.load(_field(b, ctx, _DATA_AT), typ=PTR)
    at = b.gep(data, [b.mul(job, b.load(_field(b, ctx, _SIZE_AT), typ=I64))], source_etype=ir.IntType(8))
    arg = b.trunc(b.load(_field(b, ctx, _ARG_AT), typ=I64), I32)
    b.call(dojob, [b.trunc(job, I32), at, arg])


def emit_callback(module: ir.Module, runtime) -> str:
    """Add the callback and its helpers to ``module``; returns the callback's name.

    ``void tracejit_openblas_threads(int sync, dojob, int numjobs, size_t size, void *jobdata, int arg)``
    (OpenBLAS's ``openblas_threads_callback``; every call it makes waits: ``sync`` is 1).
    """
    thread_num = ir.Function(module, ir.FunctionType(I32, []), name=runtime.thread_num_symbol)
    num_threads = ir.Function(module, ir.FunctionType(I32, []), name=runtime.num_threads_symbol)
    fork = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR, I32, I32]), name=runtime.parallel_symbol)
    create = ir.Function(module, ir.FunctionType(I32, [PTR, PTR, PTR, PTR]), name=_PTHREAD_SYMBOLS["pthread_create"])
    join = ir.Function(module, ir.FunctionType(I32, [I64, PTR]), name=_PTHREAD_SYMBOLS["pthread_join"])
    zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)

    # the team's body: thread t runs job t, or, on a team smaller than the jobs, nobody runs any
    body = ir.Function(module, ir.FunctionType(VOID, [PTR]), name=CALLBACK + "_team")
    body.linkage = "internal"
    b = ir.IRBuilder(body.append_basic_block("entry"))
    ctx = body.args[0]
    tid = b.sext(b.call(thread_num, []), I64)
    jobs = b.load(_field(b, ctx, _JOBS_AT), typ=I64)
    short = b.icmp_signed("<", b.sext(b.call(num_threads, []), I64), jobs)
    with b.if_else(short) as (too_few, enough):
        with too_few:
            with b.if_then(b.icmp_signed("==", tid, zero)):
                b.store(one, _field(b, ctx, _SHORT_AT))
        with enough:
            with b.if_then(b.icmp_signed("<", tid, jobs)):
                _run_job(b, ctx, tid)
    b.ret_void()

    # a POSIX thread's start routine: arg -> {context, job}
    start = ir.Function(module, ir.FunctionType(PTR, [PTR]), name=CALLBACK + "_thread")
    start.linkage = "internal"
    b = ir.IRBuilder(start.append_basic_block("entry"))
    pair = start.args[0]
    _run_job(b, b.load(pair, typ=PTR), b.load(b.gep(pair, [one], source_etype=I64), typ=I64))
    b.ret(ir.Constant(PTR, None))

    fn = ir.Function(module, ir.FunctionType(VOID, [I32, PTR, I32, I64, PTR, I32]), name=CALLBACK)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    _, dojob, numjobs, size, jobdata, arg = fn.args
    ctx = b.alloca(I64, size=ir.Constant(I64, _FIELDS), name="ctx")
    for k, value in ((_DOJOB_AT, b.ptrtoint(dojob, I64)), (_JOBS_AT, b.sext(numjobs, I64)), (_SIZE_AT, size),
                     (_DATA_AT, b.ptrtoint(jobdata, I64)), (_ARG_AT, b.sext(arg, I64)), (_SHORT_AT, zero)):
        b.store(value, _field(b, ctx, k))
    jobs = b.sext(numjobs, I64)
    with b.if_else(b.icmp_signed(">", jobs, one)) as (several, few):
        with several:
            b.call(fork, [body, ctx, numjobs, ir.Constant(I32, 0)])
            with b.if_then(b.icmp_signed("!=", b.load(_field(b, ctx, _SHORT_AT), typ=I64), zero)):
                # POSIX threads for jobs 1.. (the caller runs job 0), then join them
                tids = b.alloca(I64, size=jobs, name="tids")
                pairs = b.alloca(I64, size=b.mul(jobs, ir.Constant(I64, 2)), name="pairs")
                def start_job(j, _):
                    pair = b.gep(pairs, [b.mul(j, ir.Constant(I64, 2))], source_etype=I64)
                    b.store(b.ptrtoint(ctx, I64), pair)
                    b.store(j, b.gep(pair, [one], source_etype=I64))
                    slot = b.gep(tids, [j], source_etype=I64)
                    failed = b.icmp_signed("!=", b.call(create, [slot, ir.Constant(PTR, None), start, pair]),
                                           ir.Constant(I32, 0))
                    with b.if_then(failed):
                        b.store(zero, slot)         # no thread: the job runs here, after job 0
                    return []
                carried_loop(b, one, jobs, 1, start_job, "start")
                _run_job(b, ctx, zero)

                def finish_job(j, _):
                    handle = b.load(b.gep(tids, [j], source_etype=I64), typ=I64)
                    with b.if_else(b.icmp_signed("!=", handle, zero)) as (started, not_started):
                        with started:
                            b.call(join, [handle, ir.Constant(PTR, None)])
                        with not_started:
                            _run_job(b, ctx, j)
                    return []
                carried_loop(b, one, jobs, 1, finish_job, "join")
        with few:
            with b.if_then(b.icmp_signed("==", jobs, one)):
                _run_job(b, ctx, zero)
    b.ret_void()
    return CALLBACK


# How OpenBLAS builds decorate their exported names: NumPy's wheel ``scipy_..64_``, plain builds none.
DECORATIONS = (("scipy_", "64_"), ("scipy_", ""), ("", "64_"), ("", ""))


def decoration(lib: ctypes.CDLL, name: str):
    """``(prefix, suffix)`` under which ``lib`` exports ``name``, or None."""
    return next(((p, s) for p, s in DECORATIONS if hasattr(lib, f"{p}{name}{s}")), None)


def _setter(lib: ctypes.CDLL):
    """The library's ``openblas_set_threads_callback_function`` (as NumPy's wheel decorates it), or None."""
    found = decoration(lib, "openblas_set_threads_callback_function")
    if found is None:
        return None
    setter = lib[f"{found[0]}openblas_set_threads_callback_function{found[1]}"]
    setter.restype, setter.argtypes = None, [ctypes.c_void_p]
    return setter


def _compile(runtime):
    from llvmlite import binding as llvm
    libc = ctypes.CDLL(None)
    for symbol, ours in _PTHREAD_SYMBOLS.items():
        llvm.add_symbol(ours, ctypes.cast(getattr(libc, symbol), ctypes.c_void_p).value)

    def build():
        module = llvm_engine.new_module(CALLBACK)
        emit_callback(module, runtime)
        return module
    compiled, _ = object_cache.compile_module(build, name=CALLBACK, vectorize=False,
                                              components={"openblas_team": CALLBACK, "openmp": runtime.kind})
    return compiled


def install(path: str, lib: ctypes.CDLL) -> bool:
    """Have the OpenBLAS ``lib`` (loaded from ``path``) run its parallel work on the kernels' OpenMP
    team; returns whether it does (see the module's docstring). Once per library and process.

    Examples
    --------
    >>> import ctypes
    >>> from tracejit.backends.cpu import openblas_team
    >>> openblas_team.install("libc", ctypes.CDLL(None))     # no such function there
    False
    """
    if not env_flag("TRACEJIT_OPENBLAS_ON_TEAM", True):
        return False
    with _lock:
        if path in _installed:
            return True
        setter = _setter(lib)
        runtime = parallel.runtime() if setter is not None else None
        if runtime is None or not runtime.usable:
            return False
        compiled = _compile(runtime)
        runtime.started = True          # (the team's threads will exist: a forked child must not use them)
        setter(compiled.address(CALLBACK))
        _installed[path] = (setter, compiled)
    logger.debug("OpenBLAS %s computes on the %s team", path, runtime.kind)
    return True


def installed() -> list:
    """Paths of the libraries whose parallel work runs on the team."""
    return sorted(_installed)


def _after_fork_in_child() -> None:
    # OpenBLAS's own threads again: GNU libgomp's team does not survive fork (OpenBLAS restarts its
    # own pool in the child by itself).
    for setter, _ in _installed.values():
        setter(None)
    _installed.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
