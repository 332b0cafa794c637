"""GEMM providers for ``dot_general`` steps, chosen by measurement on this host.

A contraction reaches BLAS as (batched) ``C = alpha * op(A) @ op(B) + beta * C``
where ``op`` is a transpose *flag* read off the operand's strides, so transposed
views are never copied. Providers, by name (``PROVIDERS``):

* ``numpy``: NumPy's ``matmul`` (the OpenBLAS NumPy's wheels bundle); always loads.
* ``openblas``: that same OpenBLAS called through its CBLAS interface with ctypes
  (``numpy.libs/libscipy_openblas64_-*.so``: ILP64, symbols ``scipy_cblas_?gemm64_``).
* ``mkl``: Intel MKL's CBLAS (``libmkl_rt``, the ``mkl`` package), ILP64 entry
  points (``cblas_?gemm_64``) where the library has them.
* ``system``: a CBLAS library of the system or conda environment (OpenBLAS or
  BLIS found by name in the usual library directories), when there is one.
* ``tracejit``: generated code (``panel_gemm``) for real products of at most 1024 rows
  and enough columns whose right operand's rows are contiguous; timed only on such shapes, against the
  library chosen for the class on the same shapes, and used for the products it
  serves in the classes where it won (``table["own"]``). ``TRACEJIT_OWN_GEMM=0``
  leaves it out.

``auto`` (the default) picks by **measurement**, not by availability: at first
use every provider that loads computes a tiny check product per dtype (one that
raises or is wrong is excluded), then is timed on a few representative shapes
per dtype and shape class -- ``skinny`` (M or N at most 64), ``rank_k`` (else K
at most 64), ``panel`` (else M or N at most 256), ``square``, ``batched`` -- and the fastest (geometric mean of GFLOP/s over the class's
shapes, each the median of 4-12 calls over four rounds in which the providers take turns on
each shape, :func:`_time_all`) serves that (dtype, class); a library other than the first one
must win by ``LIBRARY_MARGIN``, also when each turn starts after a pause
(:func:`_wins_after_pauses`). complex64 and
complex128 follow float32's and float64's choices. The measurement takes about
2-3 s and runs once per CPU model: the table is stored as JSON in
the compile cache directory (``object_cache.cache_dir()``), keyed by the CPU
(model, vendor, family, a hash of its flags), the thread count, the libraries'
files and the environment variables that steer them. With the cache off
(``TRACEJIT_CACHE_DIR=off``) each process measures once, in memory. A table
measured while other work kept the cores busy (:func:`machine_busy`, or other processes' CPU
time during the measurement itself, from ``/proc/stat``) is marked
so and measured again by the first process that finds the machine quiet.
:func:`report` shows the table. ``TRACEJIT_BLAS=numpy|openblas|mkl|system``
(or ``config.update("blas", ...)``) forces one provider for everything.

Threads: every ctypes provider is given ``runtime.num_threads()`` threads (the
kernels' team size: ``config.num_threads``, else one per core) unless the user
set the library's own variable (``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``,
``OMP_NUM_THREADS``). MKL's threads are the OpenMP team's threads when both use
``libiomp5``; NumPy's OpenBLAS runs its parallel work on the same team through its threads
callback (``openblas_team``; its own pthreads pool otherwise). Plan steps run one after
another, so a BLAS call and a kernel's team never compute at the same time; the
overlap is only idle spinning (OpenMP's workers 1 ms, ``KMP_BLOCKTIME``;
OpenBLAS's with ``sched_yield``), which is why providers sharing a pool take turns
on each shape in the measurement, and a pool settles before another pool's provider is timed.
"""
from __future__ import annotations

import ctypes
import glob
import hashlib
import json
import logging
import math
import os
import platform
import statistics
import sys
import tempfile
import threading
import time

import numpy as np

from tracejit.backends.cpu import openblas_idle, openblas_team
from tracejit.backends.cpu.pointers import data_address
from tracejit.config import config, env_flag

logger = logging.getLogger("tracejit.blas")

ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112
_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
           np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}
# complex dtypes use the provider measured for the real dtype of their precision
_MEASURED_AS = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64",
                np.dtype(np.complex64): "float32", np.dtype(np.complex128): "float64"}
CLASSES = ("skinny", "rank_k", "panel", "square", "batched")
SKINNY = 64          # M or N at most this: a product of a few rows or columns ("skinny")
RANK_K = 64          # else K at most this: a rank-k update such as x.T @ g ("rank_k")
PANEL = 256          # else M or N at most this: a panel such as (128, 768) @ (768, 3072) ("panel")
FORMAT = 6           # version of the measurement and of its JSON file
# (batch, m, k, n) timed per class; m = 1 is absent: small_dots turns those into kernels. The classes
# are where providers' strengths part: on a Zen 4 EPYC, NumPy's OpenBLAS ran (16, 768) @ (768, 3072)
# 1.5x faster than MKL and (128, 768) @ (768, 3072) 1.1x faster, MKL (768, 16) @ (16, 768) 2.1x faster
# and small batches 1.5x faster -- one "skinny" class holding the first and third let MKL's lead on
# one shape outvote its losses on the others.
SHAPES = {
    "skinny": [(1, 16, 768, 3072), (1, 4, 1024, 1024), (1, 1024, 1024, 16)],
    "rank_k": [(1, 768, 16, 768), (1, 1024, 64, 1024)],
    "panel": [(1, 128, 768, 3072), (1, 1024, 512, 256)],
    "square": [(1, 512, 512, 512), (1, 1024, 1024, 1024)],
    "batched": [(12, 128, 64, 128), (8, 256, 256, 256)],
}
_FLOAT32_ONLY = {(1, 1024, 1024, 1024)}   # 2 GFLOP: float64 learns as much from 512
ROUNDS = 4           # rounds of turns on every shape (each provider: one untimed call, then 1-3 timed)
PAUSED_ROUNDS = 3    # rounds of turns after pauses that confirm a library other than the first one
PAUSE_S = 0.02       # each of those turns' pause: the team's workers (1 ms) and OpenBLAS's (0.4 ms) sleep
TIMING_BUDGET_S = 4.0  # no third or later round once the timing took longer than this
WARM_S = 0.03        # a pool's first provider computes this long before its turns (threads, clocks)
# Generated code replaces the chosen library only when it is this much faster (geometric mean over
# the class's shapes it serves): the table is kept for the machine's life. Timed in whole-provider
# blocks, one noisy reading decided it (on an Intel Xeon measured right after boot, generated code
# won (128, 768) @ (768, 3072) 198 to MKL's 189 GFLOP/s, where steady-state runs gave MKL 207-223
# and generated code 177-191), and the margin was 1.05. Timed in turns, tables on a Zen 4 EPYC moved
# 0-8% per shape, about the size of the generated code's real lead on square products there (in
# turns: 1.01-1.10x NumPy's OpenBLAS on the GPT-2 and MLP products of 512 and 1024 rows, 1.07-1.24x
# on 512^3 and 1024^3), and two of three tables left it out at 1.05. Inside the GPT-2 layer and the
# MLP (1024, 768) the two ran within 2% of each other (from -1.6% to +5.6% in two A/B runs).
OWN_MARGIN = 1.02
# Another library replaces the first one that loads (NumPy's matmul: its OpenBLAS, which computes on
# the kernels' team) only when this much faster on the class. On the 2-core Zen 3 VM a table gave MKL
# 113-129 GFLOP/s on the panel and square classes against OpenBLAS's 98-117, while the same products
# timed in one process, alternating, ran 115-130 on MKL and 117-148 on OpenBLAS, and the GPT-2-style
# MLP ran 0.84-0.92x JAX's speed on MKL against 1.04-1.07x on OpenBLAS. MKL's wins in the tables were
# larger where it won: batched products 1.3-1.6x (one strided-batch call), rank-k updates 1.2-1.3x.
LIBRARY_MARGIN = 1.2


