"""Native fork/join for kernels: an OpenMP runtime's ``GOMP_parallel``.

Splitting a kernel over Python's thread pool costs 100-150 microseconds per
launch on this kind of machine (a queue hand-off, a wake-up and a future per
chunk), more than a 256K-element elementwise kernel takes on one core. An
OpenMP runtime keeps its workers spinning between parallel regions, so a
fork/join costs a few microseconds: mid-sized kernels then gain from
threads too.

``GOMP_parallel(fn, data, nthreads, flags)`` runs ``fn(data)`` on every thread
of a team. ``fn`` is a small trampoline compiled into each kernel module: it
reads the kernel's address, its buffer table and its range from ``data``,
takes this thread's static share of the range (whole ``granule`` blocks) and
calls the kernel.

The runtime is one the process has already loaded (PyTorch's ``libgomp``), else
Intel's ``libiomp5`` when MKL brought it, else GNU ``libgomp``; with none, kernels
use the Python pool. MKL computes on the same team (``blas._match_mkl_threads``
sets its threading layer), so nothing oversubscribes the cores. ``TRACEJIT_OPENMP``:
``1`` (default, the first that loads), ``iomp5``, ``gomp``, or ``0`` (off).
"""
from __future__ import annotations

import ctypes
import glob
import os
import sys
import threading

from llvmlite import ir

I32, I64, PTR, VOID = ir.IntType(32), ir.IntType(64), ir.PointerType(), ir.VoidType()
KERNEL_TYPE = ir.FunctionType(VOID, [PTR, I64, I64])     # void kernel(ptr* buffers, i64 begin, i64 end)


class LaunchData(ctypes.Structure):
    """What the trampoline reads: the kernel, its buffer table, and the range to split."""

    _fields_ = [("kernel", ctypes.c_void_p), ("slots", ctypes.c_void_p), ("total", ctypes.c_int64),
                ("granule", ctypes.c_int64)]


TRAMPOLINE = "tracejit_parallel_body"
# How many threads native code (a loop driver) may fork for one kernel. The Python side sets it before
# each call of a loop holding threaded kernels: the configured count, or 1 where the team cannot run
# (libgomp in a forked child). Native code reads it through this symbol, so cached object code finds it.
TEAM_THREADS_SYMBOL = "tracejit_team_threads"
team_threads = ctypes.c_int64(1)


def emit_trampoline(module: ir.Module, runtime: "OpenMPRuntime") -> str:
    """Add ``void tracejit_parallel_body(LaunchData*)`` to ``module`` (once); returns its name.

    It lives in each kernel module, compiled with the kernels: a module of its
    own would cost a JIT engine (milliseconds) on the first threaded call.
    """
    if TRAMPOLINE in module.globals:
        return TRAMPOLINE
    thread_num = ir.Function(module, ir.FunctionType(I32, []), name=runtime.thread_num_symbol)
    num_threads = ir.Function(module, ir.FunctionType(I32, []), name=runtime.num_threads_symbol)
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR]), name=TRAMPOLINE)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    data = fn.args[0]

    def field(k, ty):
        return b.load(b.gep(data, [ir.Constant(I64, k)], source_etype=I64), typ=ty)
    kernel = field(0, KERNEL_TYPE.as_pointer())
    slots, total, granule = field(1, PTR), field(2, I64), field(3, I64)
    tid = b.sext(b.call(thread_num, []), I64)
    nt = b.sext(b.call(num_threads, []), I64)
    one = ir.Constant(I64, 1)
    # chunk = ceil(ceil(total / nt) / granule) * granule
    share = b.sdiv(b.add(total, b.sub(nt, one)), nt)
    chunk = b.mul(b.sdiv(b.add(share, b.sub(granule, one)), granule), granule)
    lo = b.mul(tid, chunk)
    hi = b.add(lo, chunk)
    hi = b.select(b.icmp_signed(">", hi, total), total, hi)
    with b.if_then(b.icmp_signed("<", lo, hi)):
        b.call(kernel, [slots, lo, hi])
    b.ret_void()
    return TRAMPOLINE


