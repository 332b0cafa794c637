"""Native fork/join for kernels: an OpenMP runtime's ``GOMP_parallel``.

Splitting a kernel over Python's thread pool costs 100-150 microseconds per
launch on this kind of machine (a queue hand-off, a wake-up and a future per
chunk), more than a 256K-element elementwise kernel takes on one core. An
OpenMP runtime keeps its workers spinning between parallel regions, so a
fork/join costs a few microseconds: mid-sized kernels then gain from
threads too.

``GOMP_parallel(fn, data, nthreads, flags)`` runs ``fn(data)`` on every thread
of a team. ``fn`` is a small JIT-compiled trampoline: it reads the kernel's
address, its buffer table and its range from ``data``, takes this thread's
static share of the range (whole ``granule`` blocks) and calls the kernel.

The runtime is Intel's ``libiomp5`` when MKL brought it (MKL's BLAS threads
are then the same threads: nothing oversubscribes the cores), else GNU
``libgomp``; with neither, kernels use the Python pool.
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


def _trampoline_ir(thread_num_symbol: str, num_threads_symbol: str) -> ir.Module:
    from tracejit.backends.cpu import llvm_engine
    module = ir.Module(name="tracejit_parallel")
    module.triple = llvm_engine.triple
    module.data_layout = llvm_engine.target_data_layout
    thread_num = ir.Function(module, ir.FunctionType(I32, []), name=thread_num_symbol)
    num_threads = ir.Function(module, ir.FunctionType(I32, []), name=num_threads_symbol)
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR]), name="tracejit_parallel_body")
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
    return module


def _runtime_libraries():
    """Candidate OpenMP runtimes, preferred first: MKL's libiomp5, then GNU libgomp."""
    paths = []
    for prefix in dict.fromkeys([sys.prefix, sys.base_prefix]):
        paths += sorted(glob.glob(os.path.join(prefix, "lib", "libiomp5.so*")))
    paths += ["libgomp.so.1"]
    return paths


class OpenMPRunner:
    """Runs ``kernel(slots, begin, end)`` over ``[0, total)`` split across an OpenMP team."""

    def __init__(self, lib: ctypes.CDLL, threads: int):
        from llvmlite import binding as llvm
        from tracejit.backends.cpu import llvm_engine
        self.lib = lib
        self.threads = threads
        self.parallel = lib.GOMP_parallel
        self.parallel.restype = None
        self.parallel.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
        # The trampoline must ask *this* runtime for its thread number: register its functions
        # under private names (the library was loaded RTLD_LOCAL, so LLVM cannot find them itself).
        tag = f"{abs(hash(lib._name)):x}"
        names = (f"tracejit_omp_thread_num_{tag}", f"tracejit_omp_num_threads_{tag}")
        for name, sym in zip(names, ("omp_get_thread_num", "omp_get_num_threads")):
            llvm.add_symbol(name, ctypes.cast(getattr(lib, sym), ctypes.c_void_p).value)
        self.compiled = llvm_engine.compile_ir(_trampoline_ir(*names), name="tracejit_parallel")
        self.body = self.compiled.address("tracejit_parallel_body")

    def run(self, kernel_address: int, slots, total: int, granule: int) -> None:
        data = LaunchData(kernel_address, ctypes.cast(slots, ctypes.c_void_p), total, granule)
        team = min(self.threads, -(-total // granule))
        self.parallel(self.body, ctypes.addressof(data), team, 0)


_runners: dict = {}
_lock = threading.Lock()


def runner(threads: int):
    """The process's OpenMP runner for ``threads`` threads, or None (use the Python pool)."""
    try:
        return _runners[threads]
    except KeyError:
        pass
    with _lock:
        if threads not in _runners:
            _runners[threads] = _make(threads)
    return _runners[threads]


def quiet_spinning() -> None:
    """Idle OpenMP workers spin 1 ms (Intel's default: 200 ms), then sleep: kernels of one call
    reuse hot workers, but between calls they leave the cores to other threads and libraries.
    Must run before the runtime loads; a value the user set wins."""
    os.environ.setdefault("KMP_BLOCKTIME", "1")


def _make(threads):
    if os.environ.get("TRACEJIT_OPENMP", "1").strip().lower() in ("0", "off", "false", "no"):
        return None
    quiet_spinning()
    for path in _runtime_libraries():
        try:
            return OpenMPRunner(ctypes.CDLL(path), threads)
        except (OSError, AttributeError):
            continue
    return None