def shape_class(m: int, n: int, k: int, batch: int = 1) -> str:
    """The shape class a product is dispatched by: ``batched``, ``skinny``, ``rank_k``, ``panel``
    or ``square`` (see ``SKINNY``, ``RANK_K``, ``PANEL``).

    Examples
    --------
    >>> shape_class(16, 3072, 768), shape_class(768, 768, 16), shape_class(128, 3072, 768)
    ('skinny', 'rank_k', 'panel')
    >>> shape_class(512, 512, 512), shape_class(128, 128, 64, batch=12)
    ('square', 'batched')
    """
    if batch > 1:
        return "batched"
    if min(m, n) <= SKINNY:
        return "skinny"
    if k <= RANK_K:
        return "rank_k"
    return "panel" if min(m, n) <= PANEL else "square"


def _operand(a: np.ndarray):
    """``(trans flag, leading dimension)`` of a 2-D view BLAS can read in place, or None."""
    item = a.itemsize
    s0, s1 = a.strides
    m, k = a.shape
    if (s1 == item or k <= 1) and s0 % item == 0 and s0 // item >= max(k, 1):
        return NO_TRANS, s0 // item
    if (s0 == item or m <= 1) and s1 % item == 0 and s1 // item >= max(m, 1):
        return TRANS, s1 // item
    return None


def _numpy_gemm(a, b, out, alpha=1.0, beta=0.0) -> None:
    with np.errstate(all="ignore"):     # compiled code raises no floating-point warnings either
        if alpha == 1.0 and beta == 0.0:
            np.matmul(a, b, out=out)
            return
        product = np.multiply(np.matmul(a, b), out.dtype.type(alpha))
        if beta == 0.0:
            out[...] = product
        else:
            np.add(out, product, out=out)


class NumpyBLAS:
    """NumPy's ``matmul`` (OpenBLAS in NumPy's wheels): always available."""

    name = "numpy"
    pool = "numpy-blas"     # the pool its calls wake (shared with ``openblas``; the kernels' team
    settle_s = 0.15         # where OpenBLAS computes on it, _load_numpy) and how long its threads spin
    version = f"numpy {np.__version__}"
    threads = None

    def gemm(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, alpha: float = 1.0, beta: float = 0.0) -> None:
        """``out[...] = alpha * (a @ b) + beta * out``; ``beta`` is 0 or 1."""
        _numpy_gemm(a, b, out, alpha, beta)


