"""GEMM providers for ``dot_general`` steps: Intel MKL when present, else NumPy's BLAS.

A contraction reaches BLAS as (batched) ``C = op(A) @ op(B)`` where ``op``
is a transpose *flag* read off the operand's strides, so transposed views
are never copied. MKL (``pip install mkl``, a dependency on x86-64 Linux)
is called through its CBLAS interface with ctypes: on the small-``M``
shapes of inference and training steps it is several times faster than
the OpenBLAS that NumPy wheels bundle. ``TRACEJIT_BLAS=numpy`` (or
``config.update("blas", "numpy")``) forces NumPy's ``matmul``.

Providers are registered by name in ``PROVIDERS``; ``gemm`` dispatches to the
configured one and falls back to NumPy for operands it cannot take.
"""
from __future__ import annotations

import ctypes
import glob
import os
import sys
import threading

import numpy as np

from tracejit.backends.cpu.pointers import data_address

ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112


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


class NumpyBLAS:
    """NumPy's ``matmul`` (OpenBLAS in NumPy's wheels): always available."""

    name = "numpy"

    def gemm(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, alpha: float = 1.0, beta: float = 0.0) -> None:
        with np.errstate(all="ignore"):     # compiled code raises no floating-point warnings either
            if alpha == 1.0 and beta == 0.0:
                np.matmul(a, b, out=out)
                return
            product = np.multiply(np.matmul(a, b), out.dtype.type(alpha))
            if beta == 0.0:
                out[...] = product
            else:
                np.add(out, product, out=out)


class MKL:
    """CBLAS ``?gemm`` / ``?gemm_batch_strided`` from ``libmkl_rt``."""

    name = "mkl"
    _SCALAR = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
               np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}

    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib
        vp, ci = ctypes.c_void_p, ctypes.c_int
        self.fns = {}
        self.batched = {}
        for dtype, p in self._SCALAR.items():
            real = dtype.kind == "f"
            scalar = (ctypes.c_float if dtype.itemsize == 4 else ctypes.c_double) if real else vp
            fn = getattr(lib, f"cblas_{p}gemm")
            fn.restype = None
            fn.argtypes = [ci, ci, ci, ci, ci, ci, scalar, vp, ci, vp, ci, scalar, vp, ci]
            self.fns[dtype] = fn
            fb = getattr(lib, f"cblas_{p}gemm_batch_strided", None)
            if fb is not None:
                ll = ctypes.c_longlong
                fb.restype = None
                fb.argtypes = [ci, ci, ci, ci, ci, ci, scalar, vp, ci, ll, vp, ci, ll, scalar, vp, ci, ll, ci]
                self.batched[dtype] = fb
        self._complex_consts = {np.dtype(np.complex64): (np.array([1, 0], np.float32), np.zeros(2, np.float32)),
                                np.dtype(np.complex128): (np.array([1, 0], np.float64), np.zeros(2, np.float64))}

    def _scalars(self, dtype, alpha=1.0, beta=0.0):
        if dtype.kind == "f":
            return alpha, beta
        one, zero = self._complex_consts[dtype]     # complex products are never scaled here
        return data_address(one), data_address(zero)

    def gemm(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, alpha: float = 1.0, beta: float = 0.0) -> None:
        """``out[...] = alpha * (a @ b) + beta * out`` for 2-D or equally batched 3-D operands of one dtype."""
        fn = self.fns.get(out.dtype)
        scaled = (alpha, beta) != (1.0, 0.0)
        if (fn is None or a.dtype != out.dtype or b.dtype != out.dtype or not out.flags.c_contiguous
                or (scaled and out.dtype.kind != "f")):
            return NumpyBLAS.gemm(self, a, b, out, alpha, beta)
        if out.ndim == 3:
            return self._batched(a, b, out, alpha, beta)
        m, n = out.shape
        k = a.shape[1]
        ta, tb = _operand(a), _operand(b)
        if ta is None or tb is None or 0 in (m, n, k) or max(m, n, k) >= 2 ** 31:
            return NumpyBLAS.gemm(self, a, b, out, alpha, beta)
        alpha, beta = self._scalars(out.dtype, alpha, beta)
        fn(ROW_MAJOR, ta[0], tb[0], m, n, k, alpha, data_address(a), ta[1], data_address(b), tb[1], beta,
           data_address(out), max(n, 1))

    def _batched(self, a, b, out, alpha, beta):
        fb = self.batched.get(out.dtype)
        nb, m, n = out.shape
        k = a.shape[2]
        ta, tb = _operand(a[0]) if nb else None, _operand(b[0]) if nb else None
        item = out.itemsize
        if (fb is None or ta is None or tb is None or 0 in (nb, m, n, k) or a.strides[0] % item
                or b.strides[0] % item or max(m, n, k, nb) >= 2 ** 31):
            return NumpyBLAS.gemm(self, a, b, out, alpha, beta)
        alpha, beta = self._scalars(out.dtype, alpha, beta)
        fb(ROW_MAJOR, ta[0], tb[0], m, n, k, alpha, data_address(a), ta[1], a.strides[0] // item,
           data_address(b), tb[1], b.strides[0] // item, beta, data_address(out), max(n, 1), m * n, nb)


def _load_mkl():
    from tracejit.backends.cpu.parallel import quiet_spinning
    quiet_spinning()            # MKL's threads are the OpenMP runtime's threads
    candidates = []
    for prefix in dict.fromkeys([sys.prefix, sys.base_prefix, os.environ.get("CONDA_PREFIX", "")]):
        if prefix:
            candidates += sorted(glob.glob(os.path.join(prefix, "lib", "libmkl_rt.so*")), reverse=True)
    for path in candidates:
        try:
            return MKL(ctypes.CDLL(path))
        except (OSError, AttributeError):
            continue
    return None


PROVIDERS = {"numpy": lambda: NumpyBLAS(), "mkl": _load_mkl}
_chosen: dict = {}
_lock = threading.Lock()


def provider(name: str | None = None):
    """The GEMM provider ``name`` (``auto``: MKL when it loads, else NumPy)."""
    from tracejit.config import config
    name = (name or getattr(config, "blas", None) or "auto").lower()
    hit = _chosen.get(name)
    if hit is not None:
        return hit
    with _lock:
        if name == "auto":
            p = PROVIDERS["mkl"]() or PROVIDERS["numpy"]()
        elif name in PROVIDERS:
            p = PROVIDERS[name]()
            if p is None:
                raise RuntimeError(f"BLAS provider {name!r} is not available (for MKL: pip install mkl)")
        else:
            raise ValueError(f"unknown BLAS provider {name!r}; choose one of auto, {', '.join(PROVIDERS)}")
        _chosen[name] = p
    return p


def gemm(a: np.ndarray, b: np.ndarray, out: np.ndarray, alpha: float = 1.0, beta: float = 0.0) -> None:
    """``out[...] = alpha * (a @ b) + beta * out`` (2-D, or 3-D with a shared batch axis) with the
    configured provider; ``beta`` is 0 or 1."""
    provider().gemm(a, b, out, alpha, beta)