def emit_team_call(b: ir.IRBuilder, runtime: "OpenMPRuntime", kernel, slots, total: int, granule: int,
                   data) -> None:
    """From native code, run ``kernel(slots, begin, end)`` over ``[0, total)`` split over the OpenMP
    team: ``GOMP_parallel`` on the module's trampoline, at most ``team_threads`` threads and one per
    ``granule`` block; alone on this thread when that allows one thread only. ``data`` is room for a
    ``LaunchData`` (4 pointer-sized fields) the caller allocated in its function's entry block (not in
    a loop)."""
    module = b.module
    trampoline = module.globals[emit_trampoline(module, runtime)]
    fork = module.globals.get(runtime.parallel_symbol)
    if fork is None:
        fork = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR, I32, I32]), name=runtime.parallel_symbol)
    cell = module.globals.get(TEAM_THREADS_SYMBOL)
    if cell is None:
        cell = ir.GlobalVariable(module, I64, name=TEAM_THREADS_SYMBOL)     # defined by the process
    threads = b.load(cell, typ=I64)
    blocks = ir.Constant(I64, -(-total // granule))
    threads = b.select(b.icmp_signed("<", threads, blocks), threads, blocks)
    with b.if_else(b.icmp_signed(">", threads, ir.Constant(I64, 1))) as (team, alone):
        with team:
            for k, pointer in enumerate((kernel, slots)):
                b.store(b.bitcast(pointer, PTR), b.gep(data, [ir.Constant(I64, k)], source_etype=PTR))
            for k, value in ((2, total), (3, granule)):
                field = b.bitcast(b.gep(data, [ir.Constant(I64, k)], source_etype=PTR), I64.as_pointer())
                b.store(ir.Constant(I64, value), field)
            b.call(fork, [trampoline, data, b.trunc(threads, I32), ir.Constant(I32, 0)])
        with alone:
            b.call(kernel, [slots, ir.Constant(I64, 0), ir.Constant(I64, total)])


def _runtime_libraries():
    """Candidate OpenMP runtimes, preferred first: one this process already loaded (Intel's first),
    then MKL's libiomp5, then GNU libgomp.

    A runtime already loaded comes first because whoever loaded it computes on its team: PyTorch
    brings its own ``libgomp``, and MKL then computes on that one too (``blas._match_mkl_threads``
    keeps MKL on the kernels' runtime). Kernels on a second runtime beside it meant two teams
    spinning for two cores (an MLP training step took 15-17 ms instead of 7.3-8.6), and MKL put on
    ``libiomp5`` with PyTorch's ``libgomp`` loaded ran a 256x784x1024 product at half speed (5.5-7.1
    ms against 2.8-4.7; its OpenMP queries seem to reach ``libgomp``'s functions).
    """
    paths = sorted(_loaded_runtimes(), key=lambda p: _kind(p) != "iomp5")
    for prefix in dict.fromkeys([sys.prefix, sys.base_prefix]):
        paths += sorted(glob.glob(os.path.join(prefix, "lib", "libiomp5.so*")))
    paths += ["libgomp.so.1"]
    return list(dict.fromkeys(paths))


def _kind(path: str) -> str:
    """``"iomp5"`` for Intel's runtime, else ``"gomp"``, from the library's file name."""
    return "iomp5" if "iomp5" in os.path.basename(path) else "gomp"


def _loaded_runtimes() -> list:
    """Paths of the OpenMP runtimes (``libiomp5``, ``libgomp``) mapped into this process (Linux)."""
    try:
        with open("/proc/self/maps") as f:
            paths = [line.split(None, 5)[-1].strip() for line in f if line.count(" ") >= 5]
    except OSError:
        return []
    names = ("libiomp5.so", "libgomp.so", "libgomp-")
    return list(dict.fromkeys(p for p in paths if p.startswith("/") and os.path.basename(p).startswith(names)))


class OpenMPRuntime:
    """An OpenMP runtime library: ``GOMP_parallel`` plus the thread queries the trampoline calls."""

    def __init__(self, lib: ctypes.CDLL, kind: str):
        from llvmlite import binding as llvm
        self.lib, self.kind = lib, kind
        self.usable = True
        self.started = False        # whether a parallel region ran (and so the worker threads exist)
        self.parallel = lib.GOMP_parallel
        self.parallel.restype = None
        self.parallel.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
        # The trampoline must ask *this* runtime for its thread number: its functions are registered
        # under names of our own (the library is loaded RTLD_LOCAL, so LLVM cannot find them itself).
        self.thread_num_symbol = f"tracejit_omp_thread_num_{kind}"
        self.num_threads_symbol = f"tracejit_omp_num_threads_{kind}"
        self.parallel_symbol = f"tracejit_omp_parallel_{kind}"
        for name, sym in ((self.thread_num_symbol, "omp_get_thread_num"),
                          (self.num_threads_symbol, "omp_get_num_threads"), (self.parallel_symbol, "GOMP_parallel")):
            llvm.add_symbol(name, ctypes.cast(getattr(lib, sym), ctypes.c_void_p).value)
        llvm.add_symbol(TEAM_THREADS_SYMBOL, ctypes.addressof(team_threads))

    def run(self, trampoline: int, kernel_address: int, slots, total: int, granule: int, threads: int) -> None:
        """``kernel(slots, begin, end)`` over ``[0, total)``, split in ``granule`` blocks over a team."""
        data = LaunchData(kernel_address, ctypes.cast(slots, ctypes.c_void_p), total, granule)
        self.started = True
        self.parallel(trampoline, ctypes.addressof(data), min(threads, -(-total // granule)), 0)

    def start_team(self, nothing_address: int) -> None:
        """Run an empty parallel region, so the worker threads exist before the first kernel."""
        self.started = True
        self.parallel(nothing_address, None, 0, 0)


_runtime: list = []
_lock = threading.Lock()


def runtime():
    """The process's OpenMP runtime, or None (kernels then use the Python pool)."""
    if not _runtime:
        with _lock:
            if not _runtime:
                _runtime.append(_load())
    return _runtime[0]


def quiet_spinning() -> None:
    """Idle OpenMP workers spin 1 ms (Intel's default: 200 ms), then sleep: kernels of one call
    reuse hot workers, but between calls the cores are left to other threads and libraries.
    Set before the runtime loads; a value the user set wins. (``KMP_AFFINITY=disabled`` is not
    set: with it, Intel's runtime aborts in a forked child.)"""
    os.environ.setdefault("KMP_BLOCKTIME", "1")


def _after_fork_in_child() -> None:
    # GNU libgomp's team does not survive fork(): a child that forks a parallel region after
    # the parent used one can hang. Intel's runtime re-initializes itself in the child.
    if _runtime and _runtime[0] is not None and _runtime[0].kind == "gomp" and _runtime[0].started:
        _runtime[0].usable = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _load():
    choice = os.environ.get("TRACEJIT_OPENMP", "1").strip().lower()
    if choice in ("0", "off", "false", "no"):
        return None
    quiet_spinning()
    for path in _runtime_libraries():
        kind = _kind(path)
        if choice in ("gomp", "iomp5") and choice != kind:
            continue
        try:
            return OpenMPRuntime(ctypes.CDLL(path), kind)
        except (OSError, AttributeError):
            continue
    return None