class CBLAS:
    """A CBLAS library called through ctypes: ``?gemm``, and ``?gemm_batch_strided`` where usable.

    ``gemm_symbol`` / ``batched_symbol`` are format strings with ``{p}`` for the
    precision letter (``"scipy_cblas_{p}gemm64_"``); ``int64`` says whether the
    library's integers are 64-bit (ILP64). Enumerations are C ``int`` in both.
    Without a batched symbol a 3-D product is one ``?gemm`` call per matrix.
    Operands it cannot take (other dtypes, non-unit strides, empty dims, a
    non-contiguous ``out``) go to NumPy.
    """

    def __init__(self, name: str, lib: ctypes.CDLL, gemm_symbol: str, *, int64: bool,
                 batched_symbol: str | None = None, version: str = "", threads: int | None = None,
                 pool: str | None = None, settle_s: float = 0.0):
        self.name, self.lib, self.version, self.threads = name, lib, version, threads
        self.pool, self.settle_s = pool or name, settle_s
        self.limit = 2 ** 63 if int64 else 2 ** 31
        vp, ci = ctypes.c_void_p, ctypes.c_int
        ii = ctypes.c_int64 if int64 else ctypes.c_int
        self.fns, self.batched = {}, {}
        self._one = {}
        for dtype, p in _PREFIX.items():
            real = dtype.kind == "f"
            scalar = (ctypes.c_float if dtype.itemsize == 4 else ctypes.c_double) if real else vp
            fn = lib[gemm_symbol.format(p=p)]      # lib[...]: a fresh pointer, argtypes our own
            fn.restype = None
            fn.argtypes = [ci, ci, ci, ii, ii, ii, scalar, vp, ii, vp, ii, scalar, vp, ii]
            self.fns[dtype] = fn
            if batched_symbol is not None:
                try:
                    fb = lib[batched_symbol.format(p=p)]
                except AttributeError:
                    fb = None
                if fb is not None:
                    fb.restype = None
                    fb.argtypes = [ci, ci, ci, ii, ii, ii, scalar, vp, ii, ii, vp, ii, ii, scalar, vp, ii, ii, ii]
                    self.batched[dtype] = fb
            if not real:
                real_dtype = np.float32 if dtype.itemsize == 8 else np.float64
                self._one[dtype] = (np.array([1, 0], real_dtype), np.zeros(2, real_dtype))

    def _scalars(self, dtype, alpha, beta):
        """alpha and beta as the C function takes them (complex ones by address), plus what keeps them alive."""
        if dtype.kind == "f":
            return alpha, beta, None
        if (alpha, beta) == (1.0, 0.0):
            keep = self._one[dtype]
        else:
            real = self._one[dtype][0].dtype
            keep = (np.array([alpha, 0], real), np.array([beta, 0], real))
        return data_address(keep[0]), data_address(keep[1]), keep

    def gemm(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, alpha: float = 1.0, beta: float = 0.0) -> None:
        """``out[...] = alpha * (a @ b) + beta * out`` for 2-D or equally batched 3-D operands of one dtype."""
        fn = self.fns.get(out.dtype)
        if fn is None or a.dtype != out.dtype or b.dtype != out.dtype or not out.flags.c_contiguous:
            return _numpy_gemm(a, b, out, alpha, beta)
        if out.ndim == 3:
            return self._batched(fn, a, b, out, alpha, beta)
        m, n = out.shape
        k = a.shape[1]
        ta, tb = _operand(a), _operand(b)
        if ta is None or tb is None or 0 in (m, n, k) or max(m, n, k, ta[1], tb[1]) >= self.limit:
            return _numpy_gemm(a, b, out, alpha, beta)
        al, be, _keep = self._scalars(out.dtype, alpha, beta)
        fn(ROW_MAJOR, ta[0], tb[0], m, n, k, al, data_address(a), ta[1], data_address(b), tb[1], be,
           data_address(out), max(n, 1))

    def _batched(self, fn, a, b, out, alpha, beta):
        nb, m, n = out.shape
        k = a.shape[2]
        if nb == 1:
            return self.gemm(a[0], b[0], out[0], alpha, beta)
        ta, tb = (_operand(a[0]), _operand(b[0])) if nb else (None, None)
        item = out.itemsize
        sa, sb = a.strides[0], b.strides[0]
        if (ta is None or tb is None or 0 in (nb, m, n, k) or sa % item or sb % item or sa < 0 or sb < 0
                or max(m, n, k, nb, ta[1], tb[1], sa // item, sb // item, m * n) >= self.limit):
            return _numpy_gemm(a, b, out, alpha, beta)
        al, be, _keep = self._scalars(out.dtype, alpha, beta)
        pa, pb, pc = data_address(a), data_address(b), data_address(out)
        fb = self.batched.get(out.dtype)
        if fb is not None:
            fb(ROW_MAJOR, ta[0], tb[0], m, n, k, al, pa, ta[1], sa // item, pb, tb[1], sb // item, be,
               pc, max(n, 1), m * n, nb)
            return
        sc = m * n * item
        for i in range(nb):
            fn(ROW_MAJOR, ta[0], tb[0], m, n, k, al, pa + i * sa, ta[1], pb + i * sb, tb[1], be,
               pc + i * sc, max(n, 1))


# --------------------------------------------------------------------------- loading

def _threads_for(*env_vars: str) -> int | None:
    """Threads to give a library: the kernels' team size, or None when the user set the library's variable."""
    if any(os.environ.get(v, "").strip() for v in env_vars):
        return None
    from tracejit.backends.cpu.runtime import num_threads
    return num_threads()


def _lib_dirs() -> list:
    dirs = [os.path.join(p, "lib") for p in (sys.prefix, sys.base_prefix, os.environ.get("CONDA_PREFIX", "")) if p]
    return list(dict.fromkeys(dirs))


def _numpy_openblas_paths() -> list:
    """NumPy's bundled OpenBLAS: ``numpy.libs/`` beside the package (Linux wheels), ``numpy/.dylibs`` (macOS)."""
    pkg = os.path.dirname(np.__file__)
    pats = [os.path.join(os.path.dirname(pkg), "numpy.libs", "lib*openblas*.so*"),
            os.path.join(pkg, ".dylibs", "lib*openblas*.dylib")]
    return sorted(p for pat in pats for p in glob.glob(pat))


def _mkl_paths() -> list:
    return [p for d in _lib_dirs() for p in sorted(glob.glob(os.path.join(d, "libmkl_rt.so*")), reverse=True)]


_SYSTEM_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                "/usr/local/lib", "/opt/homebrew/opt/openblas/lib"]


def _system_paths() -> list:
    """OpenBLAS or BLIS of the system or the (conda) environment, LP64 builds by their usual names."""
    out = []
    for d in _lib_dirs() + _SYSTEM_DIRS:
        for stem in ("libopenblas", "libblis"):
            out += sorted(glob.glob(os.path.join(d, stem + ".so*")) + glob.glob(os.path.join(d, stem + ".dylib")))
    return out


def _openblas(name: str, lib, pool: str, settle_s: float) -> CBLAS | None:
    """An OpenBLAS build as a provider: its symbol decoration, integer width, version, threads."""
    found = openblas_team.decoration(lib, "cblas_sgemm")
    if found is None:
        return None
    prefix, suffix = found
    config = ""
    try:
        get_config = lib[f"{prefix}openblas_get_config{suffix}"]
        get_config.restype, get_config.argtypes = ctypes.c_char_p, []
        config = (get_config() or b"").decode(errors="replace").strip()
    except AttributeError:
        pass
    int64 = "USE64BITINT" in config if config else suffix == "64_"
    threads = _threads_for("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
    if threads is not None:
        try:
            set_threads = lib[f"{prefix}openblas_set_num_threads{suffix}"]
            set_threads.restype, set_threads.argtypes = None, [ctypes.c_int]
            set_threads(threads)
        except AttributeError:
            threads = None
    # OpenBLAS 0.3.31's ?gemm_batch_strided (exported undecorated) crashes on products of under
    # 100^3 multiply-adds and gives wrong complex results: a 3-D product is one ?gemm per matrix.
    return CBLAS(name, lib, f"{prefix}cblas_{{p}}gemm{suffix}", int64=int64, version=config or name,
                 threads=threads, pool=pool, settle_s=settle_s)


# where a library computes on the kernels' OpenMP team: the pool's name, and how long its idle
# workers spin (1 ms, KMP_BLOCKTIME)
TEAM_POOL, TEAM_SETTLE_S = "openmp", 0.002


def _openblas_on_team() -> tuple:
    """NumPy's OpenBLAS runs its parallel work on the kernels' OpenMP team (``openblas_team``);
    returns the pool its calls then wake and how long that pool's idle threads spin."""
    on_team = False
    for path in _numpy_openblas_paths():
        try:
            on_team = openblas_team.install(path, ctypes.CDLL(path)) or on_team
        except OSError:
            continue
    return (TEAM_POOL, TEAM_SETTLE_S) if on_team else (NumpyBLAS.pool, NumpyBLAS.settle_s)


def _load_numpy() -> NumpyBLAS:
    numpy = NumpyBLAS()
    numpy.pool, numpy.settle_s = _openblas_on_team()
    return numpy


def _load_openblas():
    pool, settle_s = _openblas_on_team()
    for path in _numpy_openblas_paths():
        try:
            p = _openblas("openblas", ctypes.CDLL(path), pool, settle_s)
        except (OSError, AttributeError):
            continue
        if p is not None:
            return p
    return None


def _load_system():
    for path in _system_paths():
        try:
            lib = ctypes.CDLL(path)
            if "blis" in os.path.basename(path):
                p = _blis(lib)
            else:
                openblas_idle.shorten_idle_polling(path, lib)
                on_team = openblas_team.install(path, lib)
                p = _openblas("system", lib, *((TEAM_POOL, TEAM_SETTLE_S) if on_team else ("system-openblas", 0.15)))
        except (OSError, AttributeError):
            continue
        if p is not None:
            p.version = f"{p.version} ({path})"
            return p
    return None


def _blis(lib) -> CBLAS | None:
    size = lib["bli_info_get_blas_int_type_size"]
    size.restype, size.argtypes = ctypes.c_int64, []
    threads = _threads_for("BLIS_NUM_THREADS", "OMP_NUM_THREADS")
    if threads is not None:
        setter = lib["bli_thread_set_num_threads"]
        setter.restype, setter.argtypes = None, [ctypes.c_int64]
        setter(threads)
    return CBLAS("system", lib, "cblas_{p}gemm", int64=size() == 64, version="BLIS", threads=threads)


# MKL's threading layers (``MKL_Set_Threading_Layer``) for the kernels' OpenMP runtimes.
_MKL_LAYER = {"iomp5": 0, "gomp": 3}        # MKL_THREADING_INTEL, MKL_THREADING_GNU


def _match_mkl_threads(lib) -> None:
    """Make MKL compute on the kernels' OpenMP team (call before MKL's first computation).

    ``libmkl_rt`` picks its threading layer when it first computes, and it picks GNU OpenMP when a
    ``libgomp`` is already loaded -- PyTorch brings one. Its workers are then a second team beside
    the kernels' ``libiomp5`` one (and OpenBLAS's threads), and each spins after every MKL call
    while the others compute: with ``import torch`` first, an MLP training step (784-1024-10,
    batch 256) took 15-17 ms instead of 7.3-8.6. Setting ``MKL_THREADING_LAYER`` did not change
    the choice; the call does. A layer the user chose in the environment is left alone.
    """
    from tracejit.backends.cpu.parallel import runtime
    team = runtime()
    if "MKL_THREADING_LAYER" in os.environ or team is None or team.kind not in _MKL_LAYER:
        return
    try:
        lib.MKL_Set_Threading_Layer(ctypes.c_int(_MKL_LAYER[team.kind]))
    except AttributeError:
        pass                    # not the single dynamic library: its layer was fixed at link time


def _load_mkl():
    from tracejit.backends.cpu.parallel import quiet_spinning
    quiet_spinning()            # MKL's threads are the OpenMP runtime's threads
    for path in _mkl_paths():
        try:
            lib = ctypes.CDLL(path)
            _match_mkl_threads(lib)
            ilp64 = hasattr(lib, "cblas_sgemm_64")   # explicit ILP64: immune to MKL_INTERFACE_LAYER
            sfx = "_64" if ilp64 else ""
            buf = ctypes.create_string_buffer(256)
            lib.mkl_get_version_string(buf, len(buf))
            threads = _threads_for("MKL_NUM_THREADS", "OMP_NUM_THREADS")
            if threads is not None:
                lib.MKL_Set_Num_Threads(ctypes.c_int(threads))
            return CBLAS("mkl", lib, "cblas_{p}gemm" + sfx, int64=ilp64,
                         batched_symbol="cblas_{p}gemm_batch_strided" + sfx,
                         version=buf.value.decode(errors="replace").strip(), threads=threads,
                         pool=TEAM_POOL, settle_s=TEAM_SETTLE_S)
        except (OSError, AttributeError):
            continue
    return None


class GeneratedBLAS:
    """tracejit's own generated code (``panel_gemm``) for the real products it serves (at most
    ``panel_gemm.MAX_ROWS`` rows and enough columns, rows or columns of ``b`` contiguous); NumPy's
    ``matmul`` for the rest.

    It is measured only on the shapes it serves, against the libraries on those same shapes, and
    :class:`AutoBLAS` sends a product to it only where it won its class (``table["own"]``) and it
    serves that product; every other product goes to the library chosen for the class. It has no C
    entry point (``fns``): native code calls that library instead."""

    name = "tracejit"
    pool, settle_s = TEAM_POOL, TEAM_SETTLE_S       # the kernels' OpenMP team
    version = "generated code (panel_gemm)"
    generated = True

    def __init__(self, kernels, num_threads):
        self.kernels, self._num_threads = kernels, num_threads
        self.threads = num_threads()

    def serves_shape(self, shape, dtype="float32") -> bool:
        """Whether a measured ``(batch, m, k, n)`` shape of ``dtype`` is one this code computes."""
        nb, m, k, n = shape
        return nb == 1 and self.kernels.serves_shape(dtype, m, n, k)

    def serves(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, alpha: float = 1.0, beta: float = 0.0) -> bool:
        """Whether this product is computed by the generated code (not NumPy's fallback)."""
        return self.kernels.serves(a, b, out, alpha, beta)

    def run(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, alpha: float = 1.0, beta: float = 0.0) -> None:
        """The generated product, on the kernels' thread count, for a product :meth:`serves`."""
        self.kernels.run(a, b, out, alpha, beta, threads=self._num_threads())

    def gemm(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, alpha: float = 1.0, beta: float = 0.0) -> None:
        """``out[...] = alpha * (a @ b) + beta * out``; ``beta`` is 0 or 1."""
        if self.kernels.serves(a, b, out, alpha, beta):
            self.run(a, b, out, alpha, beta)
        else:
            _numpy_gemm(a, b, out, alpha, beta)


def _load_generated():
    if not env_flag("TRACEJIT_OWN_GEMM", True):
        return None
    from tracejit.backends.cpu import panel_gemm
    from tracejit.backends.cpu.runtime import num_threads
    try:
        kernels = panel_gemm.PanelKernels()
    except RuntimeError:            # no fused multiply-add: nothing to generate
        return None
    return GeneratedBLAS(kernels, num_threads)


def _generated_paths() -> list:
    return [os.path.join(os.path.dirname(__file__), "panel_gemm.py")]


# name -> loader (returns a provider or None); measured and reported in this order
PROVIDERS = {"numpy": _load_numpy, "openblas": _load_openblas, "mkl": _load_mkl, "system": _load_system,
             "tracejit": _load_generated}
# name -> the files that decide what the loader finds (part of the cache key; nothing is loaded)
_LOCATORS = {"numpy": _numpy_openblas_paths, "openblas": _numpy_openblas_paths, "mkl": _mkl_paths,
             "system": _system_paths, "tracejit": _generated_paths}

_instances: dict = {}        # name -> loaded provider, or None when it does not load
_chosen: dict = {}           # configured name -> what provider(name) returns
_lock = threading.RLock()


def _instance(name: str):
    if name not in _instances:
        try:
            _instances[name] = PROVIDERS[name]()
        except Exception as e:   # noqa: BLE001 - a provider that cannot load is just absent
            logger.warning("BLAS provider %s failed to load: %s", name, e)
            _instances[name] = None
    return _instances[name]


def reset() -> None:
    """Forget loaded providers and the in-memory choice (the next use re-reads the cache file or measures).

    Examples
    --------
    >>> from tracejit.backends.cpu import blas
    >>> blas.reset()
    """
    with _lock:
        _instances.clear()
        _chosen.clear()


# --------------------------------------------------------------------------- measurement

def _rand(shape, dtype, rng):
    v = rng.random(shape, dtype=np.float64) - 0.5
    if np.dtype(dtype).kind == "c":
        v = v + 1j * (rng.random(shape) - 0.5)
    return v.astype(dtype)


def check_provider(p) -> str | None:
    """Why provider ``p`` gets tiny products wrong (or raises), or None when they are right.

    Examples
    --------
    >>> check_provider(NumpyBLAS()) is None
    True
    """
    rng = np.random.default_rng(1)
    try:
        for dtype in _PREFIX:
            wide = np.complex128 if dtype.kind == "c" else np.float64
            tol = 1e-4 if dtype in (np.dtype(np.float32), np.dtype(np.complex64)) else 1e-10
            a, b, c = _rand((7, 5), dtype, rng), _rand((3, 5), dtype, rng).T, _rand((7, 3), dtype, rng)
            a3, b3 = _rand((3, 4, 6), dtype, rng), _rand((3, 6, 2), dtype, rng)
            cases = [(a, b, np.empty((7, 3), dtype), 1.0, 0.0, a.astype(wide) @ b.astype(wide)),
                     (a, b.copy(), c.copy(), 1.0, 1.0, c.astype(wide) + a.astype(wide) @ b.astype(wide)),
                     (a, b, c.copy(), 2.0, 1.0, c.astype(wide) + 2.0 * (a.astype(wide) @ b.astype(wide))),
                     (a3, b3, np.empty((3, 4, 2), dtype), 1.0, 0.0, a3.astype(wide) @ b3.astype(wide))]
            for x, y, out, alpha, beta, want in cases:
                p.gemm(x, y, out, alpha, beta)
                err = float(np.max(np.abs(out - want)))
                if not err <= tol * 10:
                    return f"{np.dtype(dtype).name} {x.shape}x{y.shape} alpha={alpha} beta={beta}: error {err:.3g}"
    except Exception as e:   # noqa: BLE001 - any failure excludes the provider
        return f"raised {type(e).__name__}: {e}"
    return None


def _time_gemm(p, a, b, out, repeats: int) -> list:
    """Seconds of each of ``repeats`` calls ``p.gemm(a, b, out)``, after one warm-up call."""
    p.gemm(a, b, out)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        p.gemm(a, b, out)
        times.append(time.perf_counter() - t0)
    return times


def _operands(cache: dict, dtype: str, shape, rng):
    """``(a, b, out)`` for a ``(batch, m, k, n)`` product of ``dtype``, made once per measurement."""
    if (dtype, shape) not in cache:
        nb, m, k, n = shape
        lead = (nb,) if nb > 1 else ()
        cache[dtype, shape] = (_rand(lead + (m, k), dtype, rng), _rand(lead + (k, n), dtype, rng),
                               np.empty(lead + (m, n), dtype))
    return cache[dtype, shape]


def _warm_up(p, cache: dict, rng) -> None:
    """Products on ``p`` for ``WARM_S`` seconds (at most 30 calls): its thread pool wakes and the
    cores reach their clock before anything is timed (unwarmed, OpenBLAS's 512^3 float32 product
    measured 144 GFLOP/s in this table and 197 in ``bench_blas`` on the same EPYC)."""
    spent = 0.0
    for _ in range(30):
        spent += sum(_time_gemm(p, *_operands(cache, "float32", (1, 256, 256, 256), rng), 1))
        if spent >= WARM_S:
            return


def _pool_groups(usable: dict) -> list:
    """Names of ``usable`` providers grouped by the thread pool they wake, groups and names in a fixed
    order (providers on the kernels' team, whose workers stop spinning soonest, first)."""
    groups = {}
    for name in sorted(usable, key=lambda nm: (usable[nm].settle_s, usable[nm].pool)):
        groups.setdefault(usable[name].pool, []).append(name)
    return list(groups.values())


def _timed_shapes(dtype: str, shapes) -> list:
    """The ``(batch, m, k, n)`` shapes among ``shapes`` that are timed for ``dtype``."""
    return [s for s in shapes if dtype == "float32" or s not in _FLOAT32_ONLY]


def _gflops(shape, seconds) -> float:
    """GFLOP/s of a ``(batch, m, k, n)`` product from the median of its timings ``seconds``."""
    return 2.0 * math.prod(shape) / max(statistics.median(seconds), 1e-9) / 1e9


def _measured_shapes():
    """``(dtype, shape, repeats)`` of every measured product (fewer timed calls for larger ones)."""
    for dtype in ("float32", "float64"):
        for shape in _timed_shapes(dtype, [s for cls_shapes in SHAPES.values() for s in cls_shapes]):
            yield dtype, shape, 1 if 2.0 * math.prod(shape) > 1e8 else 3


def _time_all(usable: dict) -> dict:
    """Seconds samples ``{name: {dtype: {shape: [s, ...]}}}`` of every provider on every shape.

    ``ROUNDS`` rounds, every other one in the reverse order. Within a round, providers sharing a
    thread pool take turns **on each shape** before the next shape, so a load that comes and goes
    for a second (another process, the hypervisor) slows each of them alike; before a provider on
    another pool, the previous pool's idle threads get ``settle_s`` to stop spinning (so they do not
    steal the next provider's cores). Timed in whole-provider blocks one after the other, a busy
    second decided the choice: a table on a Zen 3 VM gave MKL 138 GFLOP/s on 512^3 float32 products
    against NumPy's OpenBLAS's 114, where in one process, in turns, MKL ran at about half OpenBLAS's
    speed. After two rounds, no further one starts once ``TIMING_BUDGET_S`` is spent (a slow, busy
    machine)."""
    rng = np.random.default_rng(0)
    operands, samples = {}, {name: {} for name in usable}
    groups, previous = _pool_groups(usable), None
    deadline = time.perf_counter() + TIMING_BUDGET_S
    for r in range(ROUNDS):
        if r >= 2 and time.perf_counter() > deadline:
            break
        for group in (groups if r % 2 == 0 else groups[::-1]):
            names = group if r % 2 == 0 else group[::-1]
            first = usable[names[0]]
            if previous is not None and previous.pool != first.pool and previous.settle_s:
                time.sleep(previous.settle_s)
            previous = usable[names[-1]]
            _warm_up(first, operands, rng)
            for dtype, shape, repeats in _measured_shapes():
                for name in names:
                    p = usable[name]
                    if _serves_shape(p, shape, dtype):
                        got = _time_gemm(p, *_operands(operands, dtype, shape, rng), repeats)
                        samples[name].setdefault(dtype, {}).setdefault(shape, []).extend(got)
    return samples


def _after_pause(p, a, b, out, repeats: int) -> list:
    """:func:`_time_gemm` after ``PAUSE_S`` of rest (the pools' threads have gone to sleep)."""
    time.sleep(PAUSE_S)
    return _time_gemm(p, a, b, out, repeats)


def _wins_after_pauses(winner, first, dtype: str, cls: str) -> dict:
    """GFLOP/s of library ``winner`` and of the ``first`` library on the class's shapes when each
    turn starts after a pause (``PAUSED_ROUNDS`` alternating rounds; geometric means), and whether
    ``winner`` still leads by ``LIBRARY_MARGIN``.

    The table's turns follow each other without a pause, as a program's products follow its kernels.
    After a pause MKL was another library on the Zen 4 VM: its batched 12x(128x64)@(64x128) float32
    product ran 128-143 GFLOP/s back to back and 33-80 for a dozen calls after 10-200 ms of rest,
    where NumPy's OpenBLAS lost only its first call; chosen from hot turns, it made a ``jit(a @ b)``
    after a pause 0.99x JAX's speed against 1.18x on OpenBLAS. A library that only wins hot does not
    replace the first one."""
    rng, operands = np.random.default_rng(1), {}
    times = {winner.name: {}, first.name: {}}
    for r in range(PAUSED_ROUNDS):
        for p in ((winner, first) if r % 2 == 0 else (first, winner)):
            for shape in _timed_shapes(dtype, SHAPES[cls]):
                got = _after_pause(p, *_operands(operands, dtype, shape, rng), 2)
                times[p.name].setdefault(shape, []).extend(got)
    rates = {name: _geomean([_gflops(shape, ts) for shape, ts in per_shape.items()])
             for name, per_shape in times.items()}
    return {"gflops": rates, "wins": rates[winner.name] > LIBRARY_MARGIN * rates[first.name]}


def _serves_shape(p, shape, dtype="float32") -> bool:
    """Whether provider ``p`` computes a ``(batch, m, k, n)`` product of ``dtype`` itself (generated
    code serves some shapes only; a library serves all)."""
    serves = getattr(p, "serves_shape", None)
    return serves is None or serves(shape, dtype)


def _geomean(rates) -> float:
    return round(math.exp(sum(map(math.log, rates)) / len(rates)), 2)


def _own_wins(rates: dict, generated: str, library: str, dtype: str, cls: str) -> bool:
    """Whether generated code beat the library chosen for ``cls`` by ``OWN_MARGIN`` on the class's
    shapes it serves (GFLOP/s per shape in ``rates[name][dtype]``; geometric means over the same
    shapes)."""
    mine, theirs = rates.get(generated, {}).get(dtype, {}), rates.get(library, {}).get(dtype, {})
    common = [_shape_name(s) for s in SHAPES[cls] if _shape_name(s) in mine and _shape_name(s) in theirs]
    return bool(common) and _geomean([mine[s] for s in common]) > OWN_MARGIN * _geomean([theirs[s] for s in common])


def _shape_name(shape) -> str:
    nb, m, k, n = shape
    return f"{nb}x{m}x{k}x{n}" if nb > 1 else f"{m}x{k}x{n}"


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def machine_busy() -> bool:
    """True when other work keeps more than half of the cores busy (1-minute load average, ours
    excluded): timings are then about the scheduler, and a multithreaded BLAS that waits for a
    descheduled worker looks many times slower than it is.

    Examples
    --------
    >>> isinstance(machine_busy(), bool)
    True
    """
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return False
    return load - 1.0 > 0.5 * _cpus()


def _cpu_seconds():
    """``(CPU seconds every process of the machine has run, this process's)`` so far, or None where
    /proc/stat is missing (steal time counts: a hypervisor's other guests slow timings alike)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    ticks = os.sysconf("SC_CLK_TCK")
    mine = os.times()
    return (user + nice + system + irq + softirq + steal) / ticks, mine.user + mine.system


def _others_were_busy(before, wall_s: float) -> bool:
    """Other processes ran more than a quarter of a core on average since ``before`` (a
    :func:`_cpu_seconds` reading): what the load average, a minute behind, misses when another
    program runs during the second or two of a measurement."""
    after = _cpu_seconds()
    if before is None or after is None or wall_s <= 0:
        return False
    others = (after[0] - before[0]) - (after[1] - before[1])
    return others > 0.25 * wall_s


def measure(providers: dict) -> dict:
    """Check and time ``providers`` (name -> provider); returns the table :func:`report` shows.

    ``{"choice": {dtype: {class: name}}, "gflops": {name: {dtype: {class: GFLOP/s}}},
    "shapes": {name: {dtype: {shape: GFLOP/s}}}, "excluded": {name: reason}, "seconds": total}``.

    Examples
    --------
    >>> table = measure({"numpy": NumpyBLAS()})
    >>> table["choice"]["float32"]["square"]
    'numpy'
    """
    t_start = time.perf_counter()
    busy = machine_busy()
    cpu_start = _cpu_seconds()
    excluded = {}
    usable = {}
    for name, p in providers.items():
        reason = check_provider(p)
        if reason is None:
            usable[name] = p
        else:
            excluded[name] = reason
            logger.warning("BLAS provider %s excluded: %s", name, reason)
    if not usable:                      # keep NumPy as the last resort whatever its check said
        usable = {"numpy": providers.get("numpy") or NumpyBLAS()}
    gflops = {name: {} for name in usable}
    shapes = {name: {} for name in usable}
    if len(usable) > 1:                 # one candidate needs no timing
        samples = _time_all(usable)
        for name, per_dtype in samples.items():
            for dtype, per_shape in per_dtype.items():
                per_class = {}
                for cls, cls_shapes in SHAPES.items():
                    rates = []
                    for shape in cls_shapes:
                        if shape in per_shape:
                            rate = _gflops(shape, per_shape[shape])
                            shapes[name].setdefault(dtype, {})[_shape_name(shape)] = round(rate, 2)
                            rates.append(rate)
                    if rates:
                        per_class[cls] = _geomean(rates)
                gflops[name][dtype] = per_class
    choice, own, paused = {}, {}, {}
    libraries = [nm for nm in usable if not getattr(usable[nm], "generated", False)] or ["numpy"]
    for dtype in ("float32", "float64"):
        choice[dtype], own[dtype] = {}, {}
        for cls in CLASSES:
            # the fastest library, where it beats the first by LIBRARY_MARGIN; ties (and a single
            # candidate) go to the earlier name in PROVIDERS
            rate = lambda nm: gflops.get(nm, {}).get(dtype, {}).get(cls, 0.0)      # noqa: E731
            fastest = max(libraries, key=rate)
            choice[dtype][cls] = fastest if rate(fastest) > LIBRARY_MARGIN * rate(libraries[0]) else libraries[0]
            if choice[dtype][cls] != libraries[0]:      # ... and still does after pauses
                paused.setdefault(dtype, {})[cls] = _wins_after_pauses(
                    usable[fastest], usable[libraries[0]], dtype, cls)
                if not paused[dtype][cls]["wins"]:
                    choice[dtype][cls] = libraries[0]
            # generated code, where it beat that library on the shapes it serves
            own[dtype][cls] = next((nm for nm in usable if getattr(usable[nm], "generated", False)
                                    and _own_wins(shapes, nm, choice[dtype][cls], dtype, cls)), None)
    busy = busy or _others_were_busy(cpu_start, time.perf_counter() - t_start)
    return {"choice": choice, "own": own, "gflops": gflops, "shapes": shapes, "excluded": excluded,
            "after_pauses": paused,
            "versions": {n: getattr(p, "version", "") for n, p in providers.items()},
            "threads": {n: getattr(p, "threads", None) for n, p in providers.items()},
            "busy": busy, "seconds": round(time.perf_counter() - t_start, 3)}


# --------------------------------------------------------------------------- the cache file

def _cpu_identity() -> dict:
    """Model, vendor, family and a hash of the flags of the first CPU in /proc/cpuinfo (elsewhere: platform)."""
    info = {"machine": platform.machine()}
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read().split("\n\n")[0]
    except OSError:
        info["model"] = platform.processor()
        return info
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    for ours, theirs in (("model", "model name"), ("vendor", "vendor_id"), ("family", "cpu family"),
                         ("model_id", "model"), ("implementer", "CPU implementer"), ("part", "CPU part")):
        if theirs in fields:
            info[ours] = fields[theirs]
    flags = fields.get("flags") or fields.get("Features") or ""
    info["flags"] = hashlib.sha256(" ".join(sorted(flags.split())).encode()).hexdigest()[:16]
    return info


def _fingerprint(paths) -> list:
    out = []
    for p in paths:
        try:
            st = os.stat(p)
            out.append([os.path.basename(p), st.st_size, int(st.st_mtime)])
        except OSError:
            out.append([os.path.basename(p)])
    return out


_ENV = ("TRACEJIT_OWN_GEMM", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
        "OMP_NUM_THREADS", "MKL_NUM_THREADS", "MKL_ENABLE_INSTRUCTIONS", "MKL_DEBUG_CPU_TYPE", "MKL_CBWR",
        "BLIS_NUM_THREADS", "KMP_BLOCKTIME", "TRACEJIT_OPENMP", "MKL_THREADING_LAYER", "OPENBLAS_THREAD_TIMEOUT", "TRACEJIT_OPENBLAS_SHORT_POLL",
        "TRACEJIT_OPENBLAS_ON_TEAM")


def host_key() -> dict:
    """What a stored measurement is valid for: CPU, threads, libraries, environment (no library is loaded).

    Examples
    --------
    >>> sorted(host_key())[:3]
    ['cpu', 'env', 'format']
    """
    from tracejit.backends.cpu.runtime import num_threads
    return {"format": FORMAT, "cpu": _cpu_identity(), "threads": num_threads(),
            "libraries": {name: _fingerprint(_LOCATORS[name]()) if name in _LOCATORS else None
                          for name in PROVIDERS},
            "env": {v: os.environ[v] for v in _ENV if v in os.environ},
            # (OpenBLAS timed with a 2^16-tick poll stalled: a table measured so is measured again)
            "openblas_poll": openblas_idle.POLL_LOG2_TICKS, "library_margin": LIBRARY_MARGIN}


def _cache_file(key: dict) -> str | None:
    from tracejit.backends.cpu import object_cache
    directory = object_cache._usable_dir()      # created private (0700), refused if others can write
    if directory is None:
        return None
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    return os.path.join(directory, f"blas-choice-{digest}.json")


def _read(path: str, key: dict) -> dict | None:
    try:
        with open(path) as f:
            data = json.load(f)
        if data.get("key") != key:      # the name is a hash of the key: never trust it alone
            return None
        table = data["table"]
        for dtype in ("float32", "float64"):
            for cls in CLASSES:
                if table["choice"][dtype][cls] not in PROVIDERS:
                    raise ValueError(f"unknown provider {table['choice'][dtype][cls]!r}")
                if table["own"][dtype][cls] not in (None, *PROVIDERS):
                    raise ValueError(f"unknown provider {table['own'][dtype][cls]!r}")
        return table
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        logger.warning("ignoring unreadable BLAS choice file %s (%s); measuring again", path, e)
        return None


def _write(path: str, key: dict, table: dict) -> None:
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump({"key": key, "table": table}, f, indent=1, sort_keys=True)
        os.replace(tmp, path)           # readers see the old file or the new one, never half of one
    except OSError as e:
        logger.warning("could not store the BLAS choice in %s: %s", path, e)


# --------------------------------------------------------------------------- choosing

class AutoBLAS:
    """Dispatches each product to the provider measured fastest for its dtype and shape class."""

    name = "auto"

    def __init__(self, table: dict, providers: dict, source: str):
        self.table, self.source = table, source     # source: "measured" or the cache file's path
        self.providers = providers
        fallback = providers.get("numpy") or NumpyBLAS()
        self._route, self._own = {}, {}
        for dtype, measured_as in _MEASURED_AS.items():
            for cls in CLASSES:
                self._route[dtype, cls] = providers.get(table["choice"][measured_as][cls], fallback)
                generated = providers.get(table["own"][measured_as][cls] or "")
                if generated is not None and dtype.kind == "f":
                    self._own[dtype, cls] = generated
        self._fallback = fallback

    def provider_for(self, dtype, cls: str):
        """The library serving products of ``dtype`` and shape class ``cls`` (the one native code
        calls; generated code may serve some of the class's products, see :meth:`gemm`)."""
        return self._route.get((np.dtype(dtype), cls), self._fallback)

    def gemm(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, alpha: float = 1.0, beta: float = 0.0) -> None:
        """``out[...] = alpha * (a @ b) + beta * out`` with the provider chosen for its dtype and shape
        class: generated code where it won the class and serves the product, else the library."""
        if out.ndim == 3:
            nb, m, n = out.shape
        else:
            (m, n), nb = out.shape, 1
        key = (out.dtype, shape_class(m, n, a.shape[-1], nb))
        own = self._own.get(key)
        if own is not None and own.serves(a, b, out, alpha, beta):
            own.run(a, b, out, alpha, beta)         # (checked once: not own.gemm)
        else:
            self._route.get(key, self._fallback).gemm(a, b, out, alpha, beta)


def _choose() -> AutoBLAS:
    key = host_key()
    path = _cache_file(key)
    table = _read(path, key) if path else None
    if table is not None and table.get("busy") and not machine_busy():
        table = None        # measured on a busy machine: replace it now that the machine is quiet
    if table is not None:
        names = {n for part in ("choice", "own") for d in table[part].values() for n in d.values() if n}
        loaded = {n: _instance(n) for n in names | {"numpy"}}
        if all(loaded[n] is not None for n in names):
            return AutoBLAS(table, loaded, path)
    loaded = {n: p for n in PROVIDERS if (p := _instance(n)) is not None}
    table = measure(loaded)
    logger.info("BLAS providers measured in %.2f s%s: %s", table["seconds"],
                " (machine busy: measured again once it is quiet)" if table["busy"] else "", table["choice"])
    if path:
        _write(path, key, table)
    return AutoBLAS(table, loaded, "measured")


def provider(name: str | None = None):
    """The GEMM provider ``name``, by default ``config.blas``.

    ``auto`` returns the measured dispatcher (:class:`AutoBLAS`); the first call
    measures, or reads the stored measurement, once per process under a lock
    (concurrent callers wait for it). Any other name forces that provider.

    Examples
    --------
    >>> from tracejit.backends.cpu import blas
    >>> blas.provider("numpy").name
    'numpy'
    """
    raw = name or config.blas or "auto"
    hit = _chosen.get(raw)
    if hit is not None:
        return hit
    name = str(raw).strip().lower()
    with _lock:
        hit = _chosen.get(name)
        if hit is not None:
            _chosen[raw] = hit
            return hit
        if name == "auto":
            p = _choose()
        elif name in PROVIDERS:
            p = _instance(name)
            if p is None:
                raise RuntimeError(f"BLAS provider {name!r} is not available"
                                   + (" (pip install mkl)" if name == "mkl" else ""))
        else:
            raise ValueError(f"unknown BLAS provider {name!r}; choose one of auto, {', '.join(PROVIDERS)}")
        _chosen[name] = _chosen[raw] = p
    return p


def gemm(a: np.ndarray, b: np.ndarray, out: np.ndarray, alpha: float = 1.0, beta: float = 0.0) -> None:
    """``out[...] = alpha * (a @ b) + beta * out`` (2-D, or 3-D with a shared batch axis) with the
    configured provider; ``beta`` is 0 or 1.

    Examples
    --------
    >>> import numpy as np
    >>> out = np.empty((2, 2))
    >>> gemm(np.eye(2), np.ones((2, 2)), out)
    >>> out.tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    if out.ndim == 3 and out.shape[0] == 1:
        # A batch of one is a matrix product (a program's ``(B, T, D) @ (D, F)`` arrives as one): as
        # such generated code may serve it, which takes only matrices.
        a, b, out = a[0], b[0], out[0]
    provider().gemm(a, b, out, alpha, beta)


def native_symbol(dtype, m: int, n: int, k: int):
    """``(symbol, int64)``: the CBLAS ``?gemm`` that serves an ``(m, k) @ (k, n)`` product of ``dtype``,
    registered under ``symbol`` for native code (a loop body) to call, and whether its integers are
    64-bit; None when that product's provider has no C entry point. (Where NumPy's ``matmul`` serves
    it, that is the OpenBLAS NumPy bundles, called directly; it cannot when that library does not
    load, or when ``TRACEJIT_BLAS=numpy`` forces ``matmul`` itself.)

    Examples
    --------
    >>> found = native_symbol(np.float64, 64, 64, 64)
    >>> found is None or found[0].startswith("tracejit_blas_")
    True
    """
    from llvmlite import binding as llvm
    dtype = np.dtype(dtype)
    p = provider()
    if isinstance(p, AutoBLAS):
        p = p.provider_for(dtype, shape_class(m, n, k))
        if isinstance(p, NumpyBLAS):
            # NumPy's matmul runs the OpenBLAS it bundles: native code calls that library directly.
            p = _instance("openblas") or p
    if isinstance(p, GeneratedBLAS):
        # (generated code forced: its kernels are launched from Python; native code calls the library
        # it falls back to, NumPy's OpenBLAS)
        p = _instance("openblas") or p
    fn = getattr(p, "fns", {}).get(dtype)
    if fn is None or max(m, n, k) >= p.limit:
        return None
    symbol = f"tracejit_blas_{p.name}_{_PREFIX[dtype]}gemm"
    llvm.add_symbol(symbol, ctypes.cast(fn, ctypes.c_void_p).value)
    return symbol, p.limit > 2 ** 31


def report() -> list:
    """The measured table: one row per provider, dtype and shape class, with what serves it now.

    Rows are dicts ``provider, dtype, class, gflops, chosen, note`` (``gflops``
    None for a provider that was excluded, did not load, or had no rival to be
    timed against). ``chosen`` follows the configuration: all rows of a forced
    provider. Triggers the measurement when nothing was measured or stored yet.

    Examples
    --------
    >>> from tracejit.backends.cpu import blas
    >>> rows = blas.report()
    >>> sorted(rows[0])
    ['chosen', 'class', 'dtype', 'gflops', 'note', 'provider']
    """
    auto = provider("auto")
    active = provider()
    table = auto.table
    rows = []
    for name in PROVIDERS:
        note = table["excluded"].get(name, "")
        if name not in table["versions"]:
            note = note or "did not load"
        for dtype in ("float32", "float64"):
            for cls in CLASSES:
                rate = table["gflops"].get(name, {}).get(dtype, {}).get(cls)
                if isinstance(active, AutoBLAS):
                    chosen = name in (table["choice"][dtype][cls], table["own"][dtype][cls])
                else:
                    chosen = active.name == name
                rows.append({"provider": name, "dtype": dtype, "class": cls, "gflops": rate,
                             "chosen": chosen, "note": note})
    return rows


def format_report(rows: list | None = None) -> str:
    """:func:`report`'s rows as a text table.

    Examples
    --------
    >>> print(format_report([{"provider": "numpy", "dtype": "float32", "class": "square",
    ...                       "gflops": 150.0, "chosen": True, "note": ""}]))
    provider  dtype    class      GFLOP/s  chosen
    numpy     float32  square       150.0  *
    """
    rows = report() if rows is None else rows
    lines = [f"{'provider':<9} {'dtype':<8} {'class':<8} {'GFLOP/s':>9}  chosen"]
    for r in rows:
        rate = "-" if r["gflops"] is None else f"{r['gflops']:.1f}"
        lines.append(f"{r['provider']:<9} {r['dtype']:<8} {r['class']:<8} {rate:>9}  "
                     f"{'*' if r['chosen'] else ''}{('  ' + r['note']) if r['note'] else ''}".rstrip())
    return "\n".join(lines)


# NumPy's OpenBLAS came with NumPy: its idle threads are made to sleep sooner now, at import, while
# the importing thread is normally the process's only one (``openblas_idle``).
for _path in _numpy_openblas_paths():
    openblas_idle.shorten_idle_polling(_path)
